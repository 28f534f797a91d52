"""The fork server's loop: each worker forked ahead of its case, while the last one leaves."""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kernbench.execution.forkserver import ForkServer, fork_supported
from kernbench.execution.launcher import worker_env
from kernbench.execution.reaping import own_children, sweep
from kernbench.execution.serving import EXITING, Spare
from support.forkserver import run
from support.processes import wait_gone

pytestmark = pytest.mark.skipif(fork_supported() is not None,
                                reason=f"fork servers unsupported here: {fork_supported()}")



def children_of(pid: int) -> set[int]:
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        found.update(int(word) for word in Path(f"/proc/{pid}/task/{task}/children")
                     .read_text().split())
    return found


def spare_of(server: ForkServer) -> int:
    """The server's one child between cases, right after its greeting or its last answer: its
    spare, forked and set up before it answered."""
    children = children_of(server.ready()["pid"])
    assert len(children) == 1, children
    return children.pop()


@pytest.fixture()
def server() -> Iterator[ForkServer]:
    handle = ForkServer("python", str(Path.cwd()), worker_env())
    assert handle.ready()["unsafe"] is None
    yield handle
    handle.close()


def test_each_worker_is_the_spare_forked_before_its_case(server: ForkServer,
                                                         tmp_path: Path) -> None:
    for _ in range(3):
        spare = spare_of(server)
        info = run(server, tmp_path, "import os\nprint(os.getpid())")
        assert info.returncode == 0, info.stderr_tail
        assert info.pid == spare == int(info.stdout_tail)


def test_after_a_crash_the_next_case_still_gets_a_spare(server: ForkServer,
                                                        tmp_path: Path) -> None:
    crashed = run(server, tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert crashed.returncode == -signal.SIGSEGV
    spare = spare_of(server)
    assert run(server, tmp_path, "print('ok')").pid == spare


def test_a_spare_killed_while_it_waits_is_replaced(server: ForkServer, tmp_path: Path) -> None:
    spare = spare_of(server)
    os.kill(spare, signal.SIGKILL)
    assert wait_gone(spare)
    info = run(server, tmp_path, "import os\nprint(os.getpid())")
    assert info.returncode == 0, info.stderr_tail
    assert info.pid != spare and info.stdout_tail.strip() == str(info.pid)


def test_the_sweep_spares_the_next_spare_and_kills_what_the_case_left(
        server: ForkServer, tmp_path: Path) -> None:
    info = run(server, tmp_path, """
        import subprocess
        print(subprocess.Popen(["sleep", "100"]).pid, flush=True)
    """)
    assert wait_gone(int(info.stdout_tail))
    spare = spare_of(server)
    assert run(server, tmp_path, "print('ok')").pid == spare


def test_a_worker_holds_no_socket_but_its_own(server: ForkServer, tmp_path: Path) -> None:
    """Not the server's socket, nor the socket or pidfd of the worker that was leaving as it
    forked."""
    run(server, tmp_path, "print('first')")
    info = run(server, tmp_path, """
        import os
        fds = os.listdir("/proc/self/fd")  # one of them, this listing's own, closes now
        links = [os.readlink(f"/proc/self/fd/{fd}") for fd in fds
                 if os.path.lexists(f"/proc/self/fd/{fd}")]
        print(sum(link.startswith("socket:") for link in links),
              sum(link == "anon_inode:[pidfd]" for link in links))
    """)
    assert info.stdout_tail.split() == ["1", "0"], info.stderr_tail


def test_the_spare_leaves_with_its_server(tmp_path: Path) -> None:
    handle = ForkServer("python", str(Path.cwd()), worker_env())
    handle.ready()
    spare = spare_of(handle)
    handle.close()
    assert wait_gone(spare)



def test_a_server_killed_between_cases_takes_its_spare_with_it() -> None:
    handle = ForkServer("python", str(Path.cwd()), worker_env())
    try:
        spare = spare_of(handle)
        os.kill(handle.ready()["pid"], signal.SIGKILL)
        assert wait_gone(spare)  # its parent-death signal
    finally:
        handle.close()


# --- Spare.said_exiting, and the sweep's `keep`, on plain forked children -------------------


def forked(body: Callable[[socket.socket], None]) -> Spare:
    """A child running `body` on its end of the socket pair, then leaving."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # as a server's end
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            ours.close()
            body(theirs)
        finally:
            os._exit(0)
    theirs.close()
    return Spare(pid, ours, os.pidfd_open(pid))


def say_exiting(sock: socket.socket) -> None:
    sock.send(EXITING)


def say_exiting_then_sleep(sock: socket.socket) -> None:
    sock.send(EXITING)
    time.sleep(2)


def leave_a_grandchild_holding_the_socket(sock: socket.socket) -> None:
    if os.fork() == 0:
        time.sleep(3)
        os._exit(0)
    os._exit(4)


def sleep(sock: socket.socket) -> None:
    time.sleep(30)


def test_a_worker_that_says_exiting_is_heard_before_it_exits() -> None:
    child = forked(say_exiting_then_sleep)
    started = time.monotonic()
    assert child.said_exiting()
    assert time.monotonic() - started < 1.5
    child.discard()


def test_a_worker_that_dies_silently_is_heard_even_if_a_descendant_holds_its_socket() -> None:
    child = forked(leave_a_grandchild_holding_the_socket)
    started = time.monotonic()
    assert not child.said_exiting()
    assert time.monotonic() - started < 2
    _, status = os.waitpid(child.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 4
    child.close()


def test_a_worker_that_said_exiting_and_left_is_heard_as_exiting() -> None:
    child = forked(say_exiting)
    assert wait_gone(child.pid)
    assert child.said_exiting()
    child.discard()


def descendant_says_exiting(sock: socket.socket) -> None:
    """A kernel's forked child speaking on the worker's inherited socket."""
    if os.fork() == 0:
        sock.send(EXITING)
        os._exit(0)
    time.sleep(1)
    os._exit(0)


def test_exiting_said_by_a_descendant_is_not_the_workers() -> None:
    """Heeded, the server would fork while the worker still measures."""
    child = forked(descendant_says_exiting)
    started = time.monotonic()
    assert not child.said_exiting()  # the worker left without a word, a second later
    assert time.monotonic() - started >= 0.9
    os.waitpid(child.pid, 0)
    child.close()


def test_without_a_pidfd_the_server_does_not_listen_for_exiting() -> None:
    """It could not tell a dead worker from a descendant holding its socket: it waits for the
    exit instead, as before spares."""
    child = forked(say_exiting_then_sleep)
    assert child.pidfd is not None
    os.close(child.pidfd)
    child.pidfd = None
    started = time.monotonic()
    assert not child.said_exiting()
    assert time.monotonic() - started < 0.5
    child.discard()


def test_a_spare_that_died_is_not_handed_a_job() -> None:
    child = forked(say_exiting)
    assert wait_gone(child.pid)
    read, write = os.pipe()
    assert not child.hand_over(b"{}", [read, write])
    for fd in (read, write):
        os.close(fd)
    child.discard()


def sweep_keeping_one(sock: socket.socket) -> None:
    """As a server would: two children, the case's and a spare; sweep the case's keeping the
    spare; report the children left."""
    keep, other = forked(sleep), forked(sleep)
    sweep(other.pid, keep=keep.pid)
    sock.send(repr(sorted(own_children()) == [keep.pid]).encode())
    keep.discard()


def test_the_sweep_keeps_the_spare_it_is_told_to_keep() -> None:
    """In a forked child: a sweep in this process would kill the test session's children."""
    child = forked(sweep_keeping_one)
    assert child.sock.recv(64) == b"True"
    os.waitpid(child.pid, 0)
    child.close()


def test_a_child_that_does_not_start_is_no_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child that dies before it says "ready" is reaped and refused: the server then forks
    on demand (and a failure there ends it, so that its cases are spawned)."""
    from kernbench.execution import serving

    monkeypatch.setattr(serving, "die_with", lambda parent: os._exit(70))
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        with pytest.raises(OSError, match="did not start"):
            serving._fork_child(theirs)
        assert serving._fork_spare(theirs) is None
    finally:
        ours.close()
        theirs.close()
