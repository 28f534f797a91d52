"""From a comparison to a verdict: Benjamini-Hochberg across a run's cases, the rule that
claims a change, and what to say when a change was not claimed. Pure functions, no I/O.

`verdict` claims a change only when it is both statistically significant (q < alpha, and the
interval excludes 1) and practically large (the point ratio is beyond the threshold);
"unchanged" only when the data support it; everything else is "inconclusive".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kernbench.analysis.stats_compare import PAIRED, Comparison
from kernbench.results.vocabulary import knob


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg q-values (adjusted p-values), in the input order; None stays None.

    The family is the non-None p-values, e.g. every comparable case of a run.
    """
    present = [i for i, p in enumerate(p_values) if p is not None]
    values = [float(p) for p in p_values if p is not None]
    q_values: list[float | None] = [None] * len(p_values)
    if not present:
        return q_values
    from scipy import stats as sps

    adjusted = sps.false_discovery_control(values)
    for i, q in zip(present, adjusted, strict=True):
        q_values[i] = float(q)
    return q_values


def verdict(comparison: Comparison, q_value: float | None, threshold: float,
            alpha: float = 0.05) -> str:
    """"regressed", "improved", "unchanged" or "inconclusive", from a comparison and its q-value.

    With the practical band [1/(1+threshold), 1+threshold] around no change:

    * "inconclusive" when there is no ratio or no q-value;
    * "regressed" when q < alpha, the ratio exceeds 1+threshold and the interval lies above 1;
    * "improved" when q < alpha, the ratio is below 1/(1+threshold) and the interval lies below 1;
    * for both, the typical ratio (where there is one) must be beyond the band too, or a few
      processes moved, not the kernel (`moved_by_few`): "inconclusive";
    * "unchanged" when the whole interval lies inside the band (equivalence: any change there
      may be is smaller than the threshold);
    * "inconclusive" otherwise: significant but smaller than the threshold with an interval
      reaching past the band, not significant with an interval too wide to rule out a change
      beyond the threshold, or too few processes. Not significant is not the same as
      unchanged: with three noisy processes a side, a 2x slowdown can fail a test.
    """
    if threshold < 0:
        raise ValueError("threshold must be non-negative")
    ratio = comparison.ratio
    if ratio is None or q_value is None:
        return "inconclusive"
    moved = beyond_band(comparison, threshold)
    if moved and q_value < alpha and not moved_by_few(comparison, threshold):
        return "regressed" if moved == "slower" else "improved"
    low, high, upper = comparison.ci_low, comparison.ci_high, 1.0 + threshold
    if low is not None and high is not None and 1.0 / upper <= low and high <= upper:
        return "unchanged"
    return "inconclusive"


def beyond_band(comparison: Comparison, threshold: float) -> str | None:
    """"slower" when the ratio exceeds 1+threshold and the interval lies above 1, "faster" when
    the ratio is below 1/(1+threshold) and the interval lies below 1: a change that a verdict
    claims if it is also significant. None otherwise."""
    ratio, low, high = comparison.ratio, comparison.ci_low, comparison.ci_high
    if ratio is None or low is None or high is None:
        return None
    upper = 1.0 + threshold
    if ratio > upper and low > 1.0:
        return "slower"
    return "faster" if ratio < 1.0 / upper and high < 1.0 else None


def moved_by_few(comparison: Comparison, threshold: float) -> bool:
    """The ratio is beyond the practical band but the typical process's ratio is not beyond it
    on the same side: the mean of the process medians moved because a few processes did (the
    typical process may even have moved the other way)."""
    ratio, typical = comparison.ratio, comparison.typical_ratio
    if ratio is None or typical is None:
        return False
    upper = 1.0 + threshold
    if ratio > upper:
        return typical <= upper
    if ratio < 1.0 / upper:
        return typical >= 1.0 / upper
    return False


def short_of_significance(comparison: Comparison, q_value: float | None, threshold: float,
                          alpha: float, family: int,
                          entry_point: str | None = None) -> str | None:
    """Why a change beyond the threshold, its whole interval beyond no change, was not claimed:
    its q-value (Benjamini-Hochberg over the `family` compared cases) did not reach `alpha`.
    None for any other comparison. A sign test over n rounds cannot give p below 2^(1-n),
    so for paired rounds it says how many rounds a lone change needs among `family` cases."""
    if q_value is None or q_value < alpha or beyond_band(comparison, threshold) is None:
        return None
    text = (f"beyond the threshold but not significant: q {q_value:.2g} >= {alpha:g} after "
            f"Benjamini-Hochberg over {family} compared cases")
    if comparison.method != PAIRED:
        return f"{text}; more processes ({knob('processes', entry_point, 'N')}) can tell"
    rounds = comparison.n_baseline
    needed = math.floor(math.log2(2 * max(family, 1) / alpha)) + 1  # 2^(1-n) * family < alpha
    return (f"{text}; {rounds} rounds give a sign-test p of {2 * 0.5 ** rounds:.2g} at best: "
            f"run --rounds {max(needed, rounds + 1)} or more")
