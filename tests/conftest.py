"""Fixtures shared by more than one test module.

Plain helpers that tests call with arguments (writing a kernel tree, running the CLI, git in a
temporary repository, the fake GitHub server, golden report inputs) live in ``tests/support/``
and are imported by name; what needs pytest's set-up and tear-down lives here.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.git import git
from support.github_server import GitHubServer, running


@pytest.fixture
def github_api() -> Iterator[GitHubServer]:
    """A fake GitHub REST API on a local port, answering what the test queues with `add`."""
    with running() as server:
        yield server


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A git repository on `main` with one commit of one file (`a.txt`), no user config read."""
    if shutil.which("git") is None:
        pytest.skip("git not on PATH")
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("one\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-q", "-m", "first")
    return path
