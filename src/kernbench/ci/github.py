"""The GitHub side of the PR comment bot and of the benchmark tracking issue.

Runs inside a trusted `workflow_run` workflow (default-branch code) with a `GITHUB_TOKEN`. Which
pull request to comment on is decided only from the `workflow_run` event (head sha, head
repository, head branch) and GitHub's own answers, never from the benchmark artifact: a PR
matches only while it is open and its head is still exactly that commit of that repository.

Standard library only. All HTTP goes through a :class:`Transport`, so tests inject a fake.
The real one (:class:`UrllibTransport`) retries what GitHub asks to be retried: a rate limit
(403/429 with `retry-after` or an exhausted `x-ratelimit-remaining`) after the wait it names,
a 5xx or network failure of an idempotent call with exponential backoff. A 403 that is not a
rate limit is a permission problem and is never retried. The token is never printed, logged
or put in an exception message.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from kernbench.errors import EXIT_FAILURES, EXIT_OK, KernbenchError

__all__ = ["DEFAULT_BOT_LOGIN", "GitHubError", "Retry", "Transport", "UrllibTransport",
           "check_body", "find_pull_request", "main", "rate_limit_wait", "retry_wait",
           "upsert_comment", "upsert_tracking_issue"]

API_URL = "https://api.github.com"
MAX_BODY_CHARS = 65_536  # GitHub refuses longer issue and comment bodies
DEFAULT_MARKER = "<!-- kernbench-comment -->"
DEFAULT_LABEL = "benchmark"
DEFAULT_TITLE = "kernbench: latest benchmark results on main"
DEFAULT_BOT_LOGIN = "github-actions[bot]"
"""Who a workflow's GITHUB_TOKEN posts as: only this account's comments and issues are edited."""
MAX_PAGES = 100
"""Pages a listing may have (100 items each); a longer one is an error, never a partial list."""
IDEMPOTENT = frozenset({"GET", "HEAD", "PATCH", "PUT", "DELETE"})
TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})
_PER_PAGE = {"per_page": "100"}
_REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA_RE = re.compile(r"^[0-9a-fA-F]{7,64}$")
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


def check_body(body: str, marker: str | None = None) -> None:
    """Refuse a body GitHub would reject, or one the next run could not find again."""
    if len(body) > MAX_BODY_CHARS:
        raise ValueError(f"body is {len(body)} characters; GitHub allows {MAX_BODY_CHARS}")
    if marker is not None and (not marker.strip() or marker not in body):
        raise ValueError(f"the body must contain the non-empty marker {marker!r}")


def _check_repo(repo: str) -> None:
    if not _REPO_RE.match(repo):
        raise ValueError(f"expected OWNER/NAME, got {repo!r}")


def _list(t: Transport, path: str, params: Mapping[str, str]) -> list[Any]:
    _, data = t.request("GET", path, params={**_PER_PAGE, **params})
    return data if isinstance(data, list) else []


def _same(value: object, expected: str) -> bool:
    return isinstance(value, str) and value.casefold() == expected.casefold()


def _is_bot(user: Any, login: str) -> bool:
    """`user` is the bot account `login` (GitHub's own answer, so the type is checked too)."""
    return isinstance(user, dict) and user.get("type") == "Bot" and _same(user.get("login"), login)


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def find_pull_request(t: Transport, repo: str, head_sha: str, head_repo: str,
                      head_branch: str | None) -> int | None:
    """The open PR into `repo` whose head is commit `head_sha` of `head_repo` (and branch
    `head_branch` when given); None when there is none: closed, or pushed to since the run.

    Tries `commits/{sha}/pulls` (same-repo branches), then `pulls?head=owner:branch` (forks),
    then every open PR (as many pages as the transport follows). Every candidate must pass the
    same exact filter, so a lookup can only narrow, never widen, what matches.
    """
    _check_repo(repo)
    _check_repo(head_repo)
    if not _SHA_RE.match(head_sha):
        raise ValueError(f"expected a commit sha, got {head_sha!r}")

    def matches(pr: Any) -> bool:
        return (_dig(pr, "state") == "open"
                and _same(_dig(pr, "head", "sha"), head_sha)
                and _same(_dig(pr, "head", "repo", "full_name"), head_repo)
                and _same(_dig(pr, "base", "repo", "full_name"), repo)
                and (not head_branch or _dig(pr, "head", "ref") == head_branch))

    def first(prs: list[Any]) -> int | None:
        return next((int(pr["number"]) for pr in prs if matches(pr)), None)

    try:  # fork commits usually give [] here, or 422 when the base repo does not know them
        found = first(_list(t, f"/repos/{repo}/commits/{head_sha}/pulls", {}))
    except GitHubError as exc:
        if exc.status not in (404, 422):
            raise
        found = None
    if found is None and head_branch:
        owner = head_repo.split("/")[0]
        found = first(_list(t, f"/repos/{repo}/pulls",
                            {"state": "open", "head": f"{owner}:{head_branch}"}))
    if found is None:
        found = first(_list(t, f"/repos/{repo}/pulls", {"state": "open"}))
    return found


def _own_comment(t: Transport, path: str, marker: str, bot_login: str) -> int | None:
    """The id of the first comment under `path` by `bot_login` that carries `marker`."""
    for comment in _list(t, path, {}):
        if marker in str(comment.get("body") or "") and _is_bot(comment.get("user"), bot_login):
            return int(comment["id"])
    return None


def upsert_comment(t: Transport, repo: str, number: int, body: str, marker: str, *,
                   bot_login: str = DEFAULT_BOT_LOGIN) -> tuple[str, int]:
    """Edit the comment carrying `marker` that `bot_login` wrote on PR `number`, or post one.

    Only that account's comment is edited: a human, or another bot, quoting the marker keeps
    theirs. Every page of comments is read, however long the PR. A POST that fails on a 5xx or
    a network error may still have landed, so the comments are read again before posting a
    second time. Returns ("updated" | "created", comment id).
    """
    _check_repo(repo)
    check_body(body, marker)
    path = f"/repos/{repo}/issues/{int(number)}/comments"
    found = _own_comment(t, path, marker, bot_login)
    if found is not None:
        _, data = t.request("PATCH", f"/repos/{repo}/issues/comments/{found}",
                            body={"body": body})
        return "updated", int(data["id"])
    try:
        _, data = t.request("POST", path, body={"body": body})
    except GitHubError as error:
        if not error.transient:
            raise
        found = _own_comment(t, path, marker, bot_login)
        if found is not None:
            return "created", found
        _, data = t.request("POST", path, body={"body": body})
    return "created", int(data["id"])


def upsert_tracking_issue(t: Transport, repo: str, label: str, title: str, body: str, *,
                          bot_login: str = DEFAULT_BOT_LOGIN) -> tuple[str, int]:
    """Replace the body of the newest open issue labelled `label` that `bot_login` opened, or
    open one.

    The issues API also lists pull requests; those are skipped. A new issue is created with
    `labels=[label]`: GitHub creates a missing label for a token with push access (the workflow's
    `issues: write` token) and silently drops labels otherwise, in which case the next run will
    not find the issue and opens another. Returns ("updated" | "created", issue number).
    """
    _check_repo(repo)
    check_body(body)
    if not label.strip() or not title.strip():
        raise ValueError("the tracking issue needs a non-empty label and title")
    issues = _list(t, f"/repos/{repo}/issues", {"state": "open", "labels": label,
                                                "sort": "created", "direction": "desc"})
    for issue in issues:
        if "pull_request" not in issue and _is_bot(issue.get("user"), bot_login):
            _, data = t.request("PATCH", f"/repos/{repo}/issues/{int(issue['number'])}",
                                body={"body": body})
            return "updated", int(data["number"])
    _, data = t.request("POST", f"/repos/{repo}/issues",
                        body={"title": title, "body": body, "labels": [label]})
    return "created", int(data["number"])


# ---------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kernbench.ci.github",
        description="Post kernbench results to GitHub. The token is read from $GITHUB_TOKEN.")
    sub = parser.add_subparsers(dest="command", required=True)
    comment = sub.add_parser("comment", help="create or update the PR comment")
    comment.add_argument("--repo", required=True, help="base repository OWNER/NAME")
    comment.add_argument("--head-sha", required=True, help="workflow_run.head_sha")
    comment.add_argument("--head-repo", required=True,
                         help="workflow_run.head_repository.full_name")
    comment.add_argument("--head-branch", default="", help="workflow_run.head_branch")
    comment.add_argument("--body-file", type=Path, required=True)
    comment.add_argument("--marker", default=DEFAULT_MARKER)
    comment.add_argument("--bot-login", default=DEFAULT_BOT_LOGIN,
                         help="the account the token posts as; only its comment is edited "
                              f"(default: {DEFAULT_BOT_LOGIN}, a workflow's GITHUB_TOKEN)")
    comment.add_argument("--summary-file", type=Path, default=None,
                         help="fallback when no comment can be posted "
                              "(default: $GITHUB_STEP_SUMMARY)")
    issue = sub.add_parser("tracking-issue", help="create or update the tracking issue")
    issue.add_argument("--repo", required=True, help="repository OWNER/NAME")
    issue.add_argument("--body-file", type=Path, required=True)
    issue.add_argument("--label", default=DEFAULT_LABEL)
    issue.add_argument("--title", default=DEFAULT_TITLE)
    issue.add_argument("--bot-login", default=DEFAULT_BOT_LOGIN,
                       help=f"the account the token posts as (default: {DEFAULT_BOT_LOGIN})")
    artifact = sub.add_parser("artifact", help="download a run's artifact, size-capped first")
    artifact.add_argument("--repo", required=True, help="repository OWNER/NAME")
    artifact.add_argument("--run-id", type=int, required=True, help="workflow_run.id")
    artifact.add_argument("--name", required=True, help="artifact name")
    artifact.add_argument("--out", type=Path, required=True, help="new directory to unpack into")
    artifact.add_argument("--max-bytes", type=int, default=50_000_000,
                          help="refuse an artifact larger than this, zipped or unpacked")
    return parser


def _fallback(args: argparse.Namespace, body: str, reason: str) -> str:
    summary = args.summary_file or os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        print(body)
        return f"{reason}: no job summary file, printed the comment instead"
    with open(summary, "a", encoding="utf-8") as out:
        out.write(f"> **kernbench:** {reason}, so the comment was not posted.\n\n{body}\n")
    return f"{reason}: wrote the comment to the job summary"


def _comment(t: Transport, args: argparse.Namespace, body: str) -> str:
    if args.marker not in body:
        body = f"{args.marker}\n{body}"
    check_body(body, args.marker)
    try:
        number = find_pull_request(t, args.repo, args.head_sha, args.head_repo, args.head_branch)
        if number is None:
            return _fallback(args, body, f"no open PR for {args.head_sha} from {args.head_repo}")
        action, comment_id = upsert_comment(t, args.repo, number, body, args.marker,
                                            bot_login=args.bot_login)
    except GitHubError as exc:
        if exc.status not in (403, 404) or exc.rate_limited:
            raise  # a rate limit is not a refusal: the run fails and says so
        return _fallback(args, body, f"the GitHub API refused ({exc.message})")
    return f"{action} comment {comment_id} on #{number}"


def _artifact(t: Transport, args: argparse.Namespace) -> str:
    from kernbench.ci.artifact import Downloader, download_artifact

    if not isinstance(t, Downloader):
        raise KernbenchError("artifact: this transport cannot download")
    _check_repo(args.repo)
    files = download_artifact(t, args.repo, args.run_id, args.name, args.out,
                              max_zip_bytes=args.max_bytes, max_unzipped_bytes=args.max_bytes)
    return f"unpacked {files} files of artifact {args.name!r} into {args.out}"


def _dispatch(t: Transport, args: argparse.Namespace) -> str:
    if args.command == "artifact":
        return _artifact(t, args)
    body = args.body_file.read_text(encoding="utf-8")
    if args.command == "comment":
        return _comment(t, args, body)
    action, number = upsert_tracking_issue(t, args.repo, args.label, args.title, body,
                                           bot_login=args.bot_login)
    return f"{action} issue #{number}"


def main(argv: Sequence[str] | None = None, transport: Transport | None = None) -> int:
    """Exit codes: 0 done (or fell back to the job summary), 1 error, 2 usage."""
    args = _parser().parse_args(argv)
    try:
        if transport is None:
            token = os.environ.get("GITHUB_TOKEN", "")
            if not token:
                raise KernbenchError("GITHUB_TOKEN is not set")
            transport = UrllibTransport(token, os.environ.get("GITHUB_API_URL", API_URL))
        print(_dispatch(transport, args))
    except (KernbenchError, ValueError, OSError) as exc:
        print(f"kernbench.ci.github: error: {exc}", file=sys.stderr)
        return EXIT_FAILURES
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
