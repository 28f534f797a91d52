"""Tests for kernbench.analysis.gitref: the history at a git ref, read without touching the work
tree."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from kernbench.analysis import gitref
from kernbench.analysis.gitref import history_at_ref, list_history, resolve_ref
from kernbench.errors import KernbenchError
from kernbench.results.history import append_record
from kernbench.results.history_names import HISTORY_DIR
from kernbench.results.history_record import history_record
from support.git import git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not on PATH")

FP = "0123456789abcdef"
OTHER_FP = "fedcba9876543210"


def make_record(created_at: str, fingerprint: str, branch: str, kernel: str) -> dict[str, Any]:
    summary = {"schema_version": 1, "settings": {"iterations": 2},
               "results": [{"kernel_name": kernel, "backend": "cpu", "precision": "fp32",
                            "status": "ok", "timing": {"samples_ms": [1.0, 2.0]}}]}
    env = {"fingerprint": fingerprint, "cpu": {"model": "cpu"},
           "git": {"commit": "a" * 40, "short_commit": "a" * 12, "branch": branch}}
    return history_record(summary, env, created_at=created_at)


def commit_record(repo: Path, record: dict[str, Any], message: str) -> Path:
    path = append_record(repo, record, fsync=False)
    git(repo, "add", str(path.relative_to(repo)))
    git(repo, "commit", "-q", "-m", message)
    return path


@pytest.fixture()
def repo(git_repo: Path) -> Path:
    """main: two records of this machine, one of another; feature: one newer record on top.

    Left checked out on `feature`, with a modified tracked file, a staged change and an
    untracked file, so any change to the work tree or index would show."""
    path = git_repo
    commit_record(path, make_record("2024-01-01T00:00:00Z", FP, "main", "old"), "r1")
    commit_record(path, make_record("2024-02-01T00:00:00Z", OTHER_FP, "main", "x"), "r2")
    commit_record(path, make_record("2024-03-01T00:00:00Z", FP, "main", "mainline"), "r3")
    git(path, "checkout", "-q", "-b", "feature")
    commit_record(path, make_record("2024-04-01T00:00:00Z", FP, "feature", "branchy"), "r4")
    (path / "a.txt").write_text("changed in the work tree\n")
    (path / "staged.txt").write_text("staged\n")
    git(path, "add", "staged.txt")
    (path / "untracked.txt").write_text("untracked\n")
    return path


def snapshot(repo: Path) -> dict[str, Any]:
    files = {p.relative_to(repo).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(repo.rglob("*")) if p.is_file() and ".git" not in p.parts}
    return {"status": git(repo, "status", "--porcelain", "--untracked-files=all"),
            "index": hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
            "head": git(repo, "symbolic-ref", "HEAD"), "files": files,
            "git_dir": sorted(p.name for p in (repo / ".git").iterdir())}


def test_main_record_not_the_branch_one_and_nothing_touched(repo: Path) -> None:
    before = snapshot(repo)
    record, message = history_at_ref(repo, "main", FP)
    assert record is not None
    assert record["results"][0]["kernel_name"] == "mainline"
    assert record["created_at"] == "2024-03-01T00:00:00.000Z"
    assert "found the newest of 2 records for this machine" in message
    assert snapshot(repo) == before
    branch_record, _ = history_at_ref(repo, "feature", FP)
    assert branch_record is not None and branch_record["results"][0]["kernel_name"] == "branchy"
    assert snapshot(repo) == before


def test_only_this_machines_blobs_are_read(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    original = gitref._BlobReader.read

    def spy(self: gitref._BlobReader, oid: str) -> bytes | None:
        read.append(oid)
        return original(self, oid)

    monkeypatch.setattr(gitref._BlobReader, "read", spy)
    commit = resolve_ref(repo, "main")
    assert commit is not None
    entries = list_history(repo, commit)
    assert entries is not None and len(entries) == 3
    newest_mine = max((e for e in entries if e.name and e.name.fingerprint == FP),
                      key=lambda e: e.path)
    record, _ = history_at_ref(repo, "main", FP)
    assert record is not None and read == [newest_mine.oid]


def test_any_machine_when_no_fingerprint(repo: Path) -> None:
    git(repo, "checkout", "-q", "main")
    commit_record(repo, make_record("2024-05-01T00:00:00Z", OTHER_FP, "main", "newest"), "r5")
    record, message = history_at_ref(repo, "main", None)
    assert record is not None and record["fingerprint"] == OTHER_FP
    assert "for any machine" in message


def test_a_corrupt_newest_blob_falls_back_to_the_next(repo: Path) -> None:
    git(repo, "checkout", "-q", "main")
    good = make_record("2024-06-01T00:00:00Z", FP, "main", "corrupted")
    path = append_record(repo, good, fsync=False)
    path.write_bytes(path.read_bytes()[:15])
    git(repo, "add", str(path.relative_to(repo)))
    git(repo, "commit", "-q", "-m", "broken")
    record, message = history_at_ref(repo, "main", FP)
    assert record is not None and record["results"][0]["kernel_name"] == "mainline"
    assert f"newer ones skipped, unreadable: main:{path.relative_to(repo).as_posix()}" in message


def test_records_of_the_machine_none_of_which_can_be_read_are_an_error(repo: Path) -> None:
    git(repo, "checkout", "-q", "main")
    for path in sorted((repo / HISTORY_DIR).rglob("*.jsonl.gz")):
        path.write_bytes(b"not gzip")
    git(repo, "commit", "-q", "-am", "all broken")
    with pytest.raises(KernbenchError, match=r"history at main has 3 records, 2 possibly for "
                       r"this machine .*, but none can be read: main:.*\(and 1 more problem\)"):
        history_at_ref(repo, "main", FP)


def test_other_machines_are_listed(repo: Path) -> None:
    record, message = history_at_ref(repo, "main", "9999999999999999")
    assert record is None
    assert message == ("history at main has 3 records, none for this machine (fingerprint "
                       f"9999999999999999); machines there: {FP} (2), {OTHER_FP} (1)")


def test_unknown_ref(repo: Path) -> None:
    assert history_at_ref(repo, "nope", FP) == (None, "ref 'nope' does not exist")
    assert resolve_ref(repo, "nope") is None
    assert resolve_ref(repo, "--help") is None
    assert resolve_ref(repo, "main") == git(repo, "rev-parse", "main")


def test_no_history_at_the_ref(repo: Path) -> None:
    git(repo, "tag", "bare", "main~3")
    assert history_at_ref(repo, "bare", FP) == (
        None, f"no benchmark history at bare ({HISTORY_DIR} is empty there)")


def test_no_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    plain = tmp_path / "plain"
    plain.mkdir()
    assert history_at_ref(plain, "main", FP) == (None, f"no git repository at {plain}")
    assert resolve_ref(plain, "main") is None


def test_a_shallow_clone_hint_for_an_abbreviated_sha_asks_for_the_full_one() -> None:
    from kernbench.analysis.gitref import shallow_fetch_hint

    full = "9" * 40
    assert f"git fetch --depth=1 origin {full}" in shallow_fetch_hint(full)
    short = shallow_fetch_hint("999801392bfa")  # a remote does not expand it: fetch fails
    assert "999801392bfa" not in short and "full 40-character sha" in short


def test_the_prefix_of_a_folder_inside_a_repository(repo: Path) -> None:
    from kernbench.analysis.gitref import prefix_in_repository

    (repo / "sub" / "dir").mkdir(parents=True)
    assert prefix_in_repository(repo) == ""
    assert prefix_in_repository(repo / "sub" / "dir") == "sub/dir/"


def test_a_ref_that_names_a_file_is_said_to_be_no_commit(repo: Path) -> None:
    from kernbench.analysis.gitref import check_ref
    from kernbench.errors import KernbenchError

    ref = "HEAD:a.txt"  # a tracked file
    with pytest.raises(KernbenchError, match=rf"--compare-to {ref}: names a blob in .*, not a "
                                             r"commit"):
        check_ref(repo, ref)
