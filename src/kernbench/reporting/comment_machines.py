"""The PR comment of a report that kept several machines apart (``merge --allow-mixed``).

Every table gets a Machine column (testbed and fingerprint: two hosted runners may share a
testbed), rows stay grouped by machine in the report's order, the verdicts are counted per
machine, and the Run section lists each machine with its own hardware. Nothing is ranked
across machines. The documents are untrusted (:mod:`kernbench.reporting.comment`): every
string goes through :func:`~kernbench.reporting.comment_text.escape`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kernbench.analysis.compare import VERDICTS
from kernbench.reporting.comment_text import TOKEN, code_text, escape, table_row
from kernbench.results.machines import machines_of

__all__ = ["MachineTag", "machine_tag", "machines_run_table", "machines_verdict_table"]

MachineTag = Callable[[Mapping[str, Any]], str]
"""A row's Machine cell, from the record or case it shows (by its ``fingerprint``)."""


def _label(machine: Mapping[str, Any]) -> str:
    return f"{escape(machine.get('testbed'), 60)} {code_text(machine.get('fingerprint'), TOKEN)}"


def machine_tag(summary: Mapping[str, Any]) -> MachineTag | None:
    """The Machine cell of a row in a report of several machines; None for one machine."""
    machines = machines_of(summary)
    if not machines:
        return None
    labels = {str(m.get("fingerprint")): _label(m) for m in machines}
    return lambda row: labels.get(str(row.get("fingerprint")), "unknown machine")


def grouped(rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]
            ) -> list[Mapping[str, Any]]:
    """`rows` with each machine's together, machines in the report's order (stable)."""
    rank = {str(m.get("fingerprint")): i for i, m in enumerate(machines_of(summary))}
    return sorted(rows, key=lambda row: rank.get(str(row.get("fingerprint")), len(rank)))


def machines_verdict_table(cases: Sequence[Mapping[str, Any]],
                           summary: Mapping[str, Any]) -> str:
    """Verdicts counted per machine (each reached on that machine alone)."""
    rows = []
    for machine in machines_of(summary):
        mine = [c for c in cases if c.get("fingerprint") == machine.get("fingerprint")]
        rows.append(table_row([_label(machine), *(str(sum(c.get("verdict") == v for c in mine))
                                                  for v in VERDICTS)]))
    return "\n".join([table_row(("Machine", *VERDICTS)), "|---|" + "---:|" * len(VERDICTS),
                      *rows])


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _hardware(env: Mapping[str, Any]) -> str:
    gpus = env.get("gpus")
    names = sorted({escape(g.get("name"), 80) for g in (gpus if isinstance(gpus, list) else [])
                    if isinstance(g, Mapping)})
    return (f"{escape(_mapping(env.get('cpu')).get('model') or 'unknown CPU')}; GPUs: "
            f"{', '.join(names[:4]) or 'none'}{' and more' if len(names) > 4 else ''}")


def machines_run_table(summary: Mapping[str, Any]) -> str:
    """One row per machine: its testbed, fingerprint, hardware and case count."""
    rows = [table_row([escape(m.get("testbed"), 60), code_text(m.get("fingerprint"), TOKEN),
                       _hardware(_mapping(m.get("environment"))), escape(m.get("cases"), 20)])
            for m in machines_of(summary)]
    return "\n".join([table_row(("Testbed", "Fingerprint", "Machine", "Cases")),
                      "|---|---|---|---:|", *rows])
