"""Commit the new history record and push it, surviving races with other pushes to the branch.

Runs in bench.yml's `history` job (trusted code of the default branch, `contents: write`).
Several pushes to main can finish close together, and each of their jobs appends one new file
under ``benchmarks/history``, so their commits never conflict: a rejected push is followed by a
fetch and a rebase onto the branch, and another push, with jittered exponential backoff, never
forcing. A fetch that fails is retried the same way. A rebase that conflicts (someone changed
an existing record) stops with an error rather than guessing. A record already on the branch
(a re-run job) leaves an empty commit that the rebase drops, so nothing is pushed twice.

The token reaches git through the environment only (``GIT_CONFIG_COUNT``/``KEY``/``VALUE``
define an ``http.<remote>.extraheader``), never through a command line, which every process
on the machine can read.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernbench.errors import EXIT_FAILURES, EXIT_OK, KernbenchError

__all__ = ["PushPlan", "auth_env", "main", "push_history"]

AUTHOR = ("kernbench[bot]", "kernbench-bot@users.noreply.github.com")
_TOKEN_VARIABLES = ("GH_TOKEN", "GITHUB_TOKEN")


@dataclass(frozen=True)
class PushPlan:
    """What to push where: `paths` of `repo_dir`, committed with `message`, to `branch` of
    `remote`, in at most `attempts` pushes; waits start at `backoff_s` and double."""

    repo_dir: Path
    remote: str
    branch: str
    message: str
    paths: tuple[str, ...] = ("benchmarks/history",)
    attempts: int = 5
    backoff_s: float = 2.0


def auth_env(env: Mapping[str, str], remote: str, token: str | None) -> dict[str, str]:
    """`env` for git: the token as an extra HTTP header for `remote` only, the token variables
    themselves removed, and a commit identity when none is set."""
    result = {k: v for k, v in env.items() if k not in _TOKEN_VARIABLES}
    for role in ("AUTHOR", "COMMITTER"):
        result.setdefault(f"GIT_{role}_NAME", AUTHOR[0])
        result.setdefault(f"GIT_{role}_EMAIL", AUTHOR[1])
    if token:
        count = int(result.get("GIT_CONFIG_COUNT") or 0)
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        result[f"GIT_CONFIG_KEY_{count}"] = f"http.{remote}.extraheader"
        result[f"GIT_CONFIG_VALUE_{count}"] = f"AUTHORIZATION: basic {basic}"
        result["GIT_CONFIG_COUNT"] = str(count + 1)
    return result


@dataclass(frozen=True)
class _Git:
    cwd: Path
    env: Mapping[str, str]

    def ok(self, *args: str) -> bool:
        done = subprocess.run(["git", *args], cwd=self.cwd, env=dict(self.env), check=False,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if done.returncode and done.stderr.strip():
            print(f"git {args[0]}: exit {done.returncode}: {done.stderr.strip()[-500:]}",
                  file=sys.stderr)
        return done.returncode == 0

    def run(self, *args: str) -> None:
        if not self.ok(*args):
            raise KernbenchError(f"git {' '.join(args[:2])} failed in {self.cwd}")


def _rebase(git: _Git, plan: PushPlan) -> None:
    """Replay our commit on the remote branch; a failed fetch is left to the next attempt."""
    if not git.ok("fetch", "-q", plan.remote, plan.branch):
        return
    if not git.ok("rebase", "-q", "FETCH_HEAD"):
        git.ok("rebase", "--abort")
        raise KernbenchError(f"rebasing onto {plan.branch} conflicted: history records are "
                             "append-only, so an existing file was changed; not forcing")


def push_history(plan: PushPlan, env: Mapping[str, str], *,
                 sleep: Callable[[float], None] = time.sleep,
                 jitter: Callable[[], float] = random.random) -> str:
    """Commit `plan.paths` and push; what happened, or KernbenchError after the last attempt."""
    git = _Git(plan.repo_dir, env)
    git.run("add", "--", *plan.paths)
    if git.ok("diff", "--cached", "--quiet"):
        return "nothing to push: no new history record"
    git.run("commit", "-q", "-m", plan.message)
    for attempt in range(1, plan.attempts + 1):
        if git.ok("push", "-q", plan.remote, f"HEAD:refs/heads/{plan.branch}"):
            return f"pushed the history record to {plan.branch} (attempt {attempt})"
        if attempt < plan.attempts:
            sleep(plan.backoff_s * 2.0 ** (attempt - 1) * (1.0 + jitter()))
            _rebase(git, plan)
    raise KernbenchError(f"could not push the history record to {plan.branch} after "
                         f"{plan.attempts} attempts")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="python -m kernbench.ci.history_push",
        description="Commit benchmarks/history and push it, rebasing and retrying on a race. "
                    "The token, if any, is read from $GH_TOKEN or $GITHUB_TOKEN.")
    parser.add_argument("--remote", required=True, help="URL to push to (no credentials in it)")
    parser.add_argument("--branch", default="main")
    parser.add_argument("--message", required=True, help="commit message")
    parser.add_argument("--repo-dir", type=Path, default=Path("."))
    parser.add_argument("--path", action="append", dest="paths", default=None,
                        help="what to commit (default: benchmarks/history); repeatable")
    parser.add_argument("--attempts", type=int, default=5)
    parser.add_argument("--backoff-s", type=float, default=2.0)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    plan = PushPlan(args.repo_dir, args.remote, args.branch, args.message,
                    tuple(args.paths or PushPlan.paths), max(1, args.attempts), args.backoff_s)
    if "@" in args.remote.split("//", 1)[-1].split("/", 1)[0]:
        print("kernbench.ci.history_push: error: --remote must not carry credentials",
              file=sys.stderr)
        return EXIT_FAILURES
    token = next((os.environ[v] for v in _TOKEN_VARIABLES if os.environ.get(v)), None)
    try:
        print(push_history(plan, auth_env(os.environ, args.remote, token)))
    except KernbenchError as exc:
        print(f"kernbench.ci.history_push: error: {exc}", file=sys.stderr)
        return EXIT_FAILURES
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
