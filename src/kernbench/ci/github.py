"""The GitHub side of the PR comment bot and of the benchmark tracking issue.

Runs inside a trusted `workflow_run` workflow (default-branch code) with a `GITHUB_TOKEN`. Which
pull request to comment on is decided only from the `workflow_run` event (head sha, head
repository, head branch) and GitHub's own answers, never from the benchmark artifact: a PR
matches only while it is open and its head is still exactly that commit of that repository.

Standard library only. All HTTP goes through a :class:`Transport`, so tests inject a fake.
The token is never printed, logged or put in an exception message.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from kernbench.errors import EXIT_FAILURES, EXIT_OK, KernbenchError

__all__ = ["GitHubError", "Transport", "UrllibTransport", "check_body", "find_pull_request",
           "main", "upsert_comment", "upsert_tracking_issue"]

API_URL = "https://api.github.com"
MAX_BODY_CHARS = 65_536  # GitHub refuses longer issue and comment bodies
DEFAULT_MARKER = "<!-- kernbench-comment -->"
DEFAULT_LABEL = "benchmark"
DEFAULT_TITLE = "kernbench: latest benchmark results on main"
_PER_PAGE = {"per_page": "100"}
_REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA_RE = re.compile(r"^[0-9a-fA-F]{7,64}$")
_NEXT_RE = re.compile(r'<([^>]*)>\s*;\s*rel="next"')


class GitHubError(KernbenchError):
    """The API answered 4xx/5xx (`status`) or could not be reached (`status` 0)."""

    exit_code = EXIT_FAILURES

    def __init__(self, status: int, method: str, where: str, detail: str) -> None:
        code = f"HTTP {status}" if status else "no answer"
        super().__init__(f"GitHub API {method} {where}: {code}: {detail}")
        self.status = status


class Transport(Protocol):
    """One REST call. Raises :class:`GitHubError` on 4xx/5xx; a GET answering a JSON list returns
    every page (up to the transport's limit) concatenated."""

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None,
                params: Mapping[str, str] | None = None) -> tuple[int, Any]: ...


class UrllibTransport:
    """The real transport: urllib, JSON, `Link: rel="next"` pagination up to `max_pages`.

    Authorization is an unredirected header, so a redirect never carries the token elsewhere,
    and a `next` link outside `api_url` is refused rather than followed.
    """

    def __init__(self, token: str, api_url: str = API_URL, *, timeout_s: float = 30.0,
                 max_pages: int = 10) -> None:
        self._token = token
        self.api_url = api_url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_pages = max_pages

    def __repr__(self) -> str:
        return f"UrllibTransport(api_url={self.api_url!r})"

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None,
                params: Mapping[str, str] | None = None) -> tuple[int, Any]:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        status, data, next_url = self._send(method, f"{self.api_url}{path}{query}", body)
        pages = 1
        while method == "GET" and isinstance(data, list) and next_url and pages < self.max_pages:
            status, more, next_url = self._send("GET", next_url, None)
            data = data + (more if isinstance(more, list) else [])
            pages += 1
        return status, data

    def _send(self, method: str, url: str,
              body: Mapping[str, Any] | None) -> tuple[int, Any, str | None]:
        where = url.removeprefix(self.api_url)
        if not url.startswith(f"{self.api_url}/"):
            raise GitHubError(0, method, where, f"refusing a URL outside {self.api_url}")
        payload = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=payload, method=method)
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("X-GitHub-Api-Version", "2022-11-28")
        req.add_header("User-Agent", "kernbench-ci")
        if payload is not None:
            req.add_header("Content-Type", "application/json")
        req.add_unredirected_header("Authorization", f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                status, raw, link = resp.status, resp.read(), resp.headers.get("Link")
        except urllib.error.HTTPError as exc:
            raise GitHubError(exc.code, method, where, self._scrub(_error_detail(exc))) from None
        except OSError as exc:  # URLError, timeouts, refused connections
            reason = getattr(exc, "reason", exc)
            raise GitHubError(0, method, where, self._scrub(f"network error: {reason}")) from None
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            raise GitHubError(status, method, where, "answer is not JSON") from None
        match = _NEXT_RE.search(link or "")
        return status, data, match.group(1) if match else None

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


def _is_bot(user: Any, login: str | None = None) -> bool:
    if not isinstance(user, dict) or user.get("type") != "Bot":
        return False
    return login is None or _same(user.get("login"), login)


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


def upsert_comment(t: Transport, repo: str, number: int, body: str, marker: str, *,
                   bot_login: str | None = None) -> tuple[str, int]:
    """Edit the bot's comment carrying `marker` on PR `number`, or post one.

    Only a comment authored by a bot (`bot_login` when given) is edited: a human quoting the
    marker keeps their comment. Returns ("updated" | "created", comment id).
    """
    _check_repo(repo)
    check_body(body, marker)
    for comment in _list(t, f"/repos/{repo}/issues/{int(number)}/comments", {}):
        if marker in str(comment.get("body") or "") and _is_bot(comment.get("user"), bot_login):
            path = f"/repos/{repo}/issues/comments/{int(comment['id'])}"
            _, data = t.request("PATCH", path, body={"body": body})
            return "updated", int(data["id"])
    _, data = t.request("POST", f"/repos/{repo}/issues/{int(number)}/comments", body={"body": body})
    return "created", int(data["id"])


def upsert_tracking_issue(t: Transport, repo: str, label: str, title: str,
                          body: str) -> tuple[str, int]:
    """Replace the body of the newest open bot-authored issue labelled `label`, or open one.

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
        if "pull_request" not in issue and _is_bot(issue.get("user")):
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
    comment.add_argument("--bot-login", default=None,
                         help="only edit comments by this bot (default: any bot account)")
    comment.add_argument("--summary-file", type=Path, default=None,
                         help="fallback when no comment can be posted "
                              "(default: $GITHUB_STEP_SUMMARY)")
    issue = sub.add_parser("tracking-issue", help="create or update the tracking issue")
    issue.add_argument("--repo", required=True, help="repository OWNER/NAME")
    issue.add_argument("--body-file", type=Path, required=True)
    issue.add_argument("--label", default=DEFAULT_LABEL)
    issue.add_argument("--title", default=DEFAULT_TITLE)
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
        if exc.status not in (403, 404):
            raise
        return _fallback(args, body, f"the GitHub API refused ({exc.message})")
    return f"{action} comment {comment_id} on #{number}"


def main(argv: Sequence[str] | None = None, transport: Transport | None = None) -> int:
    """Exit codes: 0 done (or fell back to the job summary), 1 error, 2 usage."""
    args = _parser().parse_args(argv)
    try:
        if transport is None:
            token = os.environ.get("GITHUB_TOKEN", "")
            if not token:
                raise KernbenchError("GITHUB_TOKEN is not set")
            transport = UrllibTransport(token, os.environ.get("GITHUB_API_URL", API_URL))
        body = args.body_file.read_text(encoding="utf-8")
        if args.command == "comment":
            print(_comment(transport, args, body))
        else:
            action, number = upsert_tracking_issue(transport, args.repo, args.label,
                                                   args.title, body)
            print(f"{action} issue #{number}")
    except (KernbenchError, ValueError, OSError) as exc:
        print(f"kernbench.ci.github: error: {exc}", file=sys.stderr)
        return EXIT_FAILURES
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
