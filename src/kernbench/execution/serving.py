"""A fork server's loop: each case's worker is forked *ahead* of its case, while the last
worker is still leaving.

A forked worker of a server with torch loaded costs about 12 ms to fork (the kernel copies the
page tables of the server's ~150 MB of memory) and as much again to leave (they are torn
down), on the 2-core VM of docs/performance-history.md. Both used to lie on the run's critical
path, one after the other: fork, case, exit, reap, and only then the next fork. Here the
server keeps one *spare*: a child forked in advance that waits, in its own session, for a job.
A worker says "exiting" (:func:`kernbench.execution.worker.main`'s `before_exit`) once its
reply is written, just before ``os._exit``; the server then forks the next spare while that
worker's address space is torn down on the other core, and reaps and sweeps the worker before
it answers ``finished``. The next case's job goes to the spare only after that answer, so no
case's measurement ever overlaps another worker or a fork: only the untimed exit and fork do.

A spare says "ready" once it is in its own session, and the server waits for that before it
answers, so a spare's own start never overlaps a case of another server either; the first
spare is forked before the server greets the parent. A worker that dies without saying so (a
crash, a kill at its timeout) is reaped first, and the next spare is forked before the answer.
Only the worker itself is heard: "exiting" sent by a descendant that inherited its socket is
ignored (the sender's pid comes with each message, ``SO_PASSCRED``). Without ``pidfd_open``
(Linux before 5.3) the server cannot tell a worker's death from a descendant that holds its
socket, so it does not listen for "exiting" at all: it waits for the exit as before.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kernbench.execution.forkserver import MESSAGE_BYTES
from kernbench.execution.reaping import CHILD_FAILED, die_with, sweep

EXITING = b"exiting"
"""What a worker sends its server just before ``os._exit``, its reply written."""
READY = b"ready"
"""What a spare sends once it is set up (its own session, its parent-death signal)."""
_CREDENTIALS = struct.Struct("3i")
"""``struct ucred``: pid, uid, gid of a message's sender."""


def _readable(fds: Sequence[int], timeout_s: float | None) -> set[int]:
    """Which of `fds` are readable within `timeout_s` (None: wait for one)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return {fd for fd, _ in poller.poll(None if timeout_s is None else timeout_s * 1e3)}


@dataclass
class Spare:
    """A forked child waiting for a job; the server's end of its socket pair."""

    pid: int
    sock: socket.socket
    pidfd: int | None

    def hand_over(self, data: bytes, fds: list[int]) -> bool:
        """Send the job (and its output pipes); False when the spare is gone (one killed
        while the job is on its way dies as a worker killed at its start would)."""
        if self.pidfd is not None and _readable([self.pidfd], 0):
            return False
        try:
            socket.send_fds(self.sock, [data], fds)
        except OSError:
            return False
        return True

    def said_exiting(self) -> bool:
        """Block until the worker says "exiting" (True) or dies without saying so (False)."""
        if self.pidfd is None:
            return False
        while True:
            ready = _readable([self.sock.fileno(), self.pidfd], None)
            if self.sock.fileno() not in ready:  # dead: did it say so before it died?
                while (heard := self._heard(blocking=False)) is None:
                    pass
                return heard
            heard = self._heard(blocking=True)
            if heard is not None:
                return heard

    def _heard(self, blocking: bool) -> bool | None:
        """True: the worker said "exiting"; False: nothing more can come (end of file, a
        broken pair, or nothing waiting when not `blocking`); None: a message to ignore (not
        "exiting", or not from the worker)."""
        self.sock.setblocking(blocking)
        try:
            data, ancillary, _, _ = self.sock.recvmsg(
                len(EXITING), socket.CMSG_SPACE(_CREDENTIALS.size))
        except OSError:
            return False
        if not data:
            return False
        senders = [_CREDENTIALS.unpack(body[:_CREDENTIALS.size])[0]
                   for level, kind, body in ancillary
                   if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS]
        return True if data == EXITING and senders == [self.pid] else None

    def close(self) -> None:
        self.sock.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None

    def discard(self) -> None:
        """Kill a spare that will get no job, and reap it (through its pidfd where there is
        one: a spare that died may have been reaped by a sweep, its pid free for reuse)."""
        with contextlib.suppress(ProcessLookupError):
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        self.close()


def serve(sock: socket.socket, greeting: bytes) -> None:
    """Fork the first spare, greet the parent, then answer `run` requests until the parent
    says `exit` or goes away."""
    spare = _fork_spare(sock)
    try:
        sock.send(greeting)
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(sock, MESSAGE_BYTES, 2)
            except OSError:
                return
            if not data or json.loads(data).get("op") != "run":
                return
            current, spare = spare, None  # this case's now: reaped by _run_one
            spare = _run_one(sock, data, fds, current)
    finally:
        if spare is not None:
            spare.discard()


def _run_one(sock: socket.socket, data: bytes, fds: list[int], spare: Spare | None) -> Spare | None:
    """Run one case in the spare (or a child forked now, if there is none or it died); the
    next spare, forked while this worker leaves when it says so, else once it is reaped."""
    worker = spare
    if worker is None or not worker.hand_over(data, fds):
        if worker is not None:
            worker.discard()
        worker = _fork_child(sock, stale=fds)
        if not worker.hand_over(data, fds):
            raise OSError(f"the worker {worker.pid} died before it got its job")
    for fd in fds:
        os.close(fd)
    sock.send(json.dumps({"started": worker.pid}).encode())
    following = _fork_spare(sock, worker) if worker.said_exiting() else None
    try:
        _, status, usage = os.wait4(worker.pid, 0)
        worker.close()
        swept = sweep(worker.pid, keep=None if following is None else following.pid)
        if following is None:
            following = _fork_spare(sock)
        sock.send(json.dumps({"finished": worker.pid, "status": status, "swept": swept,
                              "cpu_s": usage.ru_utime + usage.ru_stime}).encode())
    except BaseException:  # the parent went away: no spare outlives the server
        if following is not None:
            following.discard()
        raise
    return following


def _fork_spare(sock: socket.socket, leaving: Spare | None = None) -> Spare | None:
    """A spare for the next case, set up (`leaving`: the worker still leaving, whose
    descriptors the spare closes); None when fork fails now (the next case forks again, and a
    failure then ends the server, whose cases are then spawned)."""
    stale = [] if leaving is None else [leaving.sock.fileno(),
                                        *([] if leaving.pidfd is None else [leaving.pidfd])]
    try:
        return _fork_child(sock, stale)
    except OSError:
        return None


def _fork_child(server_sock: socket.socket, stale: Sequence[int] = ()) -> Spare:
    """A child forked now, once it says it is ready; it closes `stale` (descriptors of the
    server's that are not its to hold)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    server = os.getpid()
    pid = os.fork()
    if pid == 0:
        ours.close()
        for fd in stale:
            os.close(fd)
        _child(server, server_sock, theirs)
    theirs.close()
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    child = Spare(pid, ours, pidfd)
    try:
        said = ours.recv(len(READY))
    except OSError:
        said = b""
    if said != READY:
        child.discard()
        raise OSError(f"the forked child {pid} did not start")
    return child


def _child(server: int, server_sock: socket.socket, sock: socket.socket) -> None:
    """Become a spare, then the worker of the job it is handed: never returns."""
    try:
        gc.enable()  # as in any interpreter: only the server runs without (freeze_heap)
        server_sock.close()
        os.setsid()
        die_with(server)  # fork cleared the server's parent-death signal
        sock.send(READY)
        data, fds, _, _ = socket.recv_fds(sock, MESSAGE_BYTES, 2)
        if not data:  # the server left without a job for this spare
            os._exit(0)
        request = json.loads(data)
        _redirect(fds)
        limit = request.get("max_memory_bytes")
        if limit is not None:
            import resource

            _refuse_mapped_past(limit)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.chdir(request["cwd"])
        os.environ.update(request.get("env") or {})
        from kernbench.execution.worker import main as worker_main

        worker_main([request["job"]], before_exit=_announcer(sock))  # leaves with os._exit
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        os._exit(CHILD_FAILED)


def _refuse_mapped_past(limit: int) -> None:
    """MemoryError when this child maps more than `limit` already: what its server imported
    would not fit under the limit, so a spawned worker would fail in that import. Set below
    the mapped size, RLIMIT_AS would refuse only new mappings: a kernel that needs none would
    pass under a limit that fails the same case when spawned."""
    from kernbench.measure.metrics.memory import status_kb

    mapped_kb = status_kb("VmSize")  # the address space, what RLIMIT_AS bounds
    if mapped_kb is not None and mapped_kb * 1024 > limit:
        raise MemoryError(f"the worker maps {mapped_kb / 1024:.0f} MiB before its kernel runs "
                          f"(what its fork server imported), more than the limit of "
                          f"{limit / 2**20:.0f} MiB: a spawned worker would fail in the same "
                          "imports")


def _announcer(sock: socket.socket) -> Callable[[], None]:
    def announce() -> None:
        with contextlib.suppress(OSError):
            sock.send(EXITING)
    return announce


def _redirect(fds: list[int]) -> None:
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    for fd in (null, *fds):
        os.close(fd)
