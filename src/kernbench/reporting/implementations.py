"""Side-by-side implementations of one kernel: speedup per shape, geomean speedup, GB/s.

For a kernel with several implementations (summary.json ``implementations``), the cases are
laid out as a table: one row per shape (backend, precision and sweep point), one column per
implementation. Each cell holds the median latency, the speedup over the reference
implementation in the same row (reference p50 / p50: above 1 is faster) and GB/s where the
kernel declares bytes moved. Below the rows, each implementation's geometric-mean speedup is
taken over the rows where both it and the reference ran. Pure functions of the summary
document; the renderers only lay the tables out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernbench.analysis.stats import geometric_mean
from kernbench.reporting.availability import AbsentBackend, absent_backends, present_only
from kernbench.reporting.gpu_modes import timing_mode
from kernbench.reporting.views import Record, mappings, number, p50_ms, section
from kernbench.results.model import point_of


@dataclass(frozen=True)
class Cell:
    """One implementation on one shape."""

    status: str
    p50_ms: float | None = None
    speedup: float | None = None
    """Reference p50 / this p50 in the same row (None when either did not run)."""
    gb_per_s: float | None = None
    case_id: str | None = None
    reason: str | None = None
    mode: str | None = None
    """The GPU timing mode of its figures (None: a CPU case)."""


@dataclass(frozen=True)
class Row:
    label: str
    """`cpu/fp32 cols=256`: the backend, precision and sweep point."""
    cells: Mapping[str, Cell]


@dataclass(frozen=True)
class ImplementationTable:
    kernel: str
    reference: str
    names: tuple[str, ...]
    rows: tuple[Row, ...]
    geomean_speedup: Mapping[str, float | None]
    """Per implementation, over the rows where it and the reference both have a p50."""
    geomean_rows: Mapping[str, int]
    """How many rows each geometric mean is taken over."""
    compiled: tuple[Record, ...] = ()
    """The records of torch.compile implementations (their `compile` facts)."""

    @property
    def has_bandwidth(self) -> bool:
        return any(c.gb_per_s is not None for r in self.rows for c in r.cells.values())


def implementation_tables(summary: Mapping[str, Any],
                          absent: Sequence[AbsentBackend] | None = None
                          ) -> list[ImplementationTable]:
    """One table per kernel with several implementations, in summary order; no row for a
    backend this machine lacks (:mod:`kernbench.reporting.availability`; `absent`, when the
    summary's results are not all of the run's)."""
    declared = summary.get("implementations")
    if not isinstance(declared, Mapping):
        return []
    results = mappings(summary.get("results"))
    environment = summary.get("environment")
    if absent is not None:
        results = present_only(results, absent)
    elif isinstance(environment, Mapping):
        results = present_only(results, absent_backends(results, environment))
    tables = []
    for kernel, entry in declared.items():
        if not isinstance(entry, Mapping):
            continue
        records = [r for r in results if r.get("kernel_name") == kernel
                   and isinstance(r.get("implementation"), str)]
        if records:
            tables.append(_table(str(kernel), entry, records))
    return tables


def _table(kernel: str, entry: Mapping[str, Any],
           records: Sequence[Record]) -> ImplementationTable:
    names = tuple(str(n) for n in entry.get("names") or ()) or tuple(
        dict.fromkeys(str(r["implementation"]) for r in records))
    reference = str(entry.get("reference") or names[0])
    grouped: dict[str, dict[str, Record]] = {}
    for record in records:
        grouped.setdefault(row_label(record), {})[str(record["implementation"])] = record
    rows = tuple(Row(label, {n: _cell(by_impl.get(n), by_impl.get(reference)) for n in names})
                 for label, by_impl in grouped.items())
    speedups = {n: [c.speedup for r in rows if (c := r.cells[n]).speedup is not None]
                for n in names}
    return ImplementationTable(
        kernel, reference, names, rows,
        {n: geometric_mean(v) if v else None for n, v in speedups.items()},
        {n: len(v) for n, v in speedups.items()},
        tuple(r for r in records if isinstance(r.get("compile"), Mapping)))


def row_label(record: Record) -> str:
    """`cpu/fp32 cols=256`: what the implementations of one row share."""
    kernel, impl = str(record.get("kernel_name")), record.get("implementation")
    point = point_of(record.get("case_id"), kernel, str(record.get("backend")),
                     str(record.get("precision")), impl if isinstance(impl, str) else None)
    variant = f"{record.get('backend')}/{record.get('precision')}"
    return f"{variant} {point}" if point else variant


def _cell(record: Record | None, reference: Record | None) -> Cell:
    if record is None:
        return Cell(status="not run")
    p50 = p50_ms(record) if record.get("status") == "ok" else None
    base = p50_ms(reference) if reference is not None and reference.get("status") == "ok" \
        else None
    speedup = base / p50 if base is not None and p50 else None
    return Cell(status=str(record.get("status")), p50_ms=p50, speedup=speedup,
                gb_per_s=number(section(record, "work").get("gb_per_s")) if p50 else None,
                case_id=str(record.get("case_id")), reason=record.get("reason"),
                mode=timing_mode(record))
