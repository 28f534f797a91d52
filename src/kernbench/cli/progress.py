"""Progress of a run on the terminal: cases done / total, the current case, elapsed and ETA.

Three forms, picked by :func:`make_progress`:

* a rich progress bar when stderr is a terminal (finished cases scroll above it);
* plain lines, one per finished case, when it is not (CI logs, pipes);
* nothing with ``--quiet``.

The ETA is the mean time per finished case times the cases left: cases differ, so it is a
rough guide that gets better as the run goes on.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from kernbench.results.model import CaseResult

__all__ = ["LineProgress", "RichProgress", "eta_s", "format_duration", "make_progress",
           "result_line"]


def eta_s(elapsed_s: float, done: int, total: int) -> float | None:
    """Seconds left if the remaining cases take as long as the finished ones did on average."""
    if done <= 0 or total < done:
        return None
    return elapsed_s / done * (total - done)


def format_duration(seconds: float | None) -> str:
    """`42 s`, `3 min 05 s`, `1 h 02 min`; `?` when unknown."""
    if seconds is None:
        return "?"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def result_line(result: CaseResult) -> str:
    """What one finished case says: its median, or its status and reason."""
    if result.status == "ok":
        from kernbench.analysis.stats import percentile

        p50 = percentile(result.samples_ms, 50)
        return (f"{result.case_id}: p50 {p50:.4g} ms ({len(result.samples_ms)} samples x "
                f"{result.inner_loops})")
    return f"{result.case_id}: {result.status.upper()}: {result.reason}"


class LineProgress:
    """One plain line per finished case, with elapsed time and ETA (for logs)."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._clock = clock
        self._started = clock()

    def case_started(self, label: str, index: int, total: int) -> None:
        """Plain logs only show finished cases."""

    def case_finished(self, line: str, index: int, total: int) -> None:
        elapsed = self._clock() - self._started
        left = eta_s(elapsed, index, total)
        print(f"[{index}/{total}] {line} (elapsed {format_duration(elapsed)}, "
              f"ETA {format_duration(left)})", file=self._stream, flush=True)

    def close(self) -> None:
        """Nothing to tear down."""


class RichProgress:
    """A rich progress bar on stderr; finished cases are printed above it."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._console = Console(file=stream)
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("ETA"),
                             TimeRemainingColumn(), console=self._console, transient=True)
        self._task: Any = None
        self._bar.start()

    def _ensure_task(self, total: int) -> None:
        if self._task is None:
            self._task = self._bar.add_task("starting", total=total)

    def case_started(self, label: str, index: int, total: int) -> None:
        self._ensure_task(total)
        self._bar.update(self._task, description=f"running {label}", total=total)

    def case_finished(self, line: str, index: int, total: int) -> None:
        self._ensure_task(total)
        self._console.print(f"[{index}/{total}] {line}", markup=False, highlight=False)
        self._bar.update(self._task, completed=index, total=total)

    def close(self) -> None:
        self._bar.stop()


Progress = LineProgress | RichProgress


def make_progress(quiet: bool, stream: TextIO | None = None) -> Progress | None:
    """None with `quiet`; a bar on a terminal; plain lines otherwise."""
    if quiet:
        return None
    stream = stream if stream is not None else sys.stderr
    if stream.isatty():
        return RichProgress(stream)
    return LineProgress(stream)
