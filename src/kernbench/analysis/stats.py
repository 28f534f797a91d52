"""Statistics as small pure functions over raw samples. No I/O, no printing.

Percentiles use linear interpolation between order statistics (NumPy's default, "type 7").
The median's confidence interval is distribution-free: the binomial order-statistic interval,
which needs no assumption about the (usually skewed) latency distribution.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from kernbench.results.vocabulary import knob

HIGH_SPREAD_RATIO = 0.10
"""IQR / median above this is flagged as high spread."""
MIN_SAMPLES = 10
"""Fewer timed samples than this is flagged: percentiles and intervals are then weak."""


def percentile(samples: Sequence[float], q: float) -> float:
    """The `q`-th percentile (0..100) by linear interpolation."""
    if not samples:
        raise ValueError("percentile of no samples")
    return float(np.percentile(np.asarray(samples, dtype=float), q))


def stdev(samples: Sequence[float]) -> float:
    """Sample standard deviation (n - 1 in the denominator); 0.0 for a single sample."""
    if len(samples) < 2:
        return 0.0
    return float(np.std(np.asarray(samples, dtype=float), ddof=1))


def median_ci(samples: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free interval for the median from order statistics.

    Picks ranks j < k with P(X_(j) <= median <= X_(k)) >= `confidence` under Binomial(n, 1/2).
    Returns None when `n` is too small for any interval to reach the confidence.
    """
    n = len(samples)
    alpha = 1.0 - confidence
    if n < 2 or 2 * 0.5**n > alpha:
        return None
    j = _median_rank(n, alpha)  # number of samples that may fall below the interval
    ordered = sorted(samples)
    return float(ordered[j - 1]), float(ordered[n - j])


def _median_rank(n: int, alpha: float) -> int:
    """The largest j >= 1 with 2 * P(Binomial(n, 1/2) <= j - 1) <= alpha.

    Summed directly from the log-pmf rather than through scipy.stats.binom, whose import
    (about half a second) would otherwise be paid by every run that prints a median. Terms more
    than nine standard deviations below the mean are below 1e-18 and are skipped.
    """
    log_norm = math.lgamma(n + 1) + n * math.log(0.5)
    start = max(0, math.floor(n / 2 - 4.5 * math.sqrt(n)))
    cdf, j = 0.0, max(start, 1)
    for k in range(start, n):
        cdf += math.exp(log_norm - math.lgamma(k + 1) - math.lgamma(n - k + 1))
        if 2 * cdf > alpha:
            break
        j = k + 1
    return j


def iqr(samples: Sequence[float]) -> float:
    """Interquartile range."""
    return percentile(samples, 75) - percentile(samples, 25)


def summarize_ms(samples_ms: Sequence[float]) -> dict[str, Any]:
    """The seed's `timing` fields (plus min, max, interval) from per-call samples in ms.

    With no samples every figure is None and `iterations` is 0.
    """
    n = len(samples_ms)
    if n == 0:
        keys = ("p50", "p90", "p99", "mean", "std", "min", "max")
        empty: dict[str, Any] = {f"latency_ms_{k}": None for k in keys}
        empty.update(latency_ms_p50_ci95=None, throughput_ops_per_sec=None, iterations=0,
                     latency_ms_p50_ci95_reason="no samples")
        return empty
    mean = math.fsum(samples_ms) / n
    ci = median_ci(samples_ms)
    why = {} if ci else {"latency_ms_p50_ci95_reason": (
        f"{n} sample{'s' * (n != 1)}: an interval of the median from order statistics needs "
        "6 or more to reach 95% confidence")}
    return {**why,
        "latency_ms_p50": percentile(samples_ms, 50),
        "latency_ms_p90": percentile(samples_ms, 90),
        "latency_ms_p99": percentile(samples_ms, 99),
        "latency_ms_mean": mean,
        "latency_ms_std": stdev(samples_ms),
        "latency_ms_min": float(min(samples_ms)),
        "latency_ms_max": float(max(samples_ms)),
        "latency_ms_p50_ci95": list(ci) if ci else None,
        "throughput_ops_per_sec": 1000.0 / mean if mean > 0 else None,
        "iterations": n,
    }


TIMER_SHARE = 0.01
"""A timer overhead or resolution above this share of a sample is flagged: 1 % is a bias a
comparison at a 5 % threshold can feel; at 0.1 % the warning was on most microsecond kernels
and said nothing a reader could act on."""

SLOW_FIRST_RATIO = 1.5
"""A first timed sample this many times the median suggests too little warmup."""


def quality_warnings(samples_ms: Sequence[float], timer_overhead_ns: float | None,
                     inner_loops: int, timer_resolution_ns: float | None = None,
                     entry_point: str | None = None) -> list[dict[str, Any]]:
    """Measurement-quality warnings, as data: each {code, message, value}. `entry_point`
    picks the knob a hint names (:func:`~kernbench.results.vocabulary.knob`)."""
    warnings: list[dict[str, Any]] = []
    n = len(samples_ms)
    if n == 0:
        return warnings
    median = percentile(samples_ms, 50)
    if n >= 5 and median > 0 and samples_ms[0] > SLOW_FIRST_RATIO * median:
        ratio = samples_ms[0] / median
        warnings.append({"code": "slow_first_sample", "value": ratio,
                         "message": f"the first sample took {ratio:.1f}x the median; "
                                    f"a larger {knob('warmup', entry_point)} would absorb it"})
    if timer_resolution_ns and median > 0:
        share = timer_resolution_ns / (median * 1e6 * max(inner_loops, 1))
        if share > TIMER_SHARE:
            warnings.append({"code": "timer_resolution", "value": share,
                             "message": f"the timer's resolution is {share:.2%} of a sample"})
    if n < MIN_SAMPLES:
        warnings.append({"code": "too_few_samples", "value": n,
                         "message": f"only {n} samples; "
                                    f"use {knob('iterations', entry_point, MIN_SAMPLES)} or more"})
    if n >= 4 and median > 0:
        spread = iqr(samples_ms) / median
        if spread > HIGH_SPREAD_RATIO:
            warnings.append({"code": "high_spread", "value": spread,
                             "message": f"IQR is {spread:.0%} of the median; the machine is "
                                        "noisy or the kernel unstable (more iterations, pinning)"})
    if timer_overhead_ns and median > 0:
        ratio = timer_overhead_ns / (median * 1e6 * max(inner_loops, 1))
        if ratio > TIMER_SHARE:
            warnings.append({"code": "timer_overhead", "value": ratio,
                             "message": f"timer overhead is {ratio:.2%} of a sample"})
    return warnings


def geometric_mean(values: Sequence[float]) -> float:
    """exp(mean(log x)): the average of ratios such as speedups, where 2x and 0.5x cancel.
    Every value must be a finite number > 0; ValueError otherwise, or for no values."""
    if not values:
        raise ValueError("geometric mean of no values")
    if any(not math.isfinite(v) or v <= 0 for v in values):
        raise ValueError(f"geometric mean needs finite values > 0, got {list(values)}")
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))
