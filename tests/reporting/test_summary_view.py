"""summary.md of a run of any size: the view gives what the whole-document findings give, and a
large run lists the first rows of each table and counts the rest."""

from __future__ import annotations

from typing import Any

import pytest

from kernbench.reporting.findings import group_findings, key_findings
from kernbench.reporting.firsts import MAX_ROWS, Firsts
from kernbench.reporting.markdown import render_summary, summary_view
from kernbench.reporting.recommendations import recommendations
from kernbench.reporting.summary_view import MAX_NAMED, SummaryView
from support.records import doc, rec
from support.reports import large_summary as large
from support.reports import load_fixture


def section(md: str, title: str) -> str:
    return md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def documents() -> list[dict[str, Any]]:
    """The fixture, and small runs with narrow-precision, memory and backend pairs."""
    pairs = doc(rec("gemm", "fp32", 1.0), rec("gemm", "fp16", 3.0),
                rec("gemm", "bf16", 2.0, memory={"allocated_mb": 9.0}),
                rec("gemm", "fp32", 0.5, backend="cuda"), rec("gemm", "fp16", 0.6, backend="cuda"),
                rec("axpy", "fp32", 1.0, memory={"allocated_mb": 1.0}),
                rec("axpy", "bf16", 0.9, memory={"allocated_mb": 5.0}),
                rec("noisy", "fp32", 10.0, ci=(5.0, 15.0), p99=40.0),
                rec("crash", p50=None, status="failed", reason="boom"),
                rec("drift", accuracy={"passed": False, "exceeded": []}), iterations=5)
    return [dict(load_fixture().summary), pairs]


@pytest.mark.parametrize("document", documents())
def test_the_view_finds_and_advises_what_the_whole_document_does(
        document: dict[str, Any]) -> None:
    view = summary_view(document)
    tables = view.implementation_tables([])
    found = [(title, [f.message for f in items], total)
             for title, items, total in view.findings(tables)]
    whole = [(title, [f.message for f in items], len(items))
             for title, items in group_findings(key_findings(document))]
    assert found == whole
    assert view.advice(document.get("settings") or {}, None) == recommendations(document)


def test_a_large_run_lists_the_first_rows_of_each_table_and_counts_the_rest() -> None:
    cases = MAX_ROWS + 30
    md = render_summary(large(cases), load_fixture().environment)
    board = section(md, "Performance Leaderboard")
    rows = [line for line in board.splitlines() if line.startswith("| ") and "k0" in line]
    assert len(rows) == MAX_ROWS and rows[0].startswith("| 1 | k0000 ")
    assert "\n\n… and 30 more cases, slower than these: every case is in summary.json.\n" in board
    assert "… and 30 more cases, slower than these" in section(md, "Resource Usage")
    accuracy = section(md, "Accuracy")
    listed = [line for line in accuracy.splitlines() if line.startswith("| k0")]
    assert len(listed) == MAX_ROWS
    failures = (cases + 9) // 10
    assert all("**FAIL**" in line for line in listed[:failures])  # failures first
    assert "… and 30 more checked cases" in accuracy
    findings = section(md, "Key Findings")
    assert f"- **Accuracy failures** ({failures}):" in findings
    assert f"  - … and {failures - 12} more" in findings
    advice = section(md, "Recommendations")
    assert advice.count("**Fix accuracy**") == 13  # twelve, then how many more
    assert f"{failures - 12} more cases fail their accuracy check" in advice


def test_a_small_run_lists_every_row() -> None:
    md = render_summary(large(12), load_fixture().environment)
    assert "… and" not in md and "summary.json" not in md


def test_a_recommendation_names_its_first_cases_and_counts_the_rest() -> None:
    summary = large(MAX_NAMED + 5)
    for record in summary["results"]:
        p50 = record["timing"]["latency_ms_p50"]
        record["timing"]["latency_ms_p99"] = p50 * 10
    advice = section(render_summary(summary, load_fixture().environment), "Recommendations")
    line = next(line for line in advice.splitlines() if "**Find the slow calls**" in line)
    assert line.count("\\[cpu,fp32\\]") == MAX_NAMED and " and 5 more)" in line


def test_firsts_keeps_the_first_by_key_per_machine_in_machine_order() -> None:
    kept = Firsts(limit=3)
    for key in (5, 1, 9, 3, 7, 2, 8):
        kept.add(key, f"a{key}", machine="a")
    kept.add(0, "b0", machine="b")
    assert kept.count == 8 and kept.more == 5
    assert kept.items(["a", "b"]) == ["a1", "a2", "a3"]
    assert kept.items(["b", "a"]) == ["b0", "a1", "a2"]
    many = Firsts(limit=2)
    for key in range(1000, 0, -1):
        many.add(key, key)
    assert many.items() == [1, 2] and many.count == 1000


def test_a_view_cut_to_the_bounds_it_will_be_absorbed_into_absorbs_the_same() -> None:
    """A merge's worker drops the rows past the merge's bounds before sending its view: the
    merge would have passed over them, so the absorbed view is the same."""
    whole = large(3 * MAX_ROWS)["results"]
    split = MAX_ROWS + 40  # the slowest first: later rows still come first on the leaderboard
    records = whole[-split:] + whole[:-split]
    first, later = view_of(records[:split]), view_of(records[split:], split)
    merged = view_of(records[:split])
    merged.compact()  # as a worker sends it: its tables trimmed, their bounds set
    bounds = merged.bounds()
    assert ("rows", "passing") in bounds and ("boards", None) in bounds
    cut = view_of(records[split:], split)
    cut.compact(bounds)
    assert cut.rows["passing"].count == later.rows["passing"].count > MAX_ROWS
    assert not any(cut.rows["passing"].kept.values())  # counted, not kept
    assert any(cut.boards[None].kept.values())  # faster than the slowest kept: still sent
    first.absorb(later)
    merged.absorb(cut)
    assert render(first) == render(merged)


def view_of(records: list[dict[str, Any]], start: int = 0) -> SummaryView:
    """The records (positions from `start`) taken kernel by kernel, as a merge's worker takes
    a shard's."""
    view = SummaryView()
    for position, record in enumerate(records, start):
        view.add_kernel([(position, record)])
    return view


def render(view: SummaryView) -> tuple[Any, ...]:
    return (view.items("passing"), view.board(None), view.checked(),
            [(t, [f.message for f in items], n) for t, items, n in view.findings([])],
            view.advice({}, None))
