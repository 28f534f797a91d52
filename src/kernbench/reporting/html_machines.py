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
from kernbench.reporting.html import render_html
from kernbench.reporting.html_view import bounded, overview, render_large
from kernbench.reporting.machines import machine_dir, machine_inputs
from kernbench.results.machines import machine_label

__all__ = ["html_pages"]


def _page(machine: Mapping[str, Any]) -> str:
    return f"{machine_dir(machine)}/index.html"


def html_pages(inputs: ReportInputs) -> dict[str, str]:
    """The HTML files of a report, by path under its directory: index.html alone for one
    machine; for several, the overview and each machine's dashboard. Each page is the whole
    dashboard, or, for a report of more than
    :data:`~kernbench.reporting.html_view.HTML_MAX_CASES` cases in all, the bounded one
    (:mod:`kernbench.reporting.html_view`), as a merge writes it from its views."""
    render = render_large if bounded(len(inputs.results)) else render_html
    parts = machine_inputs(inputs)
    if not parts:
        return {"index.html": render(inputs)}
    pages = {_page(machine): render(part, machine_label(machine)) for machine, part in parts}
    pages["index.html"] = overview(inputs.summary, parts)
    return pages
