"""Run one worker process in isolation: its own session, bounded output, a hard timeout.

The worker starts a new session (process group), so a timeout kills the kernel *and* every
child it started; after a normal exit the group is swept too, so no orphans outlive a case.
A descendant can leave the group (``setsid``, a double-forking daemon), so every worker also
gets a unique token in its environment, which its descendants inherit: on Linux the sweep
kills every process whose ``/proc/PID/environ`` holds the token, wherever it was reparented.
Only a descendant that leaves the session *and* execs with a scrubbed environment escapes.
stdout and stderr are drained into bounded tails (:mod:`kernbench.execution.tails`): a kernel
that floods either cannot fill a pipe, stall the worker or grow the parent's memory. Before it
runs anything the child
asks to be killed when the parent dies (PR_SET_PDEATHSIG) and sets the optional
address-space limit (RLIMIT_AS).
"""

from __future__ import annotations

import contextlib
import os
import resource
import secrets
import select
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernbench.execution.reaping import PR_SET_PDEATHSIG, kill_in_rounds, prctl, stat_fields
from kernbench.execution.stacks import STACK_GRACE_S, ask_for_stack
from kernbench.execution.tails import ThreadedTail

TOKEN_VARIABLE = "KERNBENCH_WORKER_TOKEN"
"""Environment variable that marks a worker and every descendant that inherits it."""
CASE_TOKEN_VARIABLE = "KERNBENCH_CASE_TOKEN"
"""A forked worker's own mark, beside its launcher's: what a case left is killed at once when
its fork server, which would have swept it, died during the case."""
SWEEP_ROUNDS = 5
"""Scans for marked processes after a worker ends: a process forking while it is killed may
leave a new child, which the next round finds."""


@dataclass(frozen=True)
class WorkerExit:
    """How a worker process ended, and the tails of what it printed."""

    returncode: int | None
    timed_out: bool
    wall_s: float
    pid: int | None
    """None: a forked worker whose server died before it said the worker's pid."""
    stdout_tail: str
    stderr_tail: str
    stdout_bytes: int
    stderr_bytes: int
    isolation: str = "spawn"
    """How the worker was started: "fork" (from a preloaded fork server) or "spawn"."""
    note: str | None = None
    """Why a worker was spawned where a fork server was asked for, or what went wrong."""
    stack: str | None = None
    """A timed-out worker's stack dump (:mod:`kernbench.execution.stacks`)."""
    cause: str | None = None
    """What ended the worker from outside, where its exit status cannot say (its fork server
    died under it: :meth:`~kernbench.execution.forkserver.ForkServer.run`)."""

    @property
    def signal_name(self) -> str | None:
        return signal_name(self.returncode)


def signal_name(returncode: int | None) -> str | None:
    """"SIGKILL" for a `returncode` (as ``Popen`` gives it) of a process a signal ended."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def exit_words(returncode: int | None) -> str:
    """"was killed by SIGKILL", "exited with code 3"."""
    if returncode is None:
        return "ended (its exit status is unknown)"
    name = signal_name(returncode)
    return f"was killed by {name}" if name else f"exited with code {returncode}"


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def marked_processes(token: str, proc_root: Path = Path("/proc"),
                     variable: str = TOKEN_VARIABLE) -> list[int]:
    """Pids of processes whose environment holds ``variable=token`` (Linux /proc; an empty
    list elsewhere). Zombies and other users' processes have unreadable environs."""
    needle = f"{variable}={token}".encode()
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(proc_root):
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                environ = Path(entry.path, "environ").read_bytes()
            except OSError:
                continue
            if needle in environ.split(b"\0"):
                found.append(int(entry.name))
    return found


def kill_marked(token: str, variable: str = TOKEN_VARIABLE) -> int:
    """SIGKILL every process marked with `token` (in `variable`), in rounds until none is
    left; how many."""
    return kill_in_rounds(lambda: marked_processes(token, variable=variable), SWEEP_ROUNDS,
                          pause_s=0.01)


PARENT_VARIABLE = "KERNBENCH_PARENT"
"""The kernbench process that started a worker or fork server (:func:`process_mark`), in the
environment of everything they start: a run killed before it could sweep its cases' processes
(SIGKILL, the out-of-memory killer) leaves them marked with a process that is gone, and the
next run kills them (:func:`kill_orphans`)."""


def process_mark(pid: int, proc_root: Path = Path("/proc")) -> str | None:
    """``PID:START`` of a live process (START: its start time, in clock ticks after boot, so
    a reused pid does not pass for it); None where /proc cannot say."""
    fields = stat_fields(pid, proc_root)  # from field 3 on: START is field 22
    return f"{pid}:{fields[19]}" if fields is not None and len(fields) > 19 else None


def orphans(proc_root: Path = Path("/proc")) -> list[int]:
    """Pids of processes marked (:data:`PARENT_VARIABLE`) by a kernbench process that is gone;
    never this process or one of its ancestors (a kernbench started from such a process)."""
    prefix = f"{PARENT_VARIABLE}=".encode()
    found, spared = [], _ancestry(proc_root)
    with contextlib.suppress(OSError):
        for entry in os.scandir(proc_root):
            if not entry.name.isdigit() or int(entry.name) in spared:
                continue
            try:
                environ = Path(entry.path, "environ").read_bytes()
            except OSError:
                continue
            marks = [item[len(prefix):] for item in environ.split(b"\0")
                     if item.startswith(prefix)]
            if marks and not _alive(marks[0].decode(errors="replace"), proc_root):
                found.append(int(entry.name))
    return found


def _ancestry(proc_root: Path) -> set[int]:
    """This process and its ancestors."""
    chain, pid = set(), os.getpid()
    while pid > 1 and pid not in chain:
        chain.add(pid)
        fields = stat_fields(pid, proc_root)  # field 4: the parent's pid
        if fields is None or len(fields) < 2 or not fields[1].isdigit():
            break
        pid = int(fields[1])
    return chain


def _alive(mark: str, proc_root: Path) -> bool:
    pid = mark.partition(":")[0]
    return not pid.isdigit() or process_mark(int(pid), proc_root) == mark


def kill_orphans() -> tuple[int, ...]:
    """SIGKILL what runs killed before their own sweep left (:func:`orphans`), such as a
    kernel's busy child that would run beside the next run's cases; their pids."""
    seen: set[int] = set()

    def find() -> list[int]:
        found = orphans()
        seen.update(found)
        return found

    kill_in_rounds(find, SWEEP_ROUNDS, pause_s=0.01)
    return tuple(sorted(seen))


def child_setup(max_memory_bytes: int | None) -> Callable[[], None]:
    """The `preexec_fn` of a worker: die with the parent, and an optional memory limit.

    PR_SET_PDEATHSIG makes the kernel SIGKILL the worker when kernbench itself dies (even by
    SIGKILL, which runs no cleanup), so a worker in its own session cannot outlive the run.
    RLIMIT_AS bounds virtual memory, which is more than resident memory: Python with numpy
    maps about 150 MB, torch about 650 MB and jax about 1.6 GB on a 2-core machine (thread
    pools grow it with the core count). An allocation past the limit fails (MemoryError in
    Python, a failed malloc in native code) instead of driving the machine into swap."""
    function, parent = prctl(), os.getpid()

    def apply() -> None:
        if function is not None:
            function(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:  # the parent died before the line above
                os.kill(os.getpid(), signal.SIGKILL)
        if max_memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (max_memory_bytes, max_memory_bytes))
    return apply


def wait_for_exit(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Block until `proc` exits (True) or `timeout_s` passes (False). On Linux the wait is a
    ``select`` on a pidfd, woken the moment the process ends; ``Popen.wait`` would poll with
    sleeps of up to 50 ms instead."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        ready, _, _ = select.select([pidfd], [], [], max(timeout_s, 0.0))
    finally:
        os.close(pidfd)
    return bool(ready) or proc.poll() is not None


def run_isolated(argv: Sequence[str], cwd: Path, env: dict[str, str],
                 timeout_s: float, max_memory_bytes: int | None = None,
                 dump_stack: bool = False) -> WorkerExit:
    """Run `argv` in a new session; kill its whole process group, and every descendant that
    inherited its token, on timeout and at the end. `max_memory_bytes` sets RLIMIT_AS. With
    `dump_stack`, a timed-out process is first asked for its stack
    (:func:`kernbench.execution.stacks.ask_for_stack`) and given ``STACK_GRACE_S``."""
    started = time.monotonic()
    token = secrets.token_hex(16)
    proc = subprocess.Popen(list(argv), cwd=cwd, env={**env, TOKEN_VARIABLE: token},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=child_setup(max_memory_bytes))
    assert proc.stdout is not None and proc.stderr is not None
    out, err = ThreadedTail(proc.stdout), ThreadedTail(proc.stderr)
    timed_out = False
    try:
        timed_out = not wait_for_exit(proc, timeout_s)
        if timed_out and dump_stack:
            ask_for_stack(proc.pid)
            wait_for_exit(proc, STACK_GRACE_S)
    finally:
        _kill_group(proc.pid)  # the kernel's children too, whether it ended or not
        kill_marked(token)  # and those that left the group
        proc.wait()
    return WorkerExit(returncode=proc.returncode, timed_out=timed_out,
                      wall_s=time.monotonic() - started, pid=proc.pid,
                      stdout_tail=out.text(), stderr_tail=err.text(),
                      stdout_bytes=out.total, stderr_bytes=err.total)
