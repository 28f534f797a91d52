"""summary.md, rendered with jinja2 from the summary document (never from live objects)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jinja2

from kernbench.reporting import findings as fx
from kernbench.reporting import recommendations as rx
from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.digest import regression_digest
from kernbench.reporting.gpu_modes import gpu_table_of, mode_suffix, suffix
from kernbench.reporting.machines import demote, incomplete_text, machine_inputs
from kernbench.reporting.summary_view import MAX_LISTED, MAX_ROWS, SummaryView
from kernbench.reporting.summary_view import summary_view as summary_view  # tests import it here
from kernbench.reporting.templating import environment
from kernbench.reporting.views import OVER_PEAK_NOTE, RATIO_NOTE, over_peak, verdict_text
from kernbench.reporting.views import fmt_num as fmt_num  # re-exported: tests import it here
from kernbench.results.machines import machine_label, machine_part, machines_of, split_comparison


def md_escape(value: object) -> str:
    """Text safe inside a Markdown table cell."""
    text = "" if value is None else str(value)
    for char in ("\\", "|", "`", "*", "_", "<", ">", "[", "]"):
        text = text.replace(char, "\\" + char)
    return " ".join(text.split())


@functools.cache
def template_environment() -> jinja2.Environment:
    """One environment per process: it keeps the loaded templates (a run renders its reports
    at the start and again at the end); compiled code is cached on disk across runs."""
    env = environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                      autoescape=False)
    env.filters["num"] = fmt_num
    env.filters["md"] = md_escape
    env.filters["kernel_label"] = kernel_label
    env.filters["peak_pct"] = peak_pct
    env.filters["mode_suffix"] = mode_suffix
    env.filters["suffix"] = suffix
    env.filters["verdict_text"] = verdict_text
    env.globals["RATIO_NOTE"] = RATIO_NOTE
    return env


def kernel_label(record: Mapping[str, Any]) -> str:
    """The kernel name, with the implementation and the sweep point when the case has them
    (`softmax jax rows=64`, `matmul m=64,k=64,n=64`), so they read as different rows."""
    from kernbench.results.model import point_of

    name = str(record.get("kernel_name"))
    impl = record.get("implementation")
    point = point_of(record.get("case_id"), name, str(record.get("backend")),
                     str(record.get("precision")), impl if isinstance(impl, str) else None)
    return " ".join(str(part) for part in (name, impl, point) if part)


def peak_pct(value: object) -> str:
    """A % of peak for a Markdown cell: above 100 it is flagged (see OVER_PEAK_NOTE)."""
    return f"{fmt_num(value, 3)} ⚠" if over_peak(value) else fmt_num(value, 3)


def leaderboard(results: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Successful records, fastest median first."""
    ok = [r for r in results if r["status"] == "ok" and r["timing"]["latency_ms_p50"] is not None]
    return sorted(ok, key=lambda r: r["timing"]["latency_ms_p50"])


def render_summary(document: Mapping[str, Any], environment: Mapping[str, Any],
                   comparison: Mapping[str, Any] | None = None) -> str:
    """summary.md; with `comparison` (comparison.json) it also carries a Regressions section.
    A report of several machines (``machines``) is the machines' table, then each machine's
    own summary as a section (:mod:`kernbench.reporting.machines`)."""
    parts = [(machine_label(machine), demote(render_summary(
        {**part.summary, "complete": True}, part.environment, part.comparison)))
        for machine, part in machine_inputs(ReportInputs(document, environment, comparison))]
    if parts:
        return _machines_page(document, environment, parts)
    header = {k: v for k, v in document.items() if k != "results"}
    return render_view(summary_view(document), header, environment, comparison)


def _machines_page(header: Mapping[str, Any], environment: Mapping[str, Any],
                   parts: list[tuple[str, str]]) -> str:
    """summary.md of several machines: their table, then each one's (label, section); the
    top says what is incomplete, once."""
    return template_environment().get_template("summary.md.j2").render(
        doc=header, env=environment, parts=parts, incomplete=incomplete_text(header))


def render_machine_views(views: Mapping[str, SummaryView], tallies: Mapping[str, Mapping[str, int]],
                         header: Mapping[str, Any], environment: Mapping[str, Any],
                         comparison: Mapping[str, Any] | None = None) -> str:
    """summary.md of a merge of several machines from one view per machine (by fingerprint,
    "unknown" for none) and each machine's case counts by status: as :func:`render_summary`
    lays out the whole document, each machine's section from its own view alone."""
    parts = []
    for machine in machines_of(header):
        key = str(machine.get("fingerprint") or "unknown")
        tally = tallies.get(key) or {}
        part = machine_part(header, machine, [], {"total": sum(tally.values()), **tally})
        del part["results"]
        part["complete"] = True
        view = views.get(key) or SummaryView()
        view.machines = [key]
        parts.append((machine_label(machine), demote(render_view(
            view, part, part["environment"], split_comparison(comparison, machine)))))
    return _machines_page(header, environment, parts)


def _boards(view: SummaryView, header: Mapping[str, Any]
            ) -> list[tuple[str | None, list[Any], int]]:
    """The leaderboard, one per machine of a merge that kept machines apart (``machines``):
    cases of different machines are never ranked against each other."""
    machines = header.get("machines") or []
    if not machines:
        return [(None, *view.board(None))]
    return [(f"{m.get('testbed')} (`{m.get('fingerprint')}`)", *view.board([m.get("fingerprint")]))
            for m in machines]


def render_view(view: SummaryView, header: Mapping[str, Any], environment: Mapping[str, Any],
                comparison: Mapping[str, Any] | None = None) -> str:
    """summary.md of one machine from a :class:`SummaryView` (its `machines` set) and the
    summary without its results (`header`); see :func:`render_summary`."""
    rows = view.rows
    absent = view.absent(environment or header.get("environment") or {})
    own = header.get("environment")
    tables = view.implementation_tables(view.absent(own if isinstance(own, Mapping) else {}))
    boards = _boards(view, header)
    skipped, skipped_more = view.skipped_rows(absent)
    checked, checked_more = view.checked()
    unchecked = view.items("unchecked")
    template = template_environment().get_template("summary.md.j2")
    return template.render(
        doc=header, env=environment, boards=boards, max_rows=MAX_ROWS,
        resources=[r for _, board, _ in boards for r in board],
        resources_more=sum(more for _, _, more in boards),
        problems=view.items("problems"), problems_more=rows["problems"].more,
        skipped=skipped, skipped_more=skipped_more,
        absent=absent, over_peak_note=OVER_PEAK_NOTE,
        over_peak_cases=view.items("over_peak"), over_peak_more=rows["over_peak"].more,
        flagged=view.items("flagged"), flagged_more=rows["flagged"].more,
        checked=checked, checked_more=checked_more,
        unchecked=unchecked[0] if unchecked else None, unchecked_count=rows["unchecked"].count,
        worked=view.items("worked"), worked_more=rows["worked"].more,
        profiles=view.items("profiles"), profiles_more=rows["profiles"].more,
        finding_groups=view.findings(tables), max_listed=MAX_LISTED,
        unstable=rows["unstable"].count > 0, noisy_pct=fx.NOISY_CI_RATIO * 100,
        advice=view.advice(header.get("settings") or {}, comparison),
        no_advice=rx.NO_RECOMMENDATIONS,
        digest=regression_digest(comparison), impl_tables=tables,
        gpu_table=gpu_table_of(view.items("gpu"), view.gpu_modes, view.gpu_overhead,
                               rows["gpu"].more),
        parts=[], incomplete=incomplete_text(header),
    )


def render_summary_inputs(inputs: ReportInputs) -> str:
    """summary.md from a run's report inputs (its comparison included, when there is one)."""
    return render_summary(inputs.summary, inputs.environment, inputs.comparison)
