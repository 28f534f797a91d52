"""Unit tests of kernbench.analysis.compare.compare_results on hand-built CaseResult objects.

Samples are drawn from a seeded NumPy generator and split into worker-process groups with
`process_sample_counts`, as `--processes N` records them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from kernbench.analysis.compare import (
    Thresholds,
    case_dict,
    case_key,
    compare_results,
    process_groups,
    regressions_found,
    skipped_on_both_sides,
    tally,
)
from kernbench.analysis.machine_caveats import comparison_warnings
from kernbench.results.model import CaseResult

PROCESSES = 5
PER_PROCESS = 20


def samples(rng: np.random.Generator, median_ms: float, processes: int = PROCESSES,
            per_process: int = PER_PROCESS, between: float = 0.02,
            within: float = 0.01) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """Log-normal samples: each process has its own median (spread `between`), samples vary
    around it (spread `within`)."""
    values: list[float] = []
    for _ in range(processes):
        centre = median_ms * math.exp(rng.normal(0.0, between))
        values.extend(float(x) for x in centre * np.exp(rng.normal(0.0, within, per_process)))
    return tuple(values), (per_process,) * processes


def result(kernel: str = "gemm", *, status: str = "ok", reason: str | None = None,
           sample_data: tuple[tuple[float, ...], tuple[int, ...]] | None = None,
           problem_size: Any = None, backend: str = "cpu", precision: str = "fp32",
           accuracy: Mapping[str, Any] | None = None) -> CaseResult:
    values, counts = sample_data if sample_data is not None else ((), ())
    return CaseResult(kernel_name=kernel, kernel_path=f"kernels/{kernel}.py", framework="numpy",
                      backend=backend, precision=precision, problem_size=problem_size,
                      status=status, reason=reason,  # type: ignore[arg-type]
                      samples_ms=values, process_sample_counts=counts,
                      accuracy=dict(accuracy or {}))


def only(cases: list[Any]) -> Any:
    assert len(cases) == 1, [c.key for c in cases]
    return cases[0]


# --- building blocks ---------------------------------------------------------------------


def test_process_groups_split_samples_by_process_counts() -> None:
    case = result(sample_data=((1.0, 2.0, 3.0, 4.0, 5.0, 6.0), (1, 2, 3)))
    assert process_groups(case) == [[1.0], [2.0, 3.0], [4.0, 5.0, 6.0]]
    single = result(sample_data=((1.0, 2.0), ()))
    assert process_groups(single) == [[1.0, 2.0]]


def test_problem_size_is_part_of_the_key() -> None:
    small = result(problem_size={"n": 64})
    large = result(problem_size={"n": 128})
    assert case_key(small) != case_key(large)
    assert case_key(result(problem_size={"n": 64, "m": 2})) == \
        case_key(result(problem_size={"m": 2, "n": 64}))  # key order does not matter


def test_two_sweep_runs_match_points_by_shape_and_label_them() -> None:
    from dataclasses import replace

    rng = np.random.default_rng(5)

    def point(n: int, median: float) -> CaseResult:
        return replace(result("mm", problem_size={"m": n, "k": n, "n": n},
                              sample_data=samples(rng, median)), point=f"m={n},k={n},n={n}")

    baseline = [point(8, 1.0), point(16, 2.0), point(32, 4.0)]
    candidate = [point(32, 8.0), point(8, 1.0), point(16, 2.0), point(64, 9.0)]
    cases = {c.label: c for c in compare_results(baseline, candidate)}
    assert set(cases) == {"mm[cpu,fp32,m=8,k=8,n=8]", "mm[cpu,fp32,m=16,k=16,n=16]",
                          "mm[cpu,fp32,m=32,k=32,n=32]", "mm[cpu,fp32,m=64,k=64,n=64]"}
    assert cases["mm[cpu,fp32,m=32,k=32,n=32]"].verdict == "regressed"
    assert cases["mm[cpu,fp32,m=8,k=8,n=8]"].verdict == "unchanged"
    assert cases["mm[cpu,fp32,m=64,k=64,n=64]"].verdict == "new"
    assert case_dict(cases["mm[cpu,fp32,m=16,k=16,n=16]"])["label"] == \
        "mm[cpu,fp32,m=16,k=16,n=16]"


def test_two_sizes_of_one_kernel_are_two_cases() -> None:
    rng = np.random.default_rng(11)
    baseline = [result(problem_size={"n": 64}, sample_data=samples(rng, 1.0)),
                result(problem_size={"n": 128}, sample_data=samples(rng, 4.0))]
    candidate = [result(problem_size={"n": 64}, sample_data=samples(rng, 1.0)),
                 result(problem_size={"n": 128}, sample_data=samples(rng, 4.0 * 1.3))]
    cases = {c.key: c for c in compare_results(baseline, candidate)}
    assert len(cases) == 2
    small = cases[case_key(baseline[0])]
    large = cases[case_key(baseline[1])]
    assert small.verdict == "unchanged"
    assert large.verdict == "regressed"
    assert large.ratio == pytest.approx(1.3, rel=0.05)
    # Each side was compared with its own size, not with the other one's.
    assert small.ratio == pytest.approx(1.0, rel=0.05)


# --- latency verdicts ---------------------------------------------------------------------


def test_thirty_percent_slowdown_over_five_processes_is_a_regression() -> None:
    rng = np.random.default_rng(1234)
    baseline = [result(sample_data=samples(rng, 2.0))]
    candidate = [result(sample_data=samples(rng, 2.0 * 1.3))]
    case = only(compare_results(baseline, candidate))
    assert case.verdict == "regressed"
    assert case.ratio == pytest.approx(1.3, rel=0.03)
    assert case.ci_low is not None and case.ci_high is not None
    assert 1.0 < case.ci_low <= case.ratio <= case.ci_high
    assert case.processes == (PROCESSES, PROCESSES)
    assert case.method == "welch-log-process-medians"
    assert case.q_value is not None and case.q_value < 0.05
    assert case.baseline_p50_ms == pytest.approx(2.0, rel=0.05)
    assert case.candidate_p50_ms == pytest.approx(2.6, rel=0.05)
    assert regressions_found([case])


def test_a_few_slow_processes_are_inconclusive_with_a_note_that_says_so() -> None:
    # Process medians of an empty kernel measured here (see test_stats_compare): the same code,
    # the candidate's ten processes with four in a slow layout.
    base = [27.2, 26.9, 25.8, 25.9, 26.7, 26.9, 25.9, 27.4, 26.6, 27.3]
    cand = [40.2, 40.2, 26.5, 35.8, 36.6, 25.8, 27.4, 27.9, 26.2, 27.7]
    case = only(compare_results([result(sample_data=(tuple(base), (1,) * 10))],
                                [result(sample_data=(tuple(cand), (1,) * 10))]))
    assert case.verdict == "inconclusive"
    assert case.ratio == pytest.approx(1.148, abs=0.001)  # trimmed means (Yuen's test)
    assert case.method == "yuen-trimmed-log-process-medians"
    assert case.note is not None and "typical process 1.05x" in case.note
    assert "--ab" in case.note
    assert not regressions_found([case])


def test_thirty_percent_speedup_is_an_improvement() -> None:
    rng = np.random.default_rng(99)
    baseline = [result(sample_data=samples(rng, 2.0))]
    candidate = [result(sample_data=samples(rng, 2.0 / 1.3))]
    case = only(compare_results(baseline, candidate))
    assert case.verdict == "improved"
    assert case.ci_high is not None and case.ci_high < 1.0
    assert not regressions_found([case])


def test_identical_samples_are_unchanged() -> None:
    rng = np.random.default_rng(7)
    data = samples(rng, 1.5)
    case = only(compare_results([result(sample_data=data)], [result(sample_data=data)]))
    assert case.verdict == "unchanged"
    assert case.ratio == pytest.approx(1.0)
    assert case.ci_low is not None and case.ci_low <= 1.0 <= case.ci_high
    assert not regressions_found([case])


def test_same_distribution_is_unchanged() -> None:
    rng = np.random.default_rng(8)
    case = only(compare_results([result(sample_data=samples(rng, 1.5))],
                                [result(sample_data=samples(rng, 1.5))]))
    assert case.verdict == "unchanged"
    assert case.ratio == pytest.approx(1.0, abs=0.05)


def test_zero_variance_on_both_sides_is_decided_not_crashed() -> None:
    """Exact fake-timer samples: every process median identical within each side."""
    counts = (5, 5, 5)
    base = result(sample_data=((1.0,) * 15, counts))
    slow = result(sample_data=((1.5,) * 15, counts))
    regressed = only(compare_results([base], [slow]))
    assert regressed.verdict == "regressed"
    assert regressed.ratio == pytest.approx(1.5)
    assert (regressed.ci_low, regressed.ci_high) == pytest.approx((1.5, 1.5))
    same = only(compare_results([base], [result(sample_data=((1.0,) * 15, counts))]))
    assert same.verdict == "unchanged"
    assert same.ratio == pytest.approx(1.0)


# --- unpaired and status verdicts ---------------------------------------------------------


def test_new_and_missing_cases() -> None:
    rng = np.random.default_rng(3)
    baseline = [result("kept", sample_data=samples(rng, 1.0)),
                result("dropped", sample_data=samples(rng, 1.0))]
    candidate = [result("kept", sample_data=samples(rng, 1.0)),
                 result("added", sample_data=samples(rng, 2.0))]
    cases = {c.kernel_name: c for c in compare_results(baseline, candidate)}
    assert set(cases) == {"kept", "dropped", "added"}
    assert cases["added"].verdict == "new"
    assert cases["added"].candidate_p50_ms == pytest.approx(2.0, rel=0.1)
    assert cases["added"].baseline_p50_ms is None
    assert cases["dropped"].verdict == "missing"
    assert cases["dropped"].baseline_p50_ms == pytest.approx(1.0, rel=0.1)
    assert cases["dropped"].candidate_p50_ms is None
    # the side that ran says how many processes it ran (0 / 0 read as "never ran")
    assert cases["added"].processes == (0, PROCESSES)
    assert cases["dropped"].processes == (PROCESSES, 0)
    assert cases["kept"].verdict == "unchanged"
    counts = tally(list(cases.values()))
    assert counts["new"] == 1 and counts["missing"] == 1 and counts["unchanged"] == 1
    assert not regressions_found(list(cases.values()))


def test_every_case_of_a_kernel_the_candidate_made_invalid_regressed() -> None:
    # An invalid kernel has one record (backend and precision n/a): its baseline cases must
    # not become "missing", which --fail-on-regression lets pass.
    rng = np.random.default_rng(4)
    baseline = [result("broken", precision=p, sample_data=samples(rng, 1.0))
                for p in ("fp32", "fp64")]
    baseline.append(result("other", sample_data=samples(rng, 1.0)))
    candidate = [result("broken", status="invalid", reason="kernels/broken.py:3: syntax error",
                        backend="n/a", precision="n/a"),
                 result("other", sample_data=samples(rng, 1.0))]
    cases = compare_results(baseline, candidate)
    broken = [c for c in cases if c.kernel_name == "broken"]
    assert [(c.precision, c.verdict) for c in broken] == [("fp32", "regressed"),
                                                          ("fp64", "regressed")]
    assert all("invalid: kernels/broken.py:3: syntax error" in (c.note or "") for c in broken)
    assert regressions_found(cases)
    assert tally(cases)["missing"] == 0


def test_a_kernel_without_precisions_that_stops_running_is_a_regression() -> None:
    # Its case is named after its output's precision; a failed run has no output and stays
    # "native": it is still the same case, not one missing and one new.
    rng = np.random.default_rng(8)
    baseline = [result("seed", precision="fp64", sample_data=samples(rng, 1.0)),
                result("kept", precision="fp64", sample_data=samples(rng, 1.0))]
    candidate = [result("seed", precision="native", status="failed",
                        reason="ValueError: boom"),
                 result("kept", precision="fp64", sample_data=samples(rng, 1.0))]
    cases = {c.kernel_name: c for c in compare_results(baseline, candidate)}
    assert (cases["seed"].verdict, cases["seed"].precision) == ("regressed", "fp64")
    assert "no longer runs: failed: ValueError: boom" in (cases["seed"].note or "")
    assert len(cases) == 2 and regressions_found(list(cases.values()))
    # The other way round: the baseline failed, the candidate runs: one new case.
    back = compare_results(candidate, baseline)
    assert [(c.kernel_name, c.verdict) for c in back] == [("kept", "unchanged"),
                                                           ("seed", "new")]


def test_a_case_that_fails_in_the_candidate_is_a_regression_with_a_note() -> None:
    rng = np.random.default_rng(4)
    baseline = [result(sample_data=samples(rng, 1.0))]
    candidate = [result(status="failed", reason="ValueError: bad input shape 42")]
    case = only(compare_results(baseline, candidate))
    assert case.verdict == "regressed"
    assert case.note is not None
    assert "no longer runs" in case.note
    assert "failed" in case.note and "bad input shape 42" in case.note
    assert regressions_found([case])
    # the baseline's figure stays beside the verdict (regressions.md showed "n/a")
    assert case.baseline_p50_ms == pytest.approx(np.median(baseline[0].samples_ms))
    assert case.candidate_p50_ms is None


def test_a_case_that_times_out_in_the_candidate_is_a_regression() -> None:
    rng = np.random.default_rng(5)
    case = only(compare_results([result(sample_data=samples(rng, 1.0))],
                                [result(status="timeout", reason="timed out after 5 s")]))
    assert case.verdict == "regressed"
    assert "timeout" in (case.note or "")


def test_baseline_skipped_and_candidate_ok_is_new() -> None:
    rng = np.random.default_rng(6)
    baseline = [result(status="skipped", reason="no CUDA device")]
    candidate = [result(sample_data=samples(rng, 1.0))]
    case = only(compare_results(baseline, candidate))
    assert case.verdict == "new"
    assert "baseline did not run" in (case.note or "")
    assert case.candidate_p50_ms == pytest.approx(1.0, rel=0.1)
    assert not regressions_found([case])


def test_skipped_on_both_sides_is_excluded_and_not_counted() -> None:
    rng = np.random.default_rng(7)
    baseline = [result("gemm", sample_data=samples(rng, 1.0)),
                result("gemm", backend="cuda", status="skipped", reason="no CUDA device")]
    candidate = [result("gemm", sample_data=samples(rng, 1.0)),
                 result("gemm", backend="cuda", status="skipped", reason="no CUDA device")]
    skipped_key = case_key(baseline[1])
    assert skipped_on_both_sides(baseline, candidate) == [skipped_key]
    cases = compare_results(baseline, candidate)
    assert [c.key for c in cases] == [case_key(baseline[0])]
    counts = tally(cases)
    assert sum(counts.values()) == 1
    assert counts["inconclusive"] == 0 and counts["new"] == 0 and counts["missing"] == 0


def test_skipped_only_on_one_side_is_not_excluded() -> None:
    rng = np.random.default_rng(8)
    baseline = [result(status="skipped", reason="no CUDA device")]
    candidate = [result(sample_data=samples(rng, 1.0))]
    assert skipped_on_both_sides(baseline, candidate) == []
    assert skipped_on_both_sides(candidate, baseline) == []


# --- thresholds ---------------------------------------------------------------------------


def test_per_kernel_threshold_overrides_the_global_one() -> None:
    rng = np.random.default_rng(21)
    baseline = [result("strict", sample_data=samples(rng, 1.0)),
                result("lenient", sample_data=samples(rng, 1.0))]
    candidate = [result("strict", sample_data=samples(rng, 1.3)),
                 result("lenient", sample_data=samples(rng, 1.3))]
    thresholds = Thresholds(latency=0.10, per_kernel={"lenient": {"latency": 0.5}})
    assert thresholds.for_kernel("lenient") == (0.5, thresholds.accuracy_drift)
    assert thresholds.for_kernel("strict") == (0.10, thresholds.accuracy_drift)
    cases = {c.kernel_name: c for c in compare_results(baseline, candidate, thresholds)}
    assert cases["strict"].verdict == "regressed"
    assert cases["strict"].threshold == pytest.approx(0.10)
    assert cases["lenient"].threshold == pytest.approx(0.5)
    assert cases["lenient"].ratio == pytest.approx(1.3, rel=0.05)
    assert cases["lenient"].verdict not in ("regressed", "improved")


def test_per_kernel_threshold_can_be_stricter_than_the_global_one() -> None:
    rng = np.random.default_rng(22)
    baseline = [result("tight", sample_data=samples(rng, 1.0, between=0.005, within=0.002))]
    candidate = [result("tight", sample_data=samples(rng, 1.06, between=0.005, within=0.002))]
    loose = only(compare_results(baseline, candidate, Thresholds(latency=0.10)))
    assert loose.verdict != "regressed"
    tight = only(compare_results(baseline, candidate,
                                 Thresholds(latency=0.10, per_kernel={"tight": {"latency": 0.02}})))
    assert tight.verdict == "regressed"
    assert tight.threshold == pytest.approx(0.02)


# --- accuracy drift -----------------------------------------------------------------------


def drift_pair(before: Mapping[str, Any], after: Mapping[str, Any],
               thresholds: Thresholds | None = None) -> Any:
    rng = np.random.default_rng(31)
    data = samples(rng, 1.0)
    return only(compare_results([result(sample_data=data, accuracy=before)],
                                [result(sample_data=data, accuracy=after)], thresholds))


def test_relative_error_drift_beyond_1e3_is_flagged() -> None:
    case = drift_pair({"relative_error": 1e-4, "passed": True},
                      {"relative_error": 1.6e-3, "passed": True})
    assert case.verdict == "unchanged"  # latency is identical: only accuracy moved
    drift = case.accuracy_drift
    assert drift is not None
    assert drift["metric"] == "relative_error"
    assert drift["delta"] == pytest.approx(1.5e-3)
    assert drift["flagged"] is True
    assert regressions_found([case])


def test_relative_error_drift_within_1e3_is_not_flagged() -> None:
    case = drift_pair({"relative_error": 1e-4, "passed": True},
                      {"relative_error": 6e-4, "passed": True})
    assert case.accuracy_drift is not None
    assert case.accuracy_drift["flagged"] is False
    assert not regressions_found([case])


def test_per_kernel_accuracy_drift_threshold() -> None:
    case = drift_pair({"relative_error": 1e-4, "passed": True},
                      {"relative_error": 6e-4, "passed": True},
                      Thresholds(per_kernel={"gemm": {"accuracy_drift": 1e-4}}))
    assert case.accuracy_drift is not None
    assert case.accuracy_drift["threshold"] == pytest.approx(1e-4)
    assert case.accuracy_drift["flagged"] is True


def test_accuracy_check_that_starts_failing_is_flagged() -> None:
    with_errors = drift_pair({"relative_error": 1e-4, "passed": True},
                             {"relative_error": 2e-4, "passed": False})
    assert with_errors.accuracy_drift is not None
    assert with_errors.accuracy_drift["flagged"] is True
    without_errors = drift_pair({"passed": True}, {"passed": False})
    assert without_errors.accuracy_drift == {"metric": "accuracy.passed", "flagged": True}
    assert regressions_found([without_errors])


def test_no_accuracy_on_either_side_gives_no_drift() -> None:
    case = drift_pair({}, {})
    assert case.accuracy_drift is None


# --- Benjamini-Hochberg -------------------------------------------------------------------


def test_q_values_are_at_least_the_p_values_across_many_cases() -> None:
    rng = np.random.default_rng(2024)
    factors = [1.0, 1.0, 1.02, 1.05, 1.1, 1.3, 0.95, 1.0, 1.5, 1.01, 0.9, 1.2]
    baseline, candidate = [], []
    for index, factor in enumerate(factors):
        name = f"k{index:02d}"
        baseline.append(result(name, sample_data=samples(rng, 1.0, between=0.05)))
        candidate.append(result(name, sample_data=samples(rng, factor, between=0.05)))
    cases = compare_results(baseline, candidate)
    assert len(cases) == len(factors)
    pairs = [(c.p_value, c.q_value) for c in cases]
    checked = [(p, q) for p, q in pairs if p is not None and q is not None]
    assert len(checked) == len(cases)
    for p, q in checked:
        assert p - 1e-15 <= q <= 1.0
    # With several cases the adjustment really changes something.
    assert any(q > p * 1.5 for p, q in checked)
    # BH keeps the order of the p-values.
    ranked = sorted(checked)
    assert [q for _, q in ranked] == sorted(q for _, q in ranked)
    # The 50% slowdown survives the correction.
    assert {c.kernel_name: c.verdict for c in cases}["k08"] == "regressed"


def test_results_are_sorted_by_key_and_counted() -> None:
    rng = np.random.default_rng(41)
    names = ["zeta", "alpha", "mid"]
    baseline = [result(n, sample_data=samples(rng, 1.0)) for n in names]
    candidate = [result(n, sample_data=samples(rng, 1.0)) for n in names]
    cases = compare_results(baseline, candidate)
    assert [c.kernel_name for c in cases] == sorted(names)
    assert tally(cases)["unchanged"] == 3


def test_invalid_records_are_ignored() -> None:
    rng = np.random.default_rng(42)
    baseline = [result(sample_data=samples(rng, 1.0))]
    candidate = [result(sample_data=samples(rng, 1.0)),
                 result("broken", backend="n/a", precision="n/a", status="invalid",
                        reason="syntax error")]
    cases = compare_results(baseline, candidate)
    assert [c.kernel_name for c in cases] == ["gemm"]


def test_two_machines_or_a_changed_one_make_the_whole_comparison_doubtful() -> None:
    same = comparison_warnings({"fingerprint": "a"}, {"fingerprint": "a"}, None)
    assert same == []
    assert comparison_warnings({}, {"fingerprint": "b"}, None) == []  # unknown: no claim
    two = comparison_warnings({"fingerprint": "a"}, {"fingerprint": "b"}, None)
    assert len(two) == 1 and "different machines (a vs b)" in two[0]
    changed = comparison_warnings({"fingerprint": "a"}, {"fingerprint": "a"}, "2x slower")
    assert len(changed) == 1 and changed[0].startswith("the machine changed: 2x slower;")


def gpu_mode(mode: str, requested: str | None = None) -> dict[str, Any]:
    return {"requested": requested or mode, "primary": requested or mode, "modes": {
        requested or mode: {"mode": mode, "requested_mode": requested, "samples_us": [1.0]}}}


def test_figures_of_different_gpu_modes_are_never_compared() -> None:
    rng = np.random.default_rng(5)
    base = replace(result(backend="cuda", sample_data=samples(rng, 0.016)),
                   gpu_timing=gpu_mode("sync"))
    cand = replace(result(backend="cuda", sample_data=samples(rng, 0.003)),
                   gpu_timing=gpu_mode("cold"))
    case = only(compare_results([base], [cand]))
    assert case.verdict == "inconclusive"
    assert case.note == ("not compared: timed in different GPU modes (baseline sync, candidate "
                         "cold); run both with the same --gpu-timing")
    assert case.ratio is None and not regressions_found([case])
    in_api = only(compare_results([base], [cand], entry_point="kernbench.bench"))
    assert str(in_api.note).endswith("run both with the same gpu_timing=")


def test_a_side_whose_processes_measured_in_different_modes_is_never_compared() -> None:
    rng = np.random.default_rng(7)
    data = samples(rng, 0.005)
    mixed = replace(result(backend="cuda", sample_data=data), gpu_timing=gpu_mode("mixed"))
    for base, cand, sides in ((mixed, mixed, "the baseline and the candidate's"),
                              (replace(mixed, gpu_timing=gpu_mode("hot")), mixed,
                               "the candidate's")):
        case = only(compare_results([base], [cand]))
        assert case.verdict == "inconclusive" and case.ratio is None
        assert case.note is not None
        assert case.note.startswith(f"not compared: {sides} processes measured in different")


def test_a_fallback_counts_as_the_mode_it_measured() -> None:
    rng = np.random.default_rng(6)
    data = samples(rng, 0.005)
    hot = replace(result(backend="cuda", sample_data=data), gpu_timing=gpu_mode("hot"))
    graph_fell_back = replace(result(backend="cuda", sample_data=data),
                              gpu_timing=gpu_mode("hot", requested="graph"))
    case = only(compare_results([hot], [graph_fell_back]))
    assert case.verdict == "unchanged" and case.gpu_mode == "hot"
    same = replace(hot, gpu_timing=gpu_mode("hot"))
    assert only(compare_results([hot], [same])).verdict == "unchanged"


# --- a change beyond the threshold that the test could not confirm ------------------------


def test_a_paired_change_too_few_rounds_can_confirm_says_how_many_it_needs() -> None:
    # 6 rounds, every one of them 10x slower: the sign test's p is 0.031 at best, and among
    # 4 compared cases Benjamini-Hochberg cannot bring it under 0.05. The verdict stays
    # inconclusive, and the note says why instead of leaving a 10x change unexplained.
    rng = np.random.default_rng(7)
    base = [result(k, sample_data=samples(rng, 1.0, processes=6)) for k in "abcd"]
    cand = [result(k, sample_data=samples(rng, 10.0 if k == "a" else 1.0, processes=6))
            for k in "abcd"]
    slow = next(c for c in compare_results(base, cand, paired=True) if c.kernel_name == "a")
    assert slow.verdict == "inconclusive" and slow.ratio > 9
    assert slow.note is not None
    assert ">= 0.05 after Benjamini-Hochberg over 4 compared cases" in slow.note
    # 2 * 0.5**8 * 4 = 0.031 < 0.05, while 7 rounds give 0.0625
    assert "6 rounds give a sign-test p of 0.031 at best: run --rounds 8 or more" in slow.note
    again = compare_results(base[:1], cand[:1], paired=True)  # alone, 6 rounds suffice
    assert only(again).verdict == "regressed" and only(again).note is None
