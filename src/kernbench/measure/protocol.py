"""The measurement protocol: warmup, calibrate an inner loop, then take timed samples.

It knows only a :class:`Timer`, an optional :class:`Synchronizer` and the model; the worker
supplies real ones (``perf_counter_ns``, CUDA events, JAX ``block_until_ready``) and tests
supply fakes, so the protocol's arithmetic can be asserted exactly.

A sample times ``inner_loops`` back-to-back calls and records the per-call mean. Nothing but
the kernel runs inside it: where nothing is asynchronous (NumPy, PyTorch on the CPU) the loop
is the same bare ``for`` loop that ``timeit`` runs, and each call's result is released before
the next call starts, as in a plain loop. Only an asynchronous backend adds its own wait after
each call (JAX ``block_until_ready``, a CUDA synchronise). The result of the very last call is
kept, untimed, for the accuracy check.

The inner loop count is calibrated so that a sample lasts at least
``min_sample_overhead_ratio`` timer overheads: with the default 1000, reading the timer costs
under 0.1% of a sample.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from itertools import repeat
from typing import Protocol

from kernbench.results.measurement import Measurement, ProtocolSettings

OVERHEAD_PROBES = 201


class Timer(Protocol):
    """Measures intervals. `stop(start())` is the timer's own overhead."""

    name: str

    def start(self) -> object: ...

    def stop(self, token: object) -> float:
        """Nanoseconds elapsed since `token` was returned by `start`."""
        ...


class Synchronizer(Protocol):
    """Waits until the work behind a kernel's result is done (asynchronous backends only)."""

    def synchronize(self, result: object) -> None: ...


class SyncFromResult:
    """Choose the synchroniser from the kernel's first result (untimed, once per case).

    For kernels whose framework is not known to be asynchronous: a result holding JAX arrays
    or CUDA tensors still gets waited for, while a NumPy result gets no wait at all."""

    def __init__(self, choose: Callable[[object], Synchronizer | None]) -> None:
        self.choose = choose


SyncChoice = Synchronizer | SyncFromResult | None
"""What the protocol is told about waiting: a synchroniser, none, or decide from a result."""


def wait_untimed(sync: SyncChoice, result: object) -> None:
    """Wait for `result` outside any timed region (a compile's first call, a profile, a
    reference output), whatever the choice of synchroniser."""
    if isinstance(sync, SyncFromResult):
        sync = sync.choose(result)
    if sync is not None:
        sync.synchronize(result)


class PerfCounterTimer:
    """Wall-clock timer on ``time.perf_counter_ns``."""

    name = "perf_counter_ns"

    def start(self) -> object:
        return time.perf_counter_ns()

    def stop(self, token: object) -> float:
        assert isinstance(token, int)
        return float(time.perf_counter_ns() - token)


@dataclass
class Outcome:
    """A measurement and the value the kernel returned on its last call."""

    measurement: Measurement
    last_result: object
    synchronizer: Synchronizer | None = None
    """The synchroniser the samples used (None: nothing was waited for)."""


def timer_overhead_ns(timer: Timer, probes: int = OVERHEAD_PROBES) -> float:
    """Median cost of one start/stop pair of `timer`."""
    costs = sorted(timer.stop(timer.start()) for _ in range(probes))
    return costs[len(costs) // 2]


def run_timed(call: Callable[[], object], sync: Synchronizer | None, timer: Timer,
              loops: int, keep: bool = False) -> tuple[float, object]:
    """Time `loops` back-to-back calls; returns (total ns, the last result if `keep`).

    Each result is dropped before the next call, as in a plain loop, so a kernel that
    allocates its output never pays for a second live buffer. Without a synchroniser the loop
    is a bare ``for`` loop around the call."""
    if sync is None:
        token = timer.start()
        for _ in repeat(None, loops - 1):  # as timeit: no int object per iteration
            call()
        result = call()
        elapsed = timer.stop(token)
    else:
        wait = sync.synchronize
        token = timer.start()
        for _ in repeat(None, loops - 1):
            wait(call())
        result = call()
        wait(result)
        elapsed = timer.stop(token)
    return elapsed, (result if keep else None)


def warm_up(call: Callable[[], object], sync: SyncChoice, timer: Timer,
            count: int, reset: Callable[[], object] | None = None
            ) -> tuple[list[float], Synchronizer | None]:
    """`count` single timed calls, and the synchroniser to use from here on. A
    :class:`SyncFromResult` is resolved on the first call's result (an extra untimed call
    when `count` is 0). `reset`, when given, runs untimed (and waited for) before each call."""
    times: list[float] = []
    if isinstance(sync, SyncFromResult):
        if reset is not None:
            wait_untimed(sync, reset())
        token = timer.start()
        result = call()
        sync = sync.choose(result)
        if sync is not None:
            sync.synchronize(result)
        elapsed = timer.stop(token)
        del result
        if count == 0:
            return times, sync
        times.append(elapsed)
        count -= 1
    for _ in range(count):
        if reset is not None:
            wait_untimed(sync, reset())
        times.append(run_timed(call, sync, timer, 1)[0])
    return times, sync


def calibrate(call: Callable[[], object], sync: Synchronizer | None, timer: Timer,
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


def settle(call: Callable[[], object], sync: Synchronizer | None, timer: Timer, loops: int,
           until: float, before: Callable[[], object] | None = None) -> None:
    """Untimed blocks of `loops` calls until ``time.monotonic()`` reaches `until` (`before`
    runs ahead of each block)."""
    while time.monotonic() < until:
        if before is not None:
            before()
        run_timed(call, sync, timer, loops)


def measure(call: Callable[[], object], sync: SyncChoice, timer: Timer,
            settings: ProtocolSettings,
            between_samples: Callable[[], object] | None = None,
            sampling_region: AbstractContextManager[object] | None = None,
            reset: Callable[[], object] | None = None) -> Outcome:
    """Run the whole protocol on a zero-argument `call`.

    `between_samples`, when given, runs before every sample outside the timed region (the GPU
    L2 flush uses it, so each sample starts with a cold cache). `sampling_region` is entered
    around the timed samples only (energy meters use it; warmup and calibration stay out).
    `reset` (a kernel's untimed per-call reset) runs before every call, waited for, outside
    the timed region: then a sample is one call (no inner loop), since the input must be
    restored between any two calls.
    """
    overhead = timer_overhead_ns(timer)
    began = time.monotonic()
    warmup_ns, waiter = warm_up(call, sync, timer, settings.warmup, reset)
    before = None if reset is None else (lambda: wait_untimed(waiter, reset()))
    loops = 1 if reset is not None else calibrate(
        call, waiter, timer, overhead * settings.min_sample_overhead_ratio, settings,
        min(warmup_ns[1:] or warmup_ns, default=None))
    settle(call, waiter, timer, loops, began + settings.warmup_time_s, before)
    warmed_s = time.monotonic() - began
    samples: list[float] = []
    result: object = None
    with sampling_region if sampling_region is not None else nullcontext():
        for index in range(settings.iterations):
            if before is not None:
                before()
            if between_samples is not None:
                between_samples()
            elapsed, result = run_timed(call, waiter, timer, loops,
                                        keep=index == settings.iterations - 1)
            samples.append(elapsed / loops)
    measurement = Measurement(samples_ns=tuple(samples), inner_loops=loops,
                              warmup_ns=tuple(warmup_ns), timer_overhead_ns=overhead,
                              timer=timer.name, warmup_s=warmed_s)
    return Outcome(measurement, result, waiter)
