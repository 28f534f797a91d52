"""One GPU case's timing from start to end: warm up, the calls per sample, the requested modes
(the loops of :mod:`kernbench.measure.gpu_timing`), then energy over a region of its own.

Energy is never read over the timed samples of a GPU case: they hold flushes (whose writes
are not the kernel's energy) and host waits. It is read over a flush-free region of
back-to-back calls lasting at least :data:`MIN_ENERGY_REGION_S` (NVML's counters update at a
finite rate, and its power reading is a windowed average), or it is ``null`` with the reason.
A kernel with a ``reset`` has it run before every call of the region too (its calls would
otherwise work on their own output): the region's energy then includes the resets' (the
record's ``energy.includes_reset`` says so).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kernbench.measure.gpu_timing import (
    RUNNERS,
    BlockGuard,
    Flush,
    GpuClock,
    KeepEveryBlock,
    ModeResult,
    Session,
    time_graph_cold,
    time_kernel_sync_flush,
)
from kernbench.measure.metrics.energy import EnergyMeter, NullMeter
from kernbench.results.measurement import Measurement, ProtocolSettings
from kernbench.results.vocabulary import GPU_TIMING_MODES

MIN_ENERGY_REGION_S = 1.0
"""Shortest region energy is read over."""
SAMPLE_TARGET_NS = 1e6
"""A ``hot``/``graph``/``sync`` sample, and a ``cold`` block, holds about this much device
time (at least one call): event resolution (~0.5 us) is then under 0.1% of a sample."""


@dataclass(frozen=True)
class GpuOutcome:
    """Every requested mode's result; `primary` is the one the record's samples hold."""

    modes: tuple[ModeResult, ...]
    primary: ModeResult
    measurement: Measurement
    last_result: object
    flush_bytes: int | None


def warm_up_gpu(call: Callable[[], object], clock: GpuClock, settings: ProtocolSettings,
                reset: Callable[[], object] | None = None) -> tuple[list[float], float]:
    """Warmup calls, each timed alone (launch included), then untimed calls until
    `settings.warmup_time_s` has passed; returns (warmup times, the fastest) in ns. `reset`
    runs before every call, and is waited for before a timed one."""
    began = time.monotonic()
    times: list[float] = []
    for _ in range(max(1, settings.warmup)):
        if reset is not None:
            clock.wait(reset())
        start = clock.mark()
        end = clock.mark_after(call())
        clock.synchronize()
        times.append(clock.elapsed_ns(start, end))
    while time.monotonic() - began < settings.warmup_time_s:
        if reset is not None:
            reset()
        clock.wait(call())
    return times, max(min(times), 1.0)


def mark_overhead_ns(clock: GpuClock, ahead: Callable[[], object] | None,
                     probes: int = 11) -> float:
    """Median time between two marks with nothing between them, taken as the modes take them:
    behind queued work (`ahead`, the flush) where there is some, so an event pair's cost on a
    busy stream is measured, not the host's delay in recording the second event."""
    pairs = [(clock.mark_after(ahead() if ahead is not None else None), clock.mark())
             for _ in range(probes)]
    clock.synchronize()
    return sorted(clock.elapsed_ns(a, b) for a, b in pairs)[probes // 2]


def loops_for(estimate_ns: float, settings: ProtocolSettings) -> int:
    """Calls per sample: enough for :data:`SAMPLE_TARGET_NS` of device time."""
    return max(1, min(math.ceil(SAMPLE_TARGET_NS / estimate_ns), settings.max_inner_loops))


def modes_of(mode: str) -> tuple[str, ...]:
    """The modes `mode` stands for (``all``: every one)."""
    return GPU_TIMING_MODES if mode == "all" else (mode,)


def time_gpu(session: Session, mode: str, warmup_ns: Sequence[float],
             warmup_s: float) -> GpuOutcome:
    """Measure `mode` (or all of them) and keep one last, waited-for result for the checks."""
    results: list[ModeResult] = []
    session.fall_back = mode != "all"
    for name in modes_of(mode):
        results.append(RUNNERS[name](session))
        if name == "graph":
            cold = time_graph_cold(session)
            if cold is not None:
                results.append(cold)
    if mode == "all":  # the launch overhead's kernel side, flushed as sync is
        results.append(time_kernel_sync_flush(session))
    primary = next(r for r in results if (r.requested or r.mode) == modes_of(mode)[0])
    if session.reset is not None:  # the checked output is one call's, on a restored input
        session.reset()
    last = session.call()
    session.clock.wait(last)
    measurement = Measurement(samples_ns=primary.samples_ns,
                              inner_loops=primary.calls_per_sample, warmup_ns=tuple(warmup_ns),
                              timer_overhead_ns=mark_overhead_ns(
                                  session.clock, session.flush.run if session.flush else None),
                              timer=session.clock.name, warmup_s=warmup_s)
    return GpuOutcome(tuple(results), primary, measurement, last,
                      session.flush.bytes if session.flush is not None else None)


@dataclass(frozen=True)
class GpuRun:
    """The timing outcome and the energy region (a meter reading) with its call count."""

    outcome: GpuOutcome
    energy_region: dict[str, Any]
    energy_calls: int


class AllBlocksDiscarded(RuntimeError):
    """Every block of a mode was discarded (the GPU throttled throughout): no figure stands."""


def measure_gpu(call: Callable[[], object], clock: GpuClock,
                flush: Flush | Callable[[], Flush | None] | None,
                settings: ProtocolSettings, mode: str, guard: BlockGuard | None = None,
                meter: EnergyMeter | None = None, min_energy_s: float = MIN_ENERGY_REGION_S,
                reset: Callable[[], object] | None = None) -> GpuRun:
    """Warm up, time `mode` (or all modes), then read energy over a hot region. A `flush`
    given as a function is made after the warm-up (which never flushes): a backend that
    cannot reset its memory peak reads it there, before the flush buffer exists. `reset`
    (the kernel's) runs untimed before every call."""
    began = time.monotonic()
    warmup_ns, fastest = warm_up_gpu(call, clock, settings, reset)
    if flush is not None and not isinstance(flush, Flush):
        flush = flush()
    session = Session(call, clock, flush, settings.iterations, loops_for(fastest, settings),
                      guard or KeepEveryBlock(), reset=reset)
    outcome = time_gpu(session, mode, warmup_ns, time.monotonic() - began)
    for result in outcome.modes:
        if not result.samples_ns and result.discarded:
            raise AllBlocksDiscarded(
                f"{result.mode} mode: every one of {len(result.discarded)} blocks was discarded "
                f"({'; '.join(sorted(set(result.discarded)))})")
    region, calls = energy_region(session, meter or NullMeter("not measured"), min_energy_s)
    return GpuRun(outcome, region, calls)


def energy_region(session: Session, meter: EnergyMeter,
                  min_s: float) -> tuple[dict[str, Any], int]:
    """Blocks of back-to-back calls (no flush; the kernel's reset before each, if it has
    one) until `min_s` has passed, under `meter`."""
    if isinstance(meter, NullMeter):  # nothing to read: spend no device time on it
        meter.start()
        return meter.stop(), 0
    calls = 0
    meter.start()
    began = time.monotonic()
    while time.monotonic() - began < min_s:
        result = None
        for _ in range(session.loops):
            if session.reset is not None:
                session.reset()
            result = session.call()
        session.clock.wait(result)
        calls += session.loops
    region = meter.stop()
    if (region.get("region_s") or 0.0) < min_s:
        region.update(region_energy_j=None, power_w=None,
                      reason=f"the energy region lasted {region.get('region_s')} s, under the "
                             f"{min_s} s a reading needs")
    return region, calls
