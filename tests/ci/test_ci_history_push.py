"""kernbench.ci.history_push against local bare repositories: races, re-runs, flaky fetches,
conflicts, and a token that never reaches a command line."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernbench.ci.history_push import PushPlan, auth_env, push_history
from kernbench.errors import KernbenchError
from support.kernel_tree import SRC

TOKEN = "ghs_FAKE_TOKEN_history_0123456789"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **auth_env({}, "", None)})
    return done.stdout.strip()


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    seed = clone(bare, tmp_path / "seed")
    (seed / "README").write_text("repo\n", encoding="utf-8")
    git(seed, "add", "README")
    git(seed, "commit", "-q", "-m", "initial")
    git(seed, "push", "-q", "origin", "HEAD:main")
    return bare


def clone(bare: Path, where: Path) -> Path:
    git(bare.parent, "clone", "-q", str(bare), str(where))
    return where


def add_record(repo: Path, name: str, data: str = "{}") -> None:
    folder = repo / "benchmarks" / "history" / "2026" / "05"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(data, encoding="utf-8")


def plan(repo: Path, bare: Path, message: str, attempts: int = 5) -> PushPlan:
    return PushPlan(repo, bare.as_uri(), "main", message, attempts=attempts, backoff_s=0.001)


def tree(bare: Path) -> list[str]:
    return git(bare, "ls-tree", "-r", "--name-only", "main").splitlines()


def subjects(bare: Path) -> list[str]:
    return git(bare, "log", "--format=%s", "main").splitlines()


def test_two_history_pushes_racing_both_land_once(origin: Path, tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        repo = clone(origin, tmp_path / name)
        add_record(repo, f"{name}.jsonl.gz", name)
        runs.append(subprocess.Popen(
            [sys.executable, "-m", "kernbench.ci.history_push", "--remote", origin.as_uri(),
             "--branch", "main", "--message", f"record {name}", "--repo-dir", str(repo),
             "--backoff-s", "0.001"],
            env={**os.environ, "PYTHONPATH": str(SRC)}, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    outputs = [run.communicate(timeout=60) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    # Both started from the same commit: one of them must have lost the race and rebased.
    assert any("attempt 1" not in out for out, _ in outputs), outputs
    records = [p for p in tree(origin) if p.startswith("benchmarks/history/")]
    assert sorted(records) == ["benchmarks/history/2026/05/a.jsonl.gz",
                               "benchmarks/history/2026/05/b.jsonl.gz"]
    assert sorted(subjects(origin)) == ["initial", "record a", "record b"]
    assert git(origin, "log", "--merges", "--format=%H", "main") == ""


def test_rerun_of_a_pushed_record_pushes_nothing_twice(origin: Path, tmp_path: Path) -> None:
    first, rerun = clone(origin, tmp_path / "first"), clone(origin, tmp_path / "rerun")
    add_record(first, "a.jsonl.gz")
    push_history(plan(first, origin, "record a"), auth_env(os.environ, "", None))
    add_record(rerun, "a.jsonl.gz")  # the same record, written again from the old checkout
    result = push_history(plan(rerun, origin, "record a, re-run"),
                          auth_env(os.environ, "", None))
    assert "attempt 2" in result
    assert subjects(origin) == ["record a", "initial"]
    assert push_history(plan(rerun, origin, "again"), os.environ) == (
        "nothing to push: no new history record")


@pytest.fixture
def logging_git(tmp_path: Path) -> Path:
    """A `git` on PATH that logs its command lines and fails the first `fetch`."""
    real = shutil.which("git")
    assert real is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "git.log"
    script = bin_dir / "git"
    script.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$*\" >> '{log}'\n"
        f"printf '%s\\n' \"${{GIT_CONFIG_KEY_0:-}}=${{GIT_CONFIG_VALUE_0:-}}\" >> '{log}.env'\n"
        f"if [ \"$1\" = fetch ] && [ ! -e '{log}.failed' ]; then\n"
        f"  touch '{log}.failed'; echo 'fatal: unable to access' >&2; exit 128\nfi\n"
        f"exec '{real}' \"$@\"\n", encoding="utf-8")
    script.chmod(0o755)
    return log


def test_failed_fetch_is_retried_and_the_token_stays_off_the_command_line(
        origin: Path, tmp_path: Path, logging_git: Path) -> None:
    winner, loser = clone(origin, tmp_path / "winner"), clone(origin, tmp_path / "loser")
    add_record(winner, "a.jsonl.gz", "a")
    git(winner, "add", "-A")
    git(winner, "commit", "-q", "-m", "record a")
    git(winner, "push", "-q", "origin", "HEAD:main")
    add_record(loser, "b.jsonl.gz", "b")
    env = {**os.environ, "GH_TOKEN": TOKEN,
           "PATH": f"{logging_git.parent / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    waits: list[float] = []
    result = push_history(plan(loser, origin, "record b"), auth_env(env, origin.as_uri(), TOKEN),
                          sleep=waits.append, jitter=lambda: 0.5)
    assert "attempt 3" in result  # rejected, fetch failed; rejected, rebased; pushed
    assert waits == [0.0015, 0.003]
    assert subjects(origin) == ["record b", "record a", "initial"]
    commands = logging_git.read_text(encoding="utf-8")
    verbs = [line.split()[0] for line in commands.splitlines()]
    assert verbs.count("fetch") == 2 and "pull" not in verbs
    assert TOKEN not in commands and "extraheader" not in commands
    header = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert (f"http.{origin.as_uri()}.extraheader=AUTHORIZATION: basic {header}"
            in Path(f"{logging_git}.env").read_text(encoding="utf-8").splitlines())


def test_auth_env_appends_to_existing_git_config_and_drops_the_token() -> None:
    env = auth_env({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "a.b", "GIT_CONFIG_VALUE_0": "c",
                    "GH_TOKEN": TOKEN, "GITHUB_TOKEN": TOKEN}, "https://example.test/r.git",
                   TOKEN)
    assert env["GIT_CONFIG_COUNT"] == "2" and env["GIT_CONFIG_KEY_0"] == "a.b"
    assert env["GIT_CONFIG_KEY_1"] == "http.https://example.test/r.git.extraheader"
    assert "GH_TOKEN" not in env and "GITHUB_TOKEN" not in env
    assert env["GIT_AUTHOR_NAME"] == "kernbench[bot]"


def test_conflicting_change_stops_without_forcing(origin: Path, tmp_path: Path) -> None:
    one, two = clone(origin, tmp_path / "one"), clone(origin, tmp_path / "two")
    add_record(one, "a.jsonl.gz", "one")
    push_history(plan(one, origin, "record a"), os.environ)
    add_record(two, "a.jsonl.gz", "two")
    with pytest.raises(KernbenchError, match=r"conflicted.*not forcing"):
        push_history(plan(two, origin, "record a, differently"), os.environ)
    assert subjects(origin) == ["record a", "initial"]
    assert not (two / ".git" / "rebase-merge").exists()
    assert not (two / ".git" / "rebase-apply").exists()


def test_cli_refuses_credentials_in_the_remote(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kernbench.ci.history_push", "--remote",
         f"https://x-access-token:{TOKEN}@example.test/r.git", "--message", "m",
         "--repo-dir", str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(SRC)}, capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "must not carry credentials" in done.stderr
