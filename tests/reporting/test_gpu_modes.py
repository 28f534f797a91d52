"""GPU timing modes in the reports: the mode beside every GPU figure (Markdown and HTML), and
the table of every mode's figures."""

from __future__ import annotations

import copy
from typing import Any

from kernbench.analysis.summary import record_dict
from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.gpu_modes import gpu_timing_table, mode_suffix
from kernbench.reporting.html import render_html
from kernbench.reporting.markdown import render_summary
from kernbench.results.model import CaseResult
from support.reports import load_fixture


def raw_mode(mode: str, us: float, requested: str | None = None,
             reason: str | None = None) -> dict[str, Any]:
    return {"mode": mode, "requested_mode": requested, "reason": reason,
            "flush": {"bytes": 100 * 2**20, "per": "call" if mode == "cold" else "none"},
            "calls_per_sample": 8, "samples_us": [us] * 3, "discarded_blocks": 0,
            "discard_reasons": {}}


def gpu_record(graph_failed: bool = False) -> dict[str, Any]:
    modes = {"cold": raw_mode("cold", 3.0), "hot": raw_mode("hot", 5.0),
             "graph": raw_mode("hot", 5.0, "graph", "graph capture failed: RuntimeError: x; "
                               "measured in hot mode instead") if graph_failed
             else raw_mode("graph", 3.0),
             "kernel": raw_mode("kernel", 3.0), "sync": raw_mode("sync", 16.0),
             "kernel_sync_flush": raw_mode("kernel_sync_flush", 3.0)}
    result = CaseResult(kernel_name="vadd", kernel_path="kernels/vadd.py", framework="triton",
                        backend="cuda", precision="fp32", problem_size=1024, status="ok",
                        samples_ms=(0.003, 0.003, 0.003), inner_loops=8, device="cuda",
                        energy={"energy_j": None, "power_w": None, "reason": "no NVML"},
                        accuracy={"rmse": None, "max_error": None, "passed": None,
                                  "reason": "no reference"},
                        gpu_timing={"requested": "all", "primary": "cold", "modes": modes})
    return record_dict(result)


def inputs_with(record: dict[str, Any]) -> ReportInputs:
    fixture = load_fixture(comparison=False, history=False)
    summary = copy.deepcopy(dict(fixture.summary))
    summary["results"] = [*summary["results"], record]
    return ReportInputs(summary, fixture.environment)


def test_the_mode_follows_a_gpu_figure_and_not_a_cpu_one() -> None:
    assert mode_suffix(gpu_record()) == " (cold)"
    assert mode_suffix(load_fixture().results[0]) == ""


def test_the_modes_table_has_every_mode_and_the_launch_overhead() -> None:
    table = gpu_timing_table([gpu_record()])
    assert table is not None
    assert table["names"] == ["cold", "hot", "graph", "kernel", "sync", "kernel_sync_flush"]
    (row,) = table["rows"]
    assert {n: c["median_us"] for n, c in row["cells"].items()} == {
        "cold": 3.0, "hot": 5.0, "graph": 3.0, "kernel": 3.0, "sync": 16.0,
        "kernel_sync_flush": 3.0}
    assert row["launch_overhead_us"] == 13.0
    assert row["flush"] == "100 MiB per call"
    assert gpu_timing_table(load_fixture().results) is None  # a CPU-only run has none


def test_markdown_shows_the_mode_beside_the_figure_and_every_mode() -> None:
    md = render_summary(inputs_with(gpu_record(graph_failed=True)).summary,
                        load_fixture().environment)
    board_line = next(line for line in md.splitlines() if "| vadd |" in line)
    assert "| 0.003 (cold) |" in board_line
    assert ("| vadd\\[cuda,fp32\\] (cold) | 3 | 5 | 5 (as hot) | 3 | 16 | 3 | 13 | "
            "100 MiB per call |") in md
    assert "launch overhead is sync − kernel_sync_flush" in md
    assert "graph: graph capture failed: RuntimeError: x; measured in hot mode instead" in md


def test_html_shows_the_mode_beside_the_figure_and_in_the_case_card() -> None:
    page = render_html(inputs_with(gpu_record()))
    assert '0.003 <span class="muted" title="GPU timing mode">cold</span>' in page
    assert ", cold mode</td>" in page
    assert ("cold 3 µs; hot 5 µs; graph 3 µs; kernel 3 µs; sync 16 µs; kernel_sync_flush 3 µs; "
            "launch overhead 13 µs") in page


def test_regressions_md_shows_the_mode_beside_both_medians() -> None:
    import dataclasses

    from kernbench.analysis.compare import compare_results
    from kernbench.reporting.regressions import comparison_document, render_regressions

    raw = {"requested": "cold", "primary": "cold", "modes": {"cold": raw_mode("cold", 3.0)}}
    base = CaseResult(kernel_name="vadd", kernel_path="kernels/vadd.py", framework="triton",
                      backend="cuda", precision="fp32", problem_size=1024, status="ok",
                      samples_ms=(0.003, 0.0031, 0.0029) * 3,
                      process_sample_counts=(3, 3, 3), gpu_timing=raw)
    cand = dataclasses.replace(base, samples_ms=(0.003, 0.0031, 0.003) * 3)
    cases = compare_results([base], [cand])
    assert [c.gpu_mode for c in cases] == ["cold"]
    document = comparison_document(cases, {"source": "a"}, {"source": "b"},
                                   {"threshold": 0.1, "alpha": 0.05})
    line = next(x for x in render_regressions(document).splitlines() if "vadd" in x)
    assert line.count(" (cold) |") == 2
