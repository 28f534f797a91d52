"""MetricsCollector: the seed's in-process measuring API, over the protocol and memory probes.

The worker measures every case through it; kernel authors can also use it directly::

    collector = MetricsCollector(ProtocolSettings(warmup=3, iterations=30))
    with collector.measure_memory() as memory:
        outcome = collector.time_execution(lambda: a @ b)
    print(outcome.measurement.samples_ns, memory)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from kernbench.measure.backends.base import sync_for_result
from kernbench.measure.metrics.memory import PeakMemory
from kernbench.measure.protocol import (
    Outcome,
    PerfCounterTimer,
    SyncChoice,
    SyncFromResult,
    Timer,
    measure,
)
from kernbench.results.measurement import ProtocolSettings


class MetricsCollector:
    """Times a zero-argument call under the standard protocol and measures peak memory."""

    def __init__(self, settings: ProtocolSettings | None = None, timer: Timer | None = None,
                 sync: SyncChoice = None) -> None:
        """`sync` (default: chosen from the first result, see
        :func:`kernbench.measure.backends.base.sync_for_result`) waits for asynchronous results."""
        self.settings = settings or ProtocolSettings()
        self.timer: Timer = timer or PerfCounterTimer()
        self.sync: SyncChoice = sync if sync is not None else SyncFromResult(sync_for_result)

    def time_execution(self, call: Callable[[], object],
                       between_samples: Callable[[], object] | None = None,
                       sampling_region: AbstractContextManager[object] | None = None,
                       reset: Callable[[], object] | None = None) -> Outcome:
        """Warmup, calibrated inner loop, timed samples; raw samples kept in the outcome.
        With `reset`, it is called untimed before every call, and each sample is one call."""
        return measure(call, self.sync, self.timer, self.settings, between_samples,
                       sampling_region, reset)

    @contextmanager
    def measure_memory(self, trace_python: bool = False) -> Iterator[dict[str, Any]]:
        """Peak RSS of this process inside the block; the dict is filled when the block ends.

        `trace_python` adds tracemalloc's peak of Python allocations (slower code inside)."""
        probe = PeakMemory(trace_python)
        record: dict[str, Any] = {}
        probe.start()
        try:
            yield record
        finally:
            record.update(probe.stop())
