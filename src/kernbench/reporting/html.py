"""index.html: one self-contained dashboard page, rendered with jinja2 from the run's documents.

The page needs no network: CSS and a small sorting script are inline and every chart is an
inline SVG computed here (see :mod:`kernbench.reporting.svg`). Raw samples are summarised into
box statistics, never inlined, so the page stays small however many samples a case has.
Everything shown comes from the documents; a missing figure reads "n/a", with the record's
reason on hover where it gives one. All text goes through jinja2's HTML autoescaping or
:func:`html.escape`, so a kernel named ``<script>`` is shown, not run.

The charts (speedups, bandwidth, implementations, history trends) are
:mod:`kernbench.reporting.html_charts`. Speedup baseline:
:func:`kernbench.reporting.views.speedup_baseline`, among the cases of one kernel and problem
size that ran; speedup = baseline p50 / p50.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jinja2
from markupsafe import Markup

from kernbench.reporting.availability import AbsentBackend, absent_backends, present_only
from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.firsts import MAX_ROWS
from kernbench.reporting.gpu_modes import mode_figures, timing_mode
from kernbench.reporting.html_charts import (
    anchors_by_case,
    bandwidth_charts,
    current_recorded,
    implementation_views,
    safe_svg,
    speedup_chart,
    trend_views,
)
from kernbench.reporting.implementations import ImplementationTable, implementation_tables
from kernbench.reporting.machines import incomplete_text
from kernbench.reporting.svg import (
    BoxRow,
    box_plot_svg,
    box_stats,
    box_title,
    colour_map,
)
from kernbench.reporting.templating import environment
from kernbench.reporting.views import (
    OVER_PEAK_NOTE,
    PROBLEM_STATUSES,
    Record,
    fmt_num,
    over_peak,
    p50_ms,
    section,
    size_label,
    split_significant,
    variant,
)

__all__ = ["PageCases", "render_html", "render_page"]

TAIL_CHARS = 6000
"""A traceback or stderr tail longer than this is cut to its last TAIL_CHARS characters."""


@functools.cache
def html_environment() -> jinja2.Environment:
    """One environment per process: it keeps the loaded templates (a run renders its reports
    at the start and again at the end); compiled code is cached on disk across runs."""
    env = environment(trim_blocks=True, lstrip_blocks=True, autoescape=True)
    env.filters["num"] = fmt_num
    env.filters["pct"] = fmt_pct
    return env


def fmt_pct(value: object) -> str:
    """A percentage with 3 significant digits; "n/a" for None."""
    return "n/a" if value is None else f"{fmt_num(value, 3)}%"


@dataclass(frozen=True)
class PageCases:
    """The records a dashboard page shows (each :func:`normalised`), chosen by its caller:
    every case of a run (:func:`render_html`), or a bounded few of a large one
    (:mod:`kernbench.reporting.html_view`)."""

    board: Sequence[Record]
    """The leaderboard, fastest first."""
    cards: Sequence[Record]
    """The cases with a card under Case details (and a box under Latency distributions)."""
    ran: Sequence[Record]
    """The cases the speedup and bandwidth charts draw, in summary order."""
    problems: Sequence[Record]
    skipped: Sequence[Record]
    absent: Sequence[AbsentBackend]
    tables: Sequence[ImplementationTable]
    anchors: Mapping[int, str]
    """Each record's anchor, by ``id``; a card's anchor is its id on the page."""
    linked: Sequence[Record]
    """The cases that comparison rows, implementation cells and trends link to."""
    slowest: dict[str, Any] | None = None
    """The slowest case's leaderboard row when it is not the board's last."""


def render_html(inputs: ReportInputs, machine: str | None = None) -> str:
    """The dashboard page of one run, as a single HTML document; `machine` names the machine
    when the run is one machine of a report that kept several apart (its page links back)."""
    results = [normalised(r) for r in inputs.results]
    board = leaderboard(results)
    on_board = {id(r) for r in board}
    absent = absent_backends(results, inputs.environment or section(inputs.summary,
                                                                     "environment"))
    cases = PageCases(
        board=board, cards=board + [r for r in results if id(r) not in on_board and _samples(r)],
        ran=[r for r in results if id(r) in on_board],  # the summary's order
        problems=[r for r in results if r.get("status") in PROBLEM_STATUSES],
        skipped=[r for r in present_only(results, absent) if r.get("status") == "skipped"],
        absent=absent, tables=implementation_tables(inputs.summary),
        anchors={id(r): f"case-{i}" for i, r in enumerate(results)}, linked=results)
    return render_page(inputs, cases, _counts(inputs.summary, results), machine)


def render_page(inputs: ReportInputs, cases: PageCases, counts: Mapping[str, int],
                machine: str | None = None, bounded: Mapping[str, Any] | None = None) -> str:
    """index.html of `cases` of the run of `inputs` (whose summary need not hold its results);
    `bounded`: what a bounded page leaves out (:mod:`kernbench.reporting.html_view`)."""
    anchors = cases.anchors
    verdicts = {str(c.get("label")): str(c.get("verdict"))
                for c in (inputs.comparison or {}).get("cases") or []}
    colours = colour_map([variant(r) for r in cases.ran])  # one colour per backend/precision
    carded = {id(r) for r in cases.cards}
    rows = [board_row(r, anchors[id(r)], rank) for rank, r in enumerate(cases.board, 1)]
    template = html_environment().get_template("index.html.j2")
    return template.render(
        run=_run_view(inputs.summary), counts=counts,
        machine=machine, incomplete=incomplete_text(inputs.summary),
        slowest=cases.slowest or (rows[-1] if rows else None),
        env_rows=environment_rows(inputs.environment),
        settings=settings_rows(inputs.summary.get("settings") or {}),
        board=rows,
        distribution=_distribution_svg(cases.cards, anchors),
        details=[detail_view(r, anchors[id(r)], verdicts.get(str(r.get("case_id"))))
                 for r in cases.cards],
        speedups=speedup_chart(cases.ran, colours), bandwidth=bandwidth_charts(cases.ran, colours),
        implementations=implementation_views(cases.tables,
                                             anchors_by_case(cases.linked, anchors)),
        trends=trend_views(inputs, cases.linked, verdicts, anchors),
        history_runs=len(inputs.history), this_run_recorded=current_recorded(inputs),
        comparison=comparison_view(inputs.comparison, cases.linked, anchors,
                                   None if bounded is None else MAX_ROWS),
        problems=[problem_view(r, anchors.get(id(r), ""), id(r) in carded)
                  for r in cases.problems],
        skipped=cases.skipped, absent=cases.absent, over_peak_note=OVER_PEAK_NOTE,
        over_peak_cases=[r["record"]["case_id"] for r in rows if r["pct_over"]],
        bounded=bounded,
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
            ("Machine", f"{env.get('fingerprint') or 'n/a'} ({_where(env)})")]


def _where(env: Mapping[str, Any]) -> str:
    """The host, and the testbed where it is not the host's name (as summary.md names it)."""
    host, testbed = env.get("hostname") or "n/a", env.get("testbed")
    return host if not testbed or testbed == host else f"testbed {testbed}, host {host}"


def settings_rows(settings: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Settings as (name, value) text, nested mappings flattened to dotted names."""
    rows: list[tuple[str, str]] = []
    for key, value in settings.items():
        if isinstance(value, Mapping):
            rows += settings_rows(value, f"{prefix}{key}.")
        elif isinstance(value, (list, tuple)):
            rows.append((prefix + key, ", ".join(map(_setting_text, value)) or "none"))
        else:
            rows.append((prefix + key, "not set" if value is None else _setting_text(value)))
    return rows


def _setting_text(value: object) -> str:
    """A setting as its JSON reads (true, not Python's True; {"shard": ...} for a mapping)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return json.dumps(value, default=str, separators=(", ", ": "))
    return value if isinstance(value, str) else fmt_num(value)


# --- leaderboard and case details -----------------------------------------------------------

def board_row(record: Record, anchor: str, rank: int) -> dict[str, Any]:
    work, memory = section(record, "work"), section(record, "memory")
    pct, pct_title = peak_share(work)
    accuracy, accuracy_title = accuracy_text(section(record, "accuracy"))
    return {"rank": rank, "anchor": anchor, "record": record, "timing": record["timing"],
            "mode": timing_mode(record),
            "size": size_label(record.get("problem_size")),
            "gflops": work.get("gflops_per_s"), "gbs": work.get("gb_per_s"),
            "work_reason": None if work else "no flop or byte counts for this kernel",
            "pct": pct, "pct_title": pct_title, "pct_over": over_peak(pct),
            "peak_mb": memory.get("peak_mb"),
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
    return {"anchor": anchor, "record": record, "stats": stats, "svg": safe_svg(svg),
            "processes": counts, "verdict": verdict, "size": size_label(record.get("problem_size")),
            "timing": timing, "memory": section(record, "memory"),
            "energy": section(record, "energy"), "work": section(record, "work"),
            "accuracy": accuracy_text(section(record, "accuracy")),
            "over_peak": [name for name in ("compute", "bandwidth")
                          if over_peak(section(record, "work").get(f"pct_peak_{name}"))],
            "profile": profile_link(record), "mode": timing_mode(record),
            "modes": mode_figures(record)}


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
    return safe_svg(box_plot_svg(rows)) if rows else None


# --- comparison, failures --------------------------------------------------------------------

COMPARISON_CASE_DEFAULTS: Mapping[str, Any] = {
    "label": "?", "verdict": "n/a", "ratio": None, "ci_low": None, "ci_high": None,
    "q_value": None, "baseline_p50_ms": None, "candidate_p50_ms": None, "note": None,
    "accuracy_drift": None}


def comparison_view(comparison: Mapping[str, Any] | None, results: Sequence[Record],
                    anchors: Mapping[int, str], limit: int | None = None
                    ) -> dict[str, Any] | None:
    """The comparison's cases, significant changes first; with `limit`, at most that many of
    each kind, and how many more (``more``)."""
    if comparison is None:
        return None
    by_label = {str(r.get("case_id")): anchors[id(r)] for r in results}
    cases = [{**COMPARISON_CASE_DEFAULTS, **c, "anchor": by_label.get(str(c.get("label")))}
             for c in comparison.get("cases") or [] if isinstance(c, Mapping)]
    significant, rest = split_significant(cases)
    doc = {"verdict": "n/a", "regression": False, "counts": {}, "baseline": {}, "settings": {},
           "baseline_note": None, **comparison}
    if limit is None:
        return {"doc": doc, "significant": significant, "rest": rest, "more": 0}
    more = max(0, len(significant) - limit) + max(0, len(rest) - limit)
    return {"doc": doc, "significant": significant[:limit], "rest": rest[:limit], "more": more}


def problem_view(record: Record, anchor: str, has_detail: bool) -> dict[str, Any]:
    worker = section(record, "worker")
    tails = [(name, str(worker.get(key))[-TAIL_CHARS:]) for name, key in
             (("traceback", "traceback"), ("stderr (tail)", "stderr_tail"),
              ("stdout (tail)", "stdout_tail")) if worker.get(key)]
    exit_text = (f"signal {worker.get('signal')}" if worker.get("signal")
                 else f"exit code {worker.get('exit_code', 'n/a')}")
    return {"record": record, "anchor": anchor if has_detail else None, "tails": tails,
            "exit": exit_text}
