"""Per-worker limits: --max-memory (RLIMIT_AS), and the sweep that kills every descendant of a
worker, including daemons that left its process group."""

from __future__ import annotations

import dataclasses
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kernbench.config.sizes import MIN_MAX_MEMORY_BYTES, format_size, parse_size
from kernbench.errors import KernbenchError
from kernbench.execution.isolation import TOKEN_VARIABLE, WorkerExit, marked_processes, run_isolated
from kernbench.execution.limits import explain_memory_limit
from kernbench.results.model import WORKER_KEYS, CaseResult

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

# A daemon in the classic way: fork, setsid (a new session: out of the worker's process
# group), fork again, ignore SIGTERM, and outlive the worker; its pid is written to a file.
DAEMON = """
import os, signal, sys, time
from pathlib import Path

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        Path(sys.argv[1]).write_text(str(os.getpid()))
        time.sleep(1000)
    os._exit(0)
deadline = time.monotonic() + 10
while not Path(sys.argv[1]).exists() and time.monotonic() < deadline:
    time.sleep(0.01)
{end}
"""


def run_code(code: str, cwd: Path, *args: str, timeout_s: float = 30.0,
             max_memory_bytes: int | None = None) -> WorkerExit:
    return run_isolated([sys.executable, "-c", textwrap.dedent(code), *args], cwd=cwd,
                        env=dict(os.environ), timeout_s=timeout_s,
                        max_memory_bytes=max_memory_bytes)


def is_running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gone_within(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while is_running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not is_running(pid)


@pytest.mark.parametrize("end", ["pass", "time.sleep(1000)"], ids=["exits", "hangs"])
def test_a_daemon_that_left_the_group_and_ignores_sigterm_is_killed(tmp_path: Path,
                                                                    end: str) -> None:
    pid_file = tmp_path / "daemon.pid"
    result = run_code(DAEMON.format(end=end), tmp_path, str(pid_file), timeout_s=3.0)
    pid = int(pid_file.read_text())
    assert result.timed_out is (end != "pass")
    assert os.getpgid(0) != pid
    assert gone_within(pid), f"daemon {pid} outlived its worker"


def test_the_sweep_finds_only_processes_with_the_token(tmp_path: Path) -> None:
    import subprocess

    env = dict(os.environ, **{TOKEN_VARIABLE: "abc123"})
    marked = subprocess.Popen(["sleep", "30"], env=env)
    unmarked = subprocess.Popen(["sleep", "30"])
    try:
        found = marked_processes("abc123")
        assert marked.pid in found
        assert unmarked.pid not in found
        assert os.getpid() not in found
        assert marked_processes("other") == []
    finally:
        for proc in (marked, unmarked):
            proc.kill()
            proc.wait()


def test_memory_limit_turns_a_runaway_allocation_into_memory_error(tmp_path: Path) -> None:
    result = run_code("""
        import sys
        blocks = []
        try:
            while True:
                blocks.append(bytearray(16 << 20))
        except MemoryError:
            blocks.clear()
            print("MemoryError after", len(blocks), flush=True)
            sys.exit(7)
    """, tmp_path, max_memory_bytes=256 << 20)
    assert result.returncode == 7, result.stderr_tail
    assert "MemoryError" in result.stdout_tail


def test_without_a_limit_the_address_space_is_unlimited(tmp_path: Path) -> None:
    result = run_code("""
        import resource
        print(resource.getrlimit(resource.RLIMIT_AS))
    """, tmp_path)
    assert result.stdout_tail.strip() == str((-1, -1))
    limited = run_code("""
        import resource
        print(resource.getrlimit(resource.RLIMIT_AS))
    """, tmp_path, max_memory_bytes=512 << 20)
    assert limited.stdout_tail.strip() == str((512 << 20, 512 << 20))


@pytest.mark.parametrize(("text", "size"), [
    ("512M", 512 << 20), ("2G", 2 << 30), ("2g", 2 << 30), ("1.5GiB", 3 << 29),
    ("64M", 64 << 20), ("1T", 1 << 40), (str(100 << 20), 100 << 20), (" 300 MB ", 300 << 20),
])
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(("text", "words"), [
    ("lots", "expected a size such as 512M"), ("-1G", "expected a size"),
    ("5X", "expected a size"), ("63M", "at least 64M"), ("0", "at least 64M"),
])
def test_parse_size_errors_name_the_flag_and_what_was_expected(text: str, words: str) -> None:
    with pytest.raises(KernbenchError) as caught:
        parse_size(text)
    assert caught.value.message.startswith("--max-memory: ")
    assert words in caught.value.message
    assert repr(text) in caught.value.message


def test_format_size() -> None:
    assert [format_size(s) for s in (512 << 20, 2 << 30, 1536 << 20, 1000)] == \
        ["512M", "2G", "1536M", "1000B"]
    assert format_size(MIN_MAX_MEMORY_BYTES) == "64M"


def failed(reason: str, stderr: str = "", signal: str | None = None) -> CaseResult:
    worker = {**dict.fromkeys(WORKER_KEYS), "stderr_tail": stderr, "signal": signal}
    return CaseResult(kernel_name="k", kernel_path="k.py", framework="numpy", backend="cpu",
                      precision="fp32", problem_size=None, status="failed", reason=reason,
                      worker=worker)


def test_a_memory_error_names_the_limit() -> None:
    result = explain_memory_limit(failed("MemoryError: "), 256 << 20)
    assert result.reason == ("memory limit reached: --max-memory 256M (address space, "
                             "RLIMIT_AS): MemoryError: ")


@pytest.mark.parametrize("line", [
    "libgomp: Thread creation failed: Resource temporarily unavailable",
    "OpenBLAS error: Memory allocation still failed after 10 retries, giving up.",
    "RuntimeError: [enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: not enough memory",
    "OpenBLAS blas_thread_init: pthread_create failed for thread 1 of 2: Resource temporarily "
    "unavailable",  # in numpy's import, which then ends in a KeyboardInterrupt
])
def test_runtimes_that_exit_when_they_cannot_allocate_name_the_limit(line: str) -> None:
    died = failed("worker exited with code 1 before reporting a result", stderr=line)
    assert str(explain_memory_limit(died, 400 << 20).reason).startswith(
        "memory limit reached: --max-memory 400M")


def test_a_worker_that_died_under_a_limit_says_it_may_have_hit_it() -> None:
    for signal in ("SIGABRT", "SIGSEGV", "SIGBUS"):
        died = failed(f"worker killed by {signal} before reporting a result", signal=signal)
        assert "may have died allocating past it" in str(
            explain_memory_limit(died, 1 << 30).reason)
    native = failed("worker killed by SIGABRT before reporting a result",
                    stderr="terminate called after throwing an instance of 'std::bad_alloc'",
                    signal="SIGABRT")
    assert str(explain_memory_limit(native, 1 << 30).reason).startswith(
        "memory limit reached: --max-memory 1G")


def test_other_failures_and_runs_without_a_limit_are_left_alone() -> None:
    other = failed("ValueError: bad shape")
    assert explain_memory_limit(other, 1 << 30) is other
    exited = failed("worker exited with code 3 before reporting a result")  # os._exit(3)
    assert explain_memory_limit(exited, 1 << 30) is exited
    killed = failed("worker killed by SIGTERM before reporting a result", signal="SIGTERM")
    assert explain_memory_limit(killed, 1 << 30) is killed
    memory = failed("MemoryError: ")
    assert explain_memory_limit(memory, None) is memory
    ok = dataclasses.replace(memory, status="ok", reason=None)
    assert explain_memory_limit(ok, 1 << 30) is ok


def test_a_worker_dies_with_a_parent_killed_outright(tmp_path: Path) -> None:
    import signal
    import subprocess

    pid_file = tmp_path / "worker.pid"
    parent = f"""
import sys
from pathlib import Path
from kernbench.execution.isolation import run_isolated
code = "import os, time, pathlib; pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()));" \\
       " time.sleep(1000)"
run_isolated([sys.executable, "-c", code], cwd=Path("."), env={{}}, timeout_s=1000)
"""
    proc = subprocess.Popen([sys.executable, "-c", parent], cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        worker = int(pid_file.read_text())
        proc.send_signal(signal.SIGKILL)  # no cleanup runs in the parent
        proc.wait()
        assert gone_within(worker), f"worker {worker} outlived its parent"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
