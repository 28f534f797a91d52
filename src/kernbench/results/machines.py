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

from collections.abc import Mapping, Sequence
from typing import Any

from kernbench.results.inputs import LoadedRun, run_from_document
from kernbench.results.model import STATUSES, CaseResult

__all__ = ["machine_label", "machine_names", "machine_part", "machine_runs", "machines_of",
           "split_comparison", "split_summary"]

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
    return [(machine, machine_part(summary, machine, [
        r for r in records if r.get("fingerprint") == machine.get("fingerprint")]))
        for machine in machines]


def machine_part(summary: Document, machine: Mapping[str, Any],
                 records: list[Mapping[str, Any]], counts: Mapping[str, int] | None = None
                 ) -> dict[str, Any]:
    """The summary `machine` alone would have given: its `records` (none for a summary read
    without them, as a streamed merge returns it), its `counts` (counted from the records
    when not given) and environment; the merged run's settings, times and completeness."""
    env = machine.get("environment")
    part = {key: value for key, value in summary.items() if key != "machines"}
    part.update(results=records, counts=dict(counts) if counts is not None else _counts(records),
                environment=dict(env) if isinstance(env, Mapping) else {})
    return part


def machine_runs(run: LoadedRun, summary: Document, source: str,
                 fingerprints: Sequence[Any] | None = None
                 ) -> list[tuple[Mapping[str, Any], LoadedRun]]:
    """``(machine, its cases)`` per machine of a merged summary whose records `run` holds
    (`summary` need not hold them: a streamed merge's is read back with ``load_run``), each
    with the run facts its machine's summary alone gives (named `source`). With
    `fingerprints`, one entry per fingerprint given, in that order (no cases for a machine
    the run lacks). A summary of one machine is that machine, with every record."""
    by_machine: dict[Any, list[CaseResult]] = {}
    parts: dict[Any, tuple[Mapping[str, Any], Mapping[str, Any]]] = {
        m.get("fingerprint"): (m, part) for m, part in split_summary(summary)}
    if parts:
        for result in run.results:
            by_machine.setdefault(result.fingerprint, []).append(result)
    else:
        env = summary.get("environment")
        own = env.get("fingerprint") if isinstance(env, Mapping) else None
        parts = {own: ({"fingerprint": own, "testbed": (env or {}).get("testbed")}, summary)}
        by_machine[own] = list(run.results)
    found = []
    for fingerprint in list(parts) if fingerprints is None else fingerprints:
        machine, part = parts.get(fingerprint, ({"fingerprint": fingerprint}, {}))
        meta = run_from_document({**part, "results": []}, source).meta
        found.append((machine, LoadedRun(by_machine.get(fingerprint, []), meta)))
    return found


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
