"""Key findings, recommendations and the regression digest, from hand-built documents."""

from __future__ import annotations

from typing import Any

from kernbench.reporting.digest import Change, regression_digest
from kernbench.reporting.findings import Finding, group_findings, key_findings
from kernbench.reporting.recommendations import (
    NO_RECOMMENDATIONS,
    Recommendation,
    noise_advice,
    recommendations,
    tail_advice,
)
from support.records import doc, rec


def kinds(findings: list[Finding]) -> list[tuple[str, str]]:
    return [(f.kind, f.case_id) for f in findings]


# -- findings ------------------------------------------------------------------------------


def test_fastest_and_slowest_are_the_ok_cases_at_the_ends() -> None:
    found = key_findings(doc(rec("mid", p50=5.0), rec("fast", p50=1.0, ci=(0.995, 1.005)),
                             rec("slow", p50=9.0),
                             rec("crash", p50=None, status="failed", reason="boom")))
    assert found[:2] == [
        Finding("fastest", "fast[cpu,fp32]",
                "fast[cpu,fp32]: 1 ms p50 (95% CI 0.995 – 1.005 ms)", 1.0),
        Finding("slowest", "slow[cpu,fp32]",
                "slow[cpu,fp32]: 9 ms p50 (95% CI 8.91 – 9.09 ms)", 9.0)]
    assert Finding("failure", "crash[cpu,fp32]", "crash[cpu,fp32] failed: boom") in found


def test_a_single_ok_case_is_only_the_fastest() -> None:
    assert kinds(key_findings(doc(rec("only")))) == [("fastest", "only[cpu,fp32]")]


def test_unstable_when_the_median_interval_is_wider_than_ten_percent() -> None:
    noisy = rec("noisy", p50=10.0, ci=(8.0, 12.0),
                warnings=[{"code": "high_spread", "value": 0.5, "message": "IQR is 50%"}])
    borderline = rec("steady", p50=10.0, ci=(9.55, 10.45))  # 9% wide: precise enough
    found = [f for f in key_findings(doc(noisy, borderline)) if f.kind == "unstable"]
    assert found == [Finding("unstable", "noisy[cpu,fp32]",
                             "noisy[cpu,fp32]: the 95% CI of the median, 8 – 12 ms, spans 40% "
                             "of its p50 10 ms; IQR is 50% of the median", 0.4)]
    advice = recommendations(doc(noisy, borderline, iterations=15, processes=3))
    assert [r.kind for r in advice] == ["noise"]
    assert advice[0].case_ids == ("noisy[cpu,fp32]",)
    assert "--iters, now 15; --processes, now 3" in advice[0].message
    assert "pin the run to idle cores" in advice[0].message
    assert "quiet machine" in advice[0].message


def test_high_spread_without_an_interval_is_unstable() -> None:
    few = rec("few", p50=2.0, warnings=[{"code": "high_spread", "value": 0.8}])
    few["timing"]["latency_ms_p50_ci95"] = None
    found = [f for f in key_findings(doc(few)) if f.kind == "unstable"]
    assert found == [Finding("unstable", "few[cpu,fp32]", "few[cpu,fp32]: too few samples for "
                             "a CI of the median; IQR is 80% of the median", 0.8)]


def test_accuracy_failure_and_what_to_do_about_it() -> None:
    accuracy = {"passed": False, "relative_error": 0.5, "tolerances": {"relative_error": 0.001},
                "exceeded": ["relative_error"], "nan_count": 0}
    bad = rec("drifty", "fp16", p50=1.0, status="failed", accuracy=accuracy,
              reason="accuracy check failed: relative_error 0.5 > 0.001")
    found = key_findings(doc(bad))
    assert Finding("accuracy_failure", "drifty[cpu,fp16]",
                   "drifty[cpu,fp16]: relative_error 0.5 > 0.001", 500.0) in found
    assert "failure" not in [f.kind for f in found], "an accuracy failure is not listed twice"
    [advice] = [r for r in recommendations(doc(bad)) if r.kind == "accuracy"]
    assert advice.case_ids == ("drifty[cpu,fp16]",)
    assert "500x the tolerance, more than rounding explains" in advice.message
    assert "loosen bench.yaml tolerances.fp16.relative_error (now 0.001)" in advice.message
    assert advice.message.endswith("otherwise run it at fp32.")


def test_a_small_accuracy_miss_is_not_called_a_bug() -> None:
    accuracy = {"passed": False, "relative_error": 0.03, "tolerances": {"relative_error": 0.02},
                "exceeded": ["relative_error"]}
    [advice] = [r for r in recommendations(doc(rec("k", "bf16", accuracy=accuracy)))
                if r.kind == "accuracy"]
    assert "rounding" not in advice.message
    assert "tolerances.bf16.relative_error (now 0.02)" in advice.message


def test_narrow_precision_slower_than_fp32_and_bigger() -> None:
    size = {"n": 4}
    records = [rec("norm", "fp32", 10.0, size=size, memory={"allocated_mb": 100.0}),
               rec("norm", "bf16", 17.0, size=size, memory={"allocated_mb": 130.0}),
               rec("norm", "fp16", 10.05, size=size, memory={"allocated_mb": 50.0}),  # CIs overlap
               rec("norm", "bf16", 99.0, size={"n": 8})]  # no fp32 of that size
    found = key_findings(doc(*records))
    assert [f for f in found if f.kind in ("narrow_slower", "memory_growth")] == [
        Finding("narrow_slower", "norm[cpu,bf16]", "norm[cpu,bf16] is 1.70x slower than "
                "norm[cpu,fp32] (17 vs 10 ms p50)", 1.7),
        Finding("memory_growth", "norm[cpu,bf16]", "norm[cpu,bf16] grew 130 MB, 1.30x the "
                "100 MB of norm[cpu,fp32], though its elements are half the size or less", 1.3)]
    advice = {r.kind: r for r in recommendations(doc(*records))}
    assert advice["narrow_slower"].case_ids == ("norm[cpu,bf16]",)
    assert "Use fp32 for norm on cpu" in advice["narrow_slower"].message
    assert advice["memory_growth"].case_ids == ("norm[cpu,bf16]",)


def test_heavy_tail_is_an_anomaly() -> None:
    found = key_findings(doc(rec("spiky", p50=2.0, p99=7.0), rec("fine", p50=2.0, p99=5.9)))
    assert [f for f in found if f.kind == "tail_latency"] == [
        Finding("tail_latency", "spiky[cpu,fp32]", "spiky[cpu,fp32]: p99 7 ms is 3.5x its "
                "p50 2 ms", 3.5)]
    assert [r.case_ids for r in recommendations(doc(rec("spiky", p50=2.0, p99=7.0)))] == [
        ("spiky[cpu,fp32]",)]


def test_groups_keep_first_seen_order() -> None:
    found = key_findings(doc(rec("a", p50=1.0), rec("b", p50=2.0, p99=9.0),
                             rec("c", p50=None, status="timeout", reason="timed out")))
    assert [(title, [f.case_id for f in items]) for title, items in group_findings(found)] == [
        ("Fastest", ["a[cpu,fp32]"]), ("Slowest", ["b[cpu,fp32]"]),
        ("Anomalies", ["c[cpu,fp32]", "b[cpu,fp32]"])]


def test_failed_cases_without_timing_do_not_break_anything() -> None:
    empty_timing = {"latency_ms_p50": None, "latency_ms_p99": None, "latency_ms_p50_ci95": None}
    records = [rec("broken", p50=None, status="failed", reason="ValueError: x\nmore lines"),
               rec("stuck", p50=None, status="timeout", reason="timed out after 4 s"),
               {"case_id": "bad", "kernel_name": "bad", "status": "invalid", "timing": None,
                "accuracy": None, "memory": None, "work": None, "reason": None},
               rec("gone", p50=None, status="skipped", timing=empty_timing)]
    found = key_findings(doc(*records, timeout_s=4.0))
    assert found == [
        Finding("failure", "broken[cpu,fp32]", "broken[cpu,fp32] failed: ValueError: x"),
        Finding("failure", "stuck[cpu,fp32]", "stuck[cpu,fp32] timed out: timed out after 4 s"),
        Finding("failure", "bad", "bad is invalid: no reason recorded")]
    advice = recommendations(doc(*records, timeout_s=4.0))
    assert [(r.kind, r.case_ids) for r in advice] == [
        ("failure", ("broken[cpu,fp32]",)), ("timeout", ("stuck[cpu,fp32]",)),
        ("invalid", ("bad",))]
    assert "worker.traceback of kernels/broken.json" in advice[0].message
    assert "raise the kernel's bench.yaml timeout_s, or --timeout where it has none (each " \
        "case's reason gives the limit it ran under)" in advice[1].message


def test_a_backend_slower_on_every_shape_is_named() -> None:
    records = [rec("conv", size={"n": 1}, p50=10.0), rec("conv", size={"n": 2}, p50=40.0),
               rec("conv", size={"n": 1}, p50=1.0, backend="cuda"),
               rec("conv", size={"n": 2}, p50=4.0, backend="cuda"),
               rec("conv", "fp16", size={"n": 2}, p50=2.0, backend="cuda")]  # cuda only
    [advice] = [r for r in recommendations(doc(*records)) if r.kind == "backend_slower"]
    assert advice == Recommendation(
        "backend_slower", ("conv[cpu,fp32]",),
        "conv is slower on cpu than on cuda for every shape and precision run on both (2; "
        "geometric mean 10.00x). Prefer cuda for conv.")


def test_a_backend_faster_on_one_shape_is_not_called_slower() -> None:
    records = [rec("conv", size={"n": 1}, p50=10.0), rec("conv", size={"n": 2}, p50=1.0),
               rec("conv", size={"n": 1}, p50=1.0, backend="cuda"),
               rec("conv", size={"n": 2}, p50=4.0, backend="cuda")]
    assert [r for r in recommendations(doc(*records)) if r.kind == "backend_slower"] == []


def test_low_percent_of_peak_by_bound() -> None:
    def work(bound: str | None, compute: float | None, bandwidth: float | None) -> dict[str, Any]:
        return {"bound": bound, "pct_peak_compute": compute, "pct_peak_bandwidth": bandwidth}

    records = [rec("gemm", p50=1.0, work=work("compute", 4.4, 0.3)),
               rec("norm", p50=2.0, work=work("memory", 60.0, 3.0)),
               rec("fine", p50=3.0, work=work("memory", 1.0, 50.0)),
               rec("half", p50=4.0, work=work(None, None, 1.5)),
               rec("unknown", p50=5.0, work=work(None, None, None))]
    advice = {r.kind: r for r in recommendations(doc(*records))}
    assert advice["low_peak_compute"].case_ids == ("gemm[cpu,fp32]",)
    assert "gemm[cpu,fp32] 4.4%" in advice["low_peak_compute"].message
    assert advice["low_peak_bandwidth"].case_ids == ("norm[cpu,fp32]", "half[cpu,fp32]")
    assert "fuse passes" in advice["low_peak_bandwidth"].message


def test_nothing_to_recommend() -> None:
    clean = doc(rec("a", p50=1.0), rec("b", p50=2.0))
    assert recommendations(clean) == []
    assert recommendations(clean, {"cases": [], "baseline_note": None}) == []
    assert NO_RECOMMENDATIONS.startswith("Nothing to recommend")
    assert recommendations(doc()) == [] and key_findings(doc()) == []


# -- comparison ----------------------------------------------------------------------------


def case(label: str, verdict: str, ratio: float | None, **extra: Any) -> dict[str, Any]:
    return {"key": label, "label": label, "verdict": verdict, "ratio": ratio,
            "ci_low": None if ratio is None else ratio * 0.9,
            "ci_high": None if ratio is None else ratio * 1.1, "q_value": 0.01,
            "baseline_p50_ms": 1.0, "candidate_p50_ms": ratio, "accuracy_drift": None, **extra}


COMPARISON: dict[str, Any] = {
    "verdict": "Regression: 1 regressed", "regression": True, "baseline_note": None,
    "baseline": {"commit": "abc123"}, "settings": {"threshold": 0.1, "alpha": 0.05},
    "counts": {"regressed": 1, "improved": 1, "unchanged": 1, "inconclusive": 2, "new": 0,
               "missing": 0},
    "cases": [case("a[cpu,fp32]", "regressed", 1.5), case("b[cpu,fp32]", "improved", 0.25),
              case("c[cpu,fp32]", "unchanged", 1.01),
              case("d[cpu,fp32]", "inconclusive", 1.3),
              case("e[cpu,fp32]", "inconclusive", None)],
}


def test_regression_digest_counts_and_orders_significant_changes() -> None:
    digest = regression_digest(COMPARISON)
    assert digest is not None
    assert digest.verdict == "Regression: 1 regressed" and digest.regression and digest.compared
    assert digest.counts == (("regressed", 1), ("improved", 1), ("unchanged", 1),
                             ("inconclusive", 2), ("new", 0), ("missing", 0))
    assert [c.case_id for c in digest.changes] == ["b[cpu,fp32]", "a[cpu,fp32]"]  # 4x before 1.5x
    assert digest.changes[1] == Change("a[cpu,fp32]", "regressed", 1.5, 1.5 * 0.9, 1.5 * 1.1,
                                       0.01, 1.0, 1.5)
    assert (digest.threshold, digest.alpha, digest.baseline_commit) == (0.1, 0.05, "abc123")
    assert regression_digest(None) is None


def test_regression_digest_without_a_baseline() -> None:
    digest = regression_digest({"verdict": "No comparison: no baseline", "regression": False,
                                "baseline_note": "no baseline", "cases": []})
    assert digest is not None and not digest.compared and digest.changes == ()


def test_accuracy_drift_counts_as_a_significant_change() -> None:
    drift = {"metric": "relative_error", "baseline": 1e-6, "candidate": 5e-3, "flagged": True}
    digest = regression_digest({**COMPARISON, "cases": [
        case("x[cpu,fp32]", "unchanged", 1.0, accuracy_drift=drift)]})
    assert digest is not None
    assert [(c.case_id, c.accuracy_drift) for c in digest.changes] == [
        ("x[cpu,fp32]", "relative_error 1e-06 → 0.005")]


def test_comparison_recommendations() -> None:
    advice = recommendations(doc(rec("a")), COMPARISON)
    assert [(r.kind, r.case_ids) for r in advice] == [
        ("regression", ("a[cpu,fp32]",)), ("inconclusive", ("d[cpu,fp32]",))]
    assert "changes since abc123" in advice[0].message
    assert "--ab REF" in advice[1].message


def test_advice_names_the_knobs_of_the_runner_that_measured() -> None:
    """A pytest plugin's saved set is advised in the plugin's options, not kernbench run's."""
    run = noise_advice(("k",), {"iterations": 15, "processes": 1})[0].message
    assert "(--iters, now 15; --processes, now 1)" in run
    plugin = {"runner": "pytest", "iterations": 15, "warmup": 2}
    noisy = noise_advice(("k",), plugin)[0].message
    assert "--kernbench-iterations (or the marker's iterations=), now 15" in noisy
    assert "--iters" not in noisy and "the marker's processes= (with isolation='fork')" in noisy
    tails = tail_advice(("k",), plugin)[0].message
    assert "raise --kernbench-warmup (or the marker's warmup=), now 2." in tails


# -- caveats: what a figure may not mean -----------------------------------------------------


def test_a_case_measured_while_other_processes_kept_a_core_busy_is_a_caveat() -> None:
    # A torch kernel read 30-90x slow while a test suite loaded one of two cores, and a
    # single run's summary.md presented the figure as fine.
    busy = rec("busy", machine={"other_cpu_cores": 1.02, "steal_share": 0.0, "cpus": 2})
    quiet = rec("quiet", machine={"other_cpu_cores": 0.1, "steal_share": 0.0, "cpus": 2})
    stolen = rec("stolen", machine={"other_cpu_cores": 0.0, "steal_share": 0.2})
    failed = rec("failed", status="failed", machine={"other_cpu_cores": 1.5})
    found = [f for f in key_findings(doc(busy, quiet, stolen, failed)) if f.group == "Caveats"]
    assert kinds(found) == [("busy_machine", "busy[cpu,fp32]"),
                            ("busy_machine", "stolen[cpu,fp32]")]
    assert "other processes kept 1.0 of 2 CPUs busy" in found[0].message
    assert "the hypervisor stole 20% of the CPU time" in found[1].message


def test_a_case_whose_output_is_in_another_float_precision_is_a_caveat() -> None:
    def out(precision: str, output: str) -> dict[str, Any]:
        return rec("k", precision, output={"precision": output})

    found = key_findings(doc(out("fp16", "fp32"), out("bf16", "bf16"), out("fp8_e4m3", "bf16"),
                             out("fp32", "int32"), out("fp32", "fp64"), out("int8", "fp64"),
                             out("int8", "int8")))
    caveats = [f for f in found if f.kind == "output_precision"]
    assert kinds(caveats) == [("output_precision", "k[cpu,fp16]"),
                              ("output_precision", "k[cpu,fp32]"),
                              ("output_precision", "k[cpu,int8]")]
    assert caveats[0].message == ("k[cpu,fp16]: timed as fp16, but its output is fp32: check "
                                  "that the kernel computes in fp16")


def test_a_precision_parameter_never_read_is_the_first_caveat() -> None:
    """Its case's label is its output's, whatever precision was asked: said before a busy
    machine, and only for a case that ran."""
    busy = {"other_cpu_cores": 1.0, "steal_share": 0.0, "cpus": 2}
    unread = {"precision": "fp64", "precision_parameter": "unread"}
    found = key_findings(doc(rec("busy", "fp32", machine=busy),
                             rec("lazy", "fp64", output=unread),
                             rec("gone", "fp64", status="failed", output=unread),
                             rec("reads", "fp64", output={"precision": "fp64"})))
    caveats = [f for f in found if f.group == "Caveats"]
    assert kinds(caveats) == [("precision_unread", "lazy[cpu,fp64]"),
                              ("busy_machine", "busy[cpu,fp32]")]
    assert caveats[0].message == ("lazy[cpu,fp64]: the kernel declares a `precision` parameter "
                                  "but never reads it, so it ran once, at its own precision "
                                  "(fp64, its output's), whatever precision was asked")
    plain = key_findings(doc(rec("int", "native", output={"precision_parameter": "unread"})))
    assert [f.message for f in plain if f.kind == "precision_unread"] == [
        "int[cpu,native]: the kernel declares a `precision` parameter but never reads it, so "
        "it ran once, at its own precision (its output has no dtype to name it), whatever "
        "precision was asked"]


def test_a_label_the_output_contradicts_comes_before_a_busy_machine() -> None:
    busy = {"other_cpu_cores": 1.0, "steal_share": 0.0, "cpus": 2}
    records = [rec(f"busy{i}", "fp32", machine=busy) for i in range(3)]
    records.append(rec("half", "fp16", output={"precision": "fp32"}, machine=busy))
    caveats = [f for f in key_findings(doc(*records))
               if f.kind in ("busy_machine", "output_precision")]
    assert [f.kind for f in caveats] == ["output_precision"] + ["busy_machine"] * 4
