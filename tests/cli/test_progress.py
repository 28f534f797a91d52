"""Progress output: ETA arithmetic, the plain-line form for logs, the bar on a terminal."""

from __future__ import annotations

import io
import itertools

import pytest

from kernbench.cli.progress import (
    LineProgress,
    RichProgress,
    eta_s,
    format_duration,
    make_progress,
    result_line,
)
from kernbench.results.model import CaseResult


def test_eta_is_mean_time_per_case_times_cases_left() -> None:
    assert eta_s(30.0, 3, 10) == pytest.approx(70.0)
    assert eta_s(30.0, 10, 10) == 0.0
    assert eta_s(5.0, 0, 10) is None
    assert eta_s(5.0, 11, 10) is None


@pytest.mark.parametrize(("seconds", "text"), [
    (None, "?"), (0.4, "0 s"), (59.4, "59 s"), (65, "1 min 05 s"), (3720, "1 h 02 min")])
def test_format_duration(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_quiet_gives_no_progress_and_pipes_get_plain_lines() -> None:
    assert make_progress(True, io.StringIO()) is None
    assert isinstance(make_progress(False, io.StringIO()), LineProgress)
    bar = make_progress(False, Tty())
    assert isinstance(bar, RichProgress)
    bar.close()


def test_plain_lines_carry_count_elapsed_and_eta() -> None:
    stream = io.StringIO()
    ticks = itertools.count(0.0, 10.0)  # 0 at start, then 10 s per call
    progress = LineProgress(stream, clock=lambda: next(ticks))
    progress.case_started("a[cpu,fp32]", 1, 4)
    progress.case_finished("a[cpu,fp32]: p50 1 ms", 1, 4)
    progress.case_finished("b[cpu,fp32]: p50 2 ms", 2, 4)
    lines = stream.getvalue().splitlines()
    assert lines == ["[1/4] a[cpu,fp32]: p50 1 ms (elapsed 10 s, ETA 30 s)",
                     "[2/4] b[cpu,fp32]: p50 2 ms (elapsed 20 s, ETA 20 s)"]


def test_bar_prints_finished_cases_above_it() -> None:
    stream = Tty()
    progress = RichProgress(stream)
    progress.case_started("a[cpu,fp32]", 1, 2)
    progress.case_finished("a[cpu,fp32]: p50 1 ms", 1, 2)
    progress.close()
    assert "[1/2] a[cpu,fp32]: p50 1 ms" in stream.getvalue()


def test_result_line_of_a_failure_says_status_and_reason() -> None:
    failed = CaseResult(kernel_name="k", kernel_path="k.py", framework="numpy", backend="cpu",
                        precision="fp32", problem_size=None, status="failed",
                        reason="ValueError: bad")
    assert result_line(failed) == "k[cpu,fp32]: FAILED: ValueError: bad"
    ok = CaseResult(kernel_name="k", kernel_path="k.py", framework="numpy", backend="cpu",
                    precision="fp32", problem_size=None, status="ok",
                    samples_ms=(1.0, 3.0, 2.0), inner_loops=4)
    assert result_line(ok) == "k[cpu,fp32]: p50 2 ms (3 samples x 4)"
