"""kernbench.execution.stacks: a timed-out worker's stack, and the reason that names it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernbench.execution.forkserver import fork_supported
from kernbench.execution.isolation import WorkerExit
from kernbench.execution.launcher import WorkerLauncher, worker_env
from kernbench.execution.outcomes import died_reason
from kernbench.execution.stacks import FORK_HINT, last_dump, timeout_detail
from support.forkserver import job_for

DUMP = """\
the kernel printed this
Thread 0x00007f78df0a56c0 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/tmp/k/kern.py", line 4 in spin

Current thread 0x00007f78dfbdfb80 (most recent call first):
  File "/tmp/k/kern.py", line 9 in run_benchmark
  File "/src/kernbench/execution/measuring.py", line 80 in sample
and this, after
"""


def test_the_last_dump_is_read_with_the_signalled_thread_first() -> None:
    old = 'Stack (most recent call first):\n  File "/old.py", line 1 in gone\n\n'
    assert last_dump(old + DUMP) == [
        [("/tmp/k/kern.py", 9, "run_benchmark"),
         ("/src/kernbench/execution/measuring.py", 80, "sample")],
        [("/usr/lib/python3.11/threading.py", 320, "wait"), ("/tmp/k/kern.py", 4, "spin")]]
    assert last_dump("no dump here\n  File \"x.py\", line 1 in f\n") == []


def test_the_detail_names_the_innermost_frame_and_hints_at_a_fork_only_where_it_waited() -> None:
    assert timeout_detail(DUMP) == ("its stack at the timeout ended in kern.py, line 9, in "
                                    "run_benchmark (stderr_tail holds every thread's)")
    waiting = DUMP.replace("/usr/lib/python3.11/threading.py",
                           "/usr/lib/python3.11/multiprocessing/popen_fork.py")
    assert str(timeout_detail(waiting)).endswith(f"; {FORK_HINT}")
    assert timeout_detail("Killed\n") is None


def test_the_timeout_reason_carries_the_detail() -> None:
    exit_info = WorkerExit(returncode=-9, timed_out=True, wall_s=3.0, pid=1, stdout_tail="",
                           stderr_tail=DUMP, stdout_bytes=0, stderr_bytes=len(DUMP))
    assert died_reason(exit_info, 3.0) == (
        "timeout", "timed out after 3 s; the worker and its children were killed; its stack at "
        "the timeout ended in kern.py, line 9, in run_benchmark (stderr_tail holds every "
        "thread's)")
    bare = WorkerExit(returncode=-9, timed_out=True, wall_s=3.0, pid=1, stdout_tail="",
                      stderr_tail="", stdout_bytes=0, stderr_bytes=0)
    assert died_reason(bare, 3.0)[1] == ("timed out after 3 s; the worker and its children were "
                                         "killed")


def test_this_pythons_own_dump_is_read(tmp_path: Path) -> None:
    script = tmp_path / "dumps.py"
    script.write_text(textwrap.dedent("""
        import faulthandler, os, signal, time
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        def run_benchmark():
            os.kill(os.getpid(), signal.SIGUSR1)
            time.sleep(0.05)
        run_benchmark()
    """), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          check=True)
    assert timeout_detail(done.stderr) == ("its stack at the timeout ended in dumps.py, line 5, "
                                           "in run_benchmark (stderr_tail holds every thread's)")


HANG = "import time\n\ntime.sleep(60)"
FORKED_HANG = """
import multiprocessing, time
child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(60,))
child.start()
child.join()
"""


@pytest.mark.parametrize("mode", ["fork", "spawn"])
@pytest.mark.parametrize(("body", "frame", "hint"), [
    (HANG, "kern.py, line 3, in <module>", False),
    (FORKED_HANG, "popen_fork.py", True),
])
def test_a_worker_that_times_out_dumps_where_it_was(tmp_path: Path, mode: str, body: str,
                                                     frame: str, hint: bool) -> None:
    if mode == "fork" and fork_supported() is not None:
        pytest.skip(f"fork servers unsupported here: {fork_supported()}")
    launcher = WorkerLauncher(mode, worker_env())
    try:
        info = launcher.run("python", 0, job_for(tmp_path, body), tmp_path, 3.0, None)
    finally:
        launcher.close()
    assert info.timed_out and info.isolation == mode
    detail = timeout_detail(info.stderr_tail)
    assert detail is not None and frame in detail, info.stderr_tail
    assert (FORK_HINT in detail) is hint
