"""Tests for kernbench.measure.protocol: the measurement protocol, driven by a deterministic fake
clock.

The fake clock only moves when something "costs" time: a timer read costs `read_cost` ns (so
``stop(start())`` is exactly the read cost), a fake kernel call advances it by its programmed
duration and a fake synchroniser by its own cost. Every figure the protocol produces can then
be asserted exactly.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from itertools import cycle
from pathlib import Path

import numpy as np
import pytest

from kernbench.analysis import stats
from kernbench.measure.metrics import MetricsCollector
from kernbench.measure.protocol import (
    OVERHEAD_PROBES,
    PerfCounterTimer,
    SyncFromResult,
    calibrate,
    measure,
    run_timed,
    timer_overhead_ns,
)
from kernbench.results.model import ProtocolSettings

MS = 1e6  # nanoseconds per millisecond
US = 1e3  # nanoseconds per microsecond


class FakeClock:
    """A timer whose `start` costs `read_cost` ns (one value, or a cycle of values)."""

    name = "fake"

    def __init__(self, read_cost: float | Iterable[float] = 0.0, record: bool = True) -> None:
        self.now = 0.0
        self._costs: Iterator[float] = cycle(
            [float(read_cost)] if isinstance(read_cost, (int, float)) else list(read_cost))
        self.record = record
        self.events: list[str] = []

    def log(self, event: str) -> None:
        if self.record:
            self.events.append(event)

    def start(self) -> object:
        self.log("start")
        token = self.now
        self.now += next(self._costs)
        return token

    def stop(self, token: object) -> float:
        assert isinstance(token, float)
        self.log("stop")
        return self.now - token


class FakeKernel:
    """Advances the clock by its programmed durations (a constant, or a sequence, one per call);
    returns the number of the call."""

    def __init__(self, clock: FakeClock, durations: float | Iterable[float]) -> None:
        self.clock = clock
        self._durations: Iterator[float] | None = (
            None if isinstance(durations, (int, float)) else iter(durations))
        self._constant = float(durations) if isinstance(durations, (int, float)) else 0.0
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        self.clock.now += self._constant if self._durations is None else next(self._durations)
        self.clock.log("call")
        return self.calls


class FakeSync:
    """Counts calls, remembers what it was handed and advances the clock by `cost`."""

    def __init__(self, clock: FakeClock, cost: float = 0.0) -> None:
        self.clock = clock
        self.cost = cost
        self.results: list[object] = []

    def synchronize(self, result: object) -> None:
        self.results.append(result)
        self.clock.now += self.cost
        self.clock.log("sync")


def timed_runs(events: list[str]) -> list[list[str]]:
    """The events inside each start/stop pair; fails if anything happens outside a pair."""
    runs: list[list[str]] = []
    current: list[str] | None = None
    for event in events:
        if event == "start":
            assert current is None, "nested timer start"
            current = []
        elif event == "stop":
            assert current is not None, "stop without start"
            runs.append(current)
            current = None
        else:
            assert current is not None, f"{event!r} outside a timed region"
            current.append(event)
    assert current is None
    return runs


def settings(**overrides: object) -> ProtocolSettings:
    """Protocol settings for the fake clock: no settling time (it is wall-clock time)."""
    return replace(ProtocolSettings(warmup=0, iterations=5, warmup_time_s=0.0),
                   **overrides)  # type: ignore[arg-type]


def minimal_loops(read_cost: float, per_call: float, ratio: float = 1000.0) -> int:
    """The smallest loop count whose sample (loops calls + one read) lasts read_cost * ratio."""
    return max(1, math.ceil((read_cost * ratio - read_cost) / per_call))


# --- timer overhead -------------------------------------------------------------------------


@pytest.mark.parametrize("cost", [0.0, 1.0, 37.0, 100.0, 12_345.0])
def test_timer_overhead_is_the_read_cost(cost: float) -> None:
    assert timer_overhead_ns(FakeClock(cost)) == cost


def test_timer_overhead_probes_the_default_number_of_times() -> None:
    clock = FakeClock(10.0)
    timer_overhead_ns(clock)
    assert clock.events == ["start", "stop"] * OVERHEAD_PROBES


def test_timer_overhead_is_the_median_not_the_mean() -> None:
    assert timer_overhead_ns(FakeClock([5.0, 1.0, 4.0, 2.0, 3.0]), probes=5) == 3.0
    # 150 cheap reads and 51 expensive outliers: the median ignores the outliers
    costs = [100.0] * 150 + [10_000.0] * 51
    assert timer_overhead_ns(FakeClock(costs), probes=201) == 100.0


# --- run_timed ------------------------------------------------------------------------------


def test_run_timed_total_includes_calls_syncs_and_one_read() -> None:
    clock = FakeClock(7.0)
    kernel = FakeKernel(clock, 1000.0)
    sync = FakeSync(clock, 30.0)
    total, last = run_timed(kernel, sync, clock, 4, keep=True)
    assert total == 7.0 + 4 * (1000.0 + 30.0)
    assert last == 4
    assert clock.events == ["start"] + ["call", "sync"] * 4 + ["stop"]


def test_run_timed_without_a_synchroniser_is_calls_only() -> None:
    clock = FakeClock(7.0)
    total, last = run_timed(FakeKernel(clock, 1000.0), None, clock, 3)
    assert total == 7.0 + 3 * 1000.0
    assert last is None  # not kept unless asked for
    assert clock.events == ["start", "call", "call", "call", "stop"]


class Buffer:
    """A kernel output that counts how many of its kind are alive."""

    alive = 0
    most = 0

    def __init__(self) -> None:
        Buffer.alive += 1
        Buffer.most = max(Buffer.most, Buffer.alive)

    def __del__(self) -> None:
        Buffer.alive -= 1


@pytest.mark.parametrize("with_sync", [False, True])
def test_each_result_is_released_before_the_next_call(with_sync: bool) -> None:
    # A plain loop never holds two outputs at once: a kernel that allocates its output must
    # not pay for a second live buffer inside the harness.
    Buffer.alive = Buffer.most = 0
    clock = FakeClock(100.0, record=False)

    def allocate() -> Buffer:
        clock.now += 1 * US
        return Buffer()

    class Waits:
        def synchronize(self, result: object) -> None:
            clock.now += 10.0

    outcome = measure(allocate, Waits() if with_sync else None, clock,
                      settings(warmup=3, iterations=6))
    assert Buffer.most == 1
    assert isinstance(outcome.last_result, Buffer)  # the last one is kept, for accuracy
    assert Buffer.alive == 1


def test_a_synchroniser_chosen_from_the_first_result_is_used_for_every_call() -> None:
    clock = FakeClock(100.0)
    kernel = FakeKernel(clock, 1 * US)
    sync = FakeSync(clock, cost=10.0)
    seen: list[object] = []

    def choose(result: object) -> FakeSync:
        seen.append(result)
        return sync

    outcome = measure(kernel, SyncFromResult(choose), clock, settings(warmup=2, iterations=3))
    assert seen == [1]  # judged once, on the first call's result
    assert len(sync.results) == kernel.calls
    assert outcome.synchronizer is sync


def test_a_result_that_needs_no_wait_gets_a_bare_loop() -> None:
    clock = FakeClock(100.0)
    kernel = FakeKernel(clock, 1 * US)
    outcome = measure(kernel, SyncFromResult(lambda result: None), clock,
                      settings(warmup=2, iterations=3))
    assert outcome.synchronizer is None
    assert "sync" not in clock.events


def test_with_no_warmup_the_synchroniser_is_chosen_on_an_untimed_call() -> None:
    clock = FakeClock(0.0)
    kernel = FakeKernel(clock, 2 * MS)
    outcome = measure(kernel, SyncFromResult(lambda result: None), clock,
                      settings(warmup=0, iterations=2))
    assert outcome.measurement.warmup_ns == ()
    assert kernel.calls == 1 + 1 + 2  # the choosing call, one calibration call, the samples


def test_settling_runs_untimed_blocks_until_its_time_is_spent() -> None:
    clock = FakeClock(100.0, record=False)
    kernel = FakeKernel(clock, 1 * US)
    started = time.monotonic()
    outcome = measure(kernel, None, clock, settings(warmup=1, iterations=2, warmup_time_s=0.05))
    assert time.monotonic() - started >= 0.05
    assert outcome.measurement.warmup_s >= 0.05
    loops = outcome.measurement.inner_loops
    assert kernel.calls > 1 + 2 * loops + loops  # settling made calls of its own
    assert outcome.measurement.samples_ns == ((loops * 1 * US + 100.0) / loops,) * 2


# --- measure: structure ---------------------------------------------------------------------


def test_measure_runs_probes_then_warmup_then_calibration_then_samples() -> None:
    clock = FakeClock(100.0)
    kernel = FakeKernel(clock, 1 * US)
    sync = FakeSync(clock)
    outcome = measure(kernel, sync, clock, settings(warmup=3, iterations=5))
    m = outcome.measurement
    loops = m.inner_loops
    runs = [run.count("call") for run in timed_runs(clock.events)]

    assert runs[:OVERHEAD_PROBES] == [0] * OVERHEAD_PROBES
    warmup = runs[OVERHEAD_PROBES:OVERHEAD_PROBES + 3]
    assert warmup == [1, 1, 1]
    calibration = runs[OVERHEAD_PROBES + 3:-5]
    assert calibration, "no calibration run"
    assert calibration == sorted(set(calibration)), "calibration loop counts must grow"
    assert calibration[-1] == loops
    assert runs[-5:] == [loops] * 5
    assert kernel.calls == 3 + sum(calibration) + 5 * loops

    assert len(m.warmup_ns) == 3
    assert m.warmup_ns == (100.0 + 1 * US,) * 3
    assert len(m.samples_ns) == 5
    assert m.timer == "fake"
    assert m.timer_overhead_ns == 100.0


def test_warmup_zero_means_no_warmup_calls() -> None:
    clock = FakeClock(0.0)
    kernel = FakeKernel(clock, 2 * MS)
    outcome = measure(kernel, FakeSync(clock), clock, settings(warmup=0, iterations=4))
    runs = [run.count("call") for run in timed_runs(clock.events)][OVERHEAD_PROBES:]
    assert runs == [1] + [1] * 4  # one calibration run, four samples
    assert outcome.measurement.warmup_ns == ()


def test_samples_are_per_call_means() -> None:
    # no read cost: each sample is exactly the call duration, whatever the loop count
    clock = FakeClock(0.0)
    outcome = measure(FakeKernel(clock, 2 * MS), None, clock, settings(iterations=7))
    assert outcome.measurement.inner_loops == 1
    assert outcome.measurement.samples_ns == (2e6,) * 7


def test_samples_divide_one_read_over_the_inner_loop() -> None:
    clock = FakeClock(100.0)
    outcome = measure(FakeKernel(clock, 1 * US), None, clock, settings(iterations=3))
    loops = outcome.measurement.inner_loops
    assert loops > 1
    expected = (loops * 1 * US + 100.0) / loops
    assert outcome.measurement.samples_ns == (expected,) * 3
    assert expected == pytest.approx(1 * US, rel=0.002)


# --- calibration ----------------------------------------------------------------------------


@pytest.mark.parametrize(("read_cost", "per_call"), [
    (100.0, 1 * US),
    (50.0, 300.0),
    (1000.0, 70.0),
    (20.0, 20 * US),
    (100.0, 99.0),
])
def test_calibration_reaches_the_target_without_overshooting(read_cost: float,
                                                              per_call: float) -> None:
    clock = FakeClock(read_cost, record=False)
    outcome = measure(FakeKernel(clock, per_call), None, clock, settings(iterations=1))
    loops = outcome.measurement.inner_loops
    target = read_cost * 1000
    smallest = minimal_loops(read_cost, per_call)
    assert loops * per_call + read_cost >= target
    assert smallest <= loops <= math.ceil(1.5 * smallest)


def test_calibration_example_100ns_read_1us_call() -> None:
    clock = FakeClock(100.0)
    loops = calibrate(FakeKernel(clock, 1 * US), None, clock, 100 * US, settings())
    # 100 loops of 1 µs plus a 100 ns read reach 100 µs; 99 do not
    assert 100 <= loops <= 150


def test_calibration_honours_the_overhead_ratio() -> None:
    clock = FakeClock(100.0, record=False)
    outcome = measure(FakeKernel(clock, 1 * US), None, clock,
                      settings(iterations=1, min_sample_overhead_ratio=10_000.0))
    loops = outcome.measurement.inner_loops
    assert loops * 1 * US + 100 >= 1e6
    assert loops <= 1.5 * minimal_loops(100.0, 1 * US, ratio=10_000.0)


@pytest.mark.parametrize("duration", [100 * US, 2 * MS, 1e9])
def test_slow_kernels_get_one_loop(duration: float) -> None:
    clock = FakeClock(100.0)
    kernel = FakeKernel(clock, duration)
    outcome = measure(kernel, None, clock, settings(warmup=2, iterations=4))
    assert outcome.measurement.inner_loops == 1
    assert kernel.calls == 2 + 1 + 4  # warmup, a single calibration call, samples
    assert outcome.measurement.samples_ns == (duration + 100.0,) * 4


def test_max_inner_loops_caps_calibration() -> None:
    clock = FakeClock(100.0)
    kernel = FakeKernel(clock, 1.0)  # 1 ns calls would want ~100 000 loops
    outcome = measure(kernel, None, clock, settings(iterations=3, max_inner_loops=50))
    assert outcome.measurement.inner_loops == 50
    runs = [run.count("call") for run in timed_runs(clock.events)][OVERHEAD_PROBES:]
    assert max(runs) == 50
    assert runs[-3:] == [50, 50, 50]
    assert outcome.measurement.samples_ns == ((50 * 1.0 + 100.0) / 50,) * 3


def test_calibration_stops_when_its_time_budget_is_spent() -> None:
    clock = FakeClock(100.0)
    kernel = FakeKernel(clock, 1 * US)
    loops = calibrate(kernel, None, clock, 100 * US, settings(calibration_budget_s=-1.0))
    assert loops == 1
    assert kernel.calls == 1


# --- synchronisation ------------------------------------------------------------------------


def test_sync_is_called_once_per_call_with_its_result() -> None:
    clock = FakeClock(100.0)
    kernel = FakeKernel(clock, 1 * US)
    sync = FakeSync(clock)
    measure(kernel, sync, clock, settings(warmup=2, iterations=4))
    assert len(sync.results) == kernel.calls
    assert sync.results == list(range(1, kernel.calls + 1))


def test_without_a_synchroniser_nothing_but_calls_is_timed() -> None:
    clock = FakeClock(100.0)
    kernel = FakeKernel(clock, 1 * US)
    measure(kernel, None, clock, settings(warmup=2, iterations=4))
    for run in timed_runs(clock.events):
        assert set(run) <= {"call"}


def test_sync_runs_inside_the_timed_region_right_after_each_call() -> None:
    clock = FakeClock(100.0)
    kernel = FakeKernel(clock, 1 * US)
    measure(kernel, FakeSync(clock), clock, settings(warmup=2, iterations=4))
    for run in timed_runs(clock.events):  # timed_runs fails on events outside start/stop
        assert run == ["call", "sync"] * (len(run) // 2)


def test_sync_time_is_included_in_samples() -> None:
    clock = FakeClock(0.0)
    sync = FakeSync(clock, cost=500.0)
    outcome = measure(FakeKernel(clock, 2 * MS), sync, clock, settings(iterations=3))
    assert outcome.measurement.samples_ns == (2 * MS + 500.0,) * 3

    clock = FakeClock(100.0)
    sync = FakeSync(clock, cost=250.0)
    outcome = measure(FakeKernel(clock, 1 * US), sync, clock, settings(iterations=3))
    loops = outcome.measurement.inner_loops
    assert outcome.measurement.samples_ns == ((loops * 1250.0 + 100.0) / loops,) * 3


# --- results --------------------------------------------------------------------------------


def test_last_result_is_the_value_of_the_final_call() -> None:
    clock = FakeClock(100.0)
    kernel = FakeKernel(clock, 1 * US)
    outcome = measure(kernel, None, clock, settings(warmup=3, iterations=4))
    assert kernel.calls > 3 + 4
    assert outcome.last_result == kernel.calls


def test_programmed_durations_give_exact_statistics() -> None:
    clock = FakeClock(0.0)
    warmup, calibration = [50 * MS] * 2, [50 * MS]
    durations = [k * MS for k in range(1, 31)]
    kernel = FakeKernel(clock, warmup + calibration + durations)
    outcome = measure(kernel, None, clock, settings(warmup=2, iterations=30))

    assert outcome.measurement.samples_ns == tuple(durations)
    assert outcome.measurement.warmup_ns == (50 * MS, 50 * MS)
    summary = stats.summarize_ms([s / MS for s in outcome.measurement.samples_ns])
    assert summary["latency_ms_p50"] == 15.5
    assert summary["latency_ms_mean"] == 15.5
    assert summary["latency_ms_p90"] == pytest.approx(27.1)
    assert summary["latency_ms_p99"] == pytest.approx(29.71)
    assert summary["latency_ms_min"] == 1.0
    assert summary["latency_ms_max"] == 30.0
    assert summary["latency_ms_std"] == pytest.approx(math.sqrt(77.5))
    assert summary["latency_ms_p50_ci95"] == [10.0, 21.0]
    assert summary["iterations"] == 30
    assert summary["throughput_ops_per_sec"] == pytest.approx(1000 / 15.5)


# --- the real timer -------------------------------------------------------------------------


def test_perf_counter_timer_measures_wall_time() -> None:
    timer = PerfCounterTimer()
    assert timer.name == "perf_counter_ns"
    assert timer.stop(timer.start()) >= 0.0
    token = timer.start()
    time.sleep(0.02)
    elapsed = timer.stop(token)
    assert 0.019e9 <= elapsed < 1e9


# --- MetricsCollector (the in-process API over the protocol and the memory probe) -----------


def test_metrics_collector_times_through_the_protocol() -> None:
    clock = FakeClock(100.0)
    kernel = FakeKernel(clock, 2 * MS)
    sync = FakeSync(clock, cost=10.0)
    collector = MetricsCollector(settings(warmup=2, iterations=6), timer=clock, sync=sync)
    outcome = collector.time_execution(kernel)
    assert outcome.measurement.samples_ns == (2 * MS + 10.0 + 100.0,) * 6
    assert outcome.measurement.inner_loops == 1
    assert len(sync.results) == kernel.calls == 2 + 1 + 6
    assert outcome.last_result == kernel.calls


def test_metrics_collector_defaults() -> None:
    collector = MetricsCollector()
    assert collector.settings == ProtocolSettings()
    assert isinstance(collector.timer, PerfCounterTimer)
    assert isinstance(collector.sync, SyncFromResult)


def test_measure_memory_sees_a_200_mb_allocation() -> None:
    size_mb = 200
    collector = MetricsCollector(ProtocolSettings(warmup=1, iterations=2))

    def allocate() -> float:
        block = np.ones(size_mb * 2**20 // 8)  # np.ones writes, so every page is resident
        return float(block[::4096].sum())

    with collector.measure_memory() as memory:
        assert memory == {}  # filled when the block ends
        outcome = collector.time_execution(allocate)
    assert outcome.last_result == float(len(range(0, size_mb * 2**20 // 8, 4096)))
    if not memory["source"].startswith("VmHWM"):
        pytest.skip("this kernel cannot reset the peak RSS (/proc/self/clear_refs)")
    assert memory["allocated_mb"] == pytest.approx(size_mb, rel=0.10)
    assert memory["peak_mb"] - memory["rss_start_mb"] == pytest.approx(memory["allocated_mb"])
    assert memory["peak_mb"] >= memory["rss_start_mb"] + 0.9 * size_mb


def test_measure_memory_fills_the_record_even_when_the_block_raises() -> None:
    collector = MetricsCollector()
    with pytest.raises(RuntimeError), collector.measure_memory() as memory:
        raise RuntimeError("kernel broke")
    assert memory["peak_mb"] > 0
    assert "source" in memory


def test_one_slow_call_during_calibration_does_not_shorten_the_loop() -> None:
    # Calls take 10 us, except the first calibration call, which a preemption stretches to
    # 150 us (beyond the 100 us target). The fastest warmup call sets the first guess, so the
    # loop still lasts the target instead of stopping at one call.
    clock = FakeClock(read_cost=100.0, record=False)
    durations = [10 * US] * 3 + [150 * US] + [10 * US] * 10_000
    kernel = FakeKernel(clock, durations)
    settings = ProtocolSettings(warmup=3, iterations=5, warmup_time_s=0.0)
    outcome = measure(kernel, None, clock, settings)
    assert outcome.measurement.inner_loops >= 10
    assert outcome.measurement.inner_loops * 10 * US >= 100 * US


# --- the untimed per-call reset ---------------------------------------------------------------


class FakeReset:
    """Restores the fake kernel's input: costs `cost` ns, logs "reset", returns a token."""

    def __init__(self, clock: FakeClock, cost: float) -> None:
        self.clock, self.cost, self.calls = clock, cost, 0

    def __call__(self) -> object:
        self.calls += 1
        self.clock.now += self.cost
        self.clock.log("reset")
        return f"reset {self.calls}"


def test_reset_runs_untimed_before_every_call_and_a_sample_is_one_call() -> None:
    clock = FakeClock(read_cost=10.0)
    kernel, reset = FakeKernel(clock, 2 * US), FakeReset(clock, 50 * US)
    outcome = measure(kernel, None, clock, settings(warmup=2, iterations=4), reset=reset)
    m = outcome.measurement
    assert m.inner_loops == 1  # no inner loop: the input is restored between any two calls
    assert m.samples_ns == (2 * US + 10.0,) * 4  # the reset's 50 us are in no sample
    assert m.warmup_ns == (2 * US + 10.0,) * 2
    assert reset.calls == kernel.calls == 6
    calls = [e for e in clock.events if e in ("reset", "call")]
    assert calls == ["reset", "call"] * 6  # a reset before every single call
    assert all(run == ["call"] for run in timed_runs(
        [e for e in clock.events if e != "reset"][2 * OVERHEAD_PROBES:]))
    assert outcome.last_result == 6


def test_reset_is_waited_for_with_the_kernels_synchroniser() -> None:
    clock = FakeClock(read_cost=0.0)
    kernel, reset = FakeKernel(clock, 1 * US), FakeReset(clock, 5 * US)
    sync = FakeSync(clock)
    outcome = measure(kernel, sync, clock, settings(warmup=1, iterations=2), reset=reset)
    assert outcome.measurement.samples_ns == (1 * US,) * 2
    assert [r for r in sync.results if isinstance(r, str)] == ["reset 1", "reset 2", "reset 3"]
    pairs = [e for e in clock.events[2 * OVERHEAD_PROBES:] if e in ("reset", "sync", "call")]
    assert pairs == ["reset", "sync", "call", "sync"] * 3


def test_reset_with_a_sync_chosen_from_the_first_result() -> None:
    clock = FakeClock(read_cost=0.0)
    kernel, reset = FakeKernel(clock, 3 * US), FakeReset(clock, 1 * US)
    outcome = measure(kernel, SyncFromResult(lambda result: None), clock,
                      settings(warmup=0, iterations=3), reset=reset)
    assert outcome.measurement.samples_ns == (3 * US,) * 3
    assert reset.calls == kernel.calls == 4  # the untimed first call is reset too


def test_tracemalloc_is_imported_before_the_peak_is_reset(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """--trace-python imports tracemalloc lazily: its ~0.5 MB must land before the case's peak
    RSS is reset, not count as the case's memory."""
    import builtins
    import sys

    from kernbench.measure.metrics.memory import PeakMemory

    seen: list[bool] = []
    real_open = builtins.open

    def spying_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file) == "/proc/self/clear_refs":
            seen.append("tracemalloc" in sys.modules)
        return real_open(file, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "tracemalloc", raising=False)
    monkeypatch.setattr(builtins, "open", spying_open)
    peak = PeakMemory(trace_python=True)
    peak.start()
    peak.stop()
    assert seen == [True]


def test_a_status_field_is_read_in_kib_and_none_where_there_is_none(tmp_path: Path) -> None:
    from kernbench.measure.metrics.memory import status_kb

    status = tmp_path / "status"
    status.write_text("Name:\tpython\nVmPeak:\t  900 kB\nVmSize:\t  812 kB\n", encoding="ascii")
    assert status_kb("VmSize", str(status)) == 812
    assert status_kb("VmPeak", str(status)) == 900
    assert status_kb("VmHWM", str(status)) is None
    assert status_kb("VmSize", str(tmp_path / "none")) is None
