"""Ctrl-C and SIGTERM during a run: stop between writes, never in the middle of one.

While a run is going, SIGINT and SIGTERM both raise :class:`Interrupted` (a KeyboardInterrupt,
so code that already handles Ctrl-C handles SIGTERM alike). Inside :meth:`SignalGuard.critical`
(writing a case's record, the summary) the signal is held until the write is done, so the
report set on disk is always whole: every finished case is in its kernel file, and the summary
written on the way out says the run is incomplete.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal; `signal_number` says which (exit code 128 + it)."""

    def __init__(self, signal_number: int) -> None:
        super().__init__(signal.Signals(signal_number).name)
        self.signal_number = signal_number


def exit_code_for_interrupt(exc: BaseException) -> int:
    """130 for Ctrl-C (SIGINT, or a plain KeyboardInterrupt), 143 for SIGTERM: 128 + signal."""
    return 128 + int(getattr(exc, "signal_number", signal.SIGINT))


class SignalGuard:
    """Turns SIGINT/SIGTERM into :class:`Interrupted`, held back while inside `critical()`."""

    def __init__(self) -> None:
        self._depth = 0
        self._pending: int | None = None

    def handle(self, signal_number: int, frame: FrameType | None) -> None:
        if self._depth:
            self._pending = signal_number
            return
        raise Interrupted(signal_number)

    @contextmanager
    def critical(self) -> Iterator[None]:
        """A section a signal must not cut short; the signal is raised when it ends."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        if self._depth == 0 and self._pending is not None:
            pending, self._pending = self._pending, None
            raise Interrupted(pending)


@contextmanager
def signals_handled() -> Iterator[SignalGuard]:
    """Install the guard's handler for SIGINT and SIGTERM (main thread only: elsewhere the
    guard is inert) and restore the previous handlers afterwards."""
    guard = SignalGuard()
    if threading.current_thread() is not threading.main_thread():
        yield guard
        return
    previous: dict[signal.Signals, Any] = {s: signal.getsignal(s) for s in HANDLED_SIGNALS}
    for number in HANDLED_SIGNALS:
        if previous[number] is not signal.SIG_IGN:  # `nohup` and background jobs ignore them
            signal.signal(number, guard.handle)
    try:
        yield guard
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
