"""index.html: one self-contained dashboard page, rendered with jinja2 from the run's documents.

The page needs no network: CSS and a small sorting script are inline and every chart is an
inline SVG computed here (see :mod:`kernbench.reporting.svg`). Raw samples are summarised into
box statistics, never inlined, so the page stays small however many samples a case has.
Everything shown comes from the documents; a missing figure reads "n/a", with the record's
reason on hover where it gives one. All text goes through jinja2's HTML autoescaping or
:func:`html.escape`, so a kernel named ``<script>`` is shown, not run.

Speedup baseline: :func:`kernbench.reporting.views.speedup_baseline`, among the cases of one
kernel and problem size that ran; speedup = baseline p50 / p50.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import jinja2
from markupsafe import Markup

from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.implementations import ImplementationTable, implementation_tables
from kernbench.reporting.svg import (
    Bar,
    BoxRow,
    Series,
    TrendPoint,
    box_plot_svg,
    box_stats,
    box_title,
    colour_map,
    grouped_bar_svg,
    line_chart_svg,
    trend_svg,
)
from kernbench.reporting.views import (
    PROBLEM_STATUSES,
    Record,
    fmt_num,
    kernel_groups,
    p50_ms,
    section,
    size_label,
    speedup_baseline,
    split_significant,
    variant,
)

__all__ = ["render_html", "speedup_baseline"]

TAIL_CHARS = 6000
"""A traceback or stderr tail longer than this is cut to its last TAIL_CHARS characters."""


def html_environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("kernbench", "reporting/templates"),
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, autoescape=True)
    env.filters["num"] = fmt_num
    env.filters["pct"] = fmt_pct
    return env


def fmt_pct(value: object) -> str:
    """A percentage with 3 significant digits; "n/a" for None."""
    return "n/a" if value is None else f"{fmt_num(value, 3)}%"


def render_html(inputs: ReportInputs) -> str:
    """The dashboard page of one run, as a single HTML document."""
    results = [normalised(r) for r in inputs.results]
    anchors = {id(r): f"case-{i}" for i, r in enumerate(results)}
    verdicts = {str(c.get("label")): str(c.get("verdict"))
                for c in (inputs.comparison or {}).get("cases") or []}
    board = leaderboard(results)
    on_board = {id(r) for r in board}
    ran = [r for r in results if id(r) in on_board]  # the summary's order
    colours = colour_map([variant(r) for r in ran])  # one colour per backend/precision
    timed = board + [r for r in results if id(r) not in on_board and _samples(r)]
    has_detail = {id(r) for r in timed}
    template = html_environment().get_template("index.html.j2")
    return template.render(
        run=_run_view(inputs.summary), counts=_counts(inputs.summary, results),
        slowest=board[-1] if board else None, env_rows=environment_rows(inputs.environment),
        settings=settings_rows(inputs.summary.get("settings") or {}),
        board=[board_row(r, anchors[id(r)], rank) for rank, r in enumerate(board, 1)],
        distribution=_distribution_svg(timed, anchors),
        details=[detail_view(r, anchors[id(r)], verdicts.get(str(r.get("case_id"))))
                 for r in timed],
        speedups=speedup_chart(ran, colours), bandwidth=bandwidth_charts(ran, colours),
        implementations=implementation_views(inputs.summary, anchors_by_case(results, anchors)),
        trends=trend_views(inputs, results, verdicts, anchors), history_runs=len(inputs.history),
        comparison=comparison_view(inputs.comparison, results, anchors),
        problems=[problem_view(r, anchors[id(r)], id(r) in has_detail)
                  for r in results if r.get("status") in PROBLEM_STATUSES],
        skipped=[r for r in results if r.get("status") == "skipped"],
    )


# --- small accessors -------------------------------------------------------------------------

RECORD_DEFAULTS: Mapping[str, Any] = {
    "case_id": "?", "kernel_name": "?", "backend": "?", "precision": "?", "problem_size": None,
    "status": "invalid", "reason": None, "warnings": [], "kernel_path": None, "framework": None,
    "device": None}


def normalised(record: Record) -> Record:
    """`record` with every field the page shows present (older or partial documents)."""
    return {**RECORD_DEFAULTS, **record}


def _run_view(summary: Record) -> dict[str, Any]:
    return {"complete": summary.get("complete", True) is not False,
            **{k: summary.get(k) for k in ("started_at", "finished_at", "kernbench_version")}}


def _samples(record: Record) -> list[Any]:
    return list(section(record, "timing").get("samples_ms") or [])


def _counts(summary: Record, results: Sequence[Record]) -> dict[str, int]:
    counts = dict(summary.get("counts") or {})
    for status in ("ok", "failed", "timeout", "skipped", "invalid"):
        counts.setdefault(status, sum(1 for r in results if r.get("status") == status))
    counts.setdefault("total", len(results))
    return counts


def leaderboard(results: Sequence[Record]) -> list[Record]:
    """Cases that ran successfully with a median, fastest first."""
    ok = [r for r in results if r.get("status") == "ok" and p50_ms(r) is not None]
    return sorted(ok, key=lambda r: p50_ms(r) or 0.0)


# --- header ----------------------------------------------------------------------------------

def environment_rows(env: Record) -> list[tuple[str, str]]:
    git, cpu, os_ = (section(env, k) for k in ("git", "cpu", "os"))
    commit = (f"{git.get('short_commit') or git.get('commit')} on "
              f"{git.get('branch') or 'detached HEAD'}"
              + (" (uncommitted changes)" if git.get("dirty") else "")
              if git.get("commit") else f"n/a ({git.get('reason') or 'not a git checkout'})")
    gpus = ", ".join(str(g.get("name")) for g in env.get("gpus") or [] if isinstance(g, Mapping))
    libraries = ", ".join(f"{k} {v}" for k, v in section(env, "libraries").items() if v)
    memory = section(env, "memory").get("total_mb")
    return [("Commit", commit),
            ("CPU", f"{cpu.get('model') or 'unknown'}, {cpu.get('logical_cores', 'n/a')} "
                    "logical cores"),
            ("Memory", f"{fmt_num(memory)} MB"),
            ("GPUs", gpus or f"none ({env.get('gpus_reason') or 'none found'})"),
            ("OS", f"{os_.get('system', 'n/a')} {os_.get('release', '')} "
                   f"({os_.get('machine', 'n/a')})"),
            ("Python", str(section(env, "python").get("version", "n/a"))),
            ("Libraries", libraries or "n/a"),
            ("Machine", f"{env.get('fingerprint') or 'n/a'} ({env.get('hostname') or 'n/a'})")]


def settings_rows(settings: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Settings as (name, value) text, nested mappings flattened to dotted names."""
    rows: list[tuple[str, str]] = []
    for key, value in settings.items():
        if isinstance(value, Mapping):
            rows += settings_rows(value, f"{prefix}{key}.")
        elif isinstance(value, (list, tuple)):
            rows.append((prefix + key, ", ".join(map(str, value)) or "none"))
        else:
            rows.append((prefix + key, "not set" if value is None else fmt_num(value)))
    return rows


# --- leaderboard and case details -----------------------------------------------------------

def board_row(record: Record, anchor: str, rank: int) -> dict[str, Any]:
    work, memory = section(record, "work"), section(record, "memory")
    pct, pct_title = peak_share(work)
    accuracy, accuracy_title = accuracy_text(section(record, "accuracy"))
    return {"rank": rank, "anchor": anchor, "record": record, "timing": record["timing"],
            "size": size_label(record.get("problem_size")),
            "gflops": work.get("gflops_per_s"), "gbs": work.get("gb_per_s"),
            "work_reason": None if work else "no flop or byte counts for this kernel",
            "pct": pct, "pct_title": pct_title, "peak_mb": memory.get("peak_mb"),
            "memory_reason": memory.get("reason"), "accuracy": accuracy,
            "accuracy_title": accuracy_title,
            "warnings": [_warning(w) for w in record.get("warnings") or []
                         if isinstance(w, Mapping)]}


def _warning(warning: Mapping[str, Any]) -> tuple[str, str]:
    """(its first clause, the whole message): the table shows the first, hover the rest."""
    message = str(warning.get("message") or warning.get("code") or "warning")
    return message.split(";")[0], message


def peak_share(work: Mapping[str, Any]) -> tuple[float | None, str]:
    """% of peak on the side that bounds the kernel (compute or memory), and where the peak
    comes from."""
    if not work:
        return None, "no flop or byte counts for this kernel"
    key = "pct_peak_bandwidth" if work.get("bound") == "memory" else "pct_peak_compute"
    value = work.get(key)
    source = work.get("peak_source") or "no known peak"
    return (float(value) if isinstance(value, (int, float)) else None,
            f"{work.get('bound') or 'unknown'}-bound; compute "
            f"{fmt_pct(work.get('pct_peak_compute'))}, bandwidth "
            f"{fmt_pct(work.get('pct_peak_bandwidth'))} of peak ({source})")


def accuracy_text(accuracy: Mapping[str, Any]) -> tuple[str, str]:
    """("pass" | "FAIL: ..." | "n/a", hover text with the errors or the reason)."""
    errors = (f"relative error {fmt_num(accuracy.get('relative_error'), 3)}, max error "
              f"{fmt_num(accuracy.get('max_error'), 3)}, rmse {fmt_num(accuracy.get('rmse'), 3)}")
    if accuracy.get("passed") is True:
        return "pass", errors
    if accuracy.get("passed") is False:
        return f"FAIL: {accuracy.get('reason') or errors}", errors
    return "n/a", str(accuracy.get("reason") or "not checked")


def detail_view(record: Record, anchor: str, verdict: str | None) -> dict[str, Any]:
    stats = box_stats(_samples(record))
    title = box_title(str(record.get("case_id")), stats) if stats else ""
    svg = box_plot_svg([BoxRow("", stats, title=title)], log=False, width=620) \
        if stats else None
    timing = section(record, "timing")
    counts = [c for c in timing.get("process_sample_counts") or [] if isinstance(c, int)]
    return {"anchor": anchor, "record": record, "stats": stats, "svg": _safe(svg),
            "processes": counts, "verdict": verdict, "size": size_label(record.get("problem_size")),
            "timing": timing, "memory": section(record, "memory"),
            "energy": section(record, "energy"), "work": section(record, "work"),
            "accuracy": accuracy_text(section(record, "accuracy")),
            "profile": profile_link(record)}


def profile_link(record: Record) -> dict[str, Any] | None:
    """The case's `--profile` output (path relative to the report), when it has one."""
    profile = record.get("profile")
    if not isinstance(profile, Mapping) or not profile.get("path"):
        return None
    return {"path": str(profile["path"]), "kind": str(profile.get("kind") or "profile"),
            "iterations": profile.get("iterations")}


def _distribution_svg(timed: Sequence[Record], anchors: Mapping[int, str]) -> Markup | None:
    rows = []
    for record in timed:
        stats = box_stats(_samples(record))
        status = "" if record.get("status") == "ok" else f" ({record.get('status')})"
        if stats is not None:
            rows.append(BoxRow(f"{record.get('case_id')}{status}", stats,
                               f"#{anchors[id(record)]}"))
    return _safe(box_plot_svg(rows)) if rows else None


def _safe(svg: str | None) -> Markup | None:
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
    return _safe(grouped_bar_svg(bars, y_label="speedup over baseline (x, higher is faster)",
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
        charts.append((kernel, _safe(line_chart_svg(sizes, series, y_label="GB/s",
                                                            colours=colours)) or Markup()))
    return charts


# --- implementations side by side ---------------------------------------------------------

def anchors_by_case(results: Sequence[Record], anchors: Mapping[int, str]) -> dict[str, str]:
    return {str(r.get("case_id")): anchors[id(r)] for r in results}


def implementation_views(summary: Mapping[str, Any],
                         anchors: Mapping[str, str]) -> list[dict[str, Any]]:
    """Per kernel with several implementations: its table, a speedup chart (bars per shape,
    one per implementation) and a GB/s chart (a line per implementation)."""
    views = []
    for table in implementation_tables(summary):
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
    return _safe(grouped_bar_svg(groups, reference=1.0, colours=colours,
                                 y_label=f"speedup over {table.reference} (x, higher is faster)"))


def _impl_bandwidth_svg(table: ImplementationTable, colours: Mapping[str, str]) -> Markup | None:
    if not table.has_bandwidth:
        return None
    labels = [row.label for row in table.rows]
    series = [Series(name, [row.cells[name].gb_per_s for row in table.rows],
                     [f"{table.kernel} {name} {row.label}: {fmt_num(row.cells[name].gb_per_s)} "
                      "GB/s" for row in table.rows]) for name in table.names]
    return _safe(line_chart_svg(labels, series, y_label="GB/s", colours=colours, width=960))


# --- history, comparison, failures -----------------------------------------------------------

def _case_key(record: Record) -> str:
    """Identity of a case across runs; a JSON list, so unambiguous, unlike views.case_key."""
    key = [record.get("kernel_name"), record.get("backend"), record.get("precision"),
           record.get("problem_size")]
    if record.get("implementation"):  # kernels with one implementation keep their old keys
        key.append(record["implementation"])
    return json.dumps(key, sort_keys=True, default=str)


def _instant(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text)).replace(microsecond=0)
    except ValueError:
        return None


def trend_views(inputs: ReportInputs, results: Sequence[Record], verdicts: Mapping[str, str],
                anchors: Mapping[int, str]) -> list[dict[str, Any]]:
    """p50 over the history runs (oldest first) for each case with at least two points; the
    current run is the record created when the summary started, else appended from it."""
    runs = list(reversed(inputs.history))
    started = _instant(inputs.summary.get("started_at"))
    current_in_history = any(_instant(h.get("created_at")) == started for h in runs)
    views = []
    for record in results:
        points = [p for h in runs if (p := _history_point(h, record, started, verdicts))]
        if not current_in_history and p50_ms(record) is not None:
            points.append(_point(p50_ms(record) or 0.0, "this run", "this run",
                                 verdicts.get(str(record.get("case_id")))))
        if len(points) >= 2:
            views.append({"record": record, "anchor": anchors[id(record)],
                          "svg": _safe(trend_svg(points))})
    return views


def _history_point(run: Record, record: Record, started: datetime | None,
                   verdicts: Mapping[str, str]) -> TrendPoint | None:
    key = _case_key(record)
    match = next((r for r in run.get("results") or [] if _case_key(r) == key), None)
    p50 = None if match is None else p50_ms(match)
    if p50 is None:
        return None
    when = _instant(run.get("created_at"))
    git = section(run, "git")
    commit = git.get("short_commit") or str(git.get("commit") or "no commit")[:12]
    is_current = when is not None and when == started
    label = when.strftime("%m-%d %H:%M") if when else "?"
    title = (f"{when or run.get('created_at')} commit {commit}"
             + (" (this run)" if is_current else ""))
    return _point(p50, label, title,
                  verdicts.get(str(record.get("case_id"))) if is_current else None)


def _point(value: float, label: str, title: str, verdict: str | None) -> TrendPoint:
    mark = verdict if verdict in ("regressed", "improved") else None
    suffix = f"; verdict {verdict}" if mark else ""
    return TrendPoint(value, label, f"{title}: p50 {fmt_num(value)} ms{suffix}", mark)


COMPARISON_CASE_DEFAULTS: Mapping[str, Any] = {
    "label": "?", "verdict": "n/a", "ratio": None, "ci_low": None, "ci_high": None,
    "q_value": None, "baseline_p50_ms": None, "candidate_p50_ms": None, "note": None,
    "accuracy_drift": None}


def comparison_view(comparison: Mapping[str, Any] | None, results: Sequence[Record],
                    anchors: Mapping[int, str]) -> dict[str, Any] | None:
    if comparison is None:
        return None
    by_label = {str(r.get("case_id")): anchors[id(r)] for r in results}
    cases = [{**COMPARISON_CASE_DEFAULTS, **c, "anchor": by_label.get(str(c.get("label")))}
             for c in comparison.get("cases") or [] if isinstance(c, Mapping)]
    significant, rest = split_significant(cases)
    doc = {"verdict": "n/a", "regression": False, "counts": {}, "baseline": {}, "settings": {},
           "baseline_note": None, **comparison}
    return {"doc": doc, "significant": significant, "rest": rest}


def problem_view(record: Record, anchor: str, has_detail: bool) -> dict[str, Any]:
    worker = section(record, "worker")
    tails = [(name, str(worker.get(key))[-TAIL_CHARS:]) for name, key in
             (("traceback", "traceback"), ("stderr (tail)", "stderr_tail"),
              ("stdout (tail)", "stdout_tail")) if worker.get(key)]
    exit_text = (f"signal {worker.get('signal')}" if worker.get("signal")
                 else f"exit code {worker.get('exit_code', 'n/a')}")
    return {"record": record, "anchor": anchor if has_detail else None, "tails": tails,
            "exit": exit_text}
