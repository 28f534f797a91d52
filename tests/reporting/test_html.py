"""index.html from the committed fixture run: content, escaping, self-containment, size."""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.html import render_html
from kernbench.reporting.markdown import fmt_num
from kernbench.reporting.svg import box_stats, nice_scale
from kernbench.reporting.views import speedup_baseline
from support.html_tables import table_rows
from support.reports import load_fixture


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(load_fixture())


def test_leaderboard_has_one_row_per_ok_case_with_document_p50(page: str) -> None:
    results = load_fixture().results
    ok = sorted((r for r in results if r["status"] == "ok"),
                key=lambda r: r["timing"]["latency_ms_p50"])
    rows = table_rows(page, "leaderboard-table")
    assert len(rows) == len(ok) == 7
    for row, record in zip(rows, ok, strict=True):
        case, p50 = row[1], row[6]
        assert case["text"] == record["case_id"]
        assert float(p50["data-sort"]) == record["timing"]["latency_ms_p50"]
        assert p50["text"] == fmt_num(record["timing"]["latency_ms_p50"])
    assert rows[0][1]["text"] == "softmax[cpu,bf16]"  # the fastest first, without any JS


def test_leaderboard_shows_na_with_reason_and_accuracy_and_warnings(page: str) -> None:
    rows = {row[1]["text"]: row for row in table_rows(page, "leaderboard-table")}
    assert rows["gemm[cpu,fp64]"][15]["text"] == "pass"
    warned = [r for r in load_fixture().results if r["status"] == "ok" and r["warnings"]]
    assert warned, "the fixture is meant to hold a case with a measurement warning"
    for record in warned:
        first_clause = record["warnings"][0]["message"].split(";")[0]
        assert first_clause in rows[record["case_id"]][16]["text"]
    softmax = rows["softmax[cpu,fp32]"]
    gbs = softmax[12]
    if gbs["text"] == "n/a":  # a kernel without byte counts: n/a with the reason on hover
        assert gbs["data-sort"] == "" and "no flop or byte counts" in gbs["title"]


def test_box_stats_exact_quartiles_whiskers_and_outliers() -> None:
    stats = box_stats([7, 1, 9, 3, 5, 2, 100, 4, 6, 8])
    assert stats is not None
    assert (stats.count, stats.minimum, stats.maximum) == (10, 1.0, 100.0)
    assert (stats.q1, stats.median, stats.q3) == (3.25, 5.5, 7.75)  # numpy linear percentiles
    assert (stats.whisker_low, stats.whisker_high) == (1.0, 9.0)  # within 1.5 IQR = 6.75
    assert stats.outliers == (100.0,) and stats.outlier_count == 1
    assert box_stats([]) is None and box_stats([None, float("nan")]) is None


def test_box_stats_draws_a_bounded_number_of_outliers_keeping_the_extremes() -> None:
    samples = [1.0] * 5000 + [float(v) for v in range(100, 600)]
    stats = box_stats(samples)
    assert stats is not None and stats.outlier_count == 500
    assert len(stats.outliers) == 40
    assert (stats.outliers[0], stats.outliers[-1]) == (100.0, 599.0)


def test_scales_pick_round_ticks() -> None:
    assert nice_scale(26, 47, 0, 100, log=True).ticks == (20, 30, 40, 50)
    assert nice_scale(1.2, 58, 0, 100, log=True).ticks == (1, 2, 5, 10, 20, 50, 100)
    linear = nice_scale(3, 47, 0, 100, zero=True)
    assert linear.ticks == (0, 10, 20, 30, 40, 50)
    assert (linear(0), linear(25), linear(50)) == (0, 50, 100)
    assert nice_scale(5, 5, 0, 10).ticks[0] <= 5 <= nice_scale(5, 5, 0, 10).ticks[-1]


def test_speedup_baseline_is_fp32_of_the_first_backend_else_the_first_case() -> None:
    cases = [{"backend": "cpu", "precision": "bf16"}, {"backend": "cuda", "precision": "fp32"},
             {"backend": "cpu", "precision": "fp32"}]
    assert speedup_baseline(cases) is cases[2]
    assert speedup_baseline(cases[:2]) is cases[0]


def test_page_has_charts_trends_regressions_and_failures(page: str) -> None:
    assert page.count("<svg") >= 10
    assert 'id="distributions"' in page and 'class="chart boxplot"' in page
    assert "speedup over baseline" in page and "GB/s" in page
    assert 'class="chart trend"' in page and "No history" not in page
    verdict = (load_fixture().comparison or {})["verdict"]
    assert 'id="regressions"' in page and verdict in page
    failures = {row[1]["text"]: row for row in table_rows(page, "failures-table")}
    assert "ValueError: bad input shape 42" in failures["broken[cpu,native]"][2]["text"]
    assert "timed out after 2 s" in failures["stuck[cpu,native]"][2]["text"]
    assert "signal SIGKILL" in failures["stuck[cpu,native]"][3]["text"]
    assert not any("[cuda," in case for case in failures)  # this machine has no GPU
    assert ("skipped: CUDA not available on this machine (5 cases of rmsnorm, softmax)"
            in page)
    assert "CUDA not available (not torch.cuda.is_available()) (5 cases)" in page


def _edited(edit: Callable[[dict[str, Any]], None], environment: Any = None) -> str:
    """The fixture page after `edit` changed a deep copy of its summary."""
    inputs = load_fixture()
    summary = copy.deepcopy(dict(inputs.summary))
    edit(summary)
    return render_html(ReportInputs(summary, environment or inputs.environment,
                                    inputs.comparison, inputs.history))


def test_skipped_cases_of_a_gpu_the_machine_has_stay_one_row_each() -> None:
    gpu = {"name": "NVIDIA H100 80GB HBM3", "vendor": "NVIDIA", "driver_version": "550"}
    environment = {**load_fixture().environment, "gpus": [gpu]}
    page = _edited(lambda summary: None, environment)
    failures = {row[1]["text"]: row for row in table_rows(page, "failures-table")}
    assert "CUDA not available" in failures["rmsnorm[cuda,fp32]"][2]["text"]
    assert "not available on this machine" not in page


def test_leaderboard_shows_key_columns_and_hides_the_details_behind_a_switch(page: str) -> None:
    head = page.split('id="leaderboard-table"')[1].split("</thead>")[0]
    shown = re.findall(r'<th scope="col" class="(?:num|text)(?: case)?"><button[^>]*>([^<]+)<',
                       head)
    hidden = re.findall(r'<th scope="col" class="(?:num|text) detail"><button[^>]*>([^<]+)<',
                        head)
    assert shown == ["#", "Case", "Problem size", "p50 ms", "95% CI ms", "% peak", "Warnings"]
    assert hidden == ["Kernel", "Backend", "Precision", "p90 ms", "p99 ms", "calls/s",
                      "GFLOP/s", "GB/s", "Peak MB", "Accuracy"]
    row = table_rows(page, "leaderboard-table")[0]
    assert [i for i, cell in enumerate(row) if "detail" in cell.get("class", "").split()] == \
        [2, 3, 4, 8, 9, 10, 11, 12, 14, 15]
    assert 'id="all-columns"' in page and "#all-columns:checked ~ .table-wrap .detail" in page


def _over_peak(summary: dict[str, Any]) -> None:
    for record in summary["results"]:
        if record["case_id"] == "gemm[cpu,fp32]":
            record["work"] = {"gflops_per_s": 270.0, "pct_peak_compute": 135.0,
                              "pct_peak_bandwidth": 20.0, "bound": "compute",
                              "peak_source": "measured attainable peak (numpy matmul)"}


def test_a_percentage_of_peak_above_100_is_flagged_not_shown_plainly() -> None:
    page = _edited(_over_peak)
    rows = {row[1]["text"]: row for row in table_rows(page, "leaderboard-table")}
    cell = rows["gemm[cpu,fp32]"][13]
    assert "over-peak" in cell["class"] and "check peak" in cell["text"]
    assert "work formula" in cell["title"] and "numpy matmul" in cell["title"]
    assert 'id="over-peak-note"' in page and "gemm[cpu,fp32]" in page.split(
        'id="over-peak-note"')[1].split("</p>")[0]
    assert "compute above 100% of the device&#39;s peak" in page  # the case's card
    plain = rows["gemm[cpu,fp64]"][13]
    assert "over-peak" not in plain.get("class", "") and 'id="over-peak-note"' not in \
        render_html(load_fixture())


def test_no_comparison_means_no_regressions_section() -> None:
    page = render_html(load_fixture(comparison=False))
    assert 'id="regressions"' not in page and 'href="#regressions"' not in page
    assert "No regression" not in page


def test_no_history_says_so_in_one_line() -> None:
    page = render_html(load_fixture(history=False))
    assert "No history: 0 recorded runs of this machine" in page
    assert 'class="chart trend"' not in page


def test_regressed_verdict_marks_the_current_run_in_its_trend() -> None:
    inputs = load_fixture()
    comparison = copy.deepcopy(dict(inputs.comparison or {}))
    for case in comparison["cases"]:
        if case["label"] == "gemm[cpu,fp32]":
            case["verdict"] = "regressed"
    page = render_html(ReportInputs(inputs.summary, inputs.environment, comparison,
                                    inputs.history))
    regressed = sum(case["verdict"] == "regressed" for case in comparison["cases"])
    assert page.count('class="point regressed"') == regressed >= 1
    assert "verdict regressed" in page


def test_this_runs_record_is_matched_by_its_start_not_by_when_it_was_saved() -> None:
    # A record is saved at the end of its run: its created_at is minutes after started_at.
    inputs = load_fixture()
    history = copy.deepcopy(list(inputs.history))
    assert history[0]["run"]["started_at"] == inputs.summary["started_at"]
    history[0]["created_at"] = "2026-11-22T06:57:44.000Z"
    page = render_html(ReportInputs(inputs.summary, inputs.environment, inputs.comparison,
                                    tuple(history)))
    assert "(this run): p50" in page and "this run: p50" not in page  # one point, not two
    assert f"({len(history)} runs)" in page
    page = render_html(ReportInputs(inputs.summary, inputs.environment, inputs.comparison,
                                    tuple(history[1:])))  # not saved: appended from the summary
    assert "(this run): p50" not in page and "this run: p50" in page
    assert f"({len(history) - 1} runs, and this run)" in page


def test_a_report_shows_only_the_history_its_run_had(tmp_path: Path) -> None:
    from kernbench.reporting.bundle import machine_history
    from kernbench.results.history import append_record

    inputs = load_fixture()
    for hour in ("05", "06", "07", "08"):
        record = copy.deepcopy(dict(inputs.history[0]))
        record["run"] = {**record["run"], "started_at": f"2026-11-22T{hour}:00:00Z"}
        record["created_at"] = f"2026-11-22T{hour}:05:00.000Z"
        append_record(tmp_path, record, fsync=False)
    environment = {"fingerprint": inputs.history[0]["fingerprint"]}
    shown = machine_history(tmp_path, environment, until="2026-11-22T07:00:00Z")
    assert [r["run"]["started_at"] for r in shown] == [
        "2026-11-22T07:00:00Z", "2026-11-22T06:00:00Z", "2026-11-22T05:00:00Z"]
    assert len(machine_history(tmp_path, environment)) == 4
    assert len(machine_history(tmp_path, environment, limit=1, until="2026-11-22T06:30Z")) == 1


def _hostile_inputs() -> ReportInputs:
    inputs = load_fixture()
    summary = copy.deepcopy(dict(inputs.summary))
    evil = "<script>alert(1)</script>"
    for record in summary["results"]:
        if record["case_id"] in ("gemm[cpu,fp32]", "gemm[cpu,fp64]", "broken[cpu,native]"):
            record["kernel_name"] = evil
            record["case_id"] = evil + record["case_id"]
    summary["results"][0]["reason"] = '<img src=x onerror="alert(2)">'
    summary["results"][0]["worker"]["stderr_tail"] = "</pre><script>alert(3)</script>"
    return ReportInputs(summary, inputs.environment, inputs.comparison, inputs.history)


def test_untrusted_text_is_escaped() -> None:
    page = render_html(_hostile_inputs())
    assert page.count("<script") == 1  # the page's own sorting script only
    assert "alert(" not in page.split("<script>")[1].split("</script>")[0]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img" not in page and "&lt;img src=x onerror=" in page
    assert "&lt;/pre&gt;&lt;script&gt;alert(3)" in page


def test_page_references_no_external_resource(page: str) -> None:
    external = re.compile(r"""(?:src|href|xlink:href)\s*=\s*["']?\s*(?:[a-z]+:)?//|@import|"""
                          r"""url\(\s*["']?\s*(?:https?:)?//""", re.IGNORECASE)
    assert not external.search(page)
    assert "http://" not in page and "https://" not in page
    assert "<link" not in page and "<iframe" not in page


def test_incomplete_run_shows_a_banner() -> None:
    inputs = load_fixture()
    summary = dict(inputs.summary, complete=False)
    page = render_html(ReportInputs(summary, inputs.environment))
    assert "Incomplete run" in page
    assert "Incomplete run" not in render_html(inputs)


def test_page_stays_small_with_many_samples() -> None:
    inputs = load_fixture()
    summary = copy.deepcopy(dict(inputs.summary))
    rng = random.Random(7)
    samples = [rng.lognormvariate(0, 0.5) for _ in range(10_000)]
    for record in summary["results"]:
        if record["status"] == "ok":
            record["timing"]["samples_ms"] = samples
    page = render_html(ReportInputs(summary, inputs.environment, inputs.comparison,
                                    inputs.history))
    assert len(page.encode("utf-8")) < 200_000
    assert repr(samples[1234]) not in page


def test_minimal_documents_with_a_failed_case_without_timing_render() -> None:
    record: dict[str, Any] = {"case_id": "k[cpu,fp32]", "kernel_name": "k", "backend": "cpu",
              "precision": "fp32", "problem_size": None, "status": "failed", "timing": None,
              "memory": None, "energy": None, "accuracy": None, "work": None,
              "warnings": [], "reason": "RuntimeError: boom", "worker": None}
    summary = {"results": [record], "complete": True, "settings": {}}
    page = render_html(ReportInputs(summary, {}))
    assert "RuntimeError: boom" in page
    assert "No case finished successfully." in page
    assert "1 failed" in page and "n/a" in page


def test_the_machine_row_names_the_testbed_as_summary_md_does() -> None:
    from kernbench.reporting.html import environment_rows

    def machine(env: dict[str, str]) -> str:
        return dict(environment_rows(env))["Machine"]

    assert machine({"fingerprint": "f00d", "hostname": "vm", "testbed": "gpu-box"}) == (
        "f00d (testbed gpu-box, host vm)")
    assert machine({"fingerprint": "f00d", "hostname": "vm", "testbed": "vm"}) == "f00d (vm)"
    assert machine({"fingerprint": "f00d", "hostname": "vm"}) == "f00d (vm)"


def test_tick_labels_of_close_ticks_are_told_apart() -> None:
    from kernbench.reporting.svg import tick_labels

    assert tick_labels([0.0001655, 0.000166, 0.0001665, 0.000167]) == [
        "0.0001655", "0.000166", "0.0001665", "0.000167"]
    assert tick_labels([0.0, 20.0, 40.0]) == ["0", "20", "40"]


def test_a_chart_label_past_the_widest_is_shortened_in_its_middle() -> None:
    from kernbench.reporting.svg_layout import clipped

    assert clipped("gemm[cpu,fp32]") == "gemm[cpu,fp32]"
    name = "a" * 100 + "b" * 100 + "[cpu,fp32]"
    short = clipped(name, 70.0)  # 10 characters of 7 px
    assert short == "aaaa…fp32]" and len(short) == 10


def test_settings_read_as_json_not_as_python() -> None:
    from kernbench.reporting.html import settings_rows

    rows = dict(settings_rows({"interleave": True, "shard": None, "processes": 3,
                               "shards": [{"shard": [1, 2], "host": "vm"}],
                               "filters": ["gemm*", "fft"], "plan": {"complete": False}}))
    assert rows == {"interleave": "true", "shard": "not set", "processes": "3",
                    "shards": '{"shard": [1, 2], "host": "vm"}', "filters": "gemm*, fft",
                    "plan.complete": "false"}
