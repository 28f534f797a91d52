"""Tests for kernbench.analysis.verdicts: the verdict rule on hand-made comparisons,
Benjamini-Hochberg, and the note for a change the q-value did not carry."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernbench.analysis.stats_compare import Comparison
from kernbench.analysis.verdicts import (
    benjamini_hochberg,
    beyond_band,
    short_of_significance,
    verdict,
)

WELCH = "welch-log-process-medians"
MW = "mann-whitney-samples"


# --- verdict rule on hand-made comparisons --------------------------------------------------


def comp(ratio: float | None, low: float | None, high: float | None,
         method: str = WELCH) -> Comparison:
    return Comparison(ratio, low, high, 0.5, method, 5, 5)


@pytest.mark.parametrize("c, q, expected", [
    (comp(None, None, None), 0.001, "inconclusive"),
    (comp(1.5, 1.4, 1.6), None, "inconclusive"),
    (comp(1.5, 1.4, 1.6), 0.001, "regressed"),
    (comp(1.5, 1.4, 1.6), 0.05, "inconclusive"),  # q must be below alpha
    (comp(1.5, 0.99, 2.2), 0.01, "inconclusive"),  # q (from BH) small but interval reaches 1
    (comp(1.08, 1.01, 1.15), 0.001, "inconclusive"),  # significant, smaller than the threshold
    (comp(0.6, 0.5, 0.7), 0.001, "improved"),
    (comp(0.6, 0.5, 1.01), 0.001, "inconclusive"),
    (comp(0.95, 0.92, 0.98), 0.001, "unchanged"),  # significant, but inside the band
    # Not significant is not unchanged: the interval must rule out a change beyond the band.
    (comp(1.02, 0.8, 1.3), 0.4, "inconclusive"),
    (comp(1.02, 0.97, 1.05), 0.4, "unchanged"),
    (comp(1.02, 0.8, 1.3, MW), 0.4, "inconclusive"),
    (comp(1.2, 0.8, 1.6), 0.4, "inconclusive"),  # not significant but large
    (comp(1.0, 1 / 1.1, 1.1, MW), 0.4, "unchanged"),  # interval exactly the band
])
def test_verdict_rule(c: Comparison, q: float | None, expected: str) -> None:
    assert verdict(c, q, threshold=0.1) == expected


def test_verdict_rejects_negative_threshold() -> None:
    with pytest.raises(ValueError):
        verdict(comp(1.0, 0.9, 1.1), 0.5, threshold=-0.1)


# --- Benjamini-Hochberg ---------------------------------------------------------------------


def test_benjamini_hochberg_hand_computed() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 -> p*m/rank = 0.02, 0.02, 0.04, 0.04 (already monotone).
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_benjamini_hochberg_monotone_step_and_nones() -> None:
    # Non-None: 0.01, 0.02, 0.025, 0.5 (m = 4) -> 0.04, 0.04, 0.0333, 0.5; the running minimum
    # from the top lowers the first two to 0.0333.
    q = benjamini_hochberg([None, 0.02, 0.01, None, 0.5, 0.025])
    assert q[0] is None and q[3] is None
    assert q[1:3] == pytest.approx([0.1 / 3, 0.1 / 3])
    assert q[4] == pytest.approx(0.5)
    assert q[5] == pytest.approx(0.1 / 3)


def test_benjamini_hochberg_edges() -> None:
    assert benjamini_hochberg([]) == []
    assert benjamini_hochberg([None, None]) == [None, None]
    assert benjamini_hochberg([0.3]) == [0.3]
    assert benjamini_hochberg([0.9, 0.95]) == pytest.approx([0.95, 0.95])


@given(st.lists(st.one_of(st.none(), st.floats(0.0, 1.0)), max_size=30))
def test_benjamini_hochberg_properties(p_values: list[float | None]) -> None:
    q = benjamini_hochberg(p_values)
    assert len(q) == len(p_values)
    for p, qi in zip(p_values, q, strict=True):
        assert (p is None) == (qi is None)
        if p is not None and qi is not None:
            assert p - 1e-12 <= qi <= 1.0
    pairs = sorted((p, qi) for p, qi in zip(p_values, q, strict=True)
                   if p is not None and qi is not None)
    assert all(x[1] <= y[1] + 1e-12 for x, y in itertools.pairwise(pairs))

@pytest.mark.parametrize(("ratio", "low", "high", "moved"), [
    (1.5, 1.4, 1.6, "slower"),
    (0.6, 0.5, 0.7, "faster"),
    (1.5, 0.99, 2.2, None),     # beyond the band, but the interval reaches 1
    (1.08, 1.01, 1.15, None),   # clear, but inside the band (threshold 0.1)
    (0.95, 0.9, 1.0, None),     # the interval touches 1
    (1.5, None, None, None),    # no interval
])
def test_beyond_band_needs_the_ratio_past_the_band_and_the_interval_past_one(
        ratio: float, low: float | None, high: float | None, moved: str | None) -> None:
    assert beyond_band(Comparison(ratio, low, high, 0.01, WELCH, 5, 5), 0.1) == moved


@pytest.mark.parametrize(("ratio", "low", "high", "q", "said"), [
    (2.0, 1.5, 2.6, 0.2, True),       # beyond the band, interval above 1, q too high
    (0.4, 0.3, 0.6, 0.2, True),       # the same for an improvement
    (2.0, 1.5, 2.6, 0.01, False),     # significant: claimed, nothing to explain
    (2.0, 0.9, 2.6, 0.2, False),      # the interval reaches 1: no change shown at all
    (1.05, 1.01, 1.09, 0.2, False),   # inside the threshold
])
def test_short_of_significance_only_for_a_clear_change_the_q_value_missed(
        ratio: float, low: float, high: float, q: float, said: bool) -> None:
    welch = Comparison(ratio, low, high, q / 3, "welch-log-process-medians", 3, 3)
    note = short_of_significance(welch, q, 0.1, 0.05, 3)
    assert (note is not None) == said
    if said:
        assert note == (f"beyond the threshold but not significant: q {q:.2g} >= 0.05 after "
                        "Benjamini-Hochberg over 3 compared cases; more processes "
                        "(--processes N) can tell")
        in_pytest = short_of_significance(welch, q, 0.1, 0.05, 3, "pytest")
        assert str(in_pytest).endswith("; more processes (the marker's processes=N (with "
                                       "isolation='fork')) can tell")
