"""A report of several machines as one report per machine.

A merge with ``--allow-mixed`` keeps the shards of different machines (fingerprints) in one
summary: ``machines`` lists each machine (testbed, fingerprint, hosts, shards, environment)
and every record names its machine. Whatever ranks, judges or compares cases (findings,
leaderboards, A/B verdicts, history records, the PR comment) works on :func:`split_summary`'s
parts, each the summary one machine alone would have given, so nothing is ever ranked or
compared across machines. The documents may come from an untrusted artifact: entries that are
not mappings are skipped, never trusted to have a shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernbench.results.model import STATUSES

__all__ = ["machine_label", "machine_names", "machines_of", "split_comparison",
           "split_summary"]

Document = Mapping[str, Any]


def machines_of(summary: Document) -> list[Mapping[str, Any]]:
    """The machines a merged summary keeps apart; empty for a summary of one machine."""
    found = summary.get("machines")
    if not isinstance(found, list):
        return []
    return [m for m in found if isinstance(m, Mapping)]


def machine_label(machine: Mapping[str, Any]) -> str:
    """``gpu-runner (fingerprint 9f00deadbeef0001)``: testbeds may repeat (two hosted runners
    with different CPUs), the fingerprint tells them apart."""
    testbed = machine.get("testbed") or "unknown testbed"
    return f"{testbed} (fingerprint {machine.get('fingerprint') or 'unknown'})"


def machine_names(machines: list[Mapping[str, Any]]) -> list[str]:
    """What to call each machine in a list: its testbed where no other shares it, else
    :func:`machine_label` (testbed and fingerprint)."""
    testbeds = [m.get("testbed") for m in machines]
    return [str(m.get("testbed")) if m.get("testbed") and testbeds.count(m.get("testbed")) == 1
            else machine_label(m) for m in machines]


def _counts(results: list[Mapping[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {"total": len(results), **dict.fromkeys(STATUSES, 0)}
    for record in results:
        if record.get("status") in counts:
            counts[str(record["status"])] += 1
    return counts


def split_summary(summary: Document) -> list[tuple[Mapping[str, Any], dict[str, Any]]]:
    """``(machine, its summary)`` per machine of a merged summary, in its order; empty for a
    summary of one machine. Each part holds that machine's records, counts and environment
    (the merged run's settings, times and completeness otherwise)."""
    machines = machines_of(summary)
    if not machines:
        return []
    results = summary.get("results")
    records = [r for r in results if isinstance(r, Mapping)] if isinstance(results, list) else []
    parts = []
    for machine in machines:
        mine = [r for r in records if r.get("fingerprint") == machine.get("fingerprint")]
        env = machine.get("environment")
        part = {key: value for key, value in summary.items() if key != "machines"}
        part.update(results=mine, counts=_counts(mine),
                    environment=dict(env) if isinstance(env, Mapping) else {})
        parts.append((machine, part))
    return parts


def split_comparison(comparison: Document | None,
                     machine: Mapping[str, Any]) -> dict[str, Any] | None:
    """The comparison of one machine of a merged A/B (its entry in ``machines``, with its
    cases); None when the comparison holds none for it."""
    if comparison is None:
        return None
    entries = comparison.get("machines")
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, Mapping) and entry.get("fingerprint") == machine.get("fingerprint"):
            cases = comparison.get("cases")
            return {**{k: v for k, v in entry.items() if k not in ("testbed", "fingerprint")},
                    "cases": [c for c in cases if isinstance(c, Mapping)
                              and c.get("fingerprint") == machine.get("fingerprint")]
                    if isinstance(cases, list) else []}
    return None
