"""Bounded tails of a worker's stdout and stderr: a kernel that floods either pipe can never
fill it, stall the worker or grow the parent's memory. A spawned worker's pipes are drained by a
thread each (:class:`ThreadedTail`); a forked case's are drained in the same ``select`` loop that
waits for its fork server's messages (:class:`CaseOutput`)."""

from __future__ import annotations

import os
import selectors
import socket
import threading
import time
from collections import deque
from typing import IO

TAIL_BYTES = 4096


class TailBuffer:
    """Keeps the last `limit` bytes fed to it and counts all of them."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.total = 0
        self._chunks: deque[bytes] = deque()
        self._kept = 0
        self._limit = limit

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._chunks.append(chunk)
        self._kept += len(chunk)
        while self._kept - len(self._chunks[0]) >= self._limit:
            self._kept -= len(self._chunks.popleft())

    def text(self) -> str:
        data = b"".join(self._chunks)[-self._limit:]
        return data.decode("utf-8", errors="replace")


class ThreadedTail(TailBuffer):
    """A :class:`TailBuffer` that a thread of its own fills from `stream` until EOF."""

    def __init__(self, stream: IO[bytes], limit: int = TAIL_BYTES) -> None:
        super().__init__(limit)
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes]) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
            self.feed(chunk)
        stream.close()

    def text(self, join_timeout: float = 2.0) -> str:
        self._thread.join(join_timeout)
        return super().text()


class CaseOutput:
    """A forked case's stdout and stderr pipes, drained into bounded tails in the same wait as
    the server's messages (one ``select`` loop, no thread per pipe): a kernel that floods
    either pipe never blocks, and starting two threads per worker costed a few ms a case."""

    def __init__(self, stdout_fd: int, stderr_fd: int) -> None:
        self.stdout, self.stderr = TailBuffer(), TailBuffer()
        self._tails = {stdout_fd: self.stdout, stderr_fd: self.stderr}
        self._selector = selectors.DefaultSelector()
        for fd in self._tails:
            os.set_blocking(fd, False)
            self._selector.register(fd, selectors.EVENT_READ)

    def pump(self, sock: socket.socket, timeout_s: float) -> bool:
        """Drain the pipes until `sock` has a message (True) or `timeout_s` passes (False)."""
        deadline = time.monotonic() + timeout_s
        self._selector.register(sock, selectors.EVENT_READ)
        try:
            while (remaining := deadline - time.monotonic()) > 0:
                for key, _ in self._selector.select(remaining):
                    if key.fileobj is sock:
                        return True
                    self._read(key.fd)
            return False
        finally:
            self._selector.unregister(sock)

    def finish(self, timeout_s: float) -> None:
        """Read what is left in the pipes, until both reach end-of-file or `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while self._tails and (remaining := deadline - time.monotonic()) > 0:
            for key, _ in self._selector.select(remaining):
                self._read(key.fd)

    def _read(self, fd: int) -> None:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        if chunk:
            self._tails[fd].feed(chunk)
            return
        self._selector.unregister(fd)
        os.close(fd)
        del self._tails[fd]

    def close(self) -> None:
        for fd in list(self._tails):
            self._selector.unregister(fd)
            os.close(fd)
        self._tails.clear()
        self._selector.close()
