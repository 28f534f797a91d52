"""GPU timing modes in the reports: the mode beside a GPU figure, and the table of every mode's
figures (kernbench.analysis.gpu_summary wrote them into each record's ``timing``).

Records are read defensively, as in :mod:`kernbench.reporting.views`: a CPU record, or one of
a run before GPU timing modes, has no mode and renders as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kernbench.reporting.views import Record, case_id, number, section
from kernbench.results.vocabulary import KERNEL_SYNC_FLUSH

MODE_ORDER = ("cold", "hot", "graph", "graph_cold", "kernel", "sync", KERNEL_SYNC_FLUSH)
"""Columns of the modes table, in this order (those no record has are left out)."""


def timing_mode(record: Record) -> str | None:
    """How a record's figures were timed ("cold", "hot", ...), None off the GPU."""
    mode = section(record, "timing").get("mode")
    return str(mode) if isinstance(mode, str) else None


def suffix(mode: object) -> str:
    """`` (cold)`` after a figure timed in that GPU mode; empty without one (CPU)."""
    return f" ({mode})" if mode else ""


def mode_suffix(record: Record) -> str:
    """`` (cold)`` after a GPU figure; empty for a CPU one."""
    return suffix(timing_mode(record))


def _cell(mode: Mapping[str, Any]) -> dict[str, Any]:
    fell_back = mode.get("requested_mode") is not None
    return {"median_us": number(mode.get("median_us")), "n": mode.get("n"),
            "measured_as": str(mode.get("mode")) if fell_back else None,
            "reason": mode.get("reason"), "flush": _flush_text(mode.get("flush")),
            "discarded": mode.get("discarded_blocks") or 0}


def _flush_text(flush: object) -> str:
    per = flush.get("per") if isinstance(flush, Mapping) else None
    size = number(flush.get("bytes")) if isinstance(flush, Mapping) else None
    if per in (None, "none"):
        return "no flush"
    return f"{size / 2**20:.0f} MiB per {per}" if size else f"flush per {per}"


def mode_figures(record: Record) -> list[tuple[str, float | None, str | None]]:
    """(mode asked for, median µs, mode measured when it fell back) of one record, for its
    case card."""
    modes = section(record, "timing").get("modes")
    if not isinstance(modes, Mapping):
        return []
    return [(str(name), number(m.get("median_us")),
             str(m.get("mode")) if m.get("requested_mode") is not None else None)
            for name, m in modes.items() if isinstance(m, Mapping)]


def gpu_timing_table(results: Sequence[Record]) -> dict[str, Any] | None:
    """Rows (one per GPU record that ran) of each mode's median in µs, with the flush, the
    blocks discarded and why a mode fell back; None when no record has GPU modes."""
    rows = [row for row in map(gpu_row, results) if row is not None]
    return gpu_table_of(rows, {name for row in rows for name in row["cells"]},
                        any(row["launch_overhead_us"] is not None for row in rows))


def gpu_row(record: Record) -> dict[str, Any] | None:
    """The row of the modes table for one record; None for one without GPU modes."""
    modes = section(record, "timing").get("modes")
    if record.get("status") != "ok" or not isinstance(modes, Mapping) or not modes:
        return None
    cells: dict[str, dict[str, Any]] = {
        str(name): _cell(m) for name, m in modes.items() if isinstance(m, Mapping)}
    timing = section(record, "timing")
    return {"case_id": case_id(record), "mode": timing_mode(record), "cells": cells,
            "flush": _flush_text(timing.get("flush")),
            "launch_overhead_us": number(timing.get("launch_overhead_us")),
            "notes": [f"{name}: {c['reason']}" for name, c in cells.items() if c["reason"]],
            "discarded": sum(int(c["discarded"]) for c in cells.values())}


def gpu_table_of(rows: Sequence[dict[str, Any]], present: Iterable[str],
                 overhead: bool, more: int = 0) -> dict[str, Any] | None:
    """The modes table from its `rows` (`more` left out), the modes `present` in any row and
    whether any row has a launch overhead; None without rows."""
    if not rows:
        return None
    names = [n for n in MODE_ORDER if n in set(present)] + sorted(set(present) - set(MODE_ORDER))
    return {"names": names, "rows": list(rows), "overhead": overhead, "more": more}
