"""summary.md rendered from the committed fixture run (golden files), and its new sections."""

from __future__ import annotations

import copy
import re
from typing import Any

from kernbench.reporting.markdown import (
    MAX_LISTED,
    fmt_num,
    md_escape,
    render_summary,
    render_summary_inputs,
)
from kernbench.reporting.recommendations import NO_RECOMMENDATIONS
from support.reports import assert_golden, load_fixture

SEED_SECTIONS = ["Environment", "Performance Leaderboard", "Resource Usage", "Key Findings",
                 "Recommendations", "Regressions"]


def headings(md: str) -> list[str]:
    return re.findall(r"^## (.+)$", md, flags=re.MULTILINE)


def section(md: str, title: str) -> str:
    return md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_summary_golden() -> None:
    inputs = load_fixture(comparison=False)
    md = render_summary_inputs(inputs)
    assert_golden("summary.md", md)
    assert md == render_summary(inputs.summary, inputs.environment), "two positional args"


def test_summary_with_comparison_golden() -> None:
    inputs = load_fixture()
    md = render_summary_inputs(inputs)
    assert_golden("summary_with_comparison.md", md)
    assert md == render_summary(inputs.summary, inputs.environment, inputs.comparison)


def test_seed_sections_come_first_in_the_seed_order() -> None:
    with_comparison = headings(render_summary_inputs(load_fixture()))
    assert with_comparison[:6] == SEED_SECTIONS
    without = headings(render_summary_inputs(load_fixture(comparison=False)))
    assert without[:5] == SEED_SECTIONS[:5] and "Regressions" not in without


def test_key_findings_of_the_fixture() -> None:
    inputs = load_fixture()
    findings = section(render_summary_inputs(inputs), "Key Findings")
    ok = sorted((r for r in inputs.results if r["status"] == "ok"),
                key=lambda r: r["timing"]["latency_ms_p50"])
    for label, record in (("Fastest", ok[0]), ("Slowest", ok[-1])):
        line = (f"- **{label}**: {md_escape(record['case_id'])}: "
                f"{fmt_num(record['timing']['latency_ms_p50'])} ms p50")
        assert line in findings
    drifty = next(r for r in inputs.results if r["case_id"] == "drifty[cpu,fp16]")
    error = fmt_num(drifty["accuracy"]["relative_error"])
    assert (f"- **Accuracy failures**: drifty\\[cpu,fp16\\]: relative\\_error {error} \\> 0.001"
            in findings)
    assert "  - stuck\\[cpu,native\\] timed out" in findings
    assert "broken\\[cpu,native\\] failed: process 1 of 8: ValueError: bad input" in findings


def comparison_with_changes() -> dict[str, Any]:
    comparison = copy.deepcopy(dict(load_fixture().comparison or {}))
    for case in comparison["cases"]:
        if case["verdict"] in ("regressed", "improved"):
            case.update(verdict="inconclusive")
        if case["label"] == "softmax[cpu,fp32]":
            case.update(verdict="regressed", ratio=1.5, ci_low=1.3, ci_high=1.7, q_value=0.004)
        if case["label"] == "gemm[cpu,fp32]":
            case.update(verdict="improved", ratio=0.5, ci_low=0.45, ci_high=0.55, q_value=0.01)
    verdicts = [case["verdict"] for case in comparison["cases"]]
    comparison.update(verdict="Regression: 1 regressed", regression=True,
                      counts={v: verdicts.count(v) for v in comparison["counts"]})
    return comparison


def test_regressions_section_lists_significant_changes() -> None:
    inputs = load_fixture()
    md = render_summary(inputs.summary, inputs.environment, comparison_with_changes())
    regressions = section(md, "Regressions")
    comparison = comparison_with_changes()
    commit = comparison["baseline"]["commit"]
    assert regressions.startswith(f"\n**Regression: 1 regressed** (baseline `{commit}`)\n")
    counts = comparison["counts"]
    row = " | ".join(str(counts[v]) for v in ("regressed", "improved", "unchanged",
                                               "inconclusive", "new", "missing"))
    assert f"| {row} |" in regressions
    rows = [line for line in regressions.splitlines() if line.startswith("| ") and "**" in line]
    assert rows == ["| gemm\\[cpu,fp32\\] | **improved** | 0.5 | 0.45 – 0.55 | 0.01 | – |",
                    "| softmax\\[cpu,fp32\\] | **regressed** | 1.5 | 1.3 – 1.7 | 0.004 | – |"]
    assert "[regressions.md](regressions.md)" in regressions
    advice = section(md, "Recommendations")
    assert "**Regressions** (softmax\\[cpu,fp32\\])" in advice


def test_regressions_section_without_a_baseline() -> None:
    inputs = load_fixture()
    note = {**dict(inputs.comparison or {}), "verdict": "No comparison: no baseline found",
            "baseline_note": "no baseline found", "cases": []}
    regressions = section(render_summary(inputs.summary, inputs.environment, note),
                          "Regressions")
    assert "**No comparison: no baseline found**" in regressions
    assert "Nothing was compared, which is not a pass" in regressions
    assert "| regressed |" not in regressions


def test_nothing_to_recommend_is_said() -> None:
    summary = copy.deepcopy(dict(load_fixture().summary))
    summary["results"] = [r for r in summary["results"] if r["case_id"] == "softmax[cpu,bf16]"]
    record = summary["results"][0]
    p50 = record["timing"]["latency_ms_p50"]
    record["timing"].update(latency_ms_p50_ci95=[p50 * 0.99, p50 * 1.01],
                            latency_ms_p99=p50 * 1.2)
    record.update(work=None, warnings=[])
    md = render_summary(summary, load_fixture().environment)
    assert section(md, "Recommendations").strip() == NO_RECOMMENDATIONS
    assert section(md, "Key Findings").strip().startswith("- **Fastest**: softmax")


def test_long_finding_groups_are_cut_short() -> None:
    summary = copy.deepcopy(dict(load_fixture().summary))
    template = next(r for r in summary["results"] if r["case_id"] == "rmsnorm[cpu,fp32]")
    p50 = template["timing"]["latency_ms_p50"]
    template["timing"]["latency_ms_p50_ci95"] = [p50 * 0.5, p50 * 1.37]
    summary["results"] = []
    for i in range(MAX_LISTED + 2):
        record = copy.deepcopy(template)
        record["case_id"] = record["kernel_name"] = f"k{i:02d}"
        summary["results"].append(record)
    findings = section(render_summary(summary, load_fixture().environment), "Key Findings")
    assert f"- **Unstable** ({MAX_LISTED + 2}):" in findings
    assert "  - … and 2 more" in findings
    assert findings.count("spans 87% of its p50") == MAX_LISTED


def test_key_findings_list_a_busy_machine_and_another_output_precision_as_caveats() -> None:
    summary = copy.deepcopy(dict(load_fixture().summary))
    for record in summary["results"]:
        if record["case_id"] == "rmsnorm[cpu,fp32]":
            record["machine"] = {"other_cpu_cores": 1.0, "steal_share": 0.0, "cpus": 2}
            record["output"] = {"precision": "fp64"}
    findings = section(render_summary(summary, load_fixture().environment), "Key Findings")
    assert "- **Caveats** (2):" in findings
    assert ("rmsnorm\\[cpu,fp32\\]: its samples were taken while other processes kept 1.0 "
            "of 2 CPUs busy") in findings
    assert "timed as fp32, but its output is fp64" in findings


def test_a_percentage_of_peak_above_100_is_flagged_with_why() -> None:
    inputs = load_fixture(comparison=False)
    summary = copy.deepcopy(dict(inputs.summary))
    for record in summary["results"]:
        if record["case_id"] == "gemm[cpu,fp32]":
            record["work"] = {"gflops_per_s": 270.0, "gb_per_s": 3.0, "pct_peak_compute": 135.0,
                              "pct_peak_bandwidth": 20.0, "bound": "compute",
                              "arithmetic_intensity": 90.0, "peak_source": "a probe"}
    work = section(render_summary(summary, inputs.environment), "Work and Roofline")
    row = next(line for line in work.splitlines() if line.startswith("| gemm\\[cpu,fp32\\]"))
    assert "| 135 ⚠ | 20 |" in row
    assert "⚠ gemm\\[cpu,fp32\\]: above 100% of the device's peak" in work
    assert "work formula" in work
    assert "⚠" not in render_summary(inputs.summary, inputs.environment)


def test_skips_of_a_backend_the_machine_lacks_are_one_line() -> None:
    inputs = load_fixture(comparison=False)
    skips = section(render_summary_inputs(inputs), "Failures and Skips")
    assert skips.lstrip().startswith("- skipped: CUDA not available on this machine (5 cases of "
                            "rmsnorm, softmax): CUDA not available")
    assert "cuda," not in skips
    gpu = {**inputs.environment, "gpus": [{"name": "NVIDIA A100", "vendor": "NVIDIA"}]}
    rows = section(render_summary(inputs.summary, gpu), "Failures and Skips")
    assert rows.count("| skipped | ") == 5 and "not available on this machine" not in rows


def test_the_header_says_samples_are_per_worker_process_when_a_case_has_several() -> None:
    inputs = load_fixture(comparison=False)
    summary = copy.deepcopy(inputs.summary)
    summary["settings"]["processes"] = 3
    md = render_summary(summary, inputs.environment)
    iterations, warmup = summary["settings"]["iterations"], summary["settings"]["warmup"]
    assert (f"{iterations} samples after {warmup} warmup calls per worker process, 3 "
            "processes per case") in md
