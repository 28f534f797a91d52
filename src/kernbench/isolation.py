"""Run one worker process in isolation: its own session, bounded output, a hard timeout.

The worker starts a new session (process group), so a timeout kills the kernel *and* every
child it started; after a normal exit the group is swept too, so no orphans outlive a case.
stdout and stderr are drained by threads into bounded tails: a kernel that floods either cannot
fill a pipe, stall the worker or grow the parent's memory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

TAIL_BYTES = 4096


@dataclass(frozen=True)
class WorkerExit:
    """How a worker process ended, and the tails of what it printed."""

    returncode: int | None
    timed_out: bool
    wall_s: float
    pid: int
    stdout_tail: str
    stderr_tail: str
    stdout_bytes: int
    stderr_bytes: int

    @property
    def signal_name(self) -> str | None:
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"


class _Tail:
    """Keeps the last `limit` bytes of a stream and counts all of them."""

    def __init__(self, stream: IO[bytes], limit: int = TAIL_BYTES) -> None:
        self.total = 0
        self._chunks: deque[bytes] = deque()
        self._kept = 0
        self._limit = limit
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes]) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
            self.total += len(chunk)
            self._chunks.append(chunk)
            self._kept += len(chunk)
            while self._kept - len(self._chunks[0]) >= self._limit:
                self._kept -= len(self._chunks.popleft())
        stream.close()

    def text(self, join_timeout: float = 2.0) -> str:
        self._thread.join(join_timeout)
        data = b"".join(self._chunks)[-self._limit:]
        return data.decode("utf-8", errors="replace")


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_isolated(argv: Sequence[str], cwd: Path, env: dict[str, str],
                 timeout_s: float) -> WorkerExit:
    """Run `argv` in a new session; kill its whole process group on timeout and at the end."""
    started = time.monotonic()
    proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Tail(proc.stdout), _Tail(proc.stderr)
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        _kill_group(proc.pid)  # the kernel's children too, whether it ended or not
        proc.wait()
    return WorkerExit(returncode=proc.returncode, timed_out=timed_out,
                      wall_s=time.monotonic() - started, pid=proc.pid,
                      stdout_tail=out.text(), stderr_tail=err.text(),
                      stdout_bytes=out.total, stderr_bytes=err.total)
