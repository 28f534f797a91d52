"""What a worker process measures with and produces: the protocol's settings, its raw
measurement, a skip rule and the `native` precision label.

The part of the frozen model (:mod:`kernbench.results.model`, which re-exports all of it) that
a worker needs, kept apart: a worker, and every fork server, imports this and not the
dataclasses of whole runs, whose definitions cost each interpreter that imports them about
20 ms here (each frozen dataclass has its methods generated and compiled at import). This
module imports nothing else of the package.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NATIVE", "Measurement", "ProtocolSettings", "SkipRule"]

NATIVE = "native"
"""Precision label of a case whose kernel takes no `precision` parameter."""


@dataclass(frozen=True)
class SkipRule:
    """One `skip_conditions` entry: skip matching cases when `check` holds (always if None)."""

    reason: str
    backend: str | None = None
    precision: str | None = None
    check: str | None = None

    def applies_to(self, backend: str, precision: str) -> bool:
        return self.backend in (None, backend) and self.precision in (None, precision)


@dataclass(frozen=True)
class ProtocolSettings:
    """How every case is measured."""

    warmup: int = 3
    iterations: int = 30
    """Number of timed samples kept (the seed's `--iters`)."""
    min_sample_overhead_ratio: float = 1000.0
    """A sample lasts at least this many timer overheads (1000 -> overhead < 0.1% of a sample)."""
    max_inner_loops: int = 1_000_000
    calibration_budget_s: float = 2.0
    seed: int = 1337
    warmup_time_s: float = 0.1
    """Least wall time the kernel runs before the first sample (warmup, calibration, then
    untimed blocks): a fresh worker's thread pools, caches and CPU clocks need a while of
    steady work, which a fixed number of warmup calls of a short kernel does not give."""


@dataclass(frozen=True)
class Measurement:
    """What the protocol produced for one case: raw per-call times, in nanoseconds."""

    samples_ns: tuple[float, ...]
    """One entry per sample: the sample's duration divided by `inner_loops`."""
    inner_loops: int
    warmup_ns: tuple[float, ...]
    timer_overhead_ns: float
    timer: str
    warmup_s: float = 0.0
    """Wall time from the first warmup call to the first sample (warmup, calibration and the
    untimed blocks that followed them)."""
