"""The run's result sink: kernel files rewritten at a bounded cost, never losing a record on a
normal or interrupted stop."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from kernbench.api import sink as sink_module
from kernbench.api.run import settings_record
from kernbench.execution.outcomes import NOT_MEASURED_ACCURACY, NOT_MEASURED_ENERGY
from kernbench.execution.settings import RunSettings
from kernbench.measure.environment import collect_environment
from kernbench.results.model import CaseResult


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


def result(kernel: str, n: int) -> CaseResult:
    return CaseResult(kernel_name=kernel, kernel_path=f"kernels/{kernel}.py", framework="numpy",
                      backend="cpu", precision="fp32", problem_size={"n": n}, status="ok",
                      samples_ms=(1.0,), point=f"n={n}", energy=NOT_MEASURED_ENERGY,
                      accuracy=NOT_MEASURED_ACCURACY)


@pytest.fixture()
def sink(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, FakeClock, list[int]]:
    clock = FakeClock()
    monkeypatch.setattr(sink_module.time, "monotonic", clock.monotonic)
    sink = sink_module.ResultSink(tmp_path, [], [], contextlib.nullcontext, None)
    settings = settings_record(RunSettings(root=tmp_path), tmp_path, [])
    sink.start(collect_environment(tmp_path, run_git=False), {"kernels": []},
               "2026-11-22T00:00:00Z", settings)
    writes: list[int] = []
    real_write = sink.reports.write_kernel

    def timed_write(name: str, entry: Any, records: list[CaseResult]) -> Path:
        writes.append(len(records))
        clock.now += 0.002 * len(records)  # a write costs time in proportion to its records
        return real_write(name, entry, records)

    monkeypatch.setattr(sink.reports, "write_kernel", timed_write)
    return sink, clock, writes


def test_a_big_sweep_is_rewritten_at_a_bounded_share_of_the_run(
        sink: tuple[Any, FakeClock, list[int]]) -> None:
    writer, clock, writes = sink
    for n in range(2000):
        clock.now += 0.3  # each case takes 0.3 s
        writer.record(result("big", n), n + 1, 2000)
    run = writer.finish(True)
    assert len(run.results) == 2000 and writes[-1] == 2000
    write_time = sum(0.002 * w for w in writes)
    assert write_time <= 0.11 * (2000 * 0.3 + write_time)  # about 10% at most
    assert len(writes) == 85  # 84 along the way, 1 at the end; after every case: 2,000
    assert writes[:5] == [1, 2, 3, 4, 5]  # small files: still written after every case


def test_the_next_kernel_and_the_stop_flush_what_is_pending(
        sink: tuple[Any, FakeClock, list[int]]) -> None:
    writer, clock, writes = sink
    for n in range(300):
        clock.now += 0.001  # cases faster than the writes: most rewrites are deferred
        writer.record(result("a", n), n + 1, 301)
    assert writes[-1] < 300
    writer.record(result("b", 0), 301, 301)
    assert 300 in writes  # kernel a's last records were written before b's first
    run = writer.finish(False)  # an interrupted stop writes the rest too
    assert [r.kernel_name for r in run.results] == ["a"] * 300 + ["b"]
    assert run.complete is False
