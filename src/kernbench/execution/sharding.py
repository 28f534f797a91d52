"""Spread a suite over machines (``--shard K/N``) and merge the shards' summaries back.

Every item goes to exactly one of N shards, chosen from a key alone with SHA-256
(:func:`shard_of`), so the split is the same on every machine, Python version and run (unlike
``hash()``, which is salted per process) and needs no coordination. The runner keys by kernel
name, so all cases of a kernel (and its bench.yaml reference case) share a shard.  Each machine runs
``--shard K/N`` and writes its own summary.json; :func:`merge_summaries` joins them into one
summary document of the same shape as :func:`kernbench.results.serialize.summary_dict`.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar

from kernbench import __version__
from kernbench.errors import KernbenchError
from kernbench.results.model import STATUSES, record_case_id
from kernbench.results.schema import SCHEMA_VERSION, migrate

__all__ = ["merge_summaries", "parse_shard", "select_shard", "shard_of"]

T = TypeVar("T")

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
_FORM = "expected K/N with 1 <= K <= N, e.g. --shard 2/4"


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``: shard K (1-based) of N.  Anything else is a KernbenchError."""
    match = _SHARD.fullmatch(text)
    if match is None:
        raise KernbenchError(f"--shard {text!r}: {_FORM}")
    index, total = int(match.group(1)), int(match.group(2))
    if total < 1:
        raise KernbenchError(f"--shard {text!r}: N must be at least 1; {_FORM}")
    if index < 1:
        raise KernbenchError(f"--shard {text!r}: K must be at least 1 (shards count from 1); "
                             f"{_FORM}")
    if index > total:
        raise KernbenchError(f"--shard {text!r}: K ({index}) is larger than N ({total}); {_FORM}")
    return index, total


def shard_of(case_id: str, total: int) -> int:
    """The shard (1..total) of a case: SHA-256 of its UTF-8 ``case_id``, as an integer, mod N."""
    if total < 1:
        raise ValueError(f"the number of shards must be at least 1 (got {total})")
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest, "big") % total + 1


def select_shard(items: Sequence[T], key: Callable[[T], str],
                 shard: tuple[int, int]) -> list[T]:
    """The items of shard ``(K, N)``, in their original order; ``key`` gives an item's case id."""
    index, total = shard
    if not 1 <= index <= total:
        raise ValueError(f"shard {index}/{total}: expected 1 <= K <= N")
    return [item for item in items if shard_of(key(item), total) == index]


# --- merging shard summaries -------------------------------------------------------------


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


def merge_summaries(documents: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """One summary document from the ``(source label, summary.json document)`` of each shard.

    Documents are migrated to the current schema first (a newer one is refused).  Results are
    concatenated and sorted by (kernel_name, backend, precision); a case_id found in two
    documents is a KernbenchError naming both sources.  ``counts`` are recomputed,
    ``started_at`` is the earliest, ``finished_at`` the latest, ``complete`` is true only if
    every shard is complete; ``settings`` and ``environment`` are the first document's, with
    ``settings["shards"]`` listing the sources in the order given.  Inputs are not modified.
    """
    if not documents:
        raise KernbenchError("no shard summaries to merge")
    migrated = [(source, migrate(copy.deepcopy(dict(document)), source))
                for source, document in documents]
    seen: dict[str, str] = {}
    records: list[tuple[Mapping[str, Any], str]] = []
    for source, document in migrated:
        for record in document.get("results") or []:
            case_id = record_case_id(record)
            if case_id in seen:
                raise KernbenchError(f"case {case_id} is in two shard summaries: "
                                     f"{seen[case_id]} and {source}")
            seen[case_id] = source
            records.append((record, source))
    records.sort(key=lambda pair: _order(pair[0]))
    sources = [source for source, _ in migrated]
    first = migrated[0][1]
    return {
        "schema_version": SCHEMA_VERSION,
        "kernbench_version": __version__,
        "started_at": _extreme([d.get("started_at") for _, d in migrated], sources, False),
        "finished_at": _extreme([d.get("finished_at") for _, d in migrated], sources, True),
        "complete": all(d.get("complete") is True for _, d in migrated),
        "settings": {**(first.get("settings") or {}), "shards": sources},
        "environment": first.get("environment") or {},
        "counts": _tally([r for r, _ in records], [s for _, s in records]),
        "regression_thresholds": {k: v for _, d in migrated
                                  for k, v in (d.get("regression_thresholds") or {}).items()},
        "implementations": {k: v for _, d in migrated
                            for k, v in (d.get("implementations") or {}).items()},
        "results": [r for r, _ in records],
    }
