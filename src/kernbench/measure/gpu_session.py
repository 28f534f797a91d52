"""One GPU case's timing from start to end: warm up, the requested modes, then energy over a
region of its own.

Energy is never read over the timed samples of a GPU case: they hold flushes (whose writes
are not the kernel's energy) and host waits. It is read over a flush-free region of
back-to-back calls lasting at least :data:`MIN_ENERGY_REGION_S` (NVML's counters update at a
finite rate, and its power reading is a windowed average), or it is ``null`` with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernbench.measure.gpu_timing import (
    BlockGuard,
    Flush,
    GpuClock,
    GpuOutcome,
    KeepEveryBlock,
    Session,
    loops_for,
    time_gpu,
    warm_up_gpu,
)
from kernbench.measure.metrics.energy import EnergyMeter, NullMeter
from kernbench.results.model import ProtocolSettings

MIN_ENERGY_REGION_S = 1.0
"""Shortest region energy is read over."""


@dataclass(frozen=True)
class GpuRun:
    """The timing outcome and the energy region (a meter reading) with its call count."""

    outcome: GpuOutcome
    energy_region: dict[str, Any]
    energy_calls: int


class AllBlocksDiscarded(RuntimeError):
    """Every block of a mode was discarded (the GPU throttled throughout): no figure stands."""


def measure_gpu(call: Callable[[], object], clock: GpuClock, flush: Flush | None,
                settings: ProtocolSettings, mode: str, guard: BlockGuard | None = None,
                meter: EnergyMeter | None = None,
                min_energy_s: float = MIN_ENERGY_REGION_S) -> GpuRun:
    """Warm up, time `mode` (or all modes), then read energy over a hot region."""
    began = time.monotonic()
    warmup_ns, fastest = warm_up_gpu(call, clock, settings)
    session = Session(call, clock, flush, settings.iterations, loops_for(fastest, settings),
                      guard or KeepEveryBlock())
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
    """Blocks of back-to-back calls (no flush) until `min_s` has passed, under `meter`."""
    if isinstance(meter, NullMeter):  # nothing to read: spend no device time on it
        meter.start()
        return meter.stop(), 0
    calls = 0
    meter.start()
    began = time.monotonic()
    while time.monotonic() - began < min_s:
        result = None
        for _ in range(session.loops):
            result = session.call()
        session.clock.wait(result)
        calls += session.loops
    region = meter.stop()
    if (region.get("region_s") or 0.0) < min_s:
        region.update(region_energy_j=None, power_w=None,
                      reason=f"the energy region lasted {region.get('region_s')} s, under the "
                             f"{min_s} s a reading needs")
    return region, calls
