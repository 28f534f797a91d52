"""Tests for kernbench.execution.isolation: bounded output, hard timeouts, no orphans, exit
reporting."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kernbench.execution.isolation import (
    PARENT_VARIABLE,
    WorkerExit,
    kill_orphans,
    orphans,
    process_mark,
    run_isolated,
)
from kernbench.execution.tails import TAIL_BYTES
from support.processes import wait_gone

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


def run_python(code: str, cwd: Path, timeout_s: float = 30.0,
               env: dict[str, str] | None = None) -> WorkerExit:
    return run_isolated([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd,
                        env=dict(os.environ) if env is None else env, timeout_s=timeout_s)


def test_normal_exit_reports_tails_and_counts(tmp_path: Path) -> None:
    result = run_python("""
        import sys
        print("hello from the worker")
        sys.stderr.write("a warning\\n")
    """, tmp_path)
    assert result.returncode == 0
    assert result.signal_name is None
    assert result.timed_out is False
    assert result.stdout_tail == "hello from the worker\n"
    assert result.stderr_tail == "a warning\n"
    assert result.stdout_bytes == len("hello from the worker\n")
    assert result.stderr_bytes == len("a warning\n")
    assert result.pid > 0
    assert 0 < result.wall_s < 10


def test_flood_of_output_is_counted_and_tailed(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run_python("""
        import sys
        chunk = b"x" * (1 << 20)
        for _ in range(50):
            sys.stdout.buffer.write(chunk)
            sys.stderr.buffer.write(chunk[:200_000])
        sys.stdout.buffer.write(b"END-OF-STDOUT")
        sys.stderr.buffer.write(b"END-OF-STDERR")
    """, tmp_path)
    elapsed = time.monotonic() - started
    assert result.returncode == 0
    assert elapsed < 15
    assert result.stdout_bytes == 50 * (1 << 20) + len("END-OF-STDOUT")
    assert result.stderr_bytes == 50 * 200_000 + len("END-OF-STDERR")
    for tail in (result.stdout_tail, result.stderr_tail):
        assert len(tail.encode("utf-8")) <= TAIL_BYTES
        assert len(tail) >= TAIL_BYTES - 64
    assert result.stdout_tail.endswith("xxxxEND-OF-STDOUT")
    assert result.stderr_tail.endswith("xxxxEND-OF-STDERR")
    assert TAIL_BYTES == 4096


def test_hang_is_killed_at_the_timeout(tmp_path: Path) -> None:
    result = run_python("import time; time.sleep(100)", tmp_path, timeout_s=1.0)
    assert result.timed_out is True
    assert 1.0 <= result.wall_s < 3.0
    assert result.returncode == -signal.SIGKILL
    assert result.signal_name == "SIGKILL"


def test_hang_with_a_child_holding_the_pipes_is_killed_at_the_timeout(tmp_path: Path) -> None:
    result = run_python("""
        import subprocess, time
        child = subprocess.Popen(["sleep", "100"])
        print(child.pid, flush=True)
        time.sleep(100)
    """, tmp_path, timeout_s=1.0)
    assert result.timed_out is True
    assert 1.0 <= result.wall_s < 3.0
    assert wait_gone(int(result.stdout_tail.split()[0]))


def test_ignoring_sigterm_does_not_escape_the_timeout(tmp_path: Path) -> None:
    result = run_python("""
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(100)
    """, tmp_path, timeout_s=0.5)
    assert result.timed_out is True
    assert result.wall_s < 3.0


def test_children_are_killed_after_a_normal_exit(tmp_path: Path) -> None:
    result = run_python("""
        import subprocess
        child = subprocess.Popen(["sleep", "100"])
        print(child.pid, flush=True)
    """, tmp_path)
    assert result.returncode == 0
    assert result.timed_out is False
    pid = int(result.stdout_tail.split()[0])
    assert wait_gone(pid), f"child {pid} outlived the worker"


def test_grandchildren_are_killed_too(tmp_path: Path) -> None:
    result = run_python("""
        import subprocess, sys
        code = "import subprocess, time; p = subprocess.Popen(['sleep', '100']); " \\
               "print(p.pid, flush=True); time.sleep(100)"
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        print(child.pid, child.stdout.readline().strip(), flush=True)
    """, tmp_path)
    assert result.returncode == 0
    pids = [int(word) for word in result.stdout_tail.split()]
    assert len(pids) == 2
    for pid in pids:
        assert wait_gone(pid), f"descendant {pid} outlived the worker"


def test_segfault_reports_sigsegv(tmp_path: Path) -> None:
    result = run_python("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", tmp_path)
    assert result.returncode == -signal.SIGSEGV
    assert result.signal_name == "SIGSEGV"
    assert result.timed_out is False


def test_os_exit_code_is_reported(tmp_path: Path) -> None:
    result = run_python("import os; os._exit(3)", tmp_path)
    assert result.returncode == 3
    assert result.signal_name is None
    assert result.timed_out is False


def test_worker_runs_in_its_own_session_in_cwd_with_env(tmp_path: Path) -> None:
    env = dict(os.environ, KERNBENCH_TEST_MARKER="marker-42")
    result = run_python("""
        import os, sys
        print(os.getpid(), os.getsid(0), os.getpgid(0))
        print(os.getcwd())
        print(os.environ["KERNBENCH_TEST_MARKER"])
        print(repr(sys.stdin.read()))
    """, tmp_path, env=env)
    assert result.returncode == 0, result.stderr_tail
    ids, cwd, marker, stdin = result.stdout_tail.splitlines()
    assert ids.split() == [str(result.pid)] * 3
    assert os.path.samefile(cwd, tmp_path)
    assert marker == "marker-42"
    assert stdin == "''"  # stdin is /dev/null: reading it does not block
    assert os.getsid(0) != result.pid


@pytest.mark.parametrize(("returncode", "name"), [
    (None, None), (0, None), (1, None), (-9, "SIGKILL"), (-6, "SIGABRT"), (-200, "signal 200"),
])
def test_signal_name(returncode: int | None, name: str | None) -> None:
    info = WorkerExit(returncode=returncode, timed_out=False, wall_s=0.0, pid=1,
                      stdout_tail="", stderr_tail="", stdout_bytes=0, stderr_bytes=0)
    assert info.signal_name == name


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_orphans_are_the_processes_whose_kernbench_is_gone() -> None:
    """A mark names a live process by pid and start time: a dead or reused pid does not
    pass for it; processes marked by a live kernbench, or unmarked, are left alone."""
    me = process_mark(os.getpid())
    assert me is not None and me.startswith(f"{os.getpid()}:")
    gone = f"{os.getpid()}:1"  # this pid, but started at another time: a reused pid
    started = {name: subprocess.Popen(["sleep", "60"], env={**os.environ, **extra})
               for name, extra in (("gone", {PARENT_VARIABLE: gone}),
                                   ("alive", {PARENT_VARIABLE: me}), ("unmarked", {}))}
    try:
        deadline = time.monotonic() + 5
        while started["gone"].pid not in orphans() and time.monotonic() < deadline:
            time.sleep(0.01)  # its environ is readable once it has exec'd
        assert started["gone"].pid in orphans()
        assert started["alive"].pid not in orphans()
        assert started["gone"].pid in kill_orphans()
        assert started["gone"].wait(5) == -signal.SIGKILL
        assert started["alive"].poll() is None and started["unmarked"].poll() is None
    finally:
        for proc in started.values():
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_kernbench_started_under_an_orphan_spares_its_ancestors(tmp_path: Path) -> None:
    """A process left by a killed run that starts kernbench (here: a shell running Python)
    is that kernbench's ancestor: its sweep must not kill its own caller."""
    code = ("import os; from kernbench.execution.isolation import orphans; "
            "print(os.getppid() in orphans())")
    env = {**os.environ, PARENT_VARIABLE: f"{os.getpid()}:1"}  # a kernbench that is gone
    done = subprocess.run(["sh", "-c", f'{sys.executable} -c "{code}"; true'], env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False", done.stderr
