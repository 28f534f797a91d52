"""Did every case of the suite come back, exactly once? The check a merge of shards makes.

A run records its plan in ``settings.plan`` (:func:`plan_record`): how many cases the whole
suite holds, a digest of their ids (the suite's identity) and the ids of its own shard.
:func:`completeness` groups shards by suite, then names what is missing: a shard ``K/N`` that
no machine brought back (with how many cases it held), a case a shard planned but has no
record of (an interrupted or killed shard), a shard given twice by one machine, shards that
split the suite differently (their plans do not add up to the suite). Machines are kept apart
but share the suite: shard 1/2 from one machine and 2/2 from another (two hosted runners of
different CPUs) leave nothing missing, and a shard that ran on two machines is measured twice,
not duplicated. A merged summary keeps each of its shards' plans (:func:`kept_plan`), so a
merge of it with a late shard is checked too; summaries without a plan (older files) are
listed as unchecked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernbench.errors import KernbenchError
from kernbench.execution.balancing import history_ids
from kernbench.execution.sharding import parse_shard
from kernbench.results.model import record_case_id

__all__ = ["ShardPlan", "completeness", "completeness_of", "kept_plan", "plan_record", "problems",
           "shard_plan", "shard_plans"]


def suite_digest(case_ids: Iterable[str]) -> str:
    """SHA-256 of the sorted case ids, one a line: the same suite gives the same digest."""
    text = "\n".join(sorted(case_ids))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def plan_record(suite_ids: Sequence[str], shard_ids: Sequence[str]) -> dict[str, Any]:
    """``settings.plan`` of a run: the suite's size and digest, and this shard's case ids."""
    return {"suite_cases": len(suite_ids), "suite_digest": suite_digest(suite_ids),
            "case_ids": list(shard_ids)}


def _plan(document: Mapping[str, Any]) -> Mapping[str, Any] | None:
    plan = (document.get("settings") or {}).get("plan")
    if not isinstance(plan, Mapping) or not isinstance(plan.get("case_ids"), list):
        return None
    return plan


def _shard(document: Mapping[str, Any]) -> tuple[int, int]:
    shard = (document.get("settings") or {}).get("shard")
    if isinstance(shard, list) and len(shard) == 2 and all(isinstance(v, int) for v in shard):
        return shard[0], shard[1]
    return 1, 1


@dataclass(frozen=True)
class ShardPlan:
    """What one shard's summary says of its suite, with the planned cases it has no record
    of: all the check needs of a shard, so its records need not stay in memory."""

    source: str
    machine: str
    suite: str
    index: int
    total: int
    suite_cases: int
    planned: int
    missing: tuple[str, ...]


def shard_plan(source: str, document: Mapping[str, Any],
               records: Iterable[Mapping[str, Any]]) -> ShardPlan | None:
    """The plan of the shard `document` (summary.json, its results given as `records`); None
    when it records none (an older kernbench, a merged set)."""
    plan = _plan(document)
    if plan is None:
        return None
    ids = plan.get("case_ids") or []
    records = list(records)
    have = {record_case_id(record) for record in records}
    missing = [case_id for case_id in ids if case_id not in have]
    if missing:  # the plan may name a native-precision case by its id with * for precision
        have.update(history_ids(record)[1] for record in records)
        missing = [case_id for case_id in missing if case_id not in have]
    index, total = _shard(document)
    return ShardPlan(source, str((document.get("environment") or {}).get("fingerprint")
                                 or "unknown"), str(plan.get("suite_digest")), index, total,
                     int(plan.get("suite_cases") or 0), len(ids), tuple(missing))


def shard_plans(source: str, document: Mapping[str, Any],
                records: Iterable[Mapping[str, Any]]) -> tuple[ShardPlan, ...]:
    """The plans of the shards `document` holds: its own (:func:`shard_plan`), or for a merged
    summary those its ``settings.shards`` entries kept (:func:`kept_plan`), so that a merge
    can be merged again with a late shard and still be checked; () when none is recorded."""
    own = shard_plan(source, document, records)
    if own is not None:
        return (own,)
    plans = []
    for entry in (document.get("settings") or {}).get("shards") or []:
        kept = entry.get("plan") if isinstance(entry, Mapping) else None
        if not isinstance(kept, Mapping):
            return ()  # a shard of it is unchecked, so the merge of it is too
        try:  # not sharded: the whole suite
            index, total = parse_shard(str(entry.get("shard") or "1/1"))
        except KernbenchError:
            return ()
        plans.append(ShardPlan(source, str(entry.get("fingerprint") or "unknown"),
                               str(kept.get("suite_digest")), index, total,
                               int(kept.get("suite_cases") or 0), int(kept.get("planned") or 0),
                               tuple(str(c) for c in kept.get("missing") or [])))
    return tuple(plans)


def kept_plan(plan: ShardPlan) -> dict[str, Any]:
    """What a merged summary keeps of a shard's plan, in its ``settings.shards`` entry."""
    return {"suite_cases": plan.suite_cases, "suite_digest": plan.suite, "planned": plan.planned,
            "missing": list(plan.missing)}


def _check_suite(digest: str, shards: Sequence[ShardPlan],
                 found: dict[str, Any]) -> None:
    """Adds the suite's missing shards, missing cases and doubled shards to `found`."""
    by_index: dict[int, dict[str, list[str]]] = {}
    total, suite_cases, planned = 1, 0, 0
    machines = sorted({shard.machine for shard in shards})
    for shard in shards:
        total, suite_cases = shard.total, shard.suite_cases
        on_index = by_index.setdefault(shard.index, {})
        if len(on_index) == 0:  # the suite's share of this shard counts once
            planned += shard.planned
        on_index.setdefault(shard.machine, []).append(shard.source)
        if len(on_index[shard.machine]) > 1:
            continue
        found["missing_cases"].extend(
            {"case_id": case_id, "source": shard.source, "fingerprint": shard.machine}
            for case_id in shard.missing)
    absent = [k for k in range(1, total + 1) if k not in by_index]
    if not absent and planned != suite_cases:  # shards split the suite differently
        found["plan_mismatches"].append(
            {"suite": digest, "fingerprints": machines, "planned": planned,
             "suite_cases": suite_cases, "sources": [shard.source for shard in shards]})
    for index in absent:
        found["missing_shards"].append(
            {"shard": f"{index}/{total}", "suite": digest, "fingerprints": machines,
             "cases": (suite_cases - planned) if len(absent) == 1 else None})
    found["duplicated_shards"].extend(
        {"shard": f"{index}/{total}", "suite": digest, "fingerprint": machine,
         "sources": names}
        for index, on_index in sorted(by_index.items())
        for machine, names in sorted(on_index.items()) if len(names) > 1)


def completeness(documents: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """What of each suite is missing or doubled across the shard `documents`
    (``(source, migrated summary)`` pairs): ``complete`` is true when nothing is."""
    return completeness_of([(source, plan) for source, document in documents
                            for plan in (shard_plans(source, document,
                                                     document.get("results") or []) or (None,))])


def completeness_of(plans: Sequence[tuple[str, ShardPlan | None]]) -> dict[str, Any]:
    """:func:`completeness` from each shard's :func:`shard_plan` (None: no plan, unchecked)."""
    groups: dict[str, list[ShardPlan]] = {}  # by suite: machines share it (module docstring)
    unchecked = []
    for source, plan in plans:
        if plan is None:
            unchecked.append(source)
        else:
            groups.setdefault(plan.suite, []).append(plan)
    found: dict[str, Any] = {"complete": True, "missing_shards": [], "missing_cases": [],
                             "duplicated_shards": [], "plan_mismatches": [],
                             "unchecked": unchecked}
    for digest, shards in groups.items():
        _check_suite(digest, shards, found)
    found["complete"] = not (found["missing_shards"] or found["missing_cases"]
                             or found["duplicated_shards"] or found["plan_mismatches"])
    return found


def problems(found: Mapping[str, Any], limit: int = 20) -> list[str]:
    """One line per missing shard, missing case (the first `limit`) or doubled shard."""
    lines = []
    for shard in found.get("missing_shards") or []:
        held = "" if shard.get("cases") is None else f", {shard['cases']} cases"
        ran = ", ".join(shard.get("fingerprints") or []) or "none"
        lines.append(f"missing: shard {shard['shard']} of suite {shard['suite']} never came "
                     f"back from any machine{held} (its other shards ran on {ran})")
    cases = found.get("missing_cases") or []
    lines.extend(f"missing: case {c['case_id']} (planned by {c['source']}, no record)"
                 for c in cases[:limit])
    if len(cases) > limit:
        lines.append(f"missing: {len(cases) - limit} more cases (see completeness in "
                     "summary.json)")
    lines.extend(f"duplicated: shard {d['shard']} of suite {d['suite']} is given "
                 f"{len(d['sources'])} times by machine {d['fingerprint']}: "
                 f"{', '.join(d['sources'])}"
                 for d in found.get("duplicated_shards") or [])
    lines.extend(f"mismatch: the shards of suite {m['suite']} planned {m['planned']} of its "
                 f"{m['suite_cases']} cases (split differently, e.g. balanced by different "
                 f"histories): {', '.join(m['sources'])}"
                 for m in found.get("plan_mismatches") or [])
    return lines
