"""Tests for kernbench.execution.forkserver and kernbench.execution.launcher: a forked worker keeps
every promise a spawned one keeps (bounded output, hard timeout, no orphans, exit status, its own
session, cwd and environment), replicate slots fork from different servers, and unsafe or broken
servers fall back to spawning with a note."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernbench.execution.forkserver import (
    PRELOADS,
    REPLY_TIMEOUT_S,
    ForkServer,
    fork_supported,
    initialised_reason,
    preload_key,
)
from kernbench.execution.launcher import WorkerLauncher, worker_env
from kernbench.execution.reaping import CHILD_FAILED
from kernbench.execution.tails import TAIL_BYTES
from support.forkserver import job_for, run
from support.processes import wait_gone

pytestmark = pytest.mark.skipif(fork_supported() is not None,
                                reason=f"fork servers unsupported here: {fork_supported()}")

@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    handle = ForkServer("python", str(Path.cwd()), worker_env())
    assert handle.ready()["unsafe"] is None
    yield handle
    handle.close()


def test_a_case_runs_and_reports_its_result_and_tails(server: ForkServer,
                                                      tmp_path: Path) -> None:
    info = run(server, tmp_path, """
        import sys
        print("hello from the fork")
        sys.stderr.write("a warning\\n")
    """)
    assert (info.returncode, info.timed_out, info.isolation) == (0, False, "fork")
    assert info.stdout_tail == "hello from the fork\n"
    assert info.stderr_tail == "a warning\n"
    assert info.stdout_bytes == len("hello from the fork\n")
    result = json.loads((tmp_path / "result.json").read_text(encoding="utf-8"))
    assert result["status"] == "ok" and len(result["samples_ns"]) == 2


def test_the_child_has_its_own_session_cwd_environment_and_no_stdin(server: ForkServer,
                                                                    tmp_path: Path) -> None:
    info = run(server, tmp_path, """
        import os, sys
        print(os.getpid(), os.getsid(0), os.getpgid(0))
        print(os.getcwd())
        print(os.environ["KERNBENCH_TEST_MARKER"])
        print(repr(sys.stdin.read()))
    """)
    ids, cwd, marker, stdin = info.stdout_tail.splitlines()
    assert ids.split() == [str(info.pid)] * 3
    assert os.path.samefile(cwd, tmp_path)
    assert marker == "m-7"
    assert stdin == "''"


def test_a_flood_of_output_is_counted_and_tailed(server: ForkServer, tmp_path: Path) -> None:
    info = run(server, tmp_path, """
        import sys
        chunk = b"x" * (1 << 20)
        for _ in range(20):
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.write(b"END")
        sys.stdout.flush()
    """)
    assert info.returncode == 0
    assert info.stdout_bytes == 20 * (1 << 20) + 3
    assert len(info.stdout_tail.encode()) <= TAIL_BYTES and info.stdout_tail.endswith("xEND")


@pytest.mark.parametrize(("body", "code", "signal_name"), [
    ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", -signal.SIGSEGV, "SIGSEGV"),
    ("import os\nos._exit(3)", 3, None),
])
def test_crashes_and_exit_codes_are_reported(server: ForkServer, tmp_path: Path, body: str,
                                             code: int, signal_name: str | None) -> None:
    info = run(server, tmp_path, body)
    assert (info.returncode, info.signal_name, info.timed_out) == (code, signal_name, False)
    assert not (tmp_path / "result.json").exists()


def test_a_hang_is_killed_at_the_timeout_with_its_children(server: ForkServer,
                                                           tmp_path: Path) -> None:
    info = run(server, tmp_path, """
        import signal, subprocess, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen(["sleep", "100"])
        print(child.pid, flush=True)
        time.sleep(100)
    """, timeout_s=1.0)
    assert info.timed_out is True and info.returncode == -signal.SIGKILL
    assert 1.0 <= info.wall_s < 5.0
    assert wait_gone(int(info.stdout_tail.split()[0]))


def test_no_descendant_survives_not_even_a_double_forked_setsid_daemon(
        server: ForkServer, tmp_path: Path) -> None:
    """The server is a child subreaper: an orphan becomes its child and is killed."""
    info = run(server, tmp_path, """
        import os, subprocess, sys, time
        child = subprocess.Popen(["sleep", "100"])
        read, write = os.pipe()
        if os.fork() == 0:          # a daemon: fork, setsid, fork again, no exec
            os.setsid()
            if os.fork() == 0:
                os.write(write, str(os.getpid()).encode())
                time.sleep(100)
            os._exit(0)
        daemon = os.read(read, 32).decode()
        print(child.pid, daemon, flush=True)
    """)
    assert info.returncode == 0, info.stderr_tail
    for pid in (int(word) for word in info.stdout_tail.split()):
        assert wait_gone(pid), f"{pid} outlived its case"


def test_the_memory_limit_applies_to_the_child(server: ForkServer, tmp_path: Path) -> None:
    info = run(server, tmp_path, """
        import resource
        print(resource.getrlimit(resource.RLIMIT_AS)[0])
        try:
            blob = bytearray(2 << 30)
        except MemoryError:
            print("MemoryError")
    """, max_memory=1 << 30)
    assert info.stdout_tail.split() == [str(1 << 30), "MemoryError"]


def test_a_limit_under_what_the_server_maps_fails_the_case_before_it_runs(
        server: ForkServer, tmp_path: Path) -> None:
    # Set below the mapped size, RLIMIT_AS only refuses new mappings: a case that needs none
    # would pass in a fork and fail when spawned (its imports would not fit). It fails here.
    # 16 MiB: under any interpreter's mapping (the smallest --max-memory is 64M; this is the
    # server's API, which takes any size)
    info = run(server, tmp_path, "print('ran')", max_memory=16 << 20)
    assert info.returncode == CHILD_FAILED and "ran" not in info.stdout_tail
    assert "MemoryError: the worker maps" in info.stderr_tail
    assert "a spawned worker would fail in the same imports" in info.stderr_tail


def test_the_server_survives_its_cases_and_keeps_serving(server: ForkServer,
                                                         tmp_path: Path) -> None:
    first = run(server, tmp_path, "import os\nprint(os.getppid())")
    second = run(server, tmp_path, "import os\nprint(os.getppid())")
    assert first.stdout_tail == second.stdout_tail  # one server forked both
    assert server.alive()


def test_a_server_asked_to_leave_exits_cleanly(tmp_path: Path) -> None:
    handle = ForkServer("python", str(Path.cwd()), worker_env())
    handle.ready()
    handle.close()
    assert handle._proc.returncode == 0
    assert not handle.alive()


def test_the_python_server_preloads_no_numpy(server: ForkServer, tmp_path: Path) -> None:
    """Nor kernbench's GPU timing, profiling, condition parser or work formulas, the model of
    whole runs (``results.model``), tracemalloc, subprocess or secrets: a plain CPU case needs
    none, and each costs a server's start."""
    lazy = ("kernbench.measure.gpu_session", "kernbench.measure.gpu_timing",
            "kernbench.measure.profiling", "kernbench.config.conditions",
            "kernbench.config.formulas", "kernbench.results.model", "tracemalloc",
            "subprocess", "secrets", "hashlib")
    info = run(server, tmp_path, "import sys\nprint('numpy' in sys.modules, "
                                 "'kernbench.execution.worker' in sys.modules, "
                                 f"[name for name in {lazy!r} if name in sys.modules])")
    assert info.stdout_tail.split("\n")[0] == "False True []"


def test_a_gpu_framework_server_preloads_the_gpu_timing(tmp_path: Path) -> None:
    """Its GPU cases time with it: each forked worker finds it imported. A JAX server also
    imports the MLIR dialects JAX would import at every worker's first lowering, and is
    still safe to fork (no thread, no backend)."""
    pytest.importorskip("jax")
    server = ForkServer("jax", str(tmp_path), worker_env())
    try:
        hello = server.ready()
        info = run(server, tmp_path, "import sys\n"
                                     "print('kernbench.measure.gpu_session' in sys.modules, "
                                     "'jaxlib.mlir.dialects.mhlo' in sys.modules)")
    finally:
        server.close()
    assert hello["preloaded"] == list(PRELOADS["jax"]) and hello["unsafe"] is None
    assert info.stdout_tail.split() == ["True", "True"]


def test_a_forked_worker_finds_the_servers_heap_frozen(server: ForkServer,
                                                     tmp_path: Path) -> None:
    """A full collection in the child must not walk (and so copy, page by page) what the
    server preloaded: only what the case itself made is collected. The server runs without
    the collector; the child has it back, as any interpreter does."""
    info = run(server, tmp_path, "import gc, sys\n"
                                 "print(gc.get_freeze_count() > 1000, "
                                 "gc.get_referrers(sys.modules['kernbench']) == [], "
                                 "gc.isenabled(), gc.get_threshold() == (700, 10, 10))")
    assert info.stdout_tail.split() == ["True", "True", "True", "True"]


def test_a_forked_worker_finds_its_codec_and_numpy_random_ready(tmp_path: Path) -> None:
    """What every worker needs is done once in the server: the job codec's annotations are
    resolved, and where numpy is loaded its random module (the worker seeds it) is too."""
    numpy_server = ForkServer("numpy", str(Path.cwd()), worker_env())
    try:
        assert numpy_server.ready()["unsafe"] is None
        body = ("import sys\nfrom kernbench.execution import jobs\n"
                "print('numpy.random' in sys.modules, jobs._fields_of.cache_info().hits)")
        info = numpy_server.run(str(job_for(tmp_path, body, "numpy")), str(tmp_path), {}, 30.0,
                                None)
    finally:
        numpy_server.close()
    loaded, hits = info.stdout_tail.split()
    # Loading the job decodes WorkerJob and ProtocolSettings once each: found in the cache
    # only when the server resolved them before the fork.
    assert loaded == "True" and int(hits) >= 2


def test_preload_keys() -> None:
    assert [preload_key(f) for f in ("numpy", "pytorch", "jax", "python", "cupy", "triton")] \
        == ["numpy", "pytorch", "jax", "python", "python", "python"]


def test_a_framework_initialised_before_the_fork_makes_it_unsafe(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Cuda:
        @staticmethod
        def is_initialized() -> bool:
            return True

    monkeypatch.setitem(sys.modules, "torch", type("torch", (), {"cuda": Cuda})())
    assert initialised_reason() == "CUDA was initialised while importing torch"


# --- the launcher ----------------------------------------------------------------------------


def test_what_a_worker_starts_carries_its_launchers_mark(tmp_path: Path) -> None:
    """A program the kernel runs inherits the mark, so closing the launcher kills it even
    when its server had to be killed and could not sweep."""
    from kernbench.execution.isolation import TOKEN_VARIABLE

    launcher = WorkerLauncher("fork", worker_env())
    try:
        job = job_for(tmp_path, "import subprocess\nsubprocess.run(['sh', '-c', "
                                f"'echo ${TOKEN_VARIABLE}'])")
        info = launcher.run("python", 0, job, tmp_path, 30.0, None)
    finally:
        launcher.close()
    assert info.stdout_tail.strip() == launcher._token


def test_replicate_slots_fork_from_different_servers(tmp_path: Path) -> None:
    launcher = WorkerLauncher("fork", worker_env(), slots=3)
    try:
        parents = []
        for slot in range(4):
            job = job_for(tmp_path, "import os\nprint(os.getppid())")
            info = launcher.run("python", slot, job, tmp_path, 30.0, None)
            assert info.isolation == "fork" and info.note is None
            parents.append(info.stdout_tail.strip())
    finally:
        launcher.close()
    assert len(set(parents[:3])) == 3  # three layouts, three hash seeds
    assert parents[3] == parents[0]  # slot 3 is slot 0 again


def test_spawn_mode_spawns(tmp_path: Path) -> None:
    launcher = WorkerLauncher("spawn", worker_env())
    try:
        info = launcher.run("python", 0, job_for(tmp_path, "pass"), tmp_path, 30.0, None)
    finally:
        launcher.close()
    assert (info.isolation, info.returncode, info.note) == ("spawn", 0, None)


class UnsafeServer:
    """A stand-in server whose greeting says forking is unsafe."""

    closed = 0

    def __init__(self, *args: Any) -> None:
        pass

    def ready(self) -> dict[str, Any]:
        return {"unsafe": "CUDA was initialised while importing torch"}

    def close(self) -> None:
        UnsafeServer.closed += 1


def test_an_unsafe_server_means_spawned_workers_with_a_note(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kernbench.execution.launcher.ForkServer", UnsafeServer)
    launcher = WorkerLauncher("fork", worker_env(), slots=2)
    try:
        infos = [launcher.run("pytorch", 0, job_for(tmp_path, "pass"), tmp_path, 30.0, None)
                 for _ in range(2)]
    finally:
        launcher.close()
    for info in infos:
        assert info.isolation == "spawn" and info.returncode == 0
        assert info.note == ("fork is unsafe after preloading: CUDA was initialised while "
                             "importing torch")
    assert UnsafeServer.closed == 2  # both slots' servers were stopped


def test_a_fresh_launcher_remembers_what_could_not_fork(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--ab starts new servers each round: a framework found unsafe (or whose server failed)
    must not cost a server start, or a 180 s timeout, again every round."""
    monkeypatch.setattr("kernbench.execution.launcher.ForkServer", UnsafeServer)
    UnsafeServer.closed = 0
    launcher = WorkerLauncher("fork", worker_env(), slots=1)
    try:
        launcher.run("pytorch", 0, job_for(tmp_path, "pass"), tmp_path, 30.0, None)
    finally:
        launcher.close()
    assert UnsafeServer.closed == 1
    again = launcher.fresh()
    try:
        info = again.run("pytorch", 0, job_for(tmp_path, "pass"), tmp_path, 30.0, None)
    finally:
        again.close()
    assert info.isolation == "spawn" and info.note is not None and "unsafe" in info.note
    assert UnsafeServer.closed == 1  # no server was started for it this time
    assert (again.mode, again.slots) == (launcher.mode, launcher.slots)


def test_up_to_ten_processes_get_a_server_each() -> None:
    assert WorkerLauncher("fork", worker_env(), slots=10).slots == 10
    assert WorkerLauncher("fork", worker_env(), slots=25).slots == 10
    assert WorkerLauncher("fork", worker_env(), slots=0).slots == 1


def test_a_server_found_dead_between_cases_is_started_again_then_spawned(
        tmp_path: Path) -> None:
    """Killed from outside between cases (the job never reached it), a server is started
    again and the case forks from the new one, with a note, up to MAX_RESTARTS times a
    framework; after that the framework's cases are spawned."""
    from kernbench.execution.launcher import MAX_RESTARTS

    launcher = WorkerLauncher("fork", worker_env())
    parent = "import os\nprint(os.getppid())"
    try:
        infos = [launcher.run("python", 0, job_for(tmp_path, parent), tmp_path, 30.0, None)]
        for _ in range(MAX_RESTARTS + 1):
            server = int(infos[-1].stdout_tail)
            os.kill(server, signal.SIGKILL)  # the server, gone between cases
            assert wait_gone(server)  # (dying as the next job goes out, it fails that case
            # instead: the kernel of a case that started may have killed it)
            infos.append(launcher.run("python", 0, job_for(tmp_path, parent), tmp_path, 30.0,
                                      None))
        after = launcher.run("python", 0, job_for(tmp_path, "pass"), tmp_path, 30.0, None)
    finally:
        launcher.close()
    first, *restarted, spawned = infos
    assert (first.isolation, first.note) == ("fork", None)
    for info in restarted:
        assert (info.isolation, info.returncode, info.cause) == ("fork", 0, None)
        assert info.note is not None and info.note.startswith(
            "its fork server was found gone (the python fork server is gone:")
        assert info.note.endswith("and started again")
    assert len({info.stdout_tail for info in infos[:-1]}) == MAX_RESTARTS + 1  # new servers
    for info in (spawned, after):
        assert info.isolation == "spawn" and info.returncode == 0
        assert info.note is not None and info.note.startswith("fork server failed")


def test_a_platform_without_safe_fork_spawns(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kernbench.execution.launcher.fork_supported", lambda: "no fork here")
    launcher = WorkerLauncher("fork", worker_env())
    try:
        info = launcher.run("numpy", 0, job_for(tmp_path, "pass"), tmp_path, 30.0, None)
    finally:
        launcher.close()
    assert (info.isolation, info.note) == ("spawn", "no fork here")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux: PR_SET_PDEATHSIG")
def test_a_server_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    """kernbench killed outright (SIGKILL: no cleanup runs) takes its fork servers with it,
    even one waiting for a case, which would not notice that its socket closed."""
    import subprocess

    job = job_for(tmp_path, "import pathlib, time\npathlib.Path('started').touch()\n"
                            "time.sleep(60)")
    script = ("import sys, threading, time\n"
              "from kernbench.execution.forkserver import ForkServer\n"
              "from kernbench.execution.launcher import worker_env\n"
              "server = ForkServer('python', '.', worker_env())\n"
              "print(server.ready()['pid'], flush=True)\n"
              f"threading.Thread(target=server.run, args=({str(job)!r}, '.', {{}}, 90.0, None),"
              " daemon=True).start()\n"
              "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              env=worker_env(), cwd=tmp_path)
    try:
        assert parent.stdout is not None
        server = int(parent.stdout.readline())
        children = Path(f"/proc/{server}/task/{server}/children")
        deadline = time.monotonic() + 10
        while not (tmp_path / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        (case,) = map(int, children.read_text().split())  # the case is running
    finally:
        parent.kill()
        parent.wait()
    assert wait_gone(server) and wait_gone(case)


def test_a_server_whose_parent_is_already_gone_leaves() -> None:
    from kernbench.execution.reaping import die_with

    pid = os.fork()
    if pid == 0:
        die_with(os.getppid() + 1_000_000)  # not its parent: as if the parent had died
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == CHILD_FAILED


def test_a_case_that_kills_its_server_fails_and_the_next_forks_from_a_new_one(
        tmp_path: Path) -> None:
    """The case is not run again (spawned, a kernel that kills its parent would kill
    kernbench): it fails with the cause, and the slot's next case gets a new server."""
    launcher = WorkerLauncher("fork", worker_env(), slots=2)
    try:
        before = launcher.run("python", 0, job_for(tmp_path, "import os\nprint(os.getppid())"),
                              tmp_path, 30.0, None)
        kill = "import os, signal\nprint('hi')\nos.kill(os.getppid(), signal.SIGKILL)"
        killer = launcher.run("python", 0, job_for(tmp_path, kill), tmp_path, 30.0, None)
        other = launcher.run("python", 1, job_for(tmp_path, "import os\nprint(os.getppid())"),
                             tmp_path, 30.0, None)
        after = launcher.run("python", 0, job_for(tmp_path, "import os\nprint(os.getppid())"),
                             tmp_path, 30.0, None)
    finally:
        launcher.close()
    assert (killer.isolation, killer.returncode, killer.note) == ("fork", None, None)
    assert killer.cause is not None
    assert killer.cause.startswith(
        "the case's fork server was killed by SIGKILL while the case ran")
    assert killer.stdout_tail == "hi\n"
    for info in (other, after):
        assert (info.isolation, info.returncode, info.note, info.cause) == ("fork", 0, None, None)
    assert after.stdout_tail != before.stdout_tail  # slot 0's new server
    assert other.stdout_tail not in (before.stdout_tail, after.stdout_tail)  # slot 1 kept its own


def test_a_case_that_kills_its_server_at_its_timeout_is_a_timeout_and_leaves_nothing(
        tmp_path: Path) -> None:
    """Its timeout is kept (the stack request is what made it kill its server), and what it
    started is killed before the next case, though no server is left to sweep it."""
    launcher = WorkerLauncher("fork", worker_env())
    try:
        body = ("import os, signal, subprocess, time\n"
                "from kernbench.execution.stacks import STACK_SIGNAL\n"
                "daemon = subprocess.Popen(['sleep', '60'], start_new_session=True)\n"
                "print(daemon.pid, flush=True)\n"
                "signal.signal(STACK_SIGNAL, lambda *a: os.kill(os.getppid(), signal.SIGKILL))\n"
                "time.sleep(60)")
        info = launcher.run("python", 0, job_for(tmp_path, body), tmp_path, 1.0, None)
        daemon = int(info.stdout_tail)
        assert wait_gone(daemon, 1.0), "what the case started outlived it"
        after = launcher.run("python", 0, job_for(tmp_path, "pass"), tmp_path, 30.0, None)
    finally:
        launcher.close()
    assert info.timed_out and info.returncode is None
    assert info.cause is not None and info.cause.startswith(
        "the case's fork server was killed by SIGKILL while the case ran")
    assert (after.isolation, after.returncode, after.cause) == ("fork", 0, None)


def test_a_case_that_stops_its_server_fails_and_is_not_run_again(tmp_path: Path) -> None:
    """A server stopped (SIGSTOP) by its case never answers: it is killed as soon as it is
    seen stopped, not after the 30 s a live server may take, and the case fails instead of
    being spawned (where it would stop kernbench)."""
    launcher = WorkerLauncher("fork", worker_env())
    try:
        stop = "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)"
        info = launcher.run("python", 0, job_for(tmp_path, stop), tmp_path, 1.0, None)
        after = launcher.run("python", 0, job_for(tmp_path, "pass"), tmp_path, 30.0, None)
    finally:
        launcher.close()
    assert info.isolation == "fork" and info.cause is not None
    assert info.cause.startswith("the case's fork server was stopped, so could not answer (it "
                                 "was killed) while the case ran")
    assert info.wall_s < REPLY_TIMEOUT_S / 2
    assert (after.isolation, after.returncode, after.cause) == ("fork", 0, None)
