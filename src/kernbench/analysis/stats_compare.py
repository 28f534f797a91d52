"""Baseline-vs-candidate comparison of one case's timings, as small pure functions. No I/O.

Design, in brief:

* The worker process is the unit of replication. Samples inside one process share its ASLR
  layout, clock state and cache state, so they are correlated; the noise *between* processes is
  real and must be in the error bar. Each process is reduced to its median, and the test runs on
  those medians, one per process.
* Latencies are compared on a log scale: a change is a ratio (candidate / baseline, > 1 means
  slower), timing noise is roughly multiplicative, and a log-normal is a fair model of a
  process's median.
* Welch's t-test on the log process medians (unequal variances, Welch–Satterthwaite df) gives
  the p-value; the exponentiated Welch interval of the difference of means is the ratio's
  interval. Process medians can be multimodal (on a shared VM a process can run 1.3-1.7x
  slower for its whole life; a nanosecond kernel's process can land in a slow layout), and a
  mean follows a few such processes. So from ten processes a side the means are trimmed by a
  tenth at each end (Yuen's test: the fastest and slowest tenth of each side's process
  medians are set aside, their spread kept in the winsorized variance); with nine or fewer
  nothing is trimmed and it is Welch's test exactly. The Hodges-Lehmann ratio (the median of every
  candidate/baseline pair of process medians) says how far the *typical* process moved, and
  a change is claimed only when both moved. With too few processes per side the only thing
  left is a Mann-Whitney U test on the pooled samples, which ignores between-process noise
  and is flagged as optimistic.

What a comparison means for a run (Benjamini-Hochberg across cases, the verdict) is
`kernbench.analysis.verdicts`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

WELCH = "welch-log-process-medians"
YUEN = "yuen-trimmed-log-process-medians"
TRIM = 0.1
"""Share of each side's process medians trimmed from each end (Yuen's test): floor(0.1 n), so
nothing with nine processes or fewer (trimming a fifth of five cost Welch's test a fifth of
its power), one of each end with 10-19. Measured on this project's VM (2026-11-26), on pairs
of stored runs of three 0.85 ms Python kernels with 10 processes: in 14 runs from the A/A
test, every pair compared, false claims on unchanged kernels 11 -> 2 in 959 and a real 1.3x
slowdown claimed 143 -> 139 in 196; `benchmarks/bench_stored_aa.py` (280 fresh pairs in six
runs, against the rule before, with the slow-mode processes left out) false claims 27 -> 25
in 560, 1.3x claimed 220 -> 217 in 280: a small gain where a few processes ran slow, none
where a third did."""
PAIRED = "sign-test-log-round-medians"
MANN_WHITNEY = "mann-whitney-samples"
INSUFFICIENT = "insufficient"

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Comparison:
    """A candidate compared with a baseline for one case."""

    ratio: float | None
    """Candidate / baseline, of medians (> 1 means the candidate is slower)."""
    ci_low: float | None
    """Lower end of the ratio's confidence interval."""
    ci_high: float | None
    """Upper end of the ratio's confidence interval."""
    p_value: float | None
    """Two-sided p-value against H0: no difference."""
    method: str
    """"welch-log-process-medians", "yuen-trimmed-log-process-medians",
    "sign-test-log-round-medians", "mann-whitney-samples" or "insufficient"."""
    n_baseline: int
    """Groups (worker processes) with samples on the baseline side."""
    n_candidate: int
    """Groups (worker processes) with samples on the candidate side."""
    note: str | None = None
    typical_ratio: float | None = None
    """Hodges-Lehmann ratio: the median of the candidate/baseline ratios of every pair of
    process medians (Welch's method only). Unlike `ratio`, a few processes in another mode
    barely move it."""


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence}")


def _finite_positive_or_none(value: float) -> float | None:
    return value if math.isfinite(value) and value > 0 else None


def _median(values: FloatArray) -> float:
    """Median of positive values, as NumPy's, without overflow near the largest float."""
    ordered = np.sort(values)
    n = ordered.size
    low, high = float(ordered[(n - 1) // 2]), float(ordered[n // 2])
    return low + (high - low) / 2


def _exp(x: float) -> float:
    """exp that overflows to inf instead of raising."""
    with np.errstate(over="ignore"):
        return float(np.exp(x))


def _insufficient(n_a: int, n_b: int, note: str) -> Comparison:
    return Comparison(None, None, None, None, INSUFFICIENT, n_a, n_b, note)


def compare_groups(baseline: Sequence[Sequence[float]], candidate: Sequence[Sequence[float]],
                   confidence: float = 0.95, min_groups: int = 3) -> Comparison:
    """Compare candidate latencies with baseline latencies, each given as per-process groups.

    Empty groups are dropped (a process that produced no samples replicates nothing). With at
    least `min_groups` groups on both sides (and never fewer than 2, which a variance needs):
    Welch's t-test on the logs of the per-group medians, ratio = exp(mean log B - mean log A)
    (the ratio of geometric means of the process medians) and its Welch interval; the means
    are trimmed (Yuen's test, `TRIM`) where a side has ten groups or more. Otherwise: a
    two-sided Mann-Whitney U test on the pooled samples, the ratio of pooled medians and a
    hierarchical bootstrap interval (`bootstrap_ratio_ci`), widened if need be to contain the
    point ratio, with a note that the test is optimistic. A side with no samples, a value that
    is not finite and positive, or a ratio that overflows gives method "insufficient".
    """
    _check_confidence(confidence)
    groups_a = [np.asarray(g, dtype=float) for g in baseline if len(g) > 0]
    groups_b = [np.asarray(g, dtype=float) for g in candidate if len(g) > 0]
    n_a, n_b = len(groups_a), len(groups_b)
    if n_a == 0 or n_b == 0:
        side = "baseline" if n_a == 0 else "candidate"
        return _insufficient(n_a, n_b, f"no samples on the {side} side")
    for groups in (groups_a, groups_b):
        for g in groups:
            if not (np.all(np.isfinite(g)) and np.all(g > 0)):
                return _insufficient(n_a, n_b, "latencies must be finite and positive")
    needed = max(min_groups, 2)
    if n_a >= needed and n_b >= needed:
        return _welch(groups_a, groups_b, confidence)
    return _mann_whitney(groups_a, groups_b, confidence, needed)


def compare_paired(baseline: Sequence[Sequence[float]], candidate: Sequence[Sequence[float]],
                   confidence: float = 0.95) -> Comparison:
    """Compare groups that come in time-adjacent pairs (interleaved A/B rounds).

    Round r ran baseline process r and candidate process r back to back, so whatever the machine
    did during that round (frequency, a neighbour's load) hit both; the per-round differences of
    log process medians cancel it. On a shared machine those differences are heavy-tailed (one
    disturbed process makes one wild round), so the comparison uses what survives that: the
    sign test (how many rounds got slower), ratio = exp(median difference), and the
    distribution-free order-statistic interval of that median (:func:`kernbench.analysis.stats.
    median_ci`). Unpaired data (a side with a round the other lacks) falls back to
    :func:`compare_groups`. One or two rounds stay paired: the sign test then cannot reach
    p < 0.5, and says so, where a test of the samples within a round's two processes would
    claim a change from the noise of two processes (two rounds were "regressed", q = 0.0002,
    on code that three rounds called inconclusive).
    """
    _check_confidence(confidence)
    pairs = [(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
             for a, b in zip(baseline, candidate, strict=False) if len(a) and len(b)]
    usable = len(pairs) == len(baseline) == len(candidate) and len(pairs) >= 1
    if not usable or not all(np.all(np.isfinite(g)) and np.all(g > 0) for p in pairs for g in p):
        return compare_groups(baseline, candidate, confidence)
    from scipy import stats as sps

    from kernbench.analysis.stats import median_ci

    diffs = [math.log(_median(b)) - math.log(_median(a)) for a, b in pairs]
    n = len(diffs)
    ratio = _finite_positive_or_none(_exp(float(np.median(diffs))))
    if ratio is None:
        return _insufficient(n, n, "the ratio of medians is not representable")
    slower = sum(d > 0 for d in diffs)
    moved = sum(d != 0 for d in diffs)
    p_value = float(sps.binomtest(slower, moved, 0.5).pvalue) if moved else 1.0
    interval = median_ci(diffs, confidence)
    if interval is None:  # too few rounds for any interval to reach the confidence: none,
        # and so no verdict (the range of two rounds holds their median half the time)
        return Comparison(ratio, None, None, p_value, PAIRED, n, n,
                          f"{n} round{'s' * (n != 1)} cannot give a {confidence:.0%} "
                          f"interval (the rounds ranged {_exp(min(diffs)):.3f}x to "
                          f"{_exp(max(diffs)):.3f}x), so nothing is claimed; give more "
                          "--rounds")
    low, high = min(interval[0], math.log(ratio)), max(interval[1], math.log(ratio))
    return Comparison(ratio, _exp(low), _exp(high), p_value, PAIRED, n, n)


def _trimmed(logs: FloatArray, trim: float) -> tuple[float, float, int, int, bool]:
    """(trimmed mean, its squared standard error, values kept, trimmed from each end, whether
    the winsorized values still differ) of logs, as Yuen's test takes them: the winsorized
    variance over h(h - 1)/(n - 1)."""
    ordered = np.sort(logs)
    n = ordered.size
    cut = math.floor(trim * n)
    kept = n - 2 * cut
    mean = float(np.mean(ordered[cut:n - cut]))
    winsorized = np.clip(ordered, ordered[cut], ordered[n - cut - 1])
    variance = (n - 1) * float(np.var(winsorized, ddof=1)) / (kept * (kept - 1))
    return mean, variance, kept, cut, bool(np.ptp(winsorized) > 0)


def _welch(groups_a: list[FloatArray], groups_b: list[FloatArray],
           confidence: float) -> Comparison:
    """Welch's test on the log process medians, Yuen's (trimmed means) from ten a side."""
    from scipy import stats as sps

    n_a, n_b = len(groups_a), len(groups_b)
    log_a = np.log(np.array([_median(g) for g in groups_a]))
    log_b = np.log(np.array([_median(g) for g in groups_b]))
    typical = _exp(float(np.median(np.subtract.outer(log_b, log_a))))
    sides = [_trimmed(log_a, TRIM), _trimmed(log_b, TRIM)]
    if any(not spread and np.ptp(raw) > 0 for (*_, spread), raw in zip(sides, (log_a, log_b),
                                                                      strict=True)):
        # Trimming set aside all that differed on a side (most processes tied): it would hide
        # that side's spread, so nothing is trimmed.
        sides = [_trimmed(log_a, 0.0), _trimmed(log_b, 0.0)]
    (mean_a, var_a, kept_a, cut_a, spread_a), (mean_b, var_b, kept_b, cut_b, spread_b) = sides
    method = YUEN if cut_a or cut_b else WELCH
    diff = mean_b - mean_a
    ratio = _finite_positive_or_none(_exp(diff))
    if ratio is None:
        return _insufficient(n_a, n_b, "the ratio of medians is not representable")
    if not spread_a and not spread_b:
        # No spread between processes on either side: the t statistic is 0/0. Identical medians
        # mean no difference; different ones differ with certainty, as far as the data can say.
        return Comparison(ratio, ratio, ratio, 1.0 if diff == 0.0 else 0.0, method, n_a, n_b,
                          "every process median is identical within each side (zero variance); "
                          "the p-value and interval are degenerate", typical_ratio=typical)
    se = math.sqrt(var_a + var_b)
    if se == 0.0:
        return Comparison(ratio, ratio, ratio, 1.0 if diff == 0.0 else 0.0, method, n_a, n_b,
                          "the spread of the process medians is too small to test",
                          typical_ratio=typical)
    # Welch–Satterthwaite degrees of freedom on the kept values; with nothing trimmed the same
    # test and interval as scipy's `ttest_ind(..., equal_var=False)`, and with trimming as its
    # `trim=` (Yuen's test), computed here so the interval comes with it on older scipy.
    df = (var_a + var_b) ** 2 / (var_a**2 / (kept_a - 1) + var_b**2 / (kept_b - 1))
    p_value = float(2 * sps.t.sf(abs(diff) / se, df))
    half = float(sps.t.ppf(0.5 + confidence / 2, df)) * se
    low, high = _exp(diff - half), _exp(diff + half)
    return Comparison(ratio, min(low, ratio), max(high, ratio), p_value, method, n_a, n_b,
                      typical_ratio=typical)


MIN_POOLED_SAMPLES = 3
"""The fewest samples a side needs for a bootstrap interval of its median."""


def _mann_whitney(groups_a: list[FloatArray], groups_b: list[FloatArray], confidence: float,
                  needed: int) -> Comparison:
    from scipy import stats as sps

    n_a, n_b = len(groups_a), len(groups_b)
    pooled_a = np.concatenate(groups_a)
    pooled_b = np.concatenate(groups_b)
    ratio = _finite_positive_or_none(_exp(math.log(_median(pooled_b))
                                          - math.log(_median(pooled_a))))
    if ratio is None:
        return _insufficient(n_a, n_b, "the ratio of medians is not representable")
    p_value = float(sps.mannwhitneyu(pooled_b, pooled_a, alternative="two-sided").pvalue)
    p_value = 1.0 if math.isnan(p_value) else p_value  # all ties: NaN in scipy 1.18, 1.0 before
    if min(pooled_a.size, pooled_b.size) < MIN_POOLED_SAMPLES:
        # A resample of one or two values is those values: a zero-width interval that would
        # call one sample against one "unchanged".
        return Comparison(ratio, None, None, p_value, MANN_WHITNEY, n_a, n_b,
                          f"fewer than {MIN_POOLED_SAMPLES} samples on a side: no interval, "
                          "and so no verdict")
    low, high = _bootstrap_ci(groups_a, groups_b, confidence, resamples=2000, seed=0)
    # A percentile interval need not contain the point estimate in tiny or lopsided samples.
    return Comparison(ratio, min(low, ratio), max(high, ratio), p_value, MANN_WHITNEY, n_a, n_b,
                      f"fewer than {needed} processes per side: between-process noise is not "
                      "measured, so this test is optimistic")


def _hierarchical_medians(arrays: list[FloatArray], resamples: int,
                          rng: np.random.Generator) -> FloatArray:
    """Median of the pooled samples of each of `resamples` hierarchical resamples."""
    flat = np.concatenate(arrays)
    sizes = np.array([a.size for a in arrays], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    k = len(arrays)
    width = k * int(sizes.max())  # longest possible pooled resample
    medians = np.empty(resamples, dtype=float)
    chunk = max(1, min(resamples, 2_000_000 // width))
    for first in range(0, resamples, chunk):
        rows = min(chunk, resamples - first)
        chosen = rng.integers(0, k, size=(rows, k))  # groups, with replacement
        chosen_sizes = sizes[chosen]
        lengths = chosen_sizes.sum(axis=1)
        # Samples within each chosen group, with replacement, as many as the group holds.
        row_of = np.repeat(np.arange(rows), lengths)
        group_of = np.repeat(chosen.ravel(), chosen_sizes.ravel())
        picks = starts[group_of] + (rng.random(group_of.size) * sizes[group_of]).astype(np.int64)
        picks = np.minimum(picks, starts[group_of] + sizes[group_of] - 1)
        offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        column = np.arange(group_of.size) - np.repeat(offsets, lengths)
        table = np.full((rows, width), np.inf)
        table[row_of, column] = flat[picks]
        table.sort(axis=1)
        index = np.arange(rows)
        below, above = table[index, (lengths - 1) // 2], table[index, lengths // 2]
        medians[first:first + rows] = below + (above - below) / 2
    return medians


def bootstrap_ratio_ci(baseline_groups: Sequence[Sequence[float]],
                       candidate_groups: Sequence[Sequence[float]], confidence: float = 0.95,
                       resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile interval of median(candidate pooled) / median(baseline pooled).

    Hierarchical bootstrap: each resample draws groups with replacement, then, within each drawn
    group, as many samples as it holds with replacement, and pools them. Deterministic for a
    seed. Groups must be non-empty; samples should be positive.
    """
    _check_confidence(confidence)
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    arrays_a = [np.asarray(g, dtype=float) for g in baseline_groups]
    arrays_b = [np.asarray(g, dtype=float) for g in candidate_groups]
    for arrays in (arrays_a, arrays_b):
        if not arrays or any(a.size == 0 for a in arrays):
            raise ValueError("bootstrap needs at least one group per side and no empty group")
    return _bootstrap_ci(arrays_a, arrays_b, confidence, resamples, seed)


def _bootstrap_ci(arrays_a: list[FloatArray], arrays_b: list[FloatArray], confidence: float,
                  resamples: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    med_a = _hierarchical_medians(arrays_a, resamples, rng)
    med_b = _hierarchical_medians(arrays_b, resamples, rng)
    # Percentiles of the log ratio (finite for any positive medians), interpolated on that
    # scale, then exponentiated: the same order statistics as percentiles of the ratio itself.
    log_ratios = np.log(med_b) - np.log(med_a)
    tail = 100.0 * (1.0 - confidence) / 2
    low, high = np.percentile(log_ratios, [tail, 100.0 - tail])
    return _exp(float(low)), _exp(float(high))
