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


WORK = {"gflops_per_s": 0.34, "gb_per_s": 4.1, "arithmetic_intensity": 0.083,
        "pct_peak_compute": 1.5, "pct_peak_bandwidth": 2.5, "bound": "memory",
        "peak_source": "a datasheet"}


def impl_record(impl: str, backend: str, us: float) -> dict[str, Any]:
    """One implementation of `vadd` with work figures: timed in cold mode off the CPU."""
    timing = None if backend == "cpu" else {
        "requested": "cold", "primary": "cold", "modes": {"cold": raw_mode("cold", us)}}
    return record_dict(CaseResult(
        kernel_name="vadd", kernel_path="kernels/vadd.py", framework="triton",
        backend=backend, precision="fp32", problem_size=1024, status="ok",
        samples_ms=(us / 1e3,) * 3, inner_loops=8, device=backend, implementation=impl,
        work=WORK, energy={"energy_j": None, "power_w": None, "reason": "no NVML"},
        accuracy={"rmse": None, "max_error": None, "passed": None, "reason": "no reference"},
        gpu_timing=timing))


def implementations_inputs() -> ReportInputs:
    """GPU and CPU rows of one implementations table, with GFLOP/s and GB/s."""
    fixture = load_fixture(comparison=False, history=False)
    summary = copy.deepcopy(dict(fixture.summary))
    summary["results"] = [*summary["results"], impl_record("torch", "cuda", 4.0),
                          impl_record("triton", "cuda", 3.0), impl_record("torch", "cpu", 30.0),
                          impl_record("triton", "cpu", 40.0)]
    summary["implementations"] = {"vadd": {"reference": "torch", "names": ["torch", "triton"]}}
    return ReportInputs(summary, fixture.environment)


def test_markdown_shows_the_mode_beside_every_gpu_figure_of_the_other_tables() -> None:
    lines = render_summary(implementations_inputs().summary,
                           load_fixture().environment).splitlines()
    # Implementations: latency cells, then GB/s; a CPU row has no mode.
    assert "| cuda/fp32 | 0.004 ms (cold) (1×) | 0.003 ms (cold) (1.33×) |" in lines
    assert "| cpu/fp32 | 0.03 ms (1×) | 0.04 ms (0.75×) |" in lines
    assert "| cuda/fp32 | 4.1 (cold) | 4.1 (cold) |" in lines
    assert "| cpu/fp32 | 4.1 | 4.1 |" in lines
    # Work and Roofline: GFLOP/s, GB/s and % of peak; FLOP/byte is no timed figure.
    assert ("| vadd\\[cuda,fp32,impl=triton\\] | 0.34 (cold) | 4.1 (cold) | 0.083 | 1.5 (cold) "
            "| 2.5 (cold) | memory |") in lines
    assert "| vadd\\[cpu,fp32,impl=triton\\] | 0.34 | 4.1 | 0.083 | 1.5 | 2.5 | memory |" in lines
    assert any(line.startswith("- **Fastest**: vadd\\[cuda,fp32,impl=triton\\]: 0.003 ms p50 "
                               "(cold)") for line in lines)


def test_html_shows_the_mode_beside_every_gpu_figure_of_the_other_tables() -> None:
    page = render_html(implementations_inputs())
    tag = ' <span class="muted" title="GPU timing mode">cold</span>'
    # Implementations: the latency and the GB/s of a GPU cell; not of a CPU one.
    assert f'0.003 ms</a>{tag} <span class="speedup">(1.33x)</span>' in page
    assert f'<div class="muted">4.1 GB/s{tag}</div>' in page
    assert '0.04 ms</a> <span class="speedup">(0.75x)</span>' in page
    assert '<div class="muted">4.1 GB/s</div>' in page
    # Leaderboard: GFLOP/s, GB/s and % of peak of a GPU row; a CPU row has none.
    rows = [r for r in page.split("<tr>") if r.startswith('\n<td class="num" data-sort="')]
    row = next(r for r in rows if ">vadd[cuda,fp32,impl=triton]</a>" in r)
    assert f'data-sort="0.34">0.34{tag}</td>' in row and f'data-sort="4.1">4.1{tag}</td>' in row
    assert f"2.5%{tag}</td>" in row
    cpu_row = next(r for r in rows if ">vadd[cpu,fp32,impl=triton]</a>" in r)
    assert 'data-sort="0.34">0.34</td>' in cpu_row and "GPU timing mode" not in cpu_row
    # The case card's Work and % of peak rows.
    assert "0.34 GFLOP/s, 4.1 GB/s (cold mode), 0.083 FLOP/byte" in page
    assert "0.34 GFLOP/s, 4.1 GB/s, 0.083 FLOP/byte" in page  # the CPU case
    assert "compute 1.5%, bandwidth 2.5% (cold mode) (a datasheet)" in page


def test_every_timing_figure_of_a_gpu_leaderboard_row_carries_the_mode() -> None:
    # p50, p90, p99, mean and calls/s (and the CI, where there is one): each was measured in
    # the row's mode; three samples give no CI, and "n/a" carries no mode.
    md = render_summary(inputs_with(gpu_record()).summary, load_fixture().environment)
    board_line = next(line for line in md.splitlines() if "| vadd |" in line)
    assert board_line.count("(cold)") == 5 and "| n/a |" in board_line, board_line
    cpu_line = next(line for line in md.splitlines() if "| softmax | cpu |" in line)
    assert "(cold)" not in cpu_line
    page = render_html(inputs_with(gpu_record()))
    row = next(r for r in page.split("<tr>")
               if '<td class="case">' in r and "vadd[cuda,fp32]</a>" in r)
    assert row.count('title="GPU timing mode">cold</span>') == 4, row  # no mean column here
