"""HTTP to the GitHub REST API: one :class:`Transport` protocol and its real implementation.

Standard library only. All HTTP of :mod:`kernbench.ci.github` goes through a :class:`Transport`,
so tests inject a fake. The real one (:class:`UrllibTransport`) retries what GitHub asks to be
retried: a rate limit (403/429 with `retry-after` or an exhausted `x-ratelimit-remaining`) after
the wait it names, a 5xx or network failure of an idempotent call with exponential backoff. A
403 that is not a rate limit is a permission problem and is never retried. The token is never
printed, logged or put in an exception message.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from kernbench.errors import EXIT_FAILURES, KernbenchError

__all__ = ["API_URL", "GitHubError", "Retry", "Transport", "UrllibTransport", "rate_limit_wait",
           "retry_wait"]

API_URL = "https://api.github.com"
MAX_PAGES = 100
"""Pages a listing may have (100 items each); a longer one is an error, never a partial list."""
IDEMPOTENT = frozenset({"GET", "HEAD", "PATCH", "PUT", "DELETE"})
TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})
_NEXT_RE = re.compile(r'<([^>]*)>\s*;\s*rel="next"')
_T = TypeVar("_T")


class GitHubError(KernbenchError):
    """The API answered 4xx/5xx (`status`) or could not be reached (`status` 0).

    `rate_limit_wait_s` is set when the answer was a rate limit (the seconds GitHub asked to
    wait); `transient` when retrying the same call may succeed (5xx, network failure).
    """

    exit_code = EXIT_FAILURES

    def __init__(self, status: int, method: str, where: str, detail: str, *,
                 rate_limit_wait_s: float | None = None, transient: bool = False) -> None:
        code = f"HTTP {status}" if status else "no answer"
        if rate_limit_wait_s is not None:
            code += f": rate limited (GitHub asks to wait {rate_limit_wait_s:.0f} s)"
        super().__init__(f"GitHub API {method} {where}: {code}: {detail}")
        self.status = status
        self.rate_limit_wait_s = rate_limit_wait_s
        self.transient = transient

    @property
    def rate_limited(self) -> bool:
        return self.rate_limit_wait_s is not None


@dataclass(frozen=True)
class Retry:
    """How :class:`UrllibTransport` retries: `attempts` calls in all; backoff waits start at
    `backoff_s` and double; no single wait is longer than `max_wait_s`, and a rate limit that
    asks for longer is reported rather than waited out."""

    attempts: int = 5
    backoff_s: float = 2.0
    max_wait_s: float = 120.0


def _seconds(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 <= seconds < 1e11 else None


def rate_limit_wait(status: int, headers: Mapping[str, str], message: str,
                    now: float) -> float | None:
    """Seconds to wait when an answer is a rate limit, else None (GitHub's documented rules).

    `retry-after` first; else, with `x-ratelimit-remaining: 0`, until `x-ratelimit-reset`
    (epoch seconds); else one minute for a 429 or a 403 whose message names a rate limit.
    Any other 403 is a permission problem. `headers` has lower-case names.
    """
    if status not in (403, 429):
        return None
    retry_after = _seconds(headers.get("retry-after"))
    if retry_after is not None:
        return retry_after
    reset = _seconds(headers.get("x-ratelimit-reset"))
    if headers.get("x-ratelimit-remaining") == "0" and reset is not None:
        return max(0.0, reset - now)
    if status == 429 or "rate limit" in message.lower():
        return 60.0
    return None


def retry_wait(retry: Retry, method: str, error: GitHubError, attempt: int) -> float | None:
    """Seconds to wait before attempt `attempt` + 1 after `error`, or None to give up."""
    if attempt >= retry.attempts:
        return None
    if error.rate_limit_wait_s is not None:
        wait = error.rate_limit_wait_s
        return wait if wait <= retry.max_wait_s else None
    if error.transient and method in IDEMPOTENT:
        return min(retry.backoff_s * 2.0 ** (attempt - 1), retry.max_wait_s)
    return None


class Transport(Protocol):
    """One REST call. Raises :class:`GitHubError` on 4xx/5xx; a GET answering a JSON list returns
    every page (up to the transport's limit) concatenated."""

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None,
                params: Mapping[str, str] | None = None) -> tuple[int, Any]: ...


class UrllibTransport:
    """The real transport: urllib, JSON, `Link: rel="next"` pagination, retries (:class:`Retry`).

    Authorization is an unredirected header, so a redirect never carries the token elsewhere,
    and a `next` link outside `api_url` is refused rather than followed. A listing longer than
    `max_pages` raises rather than returning part of it (acting on a partial list of comments
    would post a duplicate). `sleep` is injectable so tests wait no real time.
    """

    def __init__(self, token: str, api_url: str = API_URL, *, timeout_s: float = 30.0,
                 max_pages: int = MAX_PAGES, retry: Retry = Retry(),
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._token = token
        self.api_url = api_url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_pages = max_pages
        self.retry = retry
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"UrllibTransport(api_url={self.api_url!r})"

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None,
                params: Mapping[str, str] | None = None) -> tuple[int, Any]:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        status, data, next_url = self._send(method, f"{self.api_url}{path}{query}", body)
        pages = 1
        while method == "GET" and isinstance(data, list) and next_url:
            if pages >= self.max_pages:
                raise GitHubError(status, method, path, f"more than {self.max_pages} pages; "
                                  "refusing to act on a partial list")
            status, more, next_url = self._send("GET", next_url, None)
            data = data + (more if isinstance(more, list) else [])
            pages += 1
        return status, data

    def download(self, path: str, max_bytes: int) -> bytes:
        """The raw body of GET `path`, following redirects (without the token); more than
        `max_bytes` raises before the rest is read."""
        url = f"{self.api_url}{path}"
        return self._retrying("GET", lambda: self._fetch(url, max_bytes))

    def _send(self, method: str, url: str,
              body: Mapping[str, Any] | None) -> tuple[int, Any, str | None]:
        return self._retrying(method, lambda: self._once(method, url, body))

    def _retrying(self, method: str, call: Callable[[], _T]) -> _T:
        attempt = 1
        while True:
            try:
                return call()
            except GitHubError as error:
                wait = retry_wait(self.retry, method, error, attempt)
                if wait is None:
                    raise
                self._sleep(wait)
                attempt += 1

    def _request(self, method: str, url: str, payload: bytes | None) -> urllib.request.Request:
        where = url.removeprefix(self.api_url)
        if not url.startswith(f"{self.api_url}/"):
            raise GitHubError(0, method, where, f"refusing a URL outside {self.api_url}")
        req = urllib.request.Request(url, data=payload, method=method)
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("X-GitHub-Api-Version", "2022-11-28")
        req.add_header("User-Agent", "kernbench-ci")
        if payload is not None:
            req.add_header("Content-Type", "application/json")
        req.add_unredirected_header("Authorization", f"Bearer {self._token}")
        return req

    def _open(self, req: urllib.request.Request) -> Any:
        method, where = req.get_method(), req.full_url.removeprefix(self.api_url)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout_s)
        except urllib.error.HTTPError as exc:
            detail = self._scrub(_error_detail(exc))
            headers = {name.lower(): value for name, value in (exc.headers or {}).items()}
            raise GitHubError(exc.code, method, where, detail,
                              rate_limit_wait_s=rate_limit_wait(exc.code, headers, detail,
                                                                time.time()),
                              transient=exc.code in TRANSIENT_STATUSES) from None
        except OSError as exc:  # URLError, timeouts, refused connections
            reason = getattr(exc, "reason", exc)
            raise GitHubError(0, method, where, self._scrub(f"network error: {reason}"),
                              transient=True) from None

    def _once(self, method: str, url: str,
              body: Mapping[str, Any] | None) -> tuple[int, Any, str | None]:
        payload = None if body is None else json.dumps(body).encode()
        req = self._request(method, url, payload)
        with self._open(req) as resp:
            status, raw, link = resp.status, resp.read(), resp.headers.get("Link")
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            raise GitHubError(status, method, url.removeprefix(self.api_url),
                              "answer is not JSON") from None
        match = _NEXT_RE.search(link or "")
        return status, data, match.group(1) if match else None

    def _fetch(self, url: str, max_bytes: int) -> bytes:
        where = url.removeprefix(self.api_url)
        with self._open(self._request("GET", url, None)) as resp:
            declared = resp.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise GitHubError(resp.status, "GET", where, f"{declared} bytes, over the "
                                  f"limit of {max_bytes}")
            data = resp.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise GitHubError(200, "GET", where, f"more than {max_bytes} bytes")
        return bytes(data)

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        message = json.loads(exc.read()).get("message", "")
    except (OSError, ValueError, AttributeError):
        message = ""
    return str(message or exc.reason)[:300]

