"""kernbench.ci.github: PR matching, comment/issue upserts, the CLI fallback, the real transport."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kernbench.ci.github import (
    DEFAULT_MARKER,
    MAX_BODY_CHARS,
    GitHubError,
    UrllibTransport,
    find_pull_request,
    main,
    upsert_comment,
    upsert_tracking_issue,
)

TOKEN = "ghs_FAKE_TOKEN_kernbench_0123456789"
REPO = "acme/kernels"
SHA = "a" * 40
BOT = {"login": "github-actions[bot]", "type": "Bot"}
HUMAN = {"login": "alice", "type": "User"}
Response = tuple[int, Any] | Callable[[Mapping[str, Any] | None], tuple[int, Any]]


class FakeGitHub:
    """An in-memory Transport: canned answers by (method, path); records every request."""

    def __init__(self, routes: Mapping[tuple[str, str], Response] | None = None) -> None:
        self.routes: dict[tuple[str, str], Response] = dict(routes or {})
        self.requests: list[tuple[str, str, Any, dict[str, str]]] = []

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None,
                params: Mapping[str, str] | None = None) -> tuple[int, Any]:
        self.requests.append((method, path, body, dict(params or {})))
        answer = self.routes.get((method, path), (404, {"message": "Not Found"}))
        status, data = answer(body) if callable(answer) else answer
        if status >= 400:
            raise GitHubError(status, method, path, str(data.get("message")))
        return status, data

    def calls(self, method: str) -> list[tuple[str, Any]]:
        return [(path, body) for m, path, body, _ in self.requests if m == method]


def pr(number: int, sha: str = SHA, head_repo: str = REPO, ref: str = "feature",
       state: str = "open") -> dict[str, Any]:
    return {"number": number, "state": state,
            "head": {"sha": sha, "ref": ref, "repo": {"full_name": head_repo}},
            "base": {"ref": "main", "repo": {"full_name": REPO}}}


def echo(status: int, key: str, value: int) -> Callable[[Mapping[str, Any] | None], Any]:
    return lambda body: (status, {key: value, **(body or {})})


# ---------------------------------------------------------------------------- PR matching


def test_same_repo_pr_found_via_commit_pulls() -> None:
    fake = FakeGitHub({("GET", f"/repos/{REPO}/commits/{SHA}/pulls"): (200, [pr(12)])})
    assert find_pull_request(fake, REPO, SHA, REPO, "feature") == 12
    assert [path for path, _ in fake.calls("GET")] == [f"/repos/{REPO}/commits/{SHA}/pulls"]


def test_fork_pr_found_via_head_filter() -> None:
    fork = "mallory/kernels"
    fake = FakeGitHub({
        ("GET", f"/repos/{REPO}/commits/{SHA}/pulls"): (422, {"message": "No commit found"}),
        ("GET", f"/repos/{REPO}/pulls"): (200, [pr(7, head_repo=fork)]),
    })
    assert find_pull_request(fake, REPO, SHA, fork, "feature") == 7
    params = fake.requests[1][3]
    assert params["head"] == "mallory:feature" and params["state"] == "open"


def test_fork_pr_found_by_scanning_open_prs() -> None:
    fork = "mallory/kernels"

    def pulls(_: Any) -> tuple[int, Any]:
        head_filter = "head" in fake.requests[-1][3]
        return 200, [] if head_filter else [pr(1), pr(9, head_repo=fork)]

    fake = FakeGitHub({("GET", f"/repos/{REPO}/commits/{SHA}/pulls"): (200, []),
                       ("GET", f"/repos/{REPO}/pulls"): pulls})
    assert find_pull_request(fake, REPO, SHA, fork, "feature") == 9
    assert len(fake.calls("GET")) == 3


@pytest.mark.parametrize("candidate", [
    pr(3, sha="b" * 40),                      # the head moved on: results would be stale
    pr(3, head_repo="mallory/kernels"),       # same branch name, different repository
    pr(3, state="closed"),
    pr(3, ref="other-branch"),
    {**pr(3), "head": {"sha": SHA, "ref": "feature", "repo": None}},  # deleted fork
])
def test_mismatching_prs_are_not_matched(candidate: dict[str, Any]) -> None:
    fake = FakeGitHub({("GET", f"/repos/{REPO}/commits/{SHA}/pulls"): (200, [candidate]),
                       ("GET", f"/repos/{REPO}/pulls"): (200, [candidate])})
    assert find_pull_request(fake, REPO, SHA, REPO, "feature") is None
    assert fake.calls("PATCH") == fake.calls("POST") == []


def test_find_pull_request_rejects_malformed_inputs() -> None:
    with pytest.raises(ValueError, match="OWNER/NAME"):
        find_pull_request(FakeGitHub(), "acme/../x/y", SHA, REPO, "b")
    with pytest.raises(ValueError, match="commit sha"):
        find_pull_request(FakeGitHub(), REPO, "HEAD/../x", REPO, "b")


# ---------------------------------------------------------------------------- comments

COMMENTS = f"/repos/{REPO}/issues/45/comments"


def test_existing_bot_comment_is_updated() -> None:
    fake = FakeGitHub({
        ("GET", COMMENTS): (200, [{"id": 1, "user": HUMAN, "body": "nice"},
                                  {"id": 2, "user": BOT, "body": f"{DEFAULT_MARKER}\nold"}]),
        ("PATCH", f"/repos/{REPO}/issues/comments/2"): echo(200, "id", 2),
    })
    body = f"{DEFAULT_MARKER}\nnew"
    assert upsert_comment(fake, REPO, 45, body, DEFAULT_MARKER) == ("updated", 2)
    assert fake.calls("PATCH") == [(f"/repos/{REPO}/issues/comments/2", {"body": body})]
    assert fake.requests[0][3]["per_page"] == "100"


def test_human_comment_quoting_the_marker_is_left_alone() -> None:
    quoted = f"> {DEFAULT_MARKER}\n> old results\nwhy is this slower?"
    fake = FakeGitHub({("GET", COMMENTS): (200, [{"id": 1, "user": HUMAN, "body": quoted}]),
                       ("POST", COMMENTS): echo(201, "id", 99)})
    assert upsert_comment(fake, REPO, 45, f"{DEFAULT_MARKER}\nx", DEFAULT_MARKER) == ("created", 99)
    assert fake.calls("PATCH") == []


def test_bot_login_restricts_which_bot_is_edited() -> None:
    other = {"login": "coderabbitai[bot]", "type": "Bot"}
    fake = FakeGitHub({("GET", COMMENTS): (200, [{"id": 1, "user": other,
                                                  "body": DEFAULT_MARKER}]),
                       ("POST", COMMENTS): echo(201, "id", 5)})
    result = upsert_comment(fake, REPO, 45, DEFAULT_MARKER, DEFAULT_MARKER,
                            bot_login="github-actions[bot]")
    assert result == ("created", 5)


@pytest.mark.parametrize(("body", "marker", "match"), [
    ("x" * (MAX_BODY_CHARS + 1) + DEFAULT_MARKER, DEFAULT_MARKER, "characters"),
    ("no marker here", DEFAULT_MARKER, "marker"),
    ("anything", "", "marker"),
])
def test_unsafe_bodies_are_refused(body: str, marker: str, match: str) -> None:
    fake = FakeGitHub()
    with pytest.raises(ValueError, match=match):
        upsert_comment(fake, REPO, 45, body, marker)
    assert fake.requests == []


# ---------------------------------------------------------------------------- tracking issue

ISSUES = f"/repos/{REPO}/issues"


def test_tracking_issue_updated_ignoring_prs_and_human_issues() -> None:
    fake = FakeGitHub({
        ("GET", ISSUES): (200, [
            {"number": 30, "user": BOT, "pull_request": {"url": "..."}},
            {"number": 20, "user": HUMAN},
            {"number": 7, "user": BOT},
            {"number": 3, "user": BOT},
        ]),
        ("PATCH", f"{ISSUES}/7"): echo(200, "number", 7),
    })
    assert upsert_tracking_issue(fake, REPO, "benchmark", "t", "results") == ("updated", 7)
    assert fake.calls("PATCH") == [(f"{ISSUES}/7", {"body": "results"})]
    params = fake.requests[0][3]
    assert params["labels"] == "benchmark" and params["state"] == "open"
    assert (params["sort"], params["direction"]) == ("created", "desc")


def test_tracking_issue_created_with_label_when_none_is_open() -> None:
    fake = FakeGitHub({("GET", ISSUES): (200, [{"number": 30, "user": BOT, "pull_request": {}}]),
                       ("POST", ISSUES): echo(201, "number", 31)})
    assert upsert_tracking_issue(fake, REPO, "benchmark", "title", "b") == ("created", 31)
    assert fake.calls("POST") == [(ISSUES, {"title": "title", "body": "b",
                                           "labels": ["benchmark"]})]


def test_tracking_issue_refuses_oversize_body() -> None:
    with pytest.raises(ValueError, match="characters"):
        upsert_tracking_issue(FakeGitHub(), REPO, "benchmark", "t", "x" * (MAX_BODY_CHARS + 1))


# ---------------------------------------------------------------------------- CLI


def comment_argv(tmp_path: Path, body: str = "## results\n") -> list[str]:
    body_file = tmp_path / "comment.md"
    body_file.write_text(body, encoding="utf-8")
    return ["comment", "--repo", REPO, "--head-sha", SHA, "--head-repo", REPO,
            "--head-branch", "feature", "--body-file", str(body_file)]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("GITHUB_API_URL", raising=False)
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_cli_comment_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeGitHub({("GET", f"/repos/{REPO}/commits/{SHA}/pulls"): (200, [pr(45)]),
                       ("GET", COMMENTS): (200, []), ("POST", COMMENTS): echo(201, "id", 123)})
    assert main(comment_argv(tmp_path), transport=fake) == 0
    assert capsys.readouterr().out.strip() == "created comment 123 on #45"
    posted = fake.calls("POST")[0][1]["body"]
    assert posted.startswith(DEFAULT_MARKER) and "## results" in posted  # marker added


@pytest.mark.parametrize(("routes", "reason"), [
    ({("GET", f"/repos/{REPO}/commits/{SHA}/pulls"): (200, []),
      ("GET", f"/repos/{REPO}/pulls"): (200, [])}, f"no open PR for {SHA} from {REPO}"),
    ({("GET", f"/repos/{REPO}/commits/{SHA}/pulls"): (200, [pr(45)]),
      ("GET", COMMENTS): (200, []),
      ("POST", COMMENTS): (403, {"message": "Resource not accessible by integration"})},
     "Resource not accessible by integration"),
    ({("GET", f"/repos/{REPO}/commits/{SHA}/pulls"): (200, [pr(45)])}, "HTTP 404"),
])
def test_cli_falls_back_to_the_summary_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        routes: dict[tuple[str, str], Response], reason: str) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(comment_argv(tmp_path), transport=FakeGitHub(routes)) == 0
    written = summary.read_text(encoding="utf-8")
    assert written.startswith("earlier step\n") and "## results" in written and reason in written
    assert "wrote the comment to the job summary" in capsys.readouterr().out


def test_cli_summary_file_flag_and_other_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = tmp_path / "explicit.md"
    argv = [*comment_argv(tmp_path), "--summary-file", str(summary)]
    assert main(argv, transport=FakeGitHub({("GET", f"/repos/{REPO}/pulls"): (200, [])})) == 0
    assert "no open PR" in summary.read_text(encoding="utf-8")
    broken = FakeGitHub({("GET", f"/repos/{REPO}/commits/{SHA}/pulls"): (500, {"message": "x"})})
    assert main(argv, transport=broken) == 1
    assert "HTTP 500" in capsys.readouterr().err


def test_cli_refuses_oversize_body(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeGitHub()
    assert main(comment_argv(tmp_path, "x" * MAX_BODY_CHARS), transport=fake) == 1
    assert "characters" in capsys.readouterr().err and fake.requests == []


def test_cli_tracking_issue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "issue.md").write_text("latest", encoding="utf-8")
    fake = FakeGitHub({("GET", ISSUES): (200, [{"number": 7, "user": BOT}]),
                       ("PATCH", f"{ISSUES}/7"): echo(200, "number", 7)})
    argv = ["tracking-issue", "--repo", REPO, "--body-file", str(tmp_path / "issue.md")]
    assert main(argv, transport=fake) == 0
    assert capsys.readouterr().out.strip() == "updated issue #7"


def test_cli_without_token_fails_clearly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    (tmp_path / "b.md").write_text("b", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "kernbench.ci.github", "tracking-issue", "--repo", REPO,
         "--body-file", str(tmp_path / "b.md")], capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stderr.strip() == "kernbench.ci.github: error: GITHUB_TOKEN is not set"


# ---------------------------------------------------------------------------- real transport


class FakeAPI(ThreadingHTTPServer):
    """GitHub on 127.0.0.1: comments in two Link-paginated pages, and a few failures."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[dict[str, Any]] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: FakeAPI

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.server.seen.append({"method": self.command, "path": self.path,
                                 "headers": headers, "body": body})
        status, data, link = self._route(body)
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if link:
            self.send_header("Link", link)
        self.end_headers()
        self.wfile.write(payload)

    def _route(self, body: Any) -> tuple[int, Any, str | None]:
        base = f"{self.server.url}{COMMENTS}"
        if self.path == f"{COMMENTS}?per_page=100":
            first = [{"id": i, "user": HUMAN, "body": "hi"} for i in range(100)]
            links = f'<{base}?per_page=100&page=2>; rel="next", <{base}?page=2>; rel="last"'
            return 200, first, links
        if self.path == f"{COMMENTS}?per_page=100&page=2":
            return 200, [{"id": 555, "user": BOT, "body": f"{DEFAULT_MARKER} old"}], None
        if self.path == f"/repos/{REPO}/issues/comments/555":
            return 200, {"id": 555, **body}, None
        if self.path.startswith("/escape"):
            return 200, [], '<http://example.invalid/steal?page=2>; rel="next"'
        if self.path.startswith("/echo"):
            return 500, {"message": f"server saw Bearer {TOKEN}"}, None
        return 403, {"message": "Resource not accessible by integration"}, None

    do_GET = do_POST = do_PATCH = _answer


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    server = FakeAPI()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def test_urllib_transport_follows_link_pagination_and_sends_headers(api: FakeAPI) -> None:
    t = UrllibTransport(TOKEN, api.url + "/")
    body = f"{DEFAULT_MARKER}\nnew"
    assert upsert_comment(t, REPO, 45, body, DEFAULT_MARKER) == ("updated", 555)
    assert [s["method"] for s in api.seen] == ["GET", "GET", "PATCH"]
    headers = api.seen[-1]["headers"]
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert headers["accept"] == "application/vnd.github+json"
    assert headers["x-github-api-version"] == "2022-11-28"
    assert headers["content-type"] == "application/json"
    assert api.seen[-1]["body"] == {"body": body}
    assert TOKEN not in repr(t)


def test_urllib_transport_raises_clear_errors_without_the_token(api: FakeAPI) -> None:
    t = UrllibTransport(TOKEN, api.url)
    with pytest.raises(GitHubError, match="HTTP 403: Resource not accessible") as denied:
        t.request("POST", "/repos/acme/kernels/issues/1/comments", body={"body": "x"})
    assert denied.value.status == 403
    with pytest.raises(GitHubError, match="HTTP 500") as echoed:
        t.request("GET", "/echo")
    assert TOKEN not in str(echoed.value)
    with pytest.raises(GitHubError, match="refusing a URL outside") as escaped:
        t.request("GET", "/escape")
    assert "example.invalid" not in [s["path"] for s in api.seen]
    assert escaped.value.status == 0
    server_gone = UrllibTransport(TOKEN, "http://127.0.0.1:9", timeout_s=2)
    with pytest.raises(GitHubError, match="network error"):
        server_gone.request("GET", "/x")


def test_cli_with_real_transport_never_prints_the_token(
        api: FakeAPI, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_API_URL", api.url)
    summary = tmp_path / "summary.md"
    argv = [*comment_argv(tmp_path), "--summary-file", str(summary)]
    assert main(argv) == 0  # every route answers 403 -> fallback
    (tmp_path / "i.md").write_text("x", encoding="utf-8")
    monkeypatch.setenv("GITHUB_API_URL", f"{api.url}/echo")
    assert main(["tracking-issue", "--repo", REPO, "--body-file", str(tmp_path / "i.md")]) == 1
    out, err = capsys.readouterr()
    assert "HTTP 500" in err and "***" in err
    assert TOKEN not in out + err + summary.read_text(encoding="utf-8")
    assert all(s["headers"]["authorization"] == f"Bearer {TOKEN}" for s in api.seen)
