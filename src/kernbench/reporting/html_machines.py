"""index.html of a report that kept several machines apart: an overview page, one dashboard per
machine.

The overview gives each machine its own section (its environment, case counts and A/B verdict)
and links its dashboard, ``machines/<testbed>-<fingerprint>/index.html``: the single-machine page of
:mod:`kernbench.reporting.html`, rendered from that machine's documents alone. No table or chart
holds two machines, so nothing is ranked or compared across them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.html import environment_rows, html_environment, render_html
from kernbench.reporting.machines import incomplete_text, machine_dir, machine_inputs
from kernbench.results.machines import machine_label

__all__ = ["html_pages"]

STATUSES = ("ok", "failed", "timeout", "skipped", "invalid")


def _page(machine: Mapping[str, Any]) -> str:
    return f"{machine_dir(machine)}/index.html"


def html_pages(inputs: ReportInputs) -> dict[str, str]:
    """The HTML files of a report, by path under its directory: index.html alone for one
    machine; for several, the overview and each machine's dashboard."""
    parts = machine_inputs(inputs)
    if not parts:
        return {"index.html": render_html(inputs)}
    pages = {_page(machine): render_html(part, machine_label(machine))
             for machine, part in parts}
    views = [{"label": machine_label(machine), "href": _page(machine),
              "counts": part.summary["counts"], "env_rows": environment_rows(part.environment),
              "verdict": (part.comparison or {}).get("verdict")}
             for machine, part in parts]
    counts = inputs.summary.get("counts") or {}
    template = html_environment().get_template("machines.html.j2")
    pages["index.html"] = template.render(
        machines=views, counts={s: counts.get(s, 0) for s in ("total", *STATUSES)},
        statuses=STATUSES, complete=inputs.summary.get("complete", True) is not False,
        incomplete=incomplete_text(inputs.summary),
        started_at=inputs.summary.get("started_at"), finished_at=inputs.summary.get("finished_at"))
    return pages
