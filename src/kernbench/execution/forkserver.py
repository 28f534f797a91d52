"""Fork servers: one preloaded process per framework forks a fresh worker for every case.

Starting ``python -m kernbench.execution.worker`` for every case costs the interpreter's start, the
import of the framework (about 1 s for torch, 0.6 s for JAX) and of kernbench's own modules
(compiled again each time when bytecode is not written). A fork server pays that once per
run: it imports the framework *without* initialising CUDA or JAX's backends, then forks one
child per case. The child keeps every promise of isolation that a spawned worker keeps:

- its own session and process group, killed whole on timeout;
- ``PR_SET_PDEATHSIG`` (the server has it too, so killing kernbench outright kills both);
- the optional ``RLIMIT_AS`` limit, and the run's ``--root`` as its working directory;
- stdout and stderr into pipes that the parent drains into bounded tails (the pipes are
  created by the parent and handed over with ``SCM_RIGHTS``);
- its exit status, signal or ``os._exit`` code, reported by the server, which reaps it;
- no orphans: the server is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so every
  descendant a case leaves behind, daemons that double-forked and left the session included,
  becomes the server's child once orphaned, and the server kills them all before it answers.

The parent talks to a server over a ``SOCK_SEQPACKET`` socket pair, one JSON message per
packet: ``run`` (with the two pipe ends) is answered by ``started`` and then ``finished``.
The server's loop, which forks each worker ahead of its case while the last one leaves, is
:mod:`kernbench.execution.serving`.
Where fork is unsafe (no ``fork`` or ``SCM_RIGHTS`` on this platform, a framework that came
out of its import already initialised) the runner falls back to spawning, and the record says
why (:mod:`kernbench.execution.isolation`).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Sequence
from typing import Any

from kernbench.execution.reaping import die_with
from kernbench.execution.stacks import STACK_GRACE_S, ask_for_stack
from kernbench.execution.tails import CaseOutput

PR_SET_CHILD_SUBREAPER = 36
PRELOADS: dict[str, tuple[str, ...]] = {
    "numpy": ("numpy",), "pytorch": ("torch",),
    "jax": ("jax", "jaxlib.mlir.dialects.mhlo", "jaxlib.mlir.dialects.builtin")}
"""What a server imports for each framework; every other framework gets kernbench alone.
JAX imports the two MLIR dialects lazily, at the first lowering, in every worker (~40 ms of
its first call on the VM of docs/performance-history.md); importing them starts no thread and
no backend."""
GPU_FRAMEWORKS = ("pytorch", "jax")
"""Preload keys whose servers also import kernbench's GPU timing: a CPU-only server need not."""
MESSAGE_BYTES = 1 << 16


def preload_key(framework: str) -> str:
    """Frameworks that preload the same modules share a server."""
    return framework if framework in PRELOADS else "python"


def fork_supported() -> str | None:
    """None where fork servers work here, else why not."""
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        return "this platform has no fork() or SCM_RIGHTS"
    if sys.platform == "darwin":
        return "fork without exec is unsafe on macOS (system frameworks are not fork-safe)"
    if not sys.platform.startswith("linux"):
        return f"fork servers are only used on Linux, not {sys.platform}"
    return None


# --- the server process ----------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m kernbench.execution.forkserver FRAMEWORK FD PARENT_PID``."""
    args = list(sys.argv[1:] if argv is None else argv)
    die_with(int(args[2]))
    gc.disable()  # for the server's whole life: see freeze_heap
    sock = socket.socket(fileno=int(args[1]))
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    hello = _preload(args[0])
    from kernbench.execution.serving import serve

    serve(sock, json.dumps({"ready": True, "pid": os.getpid(), **hello}).encode())
    # Leave without tearing the interpreter down: freeing every module of a preloaded
    # framework one by one takes 0.1 s or more, and the parent waits for this exit.
    sys.stderr.flush()
    os._exit(0)


def _preload(key: str) -> dict[str, Any]:
    """Import kernbench's worker and the framework, rehearse a case (warm code for every
    child: :mod:`kernbench.execution.rehearsal`); say whether forking is still safe."""
    import kernbench.execution.worker  # noqa: F401  (compiled once here instead of once per case)
    from kernbench.execution.jobs import prepare_codec

    prepare_codec()

    loaded, failed = [], {}
    for name in PRELOADS.get(key, ()):
        try:
            __import__(name)
            loaded.append(name)
        except Exception as exc:  # the kernel's own import will report it
            failed[name] = f"{type(exc).__name__}: {exc}"[:300]
    if "numpy" in sys.modules:  # the worker seeds numpy.random; importing it costs 10-25 ms
        import numpy.random  # noqa: F401
    if key in GPU_FRAMEWORKS:  # their GPU cases time with these (the worker imports them lazily)
        __import__("kernbench.measure.gpu_session")
    from kernbench.execution.rehearsal import rehearse

    rehearsal = rehearse(key)
    freeze_heap()
    return {"preloaded": loaded, "failed": failed, "rehearsal": rehearsal,
            "unsafe": initialised_reason()}


def freeze_heap() -> None:
    """Move every object the preloads made out of the garbage collector's sight (``gc.freeze``):
    a collection in a forked child then never walks them. Walking them writes to every page
    that holds one, and each such page is copied on write: a full collection in a child of a
    server with torch loaded took about 0.9 s instead of 0.05 s (~170,000 objects).

    The server never collects, as the gc module's documentation advises for a process that
    forks without exec (``gc.disable()`` early, ``gc.freeze()`` before the fork, ``gc.enable()``
    early in each child: :func:`kernbench.execution.serving.serve`'s children do): a
    collection frees holes in pages that children then fill, copying them, and costs the start
    of every server. One before the freeze took 132 ms (torch), 75 ms (JAX) and 10 ms (numpy)
    here, and freed 20, 0 and 11 objects. What the server leaves uncollected instead (about
    7,600 objects, 2 MB, with torch, JAX and numpy imported) is frozen with the rest: no
    collection walks it."""
    gc.freeze()


def initialised_reason() -> str | None:
    """Why forking this process would be unsafe, or None: a device runtime already
    initialised (CUDA, JAX's backends) or Python threads running."""
    import threading

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "CUDA was initialised while importing torch"
    bridge = sys.modules.get("jax._src.xla_bridge")
    if bridge is not None and getattr(bridge, "_backends", None):
        return "JAX's backends were initialised while importing jax"
    if threading.active_count() > 1:
        return f"{threading.active_count() - 1} Python threads were started by the imports"
    return None


def _prctl(option: int, value: int) -> None:
    from kernbench.execution.reaping import prctl

    function = prctl()
    if function is not None:
        function(option, value)


if __name__ == "__main__":
    main()


# --- the parent's side -----------------------------------------------------------------------

START_TIMEOUT_S = 180.0
"""How long a server may take to import its framework."""
REPLY_TIMEOUT_S = 30.0
"""How long a live server may take to fork (or to reap and sweep after a kill)."""
STOPPED_CHECK_S = 0.25
"""How often a server that has not answered yet is checked for being stopped."""
OUTPUT_EOF_TIMEOUT_S = 2.0
"""How long a finished case's pipes may take to reach end-of-file (the server has killed
every descendant that could hold them by then)."""


class ServerGone(Exception):
    """The fork server failed to start, died or stopped answering. Before a case's job went
    out (:class:`NotSent`, a failed start) the case can run elsewhere; after it,
    :class:`DiedDuringCase`, it is not run again."""


class NotSent(ServerGone):
    """The fork server was gone before a case's job reached it: the case can run elsewhere."""


class DiedDuringCase(ServerGone):
    """The fork server died, or stopped answering, once it had a case's job. The worker died
    with it (its parent-death signal, or killed), and the case is not run again: it may be
    what killed or stopped the server, even before the server said the worker's pid (None
    then: a spare runs its job at once)."""

    def __init__(self, pid: int | None, timed_out: bool, how: str) -> None:
        self.pid = pid
        self.timed_out = timed_out
        self.cause = (f"the case's fork server {how} while the case ran, and its worker with "
                      "it (a kernel that kills or stops its parent process does this, as can "
                      "the out-of-memory killer); the case was not run again")
        super().__init__(self.cause)


class ForkServer:
    """The parent's handle on one fork server process."""

    def __init__(self, key: str, cwd: str, env: dict[str, str]) -> None:
        import subprocess

        from kernbench.execution.tails import ThreadedTail

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.key = key
        self._sock = ours
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "kernbench.execution.forkserver", key, str(theirs.fileno()),
             str(os.getpid())],
            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, pass_fds=(theirs.fileno(),), start_new_session=True)
        theirs.close()
        assert self._proc.stderr is not None
        self._stderr = ThreadedTail(self._proc.stderr)
        self.hello: dict[str, Any] | None = None

    def ready(self) -> dict[str, Any]:
        """Wait for the server's greeting: what it preloaded, and whether forking is safe."""
        if self.hello is None:
            hello = self._receive(START_TIMEOUT_S)
            if hello is None:
                self.close()
                raise ServerGone(f"the {self.key} fork server did not start within "
                                 f"{START_TIMEOUT_S:g} s")
            self.hello = hello
        return self.hello

    def run(self, job: str, cwd: str, env: dict[str, str], timeout_s: float,
            max_memory_bytes: int | None) -> Any:
        """Run one case in a forked child; its
        :class:`~kernbench.execution.isolation.WorkerExit`."""
        import secrets

        from kernbench.execution.isolation import CASE_TOKEN_VARIABLE, kill_marked

        started = time.monotonic()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        mark = secrets.token_hex(8)  # the case's own: what it leaves if its server dies
        request = {"op": "run", "job": job, "cwd": cwd, "env": {**env, CASE_TOKEN_VARIABLE: mark},
                   "max_memory_bytes": max_memory_bytes}
        try:
            socket.send_fds(self._sock, [json.dumps(request).encode()], [out_w, err_w])
        except OSError as exc:
            os.close(out_r)
            os.close(err_r)
            raise NotSent(f"the {self.key} fork server is gone: {exc}") from exc
        finally:
            os.close(out_w)
            os.close(err_w)
        output = CaseOutput(out_r, err_r)
        try:
            pid, finished, timed_out = self._wait_case(started, timeout_s, output)
            output.finish(OUTPUT_EOF_TIMEOUT_S)
        except DiedDuringCase as died:  # no server sweeps what the case left: kill it here
            kill_marked(mark, CASE_TOKEN_VARIABLE)
            output.finish(OUTPUT_EOF_TIMEOUT_S)
            return self._exit(died.pid, None, died.timed_out, time.monotonic() - started,
                              output, cause=died.cause)
        finally:
            output.close()
        return self._exit(pid, os.waitstatus_to_exitcode(int(finished["status"])), timed_out,
                          time.monotonic() - started, output)

    def _wait_case(self, started: float, timeout_s: float,
                   output: CaseOutput) -> tuple[int, dict[str, Any], bool]:
        """(child pid, the server's `finished` message, whether the timeout killed it)."""
        try:
            hello = self._answer(output)
        except ServerGone as exc:  # the job went out: its worker, started, may have done it
            raise self._lost(None, False) from exc
        except BaseException:  # interrupted before the pid came: the worker dies with it
            self._proc.kill()
            self.close()
            raise
        if hello is None:
            raise self._lost(None, False, silent=True)
        pid, timed_out = int(hello["started"]), False
        try:
            finished = self._receive(timeout_s - (time.monotonic() - started), output)
            if finished is not None:
                return pid, finished, False
            timed_out = True
            ask_for_stack(pid)
            if not output.pump(self._sock, STACK_GRACE_S):  # no "finished": it still runs
                _kill_case(pid)  # (once reaped, its pid could be another process's)
            finished = self._answer(output)
        except ServerGone as exc:
            raise self._lost(pid, timed_out) from exc
        except BaseException:  # interrupted: the worker goes, and the server with it
            _kill_case(pid)
            self.close()
            raise
        if finished is None:  # no word even after the timeout's kill
            raise self._lost(pid, True, silent=True)
        return pid, finished, True

    def _answer(self, output: CaseOutput) -> dict[str, Any] | None:
        """The server's next message within ``REPLY_TIMEOUT_S``; None as soon as it is seen
        stopped (a kernel that stops its parent), which would never answer."""
        from kernbench.execution.reaping import stopped

        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while (left := deadline - time.monotonic()) > 0:
            message = self._receive(min(left, STOPPED_CHECK_S), output)
            if message is not None or stopped(self._proc.pid):
                return message
        return None

    def _lost(self, pid: int | None, timed_out: bool, silent: bool = False) -> DiedDuringCase:
        """A server that died (its socket closed) or, `silent`, stopped answering with a
        case's job: closed (waited for, or killed), the case's worker killed where its pid is
        known, and the case's end."""
        from kernbench.execution.isolation import exit_words
        from kernbench.execution.reaping import stopped

        how = None if not silent else (
            "was stopped, so could not answer (it was killed)" if stopped(self._proc.pid)
            else "stopped answering (it was killed)")
        if pid is not None:
            _kill_case(pid)
        self.close()
        return DiedDuringCase(pid, timed_out, how or exit_words(self._proc.returncode))

    def _exit(self, pid: int | None, returncode: int | None, timed_out: bool, wall_s: float,
              output: CaseOutput, cause: str | None = None) -> Any:
        from kernbench.execution.isolation import WorkerExit

        out, err = output.stdout, output.stderr
        return WorkerExit(returncode=returncode, timed_out=timed_out, wall_s=wall_s, pid=pid,
                          stdout_tail=out.text(), stderr_tail=err.text(),
                          stdout_bytes=out.total, stderr_bytes=err.total, isolation="fork",
                          cause=cause)

    def _receive(self, timeout_s: float,
                 output: CaseOutput | None = None) -> dict[str, Any] | None:
        """The next message; None when `timeout_s` passes first; ServerGone at EOF. With
        `output`, the case's pipes are drained while waiting."""
        if output is not None and not output.pump(self._sock, timeout_s):
            return None
        self._sock.settimeout(max(timeout_s, 0.001))
        try:
            data = self._sock.recv(MESSAGE_BYTES)
        except TimeoutError:
            return None
        except OSError as exc:
            raise ServerGone(f"the {self.key} fork server is gone: {exc}") from exc
        if not data:
            code = self._proc.poll()
            raise ServerGone(f"the {self.key} fork server exited ({code}): "
                             f"{self._stderr.text(0.5).strip()[-300:]}")
        message = json.loads(data)
        assert isinstance(message, dict)
        return message

    def alive(self) -> bool:
        return self._proc.poll() is None and self._sock.fileno() >= 0

    def ask_to_leave(self) -> None:
        """Send `exit` without waiting: closing several servers overlaps their exits."""
        with contextlib.suppress(OSError):
            if self._sock.fileno() >= 0:
                self._sock.send(json.dumps({"op": "exit"}).encode())
        self._sock.close()

    def close(self) -> None:
        """Ask the server to leave, then make sure it has (it never runs a kernel itself)."""
        from kernbench.execution.isolation import wait_for_exit

        self.ask_to_leave()
        if not wait_for_exit(self._proc, 2.0):
            self._proc.kill()
        self._proc.wait()


def _kill_case(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)
