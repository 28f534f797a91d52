"""Tests for kernbench.execution.rehearsal: a fork server runs one no-op case through the
worker's path before its first fork, and leaves no trace of it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kernbench.execution import rehearsal
from kernbench.execution.forkserver import ForkServer, fork_supported
from kernbench.execution.launcher import worker_env


def test_a_rehearsal_runs_the_whole_path_and_puts_everything_back() -> None:
    path, argv = list(sys.path), list(sys.argv)
    modules = set(sys.modules)
    assert rehearsal.rehearse("numpy") is None
    assert rehearsal.rehearse("python") is None
    assert sys.path == path and sys.argv == argv
    assert not [m for m in set(sys.modules) - modules if m.startswith("kernbench_kernel_")]


def test_a_failed_rehearsal_says_why_and_still_puts_everything_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import kernbench.execution.worker as worker

    def broken(job: object) -> object:
        sys.path.insert(0, "/nowhere")
        raise RuntimeError("no luck")

    monkeypatch.setattr(worker, "run_job", broken)
    path = list(sys.path)
    assert rehearsal.rehearse("numpy") == "RuntimeError: no luck"
    assert sys.path == path


def test_a_gpu_framework_rehearses_without_its_framework(monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch or JAX server must not touch its device runtime before the fork: it rehearses a
    plain-Python case."""
    import kernbench.execution.worker as worker

    seen: list[str] = []
    real = worker.run_job

    def spy(job):  # type: ignore[no-untyped-def]
        seen.append(job.framework)
        return real(job)

    monkeypatch.setattr(worker, "run_job", spy)
    for key in ("pytorch", "jax", "python", "numpy"):
        assert rehearsal.rehearse(key) is None
    assert seen == ["python", "python", "python", "numpy"]


@pytest.mark.skipif(fork_supported() is not None, reason="fork servers unsupported here")
def test_a_fork_server_says_its_rehearsal_went_well(tmp_path: Path) -> None:
    server = ForkServer("numpy", str(tmp_path), worker_env())
    try:
        hello = server.ready()
    finally:
        server.close()
    assert hello["rehearsal"] is None
    assert hello["unsafe"] is None
