"""Fixtures shared by more than one test module.

Plain helpers that tests call with arguments (writing a kernel tree, running the CLI, git in a
temporary repository, the fake GitHub server, golden report inputs) live in ``tests/support/``
and are imported by name; what needs pytest's set-up and tear-down lives here.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.git import git
from support.github_server import GitHubServer, running

# JAX takes 75 % of a GPU's memory in the first process that uses it: under `pytest -n`, one
# test process starved every other one on the GPU (torch and JAX tests failed with out-of-memory
# on an H100). The workers of a kernbench run that a test starts inherit this too.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


@pytest.fixture(autouse=True)
def jax_platforms_restored() -> Iterator[None]:
    """A JAX case on the CPU, run in this process, limits JAX to its CPU platform (a worker's
    one case: kernbench.measure.backends.jax_backend); the next test gets the setting back."""
    jax = sys.modules.get("jax")
    before = getattr(getattr(jax, "config", None), "jax_platforms", None)
    yield
    jax = sys.modules.get("jax")
    if jax is not None and getattr(jax.config, "jax_platforms", None) != before:
        jax.config.update("jax_platforms", before)


@pytest.fixture(autouse=True)
def visible_gpus_restored() -> Iterator[None]:
    """A PyTorch case on the CPU, run in this process, hides the GPUs from everything after it
    (a worker's one case empties CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES); on a GPU
    machine every later test's kernbench would then see none."""
    names = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
    before = {name: os.environ.get(name) for name in names}
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


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
