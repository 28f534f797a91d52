"""Reports of a merge that kept several machines apart (``kernbench merge --allow-mixed``).

Such a report is one report per machine under one roof: :func:`machine_inputs` splits a run's
documents into each machine's own (:mod:`kernbench.results.machines`), and each format renders
every machine with its single-machine renderer, so leaderboards, findings, recommendations,
A/B verdicts and environments are each machine's alone and nothing is ranked or compared
across machines. :func:`machines_comparison` joins the per-machine comparisons of a merged
A/B into one comparison.json: every case tagged with its machine, each machine's verdict,
counts and sides kept in ``machines``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kernbench.analysis.compare import VERDICTS
from kernbench.reporting.bundle import ReportInputs
from kernbench.results.files import safe_filename
from kernbench.results.machines import machine_label, split_comparison, split_summary
from kernbench.results.schema import SCHEMA_VERSION

__all__ = ["MACHINES_DIR", "demote", "incomplete_text", "machine_dir", "machine_inputs",
           "machines_comparison"]

MACHINES_DIR = "machines"
"""Where each machine's own files go, under the report directory: ``machines/<name>/``."""

_HEADING = re.compile(r"^(#{1,5}) ", re.MULTILINE)


def machine_inputs(inputs: ReportInputs) -> list[tuple[Mapping[str, Any], ReportInputs]]:
    """``(machine, its documents)`` per machine of a mixed report, in the report's order;
    empty for a report of one machine. A machine's summary keeps the merge's completeness."""
    return [(machine, ReportInputs(summary, summary["environment"],
                                   split_comparison(inputs.comparison, machine)))
            for machine, summary in split_summary(inputs.summary)]


def machine_dir(machine: Mapping[str, Any]) -> str:
    """``machines/<testbed>-<fingerprint>``: where a machine's own report files go."""
    name = f"{machine.get('testbed') or 'machine'}-{machine.get('fingerprint') or 'unknown'}"
    return f"{MACHINES_DIR}/{safe_filename(name)}"


def demote(markdown: str) -> str:
    """A whole Markdown report as a section of another: its title line dropped, every other
    heading one level deeper."""
    lines = markdown.split("\n", 1)
    body = lines[1] if len(lines) > 1 and lines[0].startswith("# ") else markdown
    return _HEADING.sub(lambda m: f"#{m.group(1)} ", body.lstrip("\n"))


def incomplete_text(document: Mapping[str, Any]) -> tuple[str, str]:
    """Why a run is incomplete, as (title, sentence): an interrupted run, or a merge whose
    suite misses shards or cases (counted from its ``completeness``)."""
    found = document.get("completeness")
    partial = document.get("unfinished_cases")
    wanted = (document.get("settings") or {}).get("processes")
    more = (f"; {len(partial)} of the cases shown ran fewer worker processes than the "
            f"{wanted} asked for (e.g. {partial[0]})" if isinstance(partial, list) and partial
            else "")
    if not isinstance(found, Mapping):
        planned = ((document.get("settings") or {}).get("plan") or {}).get("case_ids")
        ran = (document.get("counts") or {}).get("total")
        never = (f"; {len(planned) - ran} of its {len(planned)} planned cases never ran"
                 if isinstance(planned, list) and isinstance(ran, int) and len(planned) > ran
                 else "")
        return "Incomplete run", f"interrupted before every case finished{never}{more}"
    parts = [(len(found.get(key) or []), word) for key, word in (
        ("missing_shards", "shards never came back"),
        ("missing_cases", "planned cases have no record"),
        ("duplicated_shards", "shards were given twice"),
        ("plan_mismatches", "suites were split differently by their shards"))]
    said = "; ".join(f"{n} {word}" for n, word in parts if n)
    if not said:  # every case came back, but a shard stopped before its end
        return "Incomplete merge", f"a shard was interrupted before its end{more}"
    return "Incomplete merge", (f"not every case of the suite came back once ({said}; see "
                                f"completeness in summary.json){more}")


def _entry(machine: Mapping[str, Any], document: Mapping[str, Any]) -> dict[str, Any]:
    return {"testbed": machine.get("testbed"), "fingerprint": machine.get("fingerprint"),
            **{key: document.get(key) for key in (
                "verdict", "regression", "baseline_note", "baseline", "candidate", "settings",
                "counts", "skipped_both", "warnings") if key in document}}


def machines_comparison(parts: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]
                        ) -> dict[str, Any]:
    """One comparison document from each machine's own ``(machine, comparison)``: the cases
    tagged with their machine, each machine's verdict and sides in ``machines``. The counts
    add up verdicts that were each reached on one machine; the verdict names each machine's."""
    first = parts[0][1]
    several = {"machine": "several machines (see machines)", "fingerprint": None}
    notes = [doc.get("baseline_note") for _, doc in parts]
    return {
        "skipped_both": sorted({str(key) for _, doc in parts
                                for key in doc.get("skipped_both") or []}),
        "schema_version": SCHEMA_VERSION, "kind": "kernbench-comparison",
        "verdict": "; ".join(f"{machine_label(m)}: {doc.get('verdict')}" for m, doc in parts),
        "regression": any(doc.get("regression") for _, doc in parts),
        "baseline_note": notes[0] if all(notes) else None,
        "baseline": {**(first.get("baseline") or {}), **several},
        "candidate": {**(first.get("candidate") or {}), **several},
        "settings": dict(first.get("settings") or {}),
        "counts": {v: sum(int((doc.get("counts") or {}).get(v) or 0) for _, doc in parts)
                   for v in VERDICTS},
        "cases": [{**case, "testbed": m.get("testbed"), "fingerprint": m.get("fingerprint")}
                  for m, doc in parts for case in doc.get("cases") or []],
        "warnings": [f"{machine_label(m)}: {w}" for m, doc in parts
                     for w in doc.get("warnings") or []],
        "machines": [_entry(m, doc) for m, doc in parts],
    }
