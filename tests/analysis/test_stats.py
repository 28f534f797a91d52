"""Tests for kernbench.analysis.stats: percentiles, spread, the median's interval and quality
flags."""

from __future__ import annotations

import math
import statistics
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from kernbench.analysis import stats

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)
samples_lists = st.lists(finite, min_size=1, max_size=60)


# --- percentile and stdev -------------------------------------------------------------------


@given(samples_lists, st.floats(min_value=0, max_value=100))
def test_percentile_matches_numpy(samples: list[float], q: float) -> None:
    assert stats.percentile(samples, q) == pytest.approx(float(np.percentile(samples, q)),
                                                         rel=1e-12, abs=1e-9)


def test_percentile_interpolates_linearly() -> None:
    assert stats.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert stats.percentile([10.0, 20.0], 25) == 12.5
    assert stats.percentile([3.0, 1.0, 2.0], 0) == 1.0
    assert stats.percentile([3.0, 1.0, 2.0], 100) == 3.0


def test_percentile_of_nothing_raises() -> None:
    with pytest.raises(ValueError, match="no samples"):
        stats.percentile([], 50)


@given(st.lists(finite, min_size=2, max_size=60))
def test_stdev_is_the_sample_standard_deviation(samples: list[float]) -> None:
    assert stats.stdev(samples) == pytest.approx(statistics.stdev(samples), rel=1e-9, abs=1e-6)


def test_stdev_uses_n_minus_one() -> None:
    assert stats.stdev([1.0, 2.0, 3.0, 4.0]) == pytest.approx(math.sqrt(5 / 3))
    assert stats.stdev([2.0, 4.0]) == pytest.approx(math.sqrt(2.0))


@pytest.mark.parametrize("samples", [[], [42.0]])
def test_stdev_of_fewer_than_two_samples_is_zero(samples: list[float]) -> None:
    assert stats.stdev(samples) == 0.0


def test_iqr() -> None:
    assert stats.iqr([float(k) for k in range(1, 6)]) == 2.0


# --- median confidence interval -------------------------------------------------------------


def test_median_ci_n30_uses_ranks_10_and_21() -> None:
    values = [float(k) for k in range(1, 31)]
    assert stats.median_ci(values) == (10.0, 21.0)
    shuffled = values[::7] + [v for i, v in enumerate(values) if i % 7]
    assert stats.median_ci(shuffled) == (10.0, 21.0)


def test_median_ci_smallest_n() -> None:
    assert stats.median_ci([float(k) for k in range(1, 7)]) == (1.0, 6.0)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5])
def test_median_ci_is_none_below_six_samples(n: int) -> None:
    assert stats.median_ci([float(k) for k in range(n)]) is None


@settings(max_examples=80, deadline=None)
@given(st.integers(min_value=6, max_value=400), st.sampled_from([0.90, 0.95, 0.99]))
def test_median_ci_ranks_reach_the_confidence_and_are_tightest(n: int,
                                                               confidence: float) -> None:
    ranked = [float(k) for k in range(1, n + 1)]  # value k is order statistic k
    interval = stats.median_ci(ranked, confidence)
    if 2 * 0.5**n > 1 - confidence:
        assert interval is None
        return
    assert interval is not None
    low, high = int(interval[0]), int(interval[1])
    assert high == n + 1 - low, "the interval must be symmetric in rank"
    coverage = 1 - 2 * binom.cdf(low - 1, n, 0.5)
    assert coverage >= confidence - 1e-12
    if low + 1 <= high - 1:
        tighter = 1 - 2 * binom.cdf(low, n, 0.5)
        assert tighter < confidence, "a narrower symmetric interval also reaches the confidence"


@pytest.mark.parametrize("n", [1_000, 12_345, 100_000])
def test_median_ci_ranks_match_scipy_for_large_samples(n: int) -> None:
    low_rank = stats._median_rank(n, 0.05)
    assert 2 * binom.cdf(low_rank - 1, n, 0.5) <= 0.05 < 2 * binom.cdf(low_rank, n, 0.5)


def test_printing_a_median_does_not_import_scipy() -> None:
    code = ("import sys; from kernbench.analysis.stats import summarize_ms; "
            "summarize_ms([float(k) for k in range(100)]); print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_median_ci_covers_the_true_median_in_simulation() -> None:
    rng = np.random.default_rng(20240611)
    trials, n, covered = 2000, 30, 0
    for _ in range(trials):
        interval = stats.median_ci(rng.normal(loc=5.0, scale=2.0, size=n).tolist())
        assert interval is not None
        covered += interval[0] <= 5.0 <= interval[1]
    assert covered / trials >= 0.93


def test_median_ci_covers_a_skewed_median_in_simulation() -> None:
    rng = np.random.default_rng(7)
    true_median = math.log(2.0)  # exponential(1)
    trials, covered = 1000, 0
    for _ in range(trials):
        interval = stats.median_ci(rng.exponential(size=40).tolist())
        assert interval is not None
        covered += interval[0] <= true_median <= interval[1]
    assert covered / trials >= 0.93


# --- summarize_ms ---------------------------------------------------------------------------


def test_summarize_empty() -> None:
    summary = stats.summarize_ms([])
    assert summary["iterations"] == 0
    assert summary.pop("latency_ms_p50_ci95_reason") == "no samples"
    assert {k: v for k, v in summary.items() if k != "iterations"} == dict.fromkeys(
        ["latency_ms_p50", "latency_ms_p90", "latency_ms_p99", "latency_ms_mean",
         "latency_ms_std", "latency_ms_min", "latency_ms_max", "latency_ms_p50_ci95",
         "throughput_ops_per_sec"])


@pytest.mark.parametrize(("n", "reason"), [
    (1, "1 sample: an interval of the median from order statistics needs 6 or more to reach "
        "95% confidence"),
    (5, "5 samples: an interval of the median from order statistics needs 6 or more to reach "
        "95% confidence"),
    (6, None)])
def test_a_missing_interval_of_the_median_says_why(n: int, reason: str | None) -> None:
    summary = stats.summarize_ms([float(k + 1) for k in range(n)])
    assert (summary["latency_ms_p50_ci95"] is None) == (reason is not None)
    assert summary.get("latency_ms_p50_ci95_reason") == reason


def test_summarize_figures() -> None:
    samples = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
    summary = stats.summarize_ms(samples)
    assert summary["iterations"] == 8
    assert summary["latency_ms_mean"] == 5.0
    assert summary["throughput_ops_per_sec"] == 200.0
    assert summary["latency_ms_p50"] == 4.5
    assert summary["latency_ms_min"] == 2.0
    assert summary["latency_ms_max"] == 9.0
    assert summary["latency_ms_std"] == pytest.approx(statistics.stdev(samples))
    assert summary["latency_ms_p90"] == pytest.approx(np.percentile(samples, 90))
    assert summary["latency_ms_p99"] == pytest.approx(np.percentile(samples, 99))
    assert summary["latency_ms_p50_ci95"] == [2.0, 9.0]


@given(st.lists(st.floats(min_value=1e-6, max_value=1e6), min_size=1, max_size=40))
def test_throughput_is_1000_over_the_mean(samples: list[float]) -> None:
    summary = stats.summarize_ms(samples)
    assert summary["throughput_ops_per_sec"] == pytest.approx(1000.0 / summary["latency_ms_mean"])
    assert summary["latency_ms_mean"] == pytest.approx(math.fsum(samples) / len(samples))


def test_summarize_small_sample_has_no_interval() -> None:
    summary = stats.summarize_ms([1.0, 2.0, 3.0])
    assert summary["latency_ms_p50_ci95"] is None
    assert summary["latency_ms_p50"] == 2.0


def test_summarize_zero_mean_has_no_throughput() -> None:
    assert stats.summarize_ms([0.0, 0.0])["throughput_ops_per_sec"] is None


# --- quality warnings -----------------------------------------------------------------------


def codes(warnings: list[dict[str, object]]) -> list[object]:
    return [w["code"] for w in warnings]


def test_clean_data_has_no_warnings() -> None:
    samples = [1.0 + 0.001 * (k % 5) for k in range(30)]
    assert stats.quality_warnings(samples, timer_overhead_ns=50.0, inner_loops=1) == []


def test_no_samples_no_warnings() -> None:
    assert stats.quality_warnings([], timer_overhead_ns=1e9, inner_loops=1) == []


def test_high_spread() -> None:
    samples = [1.0] * 5 + [2.0] * 5
    warnings = stats.quality_warnings(samples, timer_overhead_ns=None, inner_loops=1)
    assert codes(warnings) == ["high_spread"]
    assert warnings[0]["value"] == pytest.approx(stats.iqr(samples) / 1.5)
    assert warnings[0]["message"]


def test_spread_at_or_below_ten_percent_is_not_flagged() -> None:
    # quartiles 0.9875 and 1.0125 around a median of 1.0: IQR / median = 2.5%
    samples = [0.95, 0.975, 0.975, 1.0, 1.0, 1.0, 1.025, 1.025, 1.05, 1.0, 1.0]
    assert stats.iqr(samples) / stats.percentile(samples, 50) <= 0.10
    assert stats.quality_warnings(samples, timer_overhead_ns=None, inner_loops=1) == []


def test_spread_above_ten_percent_is_flagged() -> None:
    samples = [0.9, 0.9, 0.9, 1.0, 1.0, 1.0, 1.0, 1.11, 1.11, 1.11, 1.11]
    spread = stats.iqr(samples) / stats.percentile(samples, 50)
    assert spread > 0.10
    warnings = stats.quality_warnings(samples, timer_overhead_ns=None, inner_loops=1)
    assert codes(warnings) == ["high_spread"]


def test_too_few_samples() -> None:
    warnings = stats.quality_warnings([1.0] * 9, timer_overhead_ns=None, inner_loops=1)
    assert codes(warnings) == ["too_few_samples"]
    assert warnings[0]["value"] == 9
    assert stats.quality_warnings([1.0] * 10, timer_overhead_ns=None, inner_loops=1) == []


@pytest.mark.parametrize(("entry_point", "samples", "warmup"), [
    (None, "use --iters 10 or more", "a larger --warmup"),
    ("kernbench.bench", "use iterations=10 or more", "a larger warmup="),
    ("pytest", "use --kernbench-iterations 10 (or the marker's iterations=10) or more",
     "a larger --kernbench-warmup (or the marker's warmup=)"),
])
def test_hints_name_the_knob_of_the_entry_point(entry_point: str | None, samples: str,
                                                warmup: str) -> None:
    warnings = stats.quality_warnings([3.0, 1.0, 1.0, 1.0, 1.0], timer_overhead_ns=None,
                                      inner_loops=1, entry_point=entry_point)
    messages = {w["code"]: w["message"] for w in warnings}
    assert messages["too_few_samples"] == f"only 5 samples; {samples}"
    assert messages["slow_first_sample"].endswith(f"; {warmup} would absorb it")


def test_timer_overhead_above_a_hundredth_of_a_sample() -> None:
    samples = [1.0] * 20  # 1 ms per call
    warnings = stats.quality_warnings(samples, timer_overhead_ns=20_000.0, inner_loops=1)
    assert codes(warnings) == ["timer_overhead"]
    assert warnings[0]["value"] == pytest.approx(0.02)
    # the same overhead over a ten-call sample is 0.2%: fine
    assert stats.quality_warnings(samples, timer_overhead_ns=20_000.0, inner_loops=10) == []
    # exactly 1% is not flagged
    assert stats.quality_warnings(samples, timer_overhead_ns=10_000.0, inner_loops=1) == []


def test_several_warnings_together() -> None:
    samples = [1.0, 1.0, 3.0, 3.0, 3.0]
    warnings = stats.quality_warnings(samples, timer_overhead_ns=1e6, inner_loops=1)
    assert sorted(codes(warnings)) == ["high_spread", "timer_overhead", "too_few_samples"]
    for warning in warnings:
        assert set(warning) == {"code", "message", "value"}


def test_geometric_mean_of_ratios() -> None:
    from kernbench.analysis.stats import geometric_mean

    assert geometric_mean([2.0, 0.5]) == pytest.approx(1.0)
    assert geometric_mean([1.0, 2.0, 4.0]) == pytest.approx(2.0)
    assert geometric_mean([3.0]) == pytest.approx(3.0)
    for bad in ([], [1.0, 0.0], [1.0, -2.0], [float("nan")], [float("inf")]):
        with pytest.raises(ValueError):
            geometric_mean(bad)
