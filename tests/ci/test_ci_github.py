"""kernbench.ci.github: PR matching, comment/issue upserts, the CLI fallback, the real transport."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from kernbench.ci.github import (
    DEFAULT_MARKER,
    MAX_BODY_CHARS,
    find_pull_request,
    main,
    upsert_comment,
    upsert_tracking_issue,
)
from kernbench.ci.transport import GitHubError, Retry, UrllibTransport, rate_limit_wait, retry_wait
from support.github_server import GitHubServer, paged

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
# Everything below goes through UrllibTransport to a real HTTP server (tests/github_server.py).

FAST = Retry(attempts=4, backoff_s=0.001, max_wait_s=5.0)



def transport(github_api: GitHubServer, waits: list[float] | None = None,
              **kwargs: Any) -> UrllibTransport:
    """The real client, retrying fast; `waits` records the waits instead of sleeping them."""
    sleep = waits.append if waits is not None else (lambda _: None)
    return UrllibTransport(TOKEN, github_api.url + "/", retry=kwargs.pop("retry", FAST),
                           sleep=sleep, **kwargs)


def reply(status: int, key: str, value: int) -> Any:
    """A server answer echoing the request body with `key` set (like GitHub's create/edit)."""
    return lambda query, body: (status, {key: value, **(body or {})}, {})


def comments(n: int, ours_at: int | None = None) -> list[dict[str, Any]]:
    """`n` human comments, with the bot's marked comment at index `ours_at`."""
    found = [{"id": i, "user": HUMAN, "body": "looks good"} for i in range(n)]
    if ours_at is not None:
        found[ours_at] = {"id": 9_999, "user": BOT, "body": f"{DEFAULT_MARKER}\nold"}
    return found


def test_urllib_transport_follows_link_pagination_and_sends_headers(
        github_api: GitHubServer) -> None:
    github_api.add("GET", COMMENTS, paged(github_api, COMMENTS, comments(101, ours_at=100)))
    github_api.add("PATCH", f"/repos/{REPO}/issues/comments/9999", reply(200, "id", 9_999))
    body = f"{DEFAULT_MARKER}\nnew"
    t = transport(github_api)
    assert upsert_comment(t, REPO, 45, body, DEFAULT_MARKER) == ("updated", 9_999)
    assert [s.method for s in github_api.seen] == ["GET", "GET", "PATCH"]
    headers = github_api.seen[-1].headers
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert headers["accept"] == "application/vnd.github+json"
    assert headers["x-github-api-version"] == "2022-11-28"
    assert headers["content-type"] == "application/json"
    assert github_api.seen[-1].body == {"body": body}
    assert TOKEN not in repr(t)


def test_comment_on_page_12_is_updated_not_duplicated(github_api: GitHubServer) -> None:
    """The old transport stopped at 10 pages and then posted a second comment."""
    github_api.add("GET", COMMENTS, paged(github_api, COMMENTS, comments(1_150, ours_at=1_120)))
    github_api.add("PATCH", f"/repos/{REPO}/issues/comments/9999", reply(200, "id", 9_999))
    github_api.add("POST", COMMENTS, reply(201, "id", 1))
    assert upsert_comment(transport(github_api), REPO, 45, DEFAULT_MARKER, DEFAULT_MARKER) == (
        "updated", 9_999)
    assert len(github_api.calls("GET")) == 12 and github_api.calls("POST") == []


def test_listing_longer_than_the_page_cap_is_an_error_not_a_duplicate(
        github_api: GitHubServer) -> None:
    github_api.add("GET", COMMENTS, paged(github_api, COMMENTS, comments(500)))
    github_api.add("POST", COMMENTS, reply(201, "id", 1))
    with pytest.raises(GitHubError, match="more than 3 pages; refusing to act on a partial"):
        upsert_comment(transport(github_api, max_pages=3), REPO, 45, DEFAULT_MARKER, DEFAULT_MARKER)
    assert len(github_api.calls("GET")) == 3 and github_api.calls("POST") == []


def test_other_bots_marked_comment_is_not_ours(github_api: GitHubServer) -> None:
    """Without a default login any bot's comment quoting the marker was edited (or failed)."""
    other = {"login": "quotebot[bot]", "type": "Bot"}
    found = [{"id": 5, "user": other, "body": f"> {DEFAULT_MARKER}"}, *comments(3, ours_at=2)]
    github_api.add("GET", COMMENTS, (200, found, {}))
    github_api.add("PATCH", f"/repos/{REPO}/issues/comments/9999", reply(200, "id", 9_999))
    assert upsert_comment(transport(github_api), REPO, 45, DEFAULT_MARKER, DEFAULT_MARKER) == (
        "updated", 9_999)
    assert [s.path for s in github_api.calls("PATCH")] == [f"/repos/{REPO}/issues/comments/9999"]


SECONDARY = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes "
                        "before you try again."}


def test_secondary_rate_limit_waits_retry_after_then_succeeds(github_api: GitHubServer) -> None:
    github_api.add("GET", COMMENTS, (403, SECONDARY, {"Retry-After": "3"}),
            (403, SECONDARY, {"Retry-After": "1"}), (200, comments(2), {}))
    github_api.add("POST", COMMENTS, (403, SECONDARY, {"Retry-After": "2"}), reply(201, "id", 77))
    waits: list[float] = []
    result = upsert_comment(transport(github_api, waits), REPO, 45, DEFAULT_MARKER, DEFAULT_MARKER)
    assert result == ("created", 77)
    assert waits == [3.0, 1.0, 2.0]
    # a rate-limited POST was never processed: safe to repeat
    assert len(github_api.calls("POST")) == 2


def test_primary_rate_limit_waits_until_reset(github_api: GitHubServer) -> None:
    reset = str(int(time.time()) + 4)
    github_api.add("GET", "/x", (403, {"message": "API rate limit exceeded"},
                          {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}),
            (200, [], {}))
    waits: list[float] = []
    assert transport(github_api, waits).request("GET", "/x") == (200, [])
    assert len(waits) == 1 and 2.0 <= waits[0] <= 4.0


def test_5xx_then_success_backs_off(github_api: GitHubServer) -> None:
    github_api.add("GET", COMMENTS, (502, {"message": "Bad Gateway"}, {}),
            (503, {"message": "unavailable"}, {}), (200, comments(1), {}))
    github_api.add("POST", COMMENTS, reply(201, "id", 8))
    waits: list[float] = []
    t = transport(github_api, waits, retry=Retry(attempts=5, backoff_s=0.01, max_wait_s=1.0))
    assert upsert_comment(t, REPO, 45, DEFAULT_MARKER, DEFAULT_MARKER) == ("created", 8)
    assert waits == [0.01, 0.02]


def test_5xx_on_post_looks_again_before_posting_twice(github_api: GitHubServer) -> None:
    """A POST answered 502 may have landed: the comments are read again, nothing is doubled."""
    github_api.add("GET", COMMENTS, (200, comments(1), {}), (200, comments(2, ours_at=1), {}))
    github_api.add("POST", COMMENTS, (502, {"message": "Bad Gateway"}, {}), reply(201, "id", 8))
    waits: list[float] = []
    result = upsert_comment(transport(github_api, waits), REPO, 45, DEFAULT_MARKER, DEFAULT_MARKER)
    assert result == ("created", 9_999)
    assert len(github_api.calls("POST")) == 1 and waits == []


def test_403_without_permission_is_not_retried(github_api: GitHubServer) -> None:
    denial = {"message": "Resource not accessible by integration"}
    github_api.add("POST", "/denied", (403, denial, {}))
    waits: list[float] = []
    with pytest.raises(GitHubError, match="HTTP 403: Resource not accessible") as denied:
        transport(github_api, waits).request("POST", "/denied", body={"body": "x"})
    assert not denied.value.rate_limited and waits == [] and len(github_api.seen) == 1


def test_rate_limit_longer_than_the_bot_waits_is_reported_as_such(github_api: GitHubServer) -> None:
    github_api.add("GET", "/x", (403, SECONDARY, {"Retry-After": "3600"}))
    waits: list[float] = []
    with pytest.raises(GitHubError, match=r"HTTP 403: rate limited \(GitHub asks to wait 3600"):
        transport(github_api, waits).request("GET", "/x")
    assert waits == [] and len(github_api.seen) == 1


def test_cli_rate_limit_is_a_failure_not_a_permission_fallback(
        github_api: GitHubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    github_api.add("GET", f"/repos/{REPO}/commits/{SHA}/pulls", (200, [pr(45)], {}))
    github_api.add("GET", COMMENTS, (200, [], {}))
    github_api.add("POST", COMMENTS, (403, SECONDARY, {"Retry-After": "1"}))
    summary = tmp_path / "summary.md"
    waits: list[float] = []
    argv = [*comment_argv(tmp_path), "--summary-file", str(summary)]
    assert main(argv, transport=transport(github_api, waits)) == 1
    err = capsys.readouterr().err
    assert "rate limited" in err and "secondary rate limit" in err
    assert waits == [1.0, 1.0, 1.0] and len(github_api.calls("POST")) == 4
    assert not summary.exists()  # not reported as "the GitHub API refused"


@pytest.mark.parametrize(("status", "headers", "message", "expected"), [
    (403, {"retry-after": "30"}, "", 30.0),
    (429, {}, "", 60.0),
    (403, {}, "You have exceeded a secondary rate limit", 60.0),
    (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1010"}, "", 10.0),
    (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "990"}, "", 0.0),
    (403, {"x-ratelimit-remaining": "12"}, "Resource not accessible by integration", None),
    (403, {"retry-after": "soon"}, "Must have admin rights", None),
    (404, {"retry-after": "5"}, "", None),
    (500, {}, "rate limit", None),
])
def test_rate_limit_wait(status: int, headers: dict[str, str], message: str,
                         expected: float | None) -> None:
    assert rate_limit_wait(status, headers, message, now=1000.0) == expected


def test_retry_wait_policy() -> None:
    policy = Retry(attempts=3, backoff_s=1.0, max_wait_s=3.0)
    flaky = GitHubError(502, "GET", "/x", "", transient=True)
    assert [retry_wait(policy, "GET", flaky, n) for n in (1, 2, 3)] == [1.0, 2.0, None]
    assert retry_wait(policy, "POST", flaky, 1) is None  # may have landed: not blindly repeated
    limited = GitHubError(403, "POST", "/x", "", rate_limit_wait_s=2.0)
    assert retry_wait(policy, "POST", limited, 1) == 2.0
    assert retry_wait(policy, "GET", GitHubError(403, "GET", "/x", "", rate_limit_wait_s=9), 1) \
        is None
    assert retry_wait(policy, "GET", GitHubError(403, "GET", "/x", "denied"), 1) is None


def test_urllib_transport_raises_clear_errors_without_the_token(github_api: GitHubServer) -> None:
    github_api.add("GET", "/echo", (500, {"message": f"server saw Bearer {TOKEN}"}, {}))
    github_api.add("GET", "/escape", (200, [], {"Link": '<http://example.invalid/steal?page=2>; '
                                                 'rel="next"'}))
    t = transport(github_api)
    with pytest.raises(GitHubError, match="HTTP 500") as echoed:
        t.request("GET", "/echo")
    assert TOKEN not in str(echoed.value) and len(github_api.calls("GET", "/echo")) == FAST.attempts
    with pytest.raises(GitHubError, match="refusing a URL outside") as escaped:
        t.request("GET", "/escape")
    assert escaped.value.status == 0
    assert all(s.path in ("/echo", "/escape") for s in github_api.seen)
    waits: list[float] = []
    server_gone = UrllibTransport(TOKEN, "http://127.0.0.1:9", timeout_s=2, retry=FAST,
                                  sleep=waits.append)
    with pytest.raises(GitHubError, match="network error"):
        server_gone.request("GET", "/x")
    assert len(waits) == FAST.attempts - 1


def test_cli_with_real_transport_never_prints_the_token(
        github_api: GitHubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    denied = (403, {"message": "Resource not accessible by integration"}, {})
    for path in (f"/repos/{REPO}/commits/{SHA}/pulls", f"/repos/{REPO}/pulls"):
        github_api.add("GET", path, denied)
    monkeypatch.setenv("GITHUB_API_URL", github_api.url)
    summary = tmp_path / "summary.md"
    argv = [*comment_argv(tmp_path), "--summary-file", str(summary)]
    assert main(argv) == 0  # 403 without a rate limit -> fallback, at once
    (tmp_path / "i.md").write_text("x", encoding="utf-8")
    leaky = {"message": f"server saw Bearer {TOKEN}"}
    github_api.add("GET", f"/repos/{REPO}/issues", (422, leaky, {}))
    assert main(["tracking-issue", "--repo", REPO, "--body-file", str(tmp_path / "i.md")]) == 1
    out, err = capsys.readouterr()
    assert "HTTP 422" in err and "***" in err
    assert TOKEN not in out + err + summary.read_text(encoding="utf-8")
    assert all(s.headers["authorization"] == f"Bearer {TOKEN}" for s in github_api.seen)
