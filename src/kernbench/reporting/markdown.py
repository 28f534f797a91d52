"""summary.md, rendered with jinja2 from the summary document (never from live objects)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jinja2

from kernbench.reporting import findings as fx
from kernbench.reporting import recommendations as rx
from kernbench.reporting.availability import absent_backends, present_only
from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.digest import regression_digest
from kernbench.reporting.gpu_modes import gpu_timing_table, mode_suffix, suffix
from kernbench.reporting.implementations import implementation_tables
from kernbench.reporting.machines import demote, incomplete_text, machine_inputs
from kernbench.reporting.templating import environment
from kernbench.reporting.views import OVER_PEAK_NOTE, PROBLEM_STATUSES, over_peak
from kernbench.reporting.views import fmt_num as fmt_num  # re-exported: tests import it here
from kernbench.results.machines import machine_label

MAX_LISTED = 12
"""Key Findings lists at most this many findings per group and counts the rest."""


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


def machine_boards(document: Mapping[str, Any]) -> list[tuple[str | None, list[Any]]]:
    """The leaderboard, one per machine of a merge that kept machines apart (``machines``):
    cases of different machines are never ranked against each other."""
    results = list(document["results"])
    machines = document.get("machines") or []
    if not machines:
        return [(None, leaderboard(results))]
    return [(f"{m.get('testbed')} (`{m.get('fingerprint')}`)",
             leaderboard([r for r in results if r.get("fingerprint") == m.get("fingerprint")]))
            for m in machines]


def render_summary(document: Mapping[str, Any], environment: Mapping[str, Any],
                   comparison: Mapping[str, Any] | None = None) -> str:
    """summary.md; with `comparison` (comparison.json) it also carries a Regressions section.
    A report of several machines (``machines``) is the machines' table, then each machine's
    own summary as a section (:mod:`kernbench.reporting.machines`)."""
    parts = [(machine_label(machine), demote(render_summary(
        {**part.summary, "complete": True}, part.environment, part.comparison)))
        for machine, part in machine_inputs(ReportInputs(document, environment, comparison))]
    if parts:  # the top says what is incomplete, once
        return template_environment().get_template("summary.md.j2").render(
            doc=document, env=environment, parts=parts, incomplete=incomplete_text(document))
    results = list(document["results"])
    found = fx.key_findings(document)
    absent = absent_backends(results, environment or document.get("environment") or {})
    worked = [r for r in results if r["status"] == "ok" and r.get("work")]
    template = template_environment().get_template("summary.md.j2")
    return template.render(
        doc=document, env=environment, boards=machine_boards(document),
        problems=[r for r in results if r["status"] in PROBLEM_STATUSES],
        skipped=[r for r in present_only(results, absent) if r["status"] == "skipped"],
        absent=absent, over_peak_note=OVER_PEAK_NOTE,
        over_peak_cases=[r["case_id"] for r in worked if any(
            over_peak(r["work"].get(k)) for k in ("pct_peak_compute", "pct_peak_bandwidth"))],
        flagged=[r for r in results if r["warnings"]],
        checked=[r for r in results if (r.get("accuracy") or {}).get("passed") is not None],
        unchecked=[r for r in results if r["status"] == "ok"
                   and (r.get("accuracy") or {}).get("passed") is None],
        worked=worked,
        finding_groups=fx.group_findings(found), max_listed=MAX_LISTED,
        unstable=any(f.kind == "unstable" for f in found), noisy_pct=fx.NOISY_CI_RATIO * 100,
        advice=rx.recommendations(document, comparison),
        no_advice=rx.NO_RECOMMENDATIONS,
        digest=regression_digest(comparison), impl_tables=implementation_tables(document),
        gpu_table=gpu_timing_table(results), parts=[], incomplete=incomplete_text(document),
    )


def render_summary_inputs(inputs: ReportInputs) -> str:
    """summary.md from a run's report inputs (its comparison included, when there is one)."""
    return render_summary(inputs.summary, inputs.environment, inputs.comparison)
