"""A spawned worker runs under a guard: its exit is relayed, its parent's death fails it alone."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from kernbench.execution.guard import exit_record_path, guarded, read_exit_record, relay
from kernbench.execution.launcher import WorkerLauncher, worker_env
from kernbench.execution.stacks import read_stack, stack_path
from support.forkserver import job_for

pytestmark = pytest.mark.skipif(not guarded(), reason="spawned workers are guarded on Linux only")


def spawned(tmp_path: Path, body: str, timeout_s: float = 30.0):  # type: ignore[no-untyped-def]
    launcher = WorkerLauncher("spawn", worker_env())
    try:
        return launcher.run("python", 0, job_for(tmp_path, body), tmp_path, timeout_s, None)
    finally:
        launcher.close()


def relayed(status: int) -> int:
    """The wait status of a process that relayed `status`."""
    pid = os.fork()
    if pid == 0:
        relay(status)
    return os.waitpid(pid, 0)[1]


@pytest.mark.parametrize("status", [0, 3 << 8, 255 << 8, signal.SIGSEGV, signal.SIGKILL,
                                    signal.SIGTERM, signal.SIGABRT])
def test_the_guard_leaves_as_its_worker_did(status: int) -> None:
    assert relayed(status) & 0x7F == status & 0x7F  # the signal, without a core dump
    assert os.waitstatus_to_exitcode(relayed(status)) == os.waitstatus_to_exitcode(status)


def test_a_kernel_that_kills_its_parent_fails_with_the_cause_and_kernbench_lives(
        tmp_path: Path) -> None:
    info = spawned(tmp_path,
                   "import os, signal\nprint('hi')\nos.kill(os.getppid(), signal.SIGKILL)")
    assert (info.isolation, info.returncode, info.timed_out) == ("spawn", -signal.SIGKILL, False)
    assert info.cause is not None and info.cause.startswith(
        "the spawned worker's guard, its parent process, was killed by SIGKILL")
    assert info.stdout_tail == "hi\n"
    assert read_exit_record(tmp_path / "job.json")[1] is None  # no status: the guard was killed


def test_the_worker_runs_in_a_session_of_its_own_under_its_guard(tmp_path: Path) -> None:
    """The record's pid is the kernel's process; its parent is the guard, not kernbench; it
    leads its own session and group, as a forked worker does."""
    info = spawned(tmp_path, "import os\nprint(os.getpid(), os.getppid(), os.getsid(0))")
    assert (info.returncode, info.cause) == (0, None)
    pid, parent, session = map(int, info.stdout_tail.split())
    assert info.pid == pid == session and parent not in (pid, os.getpid())
    text = exit_record_path(tmp_path / "job.json").read_text(encoding="utf-8")
    assert text == f"{pid}\n0\n"
    assert (tmp_path / "result.json").exists()


def test_a_kernel_that_kills_its_own_group_is_killed_alone(tmp_path: Path) -> None:
    """Its group is the worker's: the guard lives on and says how the worker ended."""
    info = spawned(tmp_path, "import os, signal\nos.killpg(0, signal.SIGKILL)")
    assert (info.returncode, info.cause, info.timed_out) == (-signal.SIGKILL, None, False)


def test_a_kernel_that_interrupts_its_parent_leaves_no_traceback_of_the_guard(
        tmp_path: Path) -> None:
    info = spawned(tmp_path, "import os, signal, time\nos.kill(os.getppid(), signal.SIGINT)\n"
                             "time.sleep(5)")
    assert info.returncode == -signal.SIGINT and info.stderr_tail == ""
    assert info.cause is not None and "was killed by SIGINT while the case ran" in info.cause


def test_a_kernel_that_stops_its_parent_times_out_with_the_cause(tmp_path: Path) -> None:
    info = spawned(tmp_path, "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)",
                   timeout_s=2.0)
    assert info.timed_out and (tmp_path / "result.json").exists()
    assert info.cause is not None and info.cause.startswith(
        "the spawned worker's guard, its parent process, stopped (it did not reap its "
        "worker, whose reply was written) while the case ran")


@pytest.mark.parametrize(("body", "returncode"), [
    ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", -signal.SIGSEGV),
    ("import os\nos._exit(3)", 3),
])
def test_a_crash_keeps_its_own_status_and_no_cause(tmp_path: Path, body: str,
                                                  returncode: int) -> None:
    info = spawned(tmp_path, body)
    assert (info.returncode, info.cause, info.timed_out) == (returncode, None, False)


def test_the_timeouts_stack_request_reaches_the_worker(tmp_path: Path) -> None:
    info = spawned(tmp_path, "import time\ntime.sleep(30)", timeout_s=2.0)
    assert info.timed_out and info.cause is None
    stack = read_stack(stack_path(tmp_path / "result.json"))
    assert stack is not None and 'kern.py", line 2 in <module>' in stack
