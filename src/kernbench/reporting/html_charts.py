"""The charts of index.html: speedups, bandwidth, implementations side by side, history trends.

Each view turns the run's documents into inline SVG (drawn by :mod:`kernbench.reporting.svg`)
wrapped as :class:`~markupsafe.Markup`: the SVG writer escapes every text it places, so the
page template may insert it as is. The page itself is :mod:`kernbench.reporting.html`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from kernbench.reporting.bundle import ReportInputs, instant, run_start
from kernbench.reporting.implementations import ImplementationTable
from kernbench.reporting.svg import (
    Bar,
    Series,
    TrendPoint,
    colour_map,
    grouped_bar_svg,
    line_chart_svg,
    trend_svg,
)
from kernbench.reporting.views import (
    Record,
    fmt_num,
    kernel_groups,
    p50_ms,
    section,
    size_label,
    speedup_baseline,
    variant,
)

__all__ = ["anchors_by_case", "bandwidth_charts", "implementation_views", "safe_svg",
           "speedup_chart", "trend_views"]


def safe_svg(svg: str | None) -> Markup | None:
    """SVG from :mod:`svg` (which escapes every text it is given) as markup for the template."""
    return Markup(svg) if svg is not None else None


# --- backend x precision -------------------------------------------------------------------

def speedup_chart(ran: Sequence[Record], colours: Mapping[str, str]) -> Markup | None:
    """Grouped bars of speedup over the baseline, per kernel and problem size with more than
    one case; `ran` are the cases with a median, in the summary's order."""
    groups = kernel_groups(ran, size_label)  # by the size shown; plots group by size_json
    bars = []
    for (kernel, size), cases in groups.items():
        if len(cases) > 1:
            base = speedup_baseline(cases)
            bars.append((kernel if len({k for k, _ in groups}) == len(groups)
                         else f"{kernel} ({size})", [_speedup_bar(c, base) for c in cases]))
    if not bars:
        return None
    return safe_svg(grouped_bar_svg(bars, y_label="speedup over baseline (x, higher is faster)",
                                 reference=1.0, colours=colours))


def _speedup_bar(case: Record, base: Record) -> Bar:
    ratio = (p50_ms(base) or 0.0) / (p50_ms(case) or 1.0)
    title = (f"{case.get('kernel_name')} {variant(case)}: {fmt_num(ratio, 3)}x vs baseline "
             f"{variant(base)} (p50 {fmt_num(p50_ms(case))} ms vs {fmt_num(p50_ms(base))} ms)")
    return Bar(variant(case), ratio, f"{fmt_num(ratio, 3)}x", title)


def bandwidth_charts(ran: Sequence[Record],
                     colours: Mapping[str, str]) -> list[tuple[str, Markup]]:
    """Per kernel: GB/s per problem size, one series per backend/precision."""
    charts = []
    for kernel in dict.fromkeys(str(r.get("kernel_name")) for r in ran):
        cases = [r for r in ran if str(r.get("kernel_name")) == kernel
                 and isinstance(section(r, "work").get("gb_per_s"), (int, float))]
        if not cases:
            continue
        sizes = list(dict.fromkeys(size_label(r.get("problem_size")) for r in cases))
        series = []
        for name in dict.fromkeys(variant(r) for r in cases):
            by_size = {size_label(r.get("problem_size")): r for r in cases if variant(r) == name}
            values = [by_size[s]["work"]["gb_per_s"] if s in by_size else None for s in sizes]
            titles = [f"{kernel} {name} {s}: {fmt_num(v)} GB/s"
                      for s, v in zip(sizes, values, strict=True)]
            series.append(Series(name, values, titles))
        charts.append((kernel, safe_svg(line_chart_svg(sizes, series, y_label="GB/s",
                                                            colours=colours)) or Markup()))
    return charts


# --- implementations side by side ---------------------------------------------------------

def anchors_by_case(results: Sequence[Record], anchors: Mapping[int, str]) -> dict[str, str]:
    return {str(r.get("case_id")): anchors[id(r)] for r in results}


def implementation_views(tables: Sequence[ImplementationTable],
                         anchors: Mapping[str, str]) -> list[dict[str, Any]]:
    """Per kernel with several implementations (its table, from
    :func:`kernbench.reporting.implementations.implementation_tables`): the table, a speedup
    chart (bars per shape, one per implementation) and a GB/s chart (a line per
    implementation)."""
    views = []
    for table in tables:
        colours = colour_map(list(table.names))
        views.append({"table": table, "anchors": anchors,
                      "speedup_svg": _impl_speedup_svg(table, colours),
                      "bandwidth_svg": _impl_bandwidth_svg(table, colours)})
    return views


def _impl_speedup_svg(table: ImplementationTable, colours: Mapping[str, str]) -> Markup | None:
    groups = [(row.label, [Bar(name, cell.speedup, f"{fmt_num(cell.speedup, 3)}x",
                               f"{table.kernel} {name} {row.label}: {fmt_num(cell.speedup, 3)}x "
                               f"vs {table.reference} (p50 {fmt_num(cell.p50_ms)} ms)")
                           for name, cell in row.cells.items() if cell.speedup is not None])
              for row in table.rows]
    groups = [(label, bars) for label, bars in groups if bars]
    if not groups:
        return None
    return safe_svg(grouped_bar_svg(groups, reference=1.0, colours=colours,
                                 y_label=f"speedup over {table.reference} (x, higher is faster)"))


def _impl_bandwidth_svg(table: ImplementationTable, colours: Mapping[str, str]) -> Markup | None:
    if not table.has_bandwidth:
        return None
    labels = [row.label for row in table.rows]
    series = [Series(name, [row.cells[name].gb_per_s for row in table.rows],
                     [f"{table.kernel} {name} {row.label}: {fmt_num(row.cells[name].gb_per_s)} "
                      "GB/s" for row in table.rows]) for name in table.names]
    return safe_svg(line_chart_svg(labels, series, y_label="GB/s", colours=colours, width=960))


# --- history, comparison, failures -----------------------------------------------------------

def _case_key(record: Record) -> str:
    """Identity of a case across runs; a JSON list, so unambiguous, unlike views.case_key."""
    key = [record.get("kernel_name"), record.get("backend"), record.get("precision"),
           record.get("problem_size")]
    if record.get("implementation"):  # kernels with one implementation keep their old keys
        key.append(record["implementation"])
    return json.dumps(key, sort_keys=True, default=str)


def current_recorded(inputs: ReportInputs) -> bool:
    """Whether this run's own history record is among the history (matched by its start)."""
    started = inputs.summary.get("started_at")
    return started is not None and any(run_start(h) == started for h in inputs.history)


def trend_views(inputs: ReportInputs, results: Sequence[Record], verdicts: Mapping[str, str],
                anchors: Mapping[int, str]) -> list[dict[str, Any]]:
    """p50 over the history runs (oldest first) for each case with at least two points; this
    run is its own history record where it was saved, else appended from its summary."""
    runs = list(reversed(inputs.history))
    started = inputs.summary.get("started_at")
    recorded = current_recorded(inputs)
    views = []
    for record in results:
        points = [p for h in runs if (p := _history_point(h, record, started, verdicts))]
        if not recorded and p50_ms(record) is not None:
            points.append(_point(p50_ms(record) or 0.0, "this run", "this run",
                                 verdicts.get(str(record.get("case_id")))))
        if len(points) >= 2:
            views.append({"record": record, "anchor": anchors[id(record)],
                          "svg": safe_svg(trend_svg(points))})
    return views


def _history_point(run: Record, record: Record, started: object,
                   verdicts: Mapping[str, str]) -> TrendPoint | None:
    key = _case_key(record)
    match = next((r for r in run.get("results") or [] if _case_key(r) == key), None)
    p50 = None if match is None else p50_ms(match)
    if p50 is None:
        return None
    when = instant(run_start(run))
    git = section(run, "git")
    commit = git.get("short_commit") or str(git.get("commit") or "no commit")[:12]
    is_current = started is not None and run_start(run) == started
    label = when.strftime("%m-%d %H:%M") if when else "?"
    title = (f"{when.strftime('%Y-%m-%d %H:%M:%S') if when else run.get('created_at')} "
             f"commit {commit}" + (" (this run)" if is_current else ""))
    return _point(p50, label, title,
                  verdicts.get(str(record.get("case_id"))) if is_current else None)


def _point(value: float, label: str, title: str, verdict: str | None) -> TrendPoint:
    mark = verdict if verdict in ("regressed", "improved") else None
    suffix = f"; verdict {verdict}" if mark else ""
    return TrendPoint(value, label, f"{title}: p50 {fmt_num(value)} ms{suffix}", mark)

