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
from kernbench.execution.outcomes import died_reason, worker_facts
from kernbench.execution.stacks import (
    FORK_HINT,
    MAX_STACK_BYTES,
    last_dump,
    read_stack,
    stack_path,
    timeout_detail,
)
from support.forkserver import job_for

DUMP = """\
Thread 0x00007f78df0a56c0 (most recent call first):
  File "/usr/lib/python3.11/multiprocessing/pool.py", line 114 in worker
  File "/tmp/k/kern.py", line 4 in spin

Current thread 0x00007f78dfbdfb80 (most recent call first):
  File "/tmp/k/kern.py", line 9 in run_benchmark
  File "/src/kernbench/execution/measuring.py", line 80 in sample
"""
DETAIL = ("its stack at the timeout ended in kern.py, line 9, in run_benchmark "
          "(worker.stack_at_timeout holds every thread's)")


def test_the_last_dump_is_read_with_the_signalled_thread_first() -> None:
    old = 'Stack (most recent call first):\n  File "/old.py", line 1 in gone\n\nsome output\n'
    assert last_dump(old + DUMP + "and output after\n") == [
        [("/tmp/k/kern.py", 9, "run_benchmark"),
         ("/src/kernbench/execution/measuring.py", 80, "sample")],
        [("/usr/lib/python3.11/multiprocessing/pool.py", 114, "worker"),
         ("/tmp/k/kern.py", 4, "spin")]]
    assert last_dump('no dump here\n  File "x.py", line 1 in f\n') == []


def test_without_a_current_thread_the_main_thread_listed_last_is_named() -> None:
    """A signal taken by a thread Python does not know: faulthandler lists the main thread
    last, and marks none as current."""
    unmarked = DUMP.replace("Current thread", "Thread").replace("line 9 in", "line ??? in")
    assert timeout_detail(unmarked) == DETAIL.replace("line 9", "an unknown line")


def test_the_fork_hint_needs_the_signalled_thread_to_wait_for_a_child() -> None:
    assert timeout_detail(DUMP) == DETAIL  # a thread pool's idle worker thread is no child
    waiting = DUMP.replace("/tmp/k/kern.py\", line 9 in run_benchmark",
                           "/usr/lib/python3.11/multiprocessing/popen_fork.py\", line 27 in poll")
    assert str(timeout_detail(waiting)).endswith(f"; {FORK_HINT}")
    assert timeout_detail("Killed\n") is None and timeout_detail(None) is None


def test_the_timeout_reason_and_the_record_carry_the_dump() -> None:
    exit_info = WorkerExit(returncode=-9, timed_out=True, wall_s=3.0, pid=1, stdout_tail="",
                           stderr_tail="the kernel's last words", stdout_bytes=0,
                           stderr_bytes=23, stack=DUMP)
    assert died_reason(exit_info, 3.0) == (
        "timeout", f"timed out after 3 s; the worker and its children were killed; {DETAIL}")
    facts = worker_facts(exit_info)
    assert facts["stack_at_timeout"] == DUMP
    assert facts["stderr_tail"] == "the kernel's last words"  # the dump does not crowd it out
    bare = WorkerExit(returncode=-9, timed_out=True, wall_s=3.0, pid=1, stdout_tail="",
                      stderr_tail="", stdout_bytes=0, stderr_bytes=0)
    assert died_reason(bare, 3.0)[1] == ("timed out after 3 s; the worker and its children were "
                                         "killed")
    assert "stack_at_timeout" not in worker_facts(bare)


def test_a_long_dump_keeps_its_end_where_the_main_thread_is(tmp_path: Path) -> None:
    path = tmp_path / "stack.txt"
    filler = 'Thread 0x1 (most recent call first):\n  File "/x.py", line 1 in f\n\n' * 2000
    path.write_text(filler + DUMP, encoding="utf-8")
    kept = read_stack(path)
    assert kept is not None and len(kept.encode()) <= MAX_STACK_BYTES
    assert timeout_detail(kept) == DETAIL
    assert read_stack(tmp_path / "none.txt") is None


def test_this_pythons_own_dump_is_read(tmp_path: Path) -> None:
    script = tmp_path / "dumps.py"
    script.write_text(textwrap.dedent("""
        import faulthandler, os, signal, threading, time
        from kernbench.execution.stacks import STACK_SIGNAL
        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
        faulthandler.register(STACK_SIGNAL, all_threads=True)
        def run_benchmark():
            os.kill(os.getpid(), STACK_SIGNAL)
            time.sleep(0.05)
        run_benchmark()
    """), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          check=True, env=worker_env())
    assert timeout_detail(done.stderr) == DETAIL.replace("kern.py, line 9", "dumps.py, line 7")


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
    detail = timeout_detail(read_stack(stack_path(tmp_path / "result.json")))
    assert detail is not None and frame in detail
    assert (FORK_HINT in detail) is hint
    assert "most recent call first" not in info.stderr_tail  # the dump went to its own file
