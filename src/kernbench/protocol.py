"""The measurement protocol: warmup, calibrate an inner loop, then take timed samples.

It knows only a :class:`Timer`, a :class:`Synchronizer` and the model; the worker supplies real
ones (``perf_counter_ns``, CUDA events, JAX ``block_until_ready``) and tests supply fakes, so the
protocol's arithmetic can be asserted exactly.

A sample times ``inner_loops`` back-to-back calls, each followed by a synchronisation, and
records the per-call mean. The inner loop count is calibrated so that a sample lasts at least
``min_sample_overhead_ratio`` timer overheads: with the default 1000, reading the timer costs
under 0.1% of a sample.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Protocol

from kernbench.model import Measurement, ProtocolSettings

OVERHEAD_PROBES = 201


class Timer(Protocol):
    """Measures intervals. `stop(start())` is the timer's own overhead."""

    name: str

    def start(self) -> object: ...

    def stop(self, token: object) -> float:
        """Nanoseconds elapsed since `token` was returned by `start`."""
        ...


class Synchronizer(Protocol):
    """Waits until the work behind a kernel's result is done (a no-op on synchronous backends)."""

    def synchronize(self, result: object) -> None: ...


class PerfCounterTimer:
    """Wall-clock timer on ``time.perf_counter_ns``."""

    name = "perf_counter_ns"

    def start(self) -> object:
        return time.perf_counter_ns()

    def stop(self, token: object) -> float:
        assert isinstance(token, int)
        return float(time.perf_counter_ns() - token)


class NoSync:
    """For synchronous backends."""

    def synchronize(self, result: object) -> None:
        return None


@dataclass
class Outcome:
    """A measurement and the value the kernel returned on its last call."""

    measurement: Measurement
    last_result: object


def timer_overhead_ns(timer: Timer, probes: int = OVERHEAD_PROBES) -> float:
    """Median cost of one start/stop pair of `timer`."""
    costs = sorted(timer.stop(timer.start()) for _ in range(probes))
    return costs[len(costs) // 2]


def run_timed(call: Callable[[], object], sync: Synchronizer, timer: Timer,
              loops: int) -> tuple[float, object]:
    """Time `loops` calls, each synchronised; returns (total ns, last result)."""
    result: object = None
    token = timer.start()
    for _ in range(loops):
        result = call()
        sync.synchronize(result)
    return timer.stop(token), result


def calibrate(call: Callable[[], object], sync: Synchronizer, timer: Timer,
              target_ns: float, settings: ProtocolSettings,
              estimate_ns: float | None = None) -> int:
    """Smallest inner loop count (grown geometrically) whose sample lasts `target_ns`.

    `estimate_ns` (the fastest warmup call) sets the first guess, so one slow call during
    calibration cannot end it early with too short a loop.
    """
    loops = 1
    if estimate_ns and estimate_ns > 0:
        loops = min(max(1, math.ceil(target_ns / estimate_ns)), settings.max_inner_loops)
    deadline = time.monotonic() + settings.calibration_budget_s
    while loops < settings.max_inner_loops:
        elapsed, _ = run_timed(call, sync, timer, loops)
        if elapsed >= target_ns or time.monotonic() > deadline:
            return loops
        per_call = max(elapsed / loops, 1.0)
        wanted = math.ceil(1.2 * target_ns / per_call)
        loops = min(max(loops * 2, wanted), settings.max_inner_loops)
    return loops


def measure(call: Callable[[], object], sync: Synchronizer, timer: Timer,
            settings: ProtocolSettings,
            between_samples: Callable[[], object] | None = None,
            sampling_region: AbstractContextManager[object] | None = None) -> Outcome:
    """Run the whole protocol on a zero-argument `call`.

    `between_samples`, when given, runs before every sample outside the timed region (the GPU
    L2 flush uses it, so each sample starts with a cold cache). `sampling_region` is entered
    around the timed samples only (energy meters use it; warmup and calibration stay out).
    """
    overhead = timer_overhead_ns(timer)
    result: object = None
    warmup_ns: list[float] = []
    for _ in range(settings.warmup):
        elapsed, result = run_timed(call, sync, timer, 1)
        warmup_ns.append(elapsed)
    loops = calibrate(call, sync, timer, overhead * settings.min_sample_overhead_ratio, settings,
                      min(warmup_ns[1:] or warmup_ns, default=None))
    samples: list[float] = []
    with sampling_region if sampling_region is not None else nullcontext():
        for _ in range(settings.iterations):
            if between_samples is not None:
                between_samples()
            elapsed, result = run_timed(call, sync, timer, loops)
            samples.append(elapsed / loops)
    measurement = Measurement(samples_ns=tuple(samples), inner_loops=loops,
                              warmup_ns=tuple(warmup_ns), timer_overhead_ns=overhead,
                              timer=timer.name)
    return Outcome(measurement, result)
