"""What a fork server's case left behind, found and killed: the server is a child subreaper,
so every orphaned descendant of a case becomes its child (:mod:`kernbench.execution.forkserver`).
Also the two process tools the server shares with the parent (``prctl``, ``kill_in_rounds``):
kept here, light, so that a server never imports the parent's side of isolation (subprocess,
secrets and the rest cost each server's start a few milliseconds).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

SWEEP_ROUNDS = 20


def sweep(pid: int, keep: int | None = None) -> int:
    """Kill what the case `pid` left behind: its process group, then every child of this
    (subreaper) process but `keep` (the spare forked for the next case), round after round,
    since killing one orphans the next generation. Every exited child is reaped, `keep` too
    if it has died: its owner kills it through its pidfd, never by a pid that may be reused."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)

    def left_behind() -> list[int]:
        _reap()
        return [child for child in own_children() if child != keep]

    killed = kill_in_rounds(left_behind, SWEEP_ROUNDS, pause_s=0.002)
    _reap()
    return killed


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def own_children() -> list[int]:
    """Live (non-zombie) children of this process: the kernel's list of each thread's
    children, a few small reads, instead of a scan of every process in /proc."""
    found: list[int] = []
    try:
        threads = os.listdir("/proc/self/task")
        for tid in threads:
            with open(f"/proc/self/task/{tid}/children", "rb") as handle:
                found.extend(int(pid) for pid in handle.read().split())
    except OSError:  # no CONFIG_PROC_CHILDREN: scan
        return child_pids(os.getpid())
    return [pid for pid in found if (fields := _stat(pid)) is not None and fields[0] != b"Z"]


def child_pids(parent: int) -> list[int]:
    """Live (non-zombie) children of `parent`, from a scan of /proc."""
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            fields = _stat(int(entry.name))
            if fields is not None and int(fields[1]) == parent and fields[0] != b"Z":
                found.append(int(entry.name))
    return found


def _stat(pid: int) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (state, parent pid, ...); None
    once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields or None


def kill_in_rounds(find: Callable[[], Sequence[int]], rounds: int, pause_s: float) -> int:
    """SIGKILL what `find` returns, and again after `pause_s`, until it finds nothing or
    `rounds` run out (a process killed while it forks can leave a new child, and killing a
    parent orphans the next generation); how many signals were delivered."""
    killed = 0
    for _ in range(rounds):
        pids = find()
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(pause_s)
    return killed


@functools.cache
def prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up in the parent (never between fork and exec); None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None



PR_SET_PDEATHSIG = 1
CHILD_FAILED = 70
"""Exit code of a child that could not set itself up (the traceback is on its stderr)."""


def die_with(parent: int) -> None:
    """``PR_SET_PDEATHSIG``: SIGKILL when `parent`, the process that started this one, dies;
    leave at once if it died already (a fork server, a forked or guarded worker). Set in the
    child rather than in a ``preexec_fn``: a ``Popen`` without one starts its child with
    ``vfork``, ~6 ms of the parent's time less a server (a fork of the parent's whole heap,
    then the exec)."""
    function = prctl()
    if function is not None:
        function(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(CHILD_FAILED)


def stat_fields(pid: int, proc_root: Path = Path("/proc")) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` from the third (the state) on, after the command name
    (which may hold spaces and parentheses); None where /proc cannot say (gone, not Linux)."""
    try:
        stat = Path(proc_root, str(pid), "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()


def stopped(pid: int) -> bool:
    """Whether process `pid` is stopped (SIGSTOP, or a tracer's stop; Linux /proc): it will
    not answer until something continues it. False where /proc cannot say."""
    fields = stat_fields(pid)
    return fields is not None and fields[:1] in (["T"], ["t"])
