"""Run one piece of in-process work in a forked child: the isolation of ``kernbench.bench`` and
the pytest plugin, whose functions are live objects (closures, bound methods) that no spawned
worker could import.

The child inherits the caller's memory, so the function and its arguments need no pickling. It
runs `work` and sends back the JSON-able value `work` returned through a pipe, then leaves with
``os._exit`` (no atexit handlers, no pytest teardown of the parent's objects). The parent
reads the pipe while the child writes (a reply larger than the pipe's buffer cannot block
it), kills the child at the time limit, and turns a child's exception, signal or silent exit
into a :class:`~kernbench.errors.KernbenchError` that says which.

Only where fork is safe (:func:`kernbench.execution.forkserver.fork_supported`: Linux); a
process that has already initialised CUDA cannot use CUDA in a forked child, which is the
caller's to avoid (measure GPU work in-process, or run the kernel through ``kernbench run``).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import time
import traceback
from collections.abc import Callable
from typing import Any

from kernbench.errors import KernbenchError
from kernbench.execution.forkserver import fork_supported

__all__ = ["run_forked"]

READ_BYTES = 1 << 16


def run_forked(work: Callable[[], Any], timeout_s: float | None = None) -> Any:
    """`work()` run in a forked child; its JSON-able return value, read back in the parent.

    KernbenchError when fork is not supported here, when the child raised (its traceback is in
    the message), died of a signal, exited without a reply, or ran past `timeout_s`."""
    reason = fork_supported()
    if reason is not None:
        raise KernbenchError(f"isolation 'fork' is not available: {reason}")
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child, which leaves through os._exit
        os.close(read_fd)
        _child(work, write_fd)
    os.close(write_fd)
    try:
        data, timed_out = _read_all(read_fd, timeout_s)
    finally:
        os.close(read_fd)
    if timed_out:
        _kill(pid)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        raise KernbenchError(f"the forked measurement ran past its time limit of {timeout_s:g} s "
                             f"and was killed{_deadlock_hint()}")
    return _reply(data, status)


def _deadlock_hint() -> str:
    """Why a forked child that should have finished may wait forever: torch's thread pool or
    JAX's backend, once it has run in this process, is not in the child, whose first use of
    it waits on threads the fork did not copy."""
    import sys

    loaded = [name for name in ("torch", "jax") if name in sys.modules]
    if not loaded:
        return ""
    return (f"; {' and '.join(loaded)} {'is' if len(loaded) == 1 else 'are'} imported in this "
            "process, and a forked child waits forever on their threads once they have run "
            "here: use isolation='none', or time the kernel with `kernbench run`, whose "
            "workers are forked before any pool starts")


def _child(work: Callable[[], Any], write_fd: int) -> None:  # pragma: no cover - child only
    try:
        payload: dict[str, Any] = {"ok": True, "value": work()}
    except BaseException as exc:
        payload = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                   "traceback": traceback.format_exc()}
    try:
        text = json.dumps(payload)
    except (TypeError, ValueError) as exc:
        text = json.dumps({"ok": False, "error": f"the reply is not JSON: {exc}",
                           "traceback": ""})
    try:
        with os.fdopen(write_fd, "w", encoding="utf-8") as stream:
            stream.write(text)
    finally:
        os._exit(0)


def _read_all(fd: int, timeout_s: float | None) -> tuple[bytes, bool]:
    """Everything the child writes until it closes the pipe; (data, timed out)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    chunks: list[bytes] = []
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return b"".join(chunks), True
            if not selector.select(left):
                continue
            chunk = os.read(fd, READ_BYTES)
            if not chunk:
                return b"".join(chunks), False
            chunks.append(chunk)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _reply(data: bytes, status: int) -> Any:
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise KernbenchError(f"the forked measurement died of {name}")
    try:
        payload = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        code = os.waitstatus_to_exitcode(status)
        raise KernbenchError(f"the forked measurement exited ({code}) without a reply") from None
    if not payload.get("ok"):
        raise KernbenchError(f"the measured function raised in the forked child: "
                             f"{payload.get('error')}\n{payload.get('traceback') or ''}".rstrip())
    return payload.get("value")
