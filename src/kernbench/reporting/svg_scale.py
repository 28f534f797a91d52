"""Axes of the HTML report's charts: a data range mapped onto pixels, with round tick values.

Pure geometry: :func:`nice_scale` widens a range to round ticks (1-2-2.5-5 steps on a linear
axis, 1-2-5 or 1..9 per decade on a log one) and :class:`Scale` maps values onto pixels, so
tests check exact numbers. The charts are :mod:`kernbench.reporting.svg`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Scale", "nice_scale"]


@dataclass(frozen=True)
class Scale:
    """Maps data values in [low, high] onto pixels [start, end], linearly or logarithmically."""

    low: float
    high: float
    start: float
    end: float
    log: bool = False
    ticks: tuple[float, ...] = ()

    def __call__(self, value: float) -> float:
        lift = math.log10 if self.log else float
        span = lift(self.high) - lift(self.low)
        share = (lift(value) - lift(self.low)) / span if span else 0.5
        return round(self.start + share * (self.end - self.start), 2)


def nice_scale(low: float, high: float, start: float, end: float, *, log: bool = False,
               zero: bool = False, ticks: int = 5) -> Scale:
    """A scale whose domain is widened to round tick values around [low, high].

    `zero` starts a linear domain at 0 (bars); `log` needs low > 0 and falls back to linear
    otherwise."""
    if zero:
        low = min(low, 0.0)
    if log and low > 0:
        grid = _log_ticks(low, high)
    else:
        log, grid = False, _linear_ticks(low, high, ticks)
    return Scale(grid[0], grid[-1], start, end, log, tuple(grid))


def _linear_ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / count
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * 0.999)
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    return [float(f"{i * step:.12g}") for i in range(first, last + 1)]


def _log_ticks(low: float, high: float) -> list[float]:
    """Ticks at 1, 1-2-5 or 1..9 times powers of ten: the coarsest grid with four ticks."""
    decades = range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 2)
    ticks: list[float] = []
    for mantissas in ((1,), (1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        grid = [float(f"{m}e{k}") for k in decades for m in mantissas]
        below = max(g for g in grid if g <= low * (1 + 1e-12))
        above = min(g for g in grid if g >= high * (1 - 1e-12))
        ticks = [g for g in grid if below <= g <= above]
        if len(ticks) >= 4:
            break
    while len(ticks) > 9:
        ticks = ticks[::2] if len(ticks) % 2 else [*ticks[::2], ticks[-1]]
    return ticks
