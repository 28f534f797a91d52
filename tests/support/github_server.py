"""A fake GitHub REST API: a real HTTP server on 127.0.0.1 that the real client code talks to.

Routes are keyed by (method, path without the query). Each holds answers served in order, the
last one repeating; an answer is (status, JSON data or raw bytes, headers) or a function of the
request's query and body returning one. Every request is recorded in `seen`.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, Any, Mapping[str, str]]
Route = Answer | Callable[[Mapping[str, str], Any], Answer]


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


class GitHubServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.routes: dict[tuple[str, str], list[Route]] = {}
        self.seen: list[Seen] = []
        self._lock = threading.Lock()

    def add(self, method: str, path: str, *answers: Route) -> None:
        self.routes[(method, path)] = list(answers)

    def answer(self, seen: Seen) -> Answer:
        with self._lock:
            self.seen.append(seen)
            queue = self.routes.get((seen.method, seen.path))
            if not queue:
                return 404, {"message": "Not Found"}, {}
            route = queue.pop(0) if len(queue) > 1 else queue[0]
        return route(seen.query, seen.body) if callable(route) else route

    def calls(self, method: str, path: str | None = None) -> list[Seen]:
        return [s for s in self.seen if s.method == method and path in (None, s.path)]


class _Handler(BaseHTTPRequestHandler):
    server: GitHubServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urllib.parse.urlsplit(self.path)
        seen = Seen(self.command, url.path, dict(urllib.parse.parse_qsl(url.query)),
                    {k.lower(): v for k, v in self.headers.items()},
                    json.loads(raw) if raw else None)
        status, data, headers = self.server.answer(seen)
        payload = data if isinstance(data, bytes) else json.dumps(data).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = _serve


def paged(server: GitHubServer, path: str, items: list[Any],
          per_page: int = 100) -> Callable[[Mapping[str, str], Any], Answer]:
    """A listing of `items` in pages linked by `Link: rel="next"`, as GitHub serves them."""
    def answer(query: Mapping[str, str], body: Any) -> Answer:
        page = int(query.get("page", "1"))
        chunk = items[(page - 1) * per_page:page * per_page]
        more = page * per_page < len(items)
        link = f'<{server.url}{path}?per_page={per_page}&page={page + 1}>; rel="next"'
        return 200, chunk, {"Link": link} if more else {}
    return answer


@contextmanager
def running() -> Iterator[GitHubServer]:
    server = GitHubServer()
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
