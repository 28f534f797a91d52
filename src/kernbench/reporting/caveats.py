"""What a successful case's figure may not mean: the Caveats of summary.md's Key Findings.

In this order, what was measured before how well:

* **precision_unread**: the kernel declares a `precision` parameter and never reads it, so
  its one case ran at its own precision, labelled by its output's, whatever was asked;
* **output_precision**: an fp32, fp16 or bf16 case whose output is in another floating
  precision (it may not compute in the one it is labelled with; a case whose outputs are
  all float64 fails instead), or an int8 case returning floats;
* **busy_machine**: a case whose samples were taken while other processes kept cores busy
  (or the hypervisor stole CPU time: :func:`kernbench.analysis.machine_caveats.busy`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kernbench.reporting.finding import Finding
from kernbench.reporting.views import Record, case_id, dig
from kernbench.results.vocabulary import other_output_precision, precision_unread, ran_unread

__all__ = ["CAVEAT_ORDER", "caveat_findings", "caveats"]

CAVEAT_ORDER = ("precision_unread", "output_precision", "busy_machine")


def caveats(results: Sequence[Record]) -> list[Finding]:
    """Every record's caveats, in `CAVEAT_ORDER` then the records' order."""
    found = [finding for record in results for finding in caveat_findings(record)]
    return sorted(found, key=lambda f: CAVEAT_ORDER.index(f.kind))


def caveat_findings(record: Record) -> list[Finding]:
    """One record's caveats, in `CAVEAT_ORDER`; none for a case that did not succeed."""
    from kernbench.analysis.machine_caveats import busy

    if record.get("status") != "ok":
        return []
    cid, asked = case_id(record), record.get("precision")
    found = []
    if precision_unread(record.get("output")):
        found.append(Finding("precision_unread", cid, f"{cid}: the kernel declares a "
                             f"`precision` parameter but never reads it, so {ran_unread(asked)}"))
    output = dig(record, "output", "precision")
    if other_output_precision(asked, output):
        found.append(Finding("output_precision", cid, f"{cid}: timed as {asked}, but its "
                             f"output is {output}: check that the kernel computes in {asked}"))
    why = busy(record.get("machine") if isinstance(record.get("machine"), Mapping) else None)
    if why:
        found.append(Finding("busy_machine", cid, f"{cid}: its samples were taken while {why};"
                             " on a quiet machine it may well be faster"))
    return found
