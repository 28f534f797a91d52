"""Join the summaries of a suite's shards into one, keeping machines apart.

Each shard writes its own summary.json (``--shard K/N``, one machine each); :func:`merge_summaries`
joins them into one document of the same shape as
:func:`kernbench.analysis.summary.summary_dict`. A machine is its fingerprint: shards of
different fingerprints are refused unless ``allow_mixed``, and then kept apart as separate
machines in one report (``machines``, records ordered by testbed), never under one machine's
environment. Whether every case of the suite came back is :mod:`kernbench.execution.completeness`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from kernbench import __version__
from kernbench.errors import KernbenchError
from kernbench.execution.completeness import completeness
from kernbench.results.model import STATUSES, record_case_id
from kernbench.results.schema import SCHEMA_VERSION, migrate

__all__ = ["machine_key", "merge_summaries"]

Document = Mapping[str, Any]


def machine_key(environment: Mapping[str, Any]) -> str:
    """What tells machines apart in a merge: the fingerprint ("unknown" when there is none)."""
    return str(environment.get("fingerprint") or "unknown")


def _order(record: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(record.get("kernel_name")), str(record.get("backend")),
            str(record.get("precision")))


def _tally(records: Sequence[Mapping[str, Any]], sources: Sequence[str]) -> dict[str, int]:
    """Counts as :func:`kernbench.results.serialize.counts` makes them, from records' ``status``."""
    tally: dict[str, int] = {"total": len(records), **{status: 0 for status in STATUSES}}
    for record, source in zip(records, sources, strict=True):
        status = record.get("status")
        if status not in STATUSES:
            raise KernbenchError(f"{source}: case {record_case_id(record)} has an unknown status "
                                 f"{status!r} (expected one of {', '.join(STATUSES)})")
        tally[status] += 1
    return tally


def _instant(text: str) -> datetime:
    """An ISO 8601 time (``Z`` allowed) as an aware datetime; naive ones are taken as UTC."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _extreme(values: Sequence[Any], labels: Sequence[str], latest: bool) -> str | None:
    """The earliest (or latest) of the ISO times among ``values``; None when there are none."""
    times: list[tuple[datetime, str]] = []
    for value, label in zip(values, labels, strict=True):
        if value is None:
            continue
        try:
            times.append((_instant(str(value)), str(value)))
        except ValueError:
            raise KernbenchError(f"{label}: {value!r} is not an ISO 8601 time") from None
    if not times:
        return None
    pick = max if latest else min
    return pick(times, key=lambda pair: pair[0])[1]


def _machine_label(environment: Mapping[str, Any]) -> str:
    return (f"{environment.get('testbed') or environment.get('hostname') or 'unknown'} "
            f"(fingerprint {machine_key(environment)})")


def _check_one_machine(migrated: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """KernbenchError naming two shards of different machines and ``--allow-mixed``."""
    first_source, first = migrated[0]
    first_env = first.get("environment") or {}
    for source, document in migrated[1:]:
        env = document.get("environment") or {}
        if machine_key(env) != machine_key(first_env):
            raise KernbenchError(
                f"the shards ran on different machines: {first_source} on "
                f"{_machine_label(first_env)} and {source} on {_machine_label(env)}; their "
                "figures cannot share one machine's report. Merge each machine's shards "
                "apart, or pass --allow-mixed to keep the machines apart in one report "
                "(grouped by testbed, never compared across)")


def _machines(migrated: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One entry per machine (fingerprint), ordered by testbed: its environment and shards."""
    found: dict[str, dict[str, Any]] = {}
    for source, document in migrated:
        env = document.get("environment") or {}
        entry = found.setdefault(machine_key(env), {
            "fingerprint": env.get("fingerprint"), "testbeds": [], "hosts": [], "shards": [],
            "cases": 0, "environment": env})
        for key, value in (("testbeds", env.get("testbed")), ("hosts", env.get("hostname"))):
            if value is not None and value not in entry[key]:
                entry[key].append(value)
        entry["shards"].append(source)
        entry["cases"] += len(document.get("results") or [])
    for entry in found.values():
        entry["testbed"] = ",".join(entry["testbeds"]) or None
    return sorted(found.values(), key=lambda m: (str(m["testbed"]), str(m["fingerprint"])))


def _records(migrated: Sequence[tuple[str, dict[str, Any]]],
             rank: Mapping[str, int]) -> list[tuple[dict[str, Any], str]]:
    """Every record with its source, machines in `rank` order, then kernel, backend,
    precision; a case twice on one machine is a KernbenchError naming both sources."""
    seen: dict[tuple[str, str], str] = {}
    records: list[tuple[tuple[int, str, str, str], dict[str, Any], str]] = []
    for source, document in migrated:
        env = document.get("environment") or {}
        machine = machine_key(env)
        for record in document.get("results") or []:
            case_id = record_case_id(record)
            if (machine, case_id) in seen:
                raise KernbenchError(f"case {case_id} is in two shard summaries: "
                                     f"{seen[(machine, case_id)]} and {source}")
            seen[(machine, case_id)] = source
            record.setdefault("fingerprint", env.get("fingerprint"))
            record.setdefault("testbed", env.get("testbed"))
            records.append(((rank[machine], *_order(record)), record, source))
    records.sort(key=lambda entry: entry[0])
    return [(record, source) for _, record, source in records]


def _identity(source: str, document: Document) -> list[dict[str, Any]]:
    """The shard identities a document lists (a merged one lists several), with its source."""
    listed = (document.get("settings") or {}).get("shards") or []
    env = document.get("environment") or {}
    entries = [dict(entry) for entry in listed if isinstance(entry, Mapping)]
    if not entries:
        entries = [{"shard": None, "host": env.get("hostname"), "testbed": env.get("testbed"),
                    "fingerprint": env.get("fingerprint"), "scheduler": {}}]
    return [{"source": source, **entry} for entry in entries]


def _environment(machines: Sequence[Mapping[str, Any]], first: Document) -> dict[str, Any]:
    """One machine: its environment. Several: no machine's figures stand for the others."""
    if len(machines) == 1:
        return dict(first.get("environment") or {})
    return {"fingerprint": None, "hostname": None, "testbed": None,
            "git": (first.get("environment") or {}).get("git"),
            "mixed": [m["testbed"] for m in machines]}


def merge_summaries(documents: Sequence[tuple[str, Document]],
                    allow_mixed: bool = False, owned: bool = False) -> dict[str, Any]:
    """One summary document from the ``(source label, summary.json document)`` of each shard.

    Documents are migrated to the current schema first (a newer one is refused). Shards of
    different machines (fingerprints) are refused unless `allow_mixed`; then ``machines``
    lists each machine and the records are ordered by its testbed first. Results are sorted
    by (kernel_name, backend, precision); a case_id found twice on one machine is a
    KernbenchError naming both sources. ``counts`` are recomputed, ``started_at`` is the
    earliest, ``finished_at`` the latest; ``completeness`` says which cases of the suite did
    not come back, and ``complete`` is true only if none is missing and every shard is
    complete; ``settings`` are the first document's, with ``settings["shards"]`` listing each
    shard's identity (source, shard, host, testbed, fingerprint, scheduler ids) in the order
    given. Inputs are not modified, unless `owned` (documents read for this merge alone: their
    records then go into the result as they are, without a copy).
    """
    if not documents:
        raise KernbenchError("no shard summaries to merge")
    migrated = [(source, migrate(dict(document) if owned else copy.deepcopy(dict(document)),
                                 source)) for source, document in documents]
    if not allow_mixed:
        _check_one_machine(migrated)
    machines = _machines(migrated)
    rank = {machine_key(m["environment"]): i for i, m in enumerate(machines)}
    records = _records(migrated, rank)
    found = completeness(migrated)
    sources = [source for source, _ in migrated]
    first = migrated[0][1]
    merged: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kernbench_version": __version__,
        "started_at": _extreme([d.get("started_at") for _, d in migrated], sources, False),
        "finished_at": _extreme([d.get("finished_at") for _, d in migrated], sources, True),
        "complete": found["complete"] and all(d.get("complete") is True for _, d in migrated),
        "settings": {**(first.get("settings") or {}),
                     "shards": [e for s, d in migrated for e in _identity(s, d)]},
        "environment": _environment(machines, first),
        "counts": _tally([r for r, _ in records], [s for _, s in records]),
        "regression_thresholds": {k: v for _, d in migrated
                                  for k, v in (d.get("regression_thresholds") or {}).items()},
        "implementations": {k: v for _, d in migrated
                            for k, v in (d.get("implementations") or {}).items()},
        "completeness": found,
        "results": [r for r, _ in records],
    }
    merged["settings"].pop("plan", None)  # one shard's plan; `completeness` speaks for all
    if len(machines) > 1:
        merged["machines"] = [{k: v for k, v in m.items() if k != "testbeds"} for m in machines]
    return merged
