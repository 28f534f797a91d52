"""index.html of a large run: the first rows and cards, bounded like summary.md, saying how
many more there are and where every case is; a small run's page is whole."""

from __future__ import annotations

import re
from typing import Any

from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.html import render_html
from kernbench.reporting.html_machines import html_pages
from kernbench.reporting.html_view import HTML_MAX_CASES
from kernbench.reporting.summary_view import CHART_KERNELS
from support.reports import large_summary, load_fixture


def page_of(summary: dict[str, Any], comparison: dict[str, Any] | None = None) -> str:
    return html_pages(ReportInputs(summary, load_fixture().environment,
                                   comparison))["index.html"]


def cards(page: str) -> list[str]:
    return re.findall(r'<article class="card" id="[^"]+">\n<h3>([^ ]+) ', page)


def test_a_small_run_gets_the_whole_page() -> None:
    page = html_pages(load_fixture())["index.html"]
    assert page == render_html(load_fixture())
    assert 'id="bounded"' not in page and "more cases" not in page


def test_a_large_run_lists_the_first_rows_and_cards_and_says_where_every_case_is() -> None:
    summary = large_summary(HTML_MAX_CASES + 60)
    for record in summary["results"][-10:]:  # the slowest ten fail, their samples kept
        record.update(status="failed", reason="boom")
    page = page_of(summary)
    assert page.count('<td class="case">') == HTML_MAX_CASES
    assert ("&hellip; and 50 more cases, slower than these: every case is in "
            '<a href="summary.json">summary.json</a> / <a href="results.csv">results.csv</a>'
            ) in page
    assert 'id="bounded"' in page and f"{HTML_MAX_CASES + 60} cases" in page
    shown = cards(page)  # the board, the failures with samples, the slowest
    assert len(shown) == HTML_MAX_CASES + 10 + 1 and shown[-1] == "k0249[cpu,fp32]"
    assert re.search(r'Slowest case: <a href="#(case-\d+)">k0249\[cpu,fp32\]</a>', page)
    assert page.count('<span class="chip status-failed">failed</span></td>') == 10
    assert f"draw the first {CHART_KERNELS} of the {HTML_MAX_CASES + 50} kernels" in page


def test_a_run_of_many_failures_lists_the_first_and_counts_the_rest() -> None:
    summary = large_summary(HTML_MAX_CASES + 30)
    for record in summary["results"]:
        record.update(status="failed", reason="boom")
    page = page_of(summary)
    assert page.count('<span class="chip status-failed">failed</span></td>') == HTML_MAX_CASES
    assert "&hellip; and 30 more failed, timed-out or invalid and 0 more skipped cases" in page
    assert "<p>No case finished successfully.</p>" in page


def test_a_regressed_case_off_the_board_has_its_card() -> None:
    summary = large_summary(HTML_MAX_CASES + 30)
    slow = "k0220[cpu,fp32]"
    comparison = {"verdict": "regressed", "regression": True,
                  "cases": [{"label": slow, "verdict": "regressed", "ratio": 1.5}]}
    page = page_of(summary, comparison)
    assert slow in cards(page) and 'class="chip verdict-regressed">regressed' in page


def test_the_page_does_not_grow_with_the_run() -> None:
    sizes = [len(page_of(large_summary(cases))) for cases in (HTML_MAX_CASES + 1, 2000)]
    assert sizes[1] < sizes[0] * 1.05, sizes
