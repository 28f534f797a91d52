"""The GitHub side of the PR comment bot and of the benchmark tracking issue.

Runs inside a trusted `workflow_run` workflow (default-branch code) with a `GITHUB_TOKEN`. Which
pull request to comment on is decided only from the `workflow_run` event (head sha, head
repository, head branch) and GitHub's own answers, never from the benchmark artifact: a PR
matches only while it is open and its head is still exactly that commit of that repository.

Standard library only. Every call goes through a :class:`~kernbench.ci.transport.Transport`
(HTTP, retries and rate limits live in :mod:`kernbench.ci.transport`), so tests inject a fake.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernbench.ci.transport import API_URL, GitHubError, Transport, UrllibTransport
from kernbench.errors import EXIT_FAILURES, EXIT_OK, KernbenchError

__all__ = ["DEFAULT_BOT_LOGIN", "DEFAULT_MARKER", "MAX_BODY_CHARS", "check_body",
           "find_pull_request", "main", "upsert_comment", "upsert_tracking_issue"]

MAX_BODY_CHARS = 65_536  # GitHub refuses longer issue and comment bodies
DEFAULT_MARKER = "<!-- kernbench-comment -->"
DEFAULT_LABEL = "benchmark"
DEFAULT_TITLE = "kernbench: latest benchmark results on main"
DEFAULT_BOT_LOGIN = "github-actions[bot]"
"""Who a workflow's GITHUB_TOKEN posts as: only this account's comments and issues are edited."""
_PER_PAGE = {"per_page": "100"}
_REPO_RE = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA_RE = re.compile(r"^[0-9a-fA-F]{7,64}$")


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
        allow_abbrev=False,
        prog="python -m kernbench.ci.github",
        description="Post kernbench results to GitHub. The token is read from $GITHUB_TOKEN.")
    sub = parser.add_subparsers(dest="command", required=True)
    comment = sub.add_parser("comment", allow_abbrev=False,
                             help="create or update the PR comment")
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
    issue = sub.add_parser("tracking-issue", allow_abbrev=False,
                           help="create or update the tracking issue")
    issue.add_argument("--repo", required=True, help="repository OWNER/NAME")
    issue.add_argument("--body-file", type=Path, required=True)
    issue.add_argument("--label", default=DEFAULT_LABEL)
    issue.add_argument("--title", default=DEFAULT_TITLE)
    issue.add_argument("--bot-login", default=DEFAULT_BOT_LOGIN,
                       help=f"the account the token posts as (default: {DEFAULT_BOT_LOGIN})")
    artifact = sub.add_parser("artifact", allow_abbrev=False,
                              help="download a run's artifact, size-capped first")
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
