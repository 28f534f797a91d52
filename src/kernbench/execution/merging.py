"""Join the summaries of a suite's shards into one, keeping machines apart.

Each shard writes its own summary.json (``--shard K/N``, one machine each); :func:`merge_summaries`
joins them into one document of the same shape as
:func:`kernbench.analysis.summary.summary_dict`. A machine is its fingerprint: shards of
different machines are refused unless ``allow_mixed``, and then kept apart as separate
machines in one report (``machines``, records ordered by testbed), never under one machine's
environment. Whether every case of the suite came back is :mod:`kernbench.execution.completeness`;
whether the shards are of one run (measured alike, one suite, one tree), so that the first
shard's ``settings`` stand for every case, is :mod:`kernbench.execution.run_identity`.

The merge works shard by shard, so that a merge of many shards need not hold every record:
:func:`read_shard` takes one shard's summary (its records, each with a JSON text of it from
:func:`kernbench.results.jsontext.split_records`) and keeps of it only what the merged summary
needs besides the records (a :class:`ShardHead`); :func:`merged_order` joins the shards'
records, each shard's already in merge order, and refuses a case found twice on one machine;
:func:`merged_header` is the rest of the merged summary. :func:`merge_summaries` does all
three in memory; :func:`kernbench.api.reports.merge_shards` streams the records through a
file instead.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kernbench import __version__
from kernbench.errors import KernbenchError
from kernbench.execution.completeness import ShardPlan, completeness_of, kept_plan, shard_plans
from kernbench.execution.resume import merged_sources
from kernbench.execution.run_identity import (
    SELECTION_SETTINGS,
    OneRun,
    RunIdentity,
    run_identity,
)
from kernbench.results.history_names import parse_instant
from kernbench.results.model import STATUSES, record_case_id
from kernbench.results.schema import SCHEMA_VERSION, migrate

__all__ = ["Entry", "ShardHead", "check_one_machine", "machine_key", "machines",
           "merge_sorted", "merge_summaries", "merged_header", "merged_order", "read_shard"]

Document = Mapping[str, Any]
Key = tuple[str, str, str]
Entry = tuple[Key, str, Any]
"""A record in merge order: (kernel, backend, precision), its case id, and the record itself
or its JSON text."""


def machine_key(environment: Mapping[str, Any]) -> str:
    """What tells machines apart in a merge: the fingerprint ("unknown" when there is none)."""
    return str(environment.get("fingerprint") or "unknown")


@dataclass(frozen=True)
class ShardHead:
    """What the merged summary needs of one shard besides its records: its summary without
    them (and without its plan), what its plan says, and how many cases of each status."""

    source: str
    document: dict[str, Any]
    plans: tuple[ShardPlan, ...]
    """Its own plan, or for a merged summary its shards' (() when none is recorded)."""
    tally: dict[str, int]

    @property
    def merged(self) -> bool:
        """A merge of shards (its ``settings.shards`` entries name their sources)."""
        return bool(merged_sources(self.document))

    @property
    def environment(self) -> dict[str, Any]:
        return self.document.get("environment") or {}

    @property
    def machine(self) -> str:
        return machine_key(self.environment)

    @property
    def identity(self) -> RunIdentity:
        """What it shares with every other shard of its run
        (:mod:`kernbench.execution.run_identity`)."""
        return run_identity(self.source, self.document,
                            self.plans[0].suite if self.plans else None, self.machine)


def _order(record: Mapping[str, Any]) -> Key:
    return (str(record.get("kernel_name")), str(record.get("backend")),
            str(record.get("precision")))


def read_shard(source: str, document: dict[str, Any],
               texts: Sequence[str] | None = None) -> tuple[ShardHead, list[Entry]]:
    """One shard's summary (`document`, with its ``results``; migrated here, and changed in
    place) as its head and its records in merge order (kernel, backend, precision; stable).

    Each record takes the shard's machine (``fingerprint``, ``testbed``) where it names none.
    With `texts` (each record's JSON text on one line, aligned with the results, as
    :func:`kernbench.results.jsontext.split_records` gives them), an entry holds the record
    and that text (made anew only for a record that changed); without, the record alone. An
    unknown status is a KernbenchError naming the source, and so is a summary that is itself a
    merge of several machines (its records would be filed under one)."""
    version = document.get("schema_version")
    document = migrate(document, source)
    several = document.get("machines")
    if isinstance(several, list) and len(several) > 1:
        names = ", ".join(str(m.get("testbed") or m.get("fingerprint")) for m in several
                          if isinstance(m, Mapping))
        raise KernbenchError(
            f"{source} is itself a merge of {len(several)} machines ({names}): merged again, "
            "they would be filed under one machine. Merge the shards it was made of instead "
            "(with --allow-mixed)")
    keep_texts = texts is not None and version == SCHEMA_VERSION  # a migration may change them
    results = document.get("results") or []
    env = document.get("environment") or {}
    machine = {"fingerprint": env.get("fingerprint"), "testbed": env.get("testbed")}
    tally: dict[str, int] = {status: 0 for status in STATUSES}
    entries: list[Entry] = []
    for index, record in enumerate(results):
        status = record.get("status")
        if status not in STATUSES:
            raise KernbenchError(f"{source}: case {record_case_id(record)} has an unknown status "
                                 f"{status!r} (expected one of {', '.join(STATUSES)})")
        tally[status] += 1
        changed = False
        for key, value in machine.items():
            if key not in record:
                record[key], changed = value, True
        payload: Any = record
        if texts is not None:
            text = texts[index] if keep_texts and not changed else json.dumps(record)
            payload = (record, text)
        entries.append((_order(record), record_case_id(record), payload))
    entries.sort(key=lambda entry: entry[0])
    plans = shard_plans(source, document, results)
    head = {k: v for k, v in document.items() if k != "results"}
    settings = head.get("settings")
    if isinstance(settings, Mapping) and "plan" in settings:  # its case ids are in `plan`
        head["settings"] = {k: v for k, v in settings.items() if k != "plan"}
    return ShardHead(source, head, plans, tally), entries


def _machine_label(environment: Mapping[str, Any]) -> str:
    return (f"{environment.get('testbed') or environment.get('hostname') or 'unknown'} "
            f"(fingerprint {machine_key(environment)})")


def check_one_machine(heads: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
    """KernbenchError naming two shards of different machines and ``--allow-mixed``; `heads`
    are (source, environment) pairs."""
    first_source, first_env = heads[0]
    for source, env in heads[1:]:
        if machine_key(env) != machine_key(first_env):
            raise KernbenchError(
                f"the shards ran on different machines: {first_source} on "
                f"{_machine_label(first_env)} and {source} on {_machine_label(env)}; their "
                "figures cannot share one machine's report. Merge each machine's shards "
                "apart, or pass --allow-mixed to keep the machines apart in one report "
                "(grouped by testbed, never compared across)")


def machines(heads: Sequence[ShardHead]) -> list[dict[str, Any]]:
    """One entry per machine (fingerprint), ordered by testbed: its environment and shards."""
    found: dict[str, dict[str, Any]] = {}
    for head in heads:
        env = head.environment
        entry = found.setdefault(head.machine, {
            "fingerprint": env.get("fingerprint"), "testbeds": [], "hosts": [], "shards": [],
            "cases": 0, "environment": env})
        for key, value in (("testbeds", env.get("testbed")), ("hosts", env.get("hostname"))):
            if value is not None and value not in entry[key]:
                entry[key].append(value)
        entry["shards"].append(head.source)
        entry["cases"] += sum(head.tally.values())
    for entry in found.values():
        entry["testbed"] = ",".join(entry["testbeds"]) or None
    return sorted(found.values(), key=lambda m: (str(m["testbed"]), str(m["fingerprint"])))


def merged_order(runs: Sequence[Iterable[Entry]], heads: Sequence[ShardHead],
                 found: Sequence[Mapping[str, Any]]) -> Iterator[Any]:
    """The payloads of every shard's entries (`runs`, each in merge order, aligned with
    `heads`): machines in the order of `found` (:func:`machines`), then kernel, backend,
    precision, then the order of the shards. A case twice on one machine is a
    KernbenchError naming both sources; the records of one (machine, kernel, backend,
    precision) are next to each other, so only theirs are held to tell."""
    rank = {machine_key(m["environment"]): index for index, m in enumerate(found)}

    def ranked(index: int) -> Iterator[tuple[tuple[int, Key], int, str, Any]]:
        order = rank[heads[index].machine]
        return (((order, key), index, case_id, payload) for key, case_id, payload in runs[index])

    current: tuple[int, Key] | None = None
    seen: dict[str, str] = {}
    # tuples compare by (machine rank, key), then by shard: never by case id or payload
    for key, index, case_id, payload in merge_sorted(list(map(ranked, range(len(runs))))):
        if key != current:
            current, seen = key, {}
        source = heads[index].source
        if case_id in seen:
            raise KernbenchError(f"case {case_id} is in two shard summaries: "
                                 f"{seen[case_id]} and {source}")
        seen[case_id] = source
        yield payload


def merge_sorted(runs: Sequence[Iterator[Any]]) -> Iterator[Any]:
    """The items of the sorted `runs` in order, as :func:`heapq.merge` gives them, where no two
    items of different runs compare equal. A run's items are taken one after another without
    the heap while they come before every other run's next item: shards that hold different
    kernels cost a comparison per record, not a heap operation."""
    heap = [(first, run) for run in runs for first in itertools.islice(run, 1)]
    heapq.heapify(heap)  # (item, run): items of two runs never compare equal, runs never compare
    while len(heap) > 1:
        item, run = heap[0]
        yield item
        bound = heap[1][0] if len(heap) < 3 or heap[1][0] < heap[2][0] else heap[2][0]
        for item in run:
            if item < bound:
                yield item
                continue
            heapq.heapreplace(heap, (item, run))
            break
        else:
            heapq.heappop(heap)
    if heap:
        yield heap[0][0]
        yield from heap[0][1]


def _extreme(values: Sequence[Any], labels: Sequence[str], latest: bool) -> str | None:
    """The earliest (or latest) of the ISO times among ``values``; None when there are none."""
    times: list[tuple[datetime, str]] = []
    for value, label in zip(values, labels, strict=True):
        if value is None:
            continue
        try:
            times.append((parse_instant(str(value)), str(value)))
        except ValueError:
            raise KernbenchError(f"{label}: {value!r} is not an ISO 8601 time") from None
    if not times:
        return None
    pick = max if latest else min
    return pick(times, key=lambda pair: pair[0])[1]


def _finished(head: ShardHead) -> bool:
    """The shard says it finished; a merge's own flag counts only where its shards' plans are
    not all kept (the check of this merge redoes what that flag said)."""
    return head.document.get("complete") is True or (head.merged and bool(head.plans))


def _identity(head: ShardHead) -> list[dict[str, Any]]:
    """The shard identities a document lists (a merged one lists several), with its source,
    its plan (:func:`kept_plan`) and what selected its cases (``selection``: the
    :data:`SELECTION_SETTINGS`)."""
    source, document = head.source, head.document
    settings = document.get("settings") or {}
    listed = settings.get("shards") or []
    env = document.get("environment") or {}
    entries = [dict(entry) for entry in listed if isinstance(entry, Mapping)]
    if not entries:
        entries = [{"shard": None, "host": env.get("hostname"), "testbed": env.get("testbed"),
                    "fingerprint": env.get("fingerprint"), "scheduler": {}}]
    if not head.merged and len(head.plans) == len(entries) == 1:
        entries[0]["plan"] = kept_plan(head.plans[0])
    selection = {key: settings.get(key) for key in SELECTION_SETTINGS}  # one per document:
    # a merge of one machine's shards shares one, and one of several is refused (read_shard)
    return [{"source": source, **entry, "selection": selection} for entry in entries]


def _merged_settings(first: Document, heads: Sequence[ShardHead]) -> dict[str, Any]:
    """The first shard's settings, with every shard's identity in ``shards``. Machines of a
    mixed merge may each have selected their own cases (backends, filters, ...): a selection
    key the shards differ in is null, and each shard's entry says its own (``selection``, only
    then)."""
    shards = [entry for head in heads for entry in _identity(head)]
    differ = [key for key in SELECTION_SETTINGS
              if len({json.dumps(e["selection"].get(key), sort_keys=True, default=str)
                      for e in shards}) > 1]
    if not differ:
        shards = [{k: v for k, v in entry.items() if k != "selection"} for entry in shards]
    # output_dir: the first shard's was shown as the merge's; each shard's is in its `source`
    return {**(first.get("settings") or {}), **dict.fromkeys(differ), "output_dir": None,
            "shards": shards}


def _environment(found: Sequence[Mapping[str, Any]], first: Document) -> dict[str, Any]:
    """One machine: its environment. Several: no machine's figures stand for the others."""
    if len(found) == 1:
        return dict(first.get("environment") or {})
    return {"fingerprint": None, "hostname": None, "testbed": None,
            "git": (first.get("environment") or {}).get("git"),
            "mixed": [m["testbed"] for m in found]}


def merged_header(heads: Sequence[ShardHead], found: Sequence[Mapping[str, Any]]
                  ) -> dict[str, Any]:
    """The merged summary but its ``results`` (which come last, as an empty list here); see
    :func:`merge_summaries`. `found`: the :func:`machines` of `heads`."""
    documents = [head.document for head in heads]
    sources = [head.source for head in heads]
    check = completeness_of([(head.source, plan) for head in heads
                             for plan in (head.plans or (None,))])
    first = documents[0]
    tally: dict[str, int] = {"total": sum(sum(head.tally.values()) for head in heads)}
    tally.update({status: sum(head.tally[status] for head in heads) for status in STATUSES})
    merged: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kernbench_version": __version__,
        "started_at": _extreme([d.get("started_at") for d in documents], sources, False),
        "finished_at": _extreme([d.get("finished_at") for d in documents], sources, True),
        "complete": check["complete"] and all(_finished(head) for head in heads),
        "settings": _merged_settings(first, heads),
        "environment": _environment(found, first),
        "counts": tally,
        "regression_thresholds": {k: v for d in documents
                                  for k, v in (d.get("regression_thresholds") or {}).items()},
        "implementations": {k: v for d in documents
                            for k, v in (d.get("implementations") or {}).items()},
        "completeness": check,
    }
    unfinished = [c for d in documents for c in d.get("unfinished_cases") or []]
    if unfinished:  # cases an interrupted shard left short of their processes
        merged["unfinished_cases"] = unfinished
    if len(found) > 1:
        merged["machines"] = [{k: v for k, v in m.items() if k != "testbeds"} for m in found]
    merged["results"] = []
    return merged


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
    complete; shards that are not of one run (measured otherwise, another suite or tree) are
    a KernbenchError naming two of them and what differs, even with `allow_mixed`
    (:class:`kernbench.execution.run_identity.OneRun`), so ``settings`` are the first
    document's, and true of every case, but for a selection key (backends, filters, ...) the
    machines of a mixed merge differ in, which is null; ``settings["shards"]`` lists each
    shard's identity (source, shard, host, testbed, fingerprint, scheduler ids, and then its
    ``selection``) in the order given. Inputs are not modified, unless `owned` (documents
    read for this merge alone: their records then go into the result as they are, without a
    copy).
    """
    if not documents:
        raise KernbenchError("no shard summaries to merge")
    migrated = [(source, migrate(dict(document) if owned else copy.deepcopy(dict(document)),
                                 source)) for source, document in documents]
    if not allow_mixed:
        check_one_machine([(source, d.get("environment") or {}) for source, d in migrated])
    read = [read_shard(source, document) for source, document in migrated]
    heads = [head for head, _ in read]
    one_run = OneRun()
    for head in heads:
        one_run.add(head.identity)
    found = machines(heads)
    merged = merged_header(heads, found)
    merged["results"] = list(merged_order([entries for _, entries in read], heads, found))
    return merged
