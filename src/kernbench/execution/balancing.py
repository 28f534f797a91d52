"""Balance ``--shard K/N`` by measured wall time, when a history says how long cases take.

With a history, :func:`balanced_groups` puts each kernel (all its cases stay together) on a
shard by longest-first greedy: kernels in order of expected wall time, longest first (ties by
name), each onto the shard with the least expected time so far (ties by shard number).
Without one, :func:`counted_groups`, the same greedy split with every case counting one,
balances the shards by count. The split depends only on the suite and the history, so every
shard that sees the same ones computes the same split. (``--ab`` shards split both sides'
suites together by count, so that a kernel's baseline and candidate, whose trees may hold
different kernels, share a shard: :func:`kernbench.execution.ab.shard_sides`.)

A case's expected wall time (:func:`case_walls_s`) is what the newest history record holding
it measured: the sum of its samples times the inner loop count (1 where an older record does
not say), plus, for each of its worker processes, a worker's start and its warm-up: the warm-up
the record measured (``warmup_s``, its longest process's: a JAX case's settling, a JIT's first
calls; an implementation's ``compile:`` runs before it and is not counted) or, in older
records, the run's ``--warmup-time``. A kernel's cases that no record holds count as the
median of the known cases.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from kernbench.results.model import case_id_of, point_of, record_case_id

__all__ = ["Balance", "balanced_groups", "case_walls_s", "counted_groups", "describe_balance",
           "describe_split", "history_ids"]

T = TypeVar("T")

WORKER_START_S = 0.15
"""Estimated cost of starting a case's worker process and reading its reply, in seconds."""


@dataclass(frozen=True)
class Balance:
    """A split of a suite's groups (kernels) over N shards by expected wall time."""

    shard_of: Mapping[str, int]
    """Group key -> shard (1..N)."""
    expected_s: tuple[float, ...]
    """Expected wall time of each shard, shard 1 first."""
    known_cases: int
    """How many planned cases a history record measured (the rest are estimated)."""


def history_ids(result: Mapping[str, Any]) -> tuple[str, str]:
    """The ids a planned case may know a history or summary record by: its case id, and the
    same with ``*`` for the precision (a native-precision case's record names its output's)."""
    case_id = record_case_id(result)
    kernel, backend = str(result.get("kernel_name")), str(result.get("backend"))
    implementation = result.get("implementation")
    point = point_of(case_id, kernel, backend, str(result.get("precision")), implementation)
    return case_id, case_id_of(kernel, backend, "*", point, implementation)


def _wall_s(result: Mapping[str, Any], warmup_s: float, start_s: float) -> float | None:
    timing = result.get("timing") or {}
    samples = result.get("samples_ms") or timing.get("samples_ms")
    if not samples:
        return None
    loops = result.get("inner_loops") or timing.get("inner_loops") or 1
    processes = len(result.get("process_sample_counts")
                    or timing.get("process_sample_counts") or [None])
    measured = result.get("warmup_s", timing.get("warmup_s"))
    warm = float(measured) if isinstance(measured, (int, float)) else warmup_s
    return (sum(float(x) for x in samples if x is not None) * int(loops) / 1000.0
            + processes * (start_s + warm))


def case_walls_s(records: Iterable[Mapping[str, Any]], warmup_s: float,
                 start_s: float = WORKER_START_S) -> dict[str, float]:
    """Expected wall time (s) of each case id the `records` (newest first) measured: the
    newest measurement of a case wins. Cases without samples (failed, skipped) are left out.
    `warmup_s`: the warm-up of a process whose record did not measure its own."""
    walls: dict[str, float] = {}
    for record in records:
        for result in record.get("results") or []:
            wall = _wall_s(result, warmup_s, start_s)
            if wall is None:
                continue
            for case_id in history_ids(result):
                walls.setdefault(case_id, wall)
    return walls


def _group_walls(items: Sequence[T], group: Callable[[T], str], ident: Callable[[T], str],
                 walls: Mapping[str, float]) -> tuple[dict[str, float], int]:
    known = [walls[ident(item)] for item in items if ident(item) in walls]
    default = statistics.median(known) if known else 0.0
    totals: dict[str, float] = {}
    for item in items:
        key = group(item)
        totals[key] = totals.get(key, 0.0) + walls.get(ident(item), default)
    return totals, len(known)


def balanced_groups(items: Sequence[T], group: Callable[[T], str], ident: Callable[[T], str],
                    walls: Mapping[str, float], total: int) -> Balance | None:
    """Longest-first greedy split of the groups of `items` over `total` shards by the
    expected wall times `walls` (by :func:`history_ids`-style case id, ``ident(item)``);
    None when no planned case has a measured time (then split by count)."""
    if total < 1:
        raise ValueError(f"the number of shards must be at least 1 (got {total})")
    totals, known = _group_walls(items, group, ident, walls)
    if known == 0:
        return None
    loads = [0.0] * total
    assigned: dict[str, int] = {}
    for key, wall in sorted(totals.items(), key=lambda pair: (-pair[1], pair[0])):
        index = min(range(total), key=lambda i: (loads[i], i))
        assigned[key] = index + 1
        loads[index] += wall
    return Balance(assigned, tuple(loads), known)


def counted_groups(items: Sequence[T], group: Callable[[T], str], ident: Callable[[T], str],
                   total: int) -> dict[str, int]:
    """Group key -> shard (1..`total`) by count: :func:`balanced_groups` with every item
    counting one, so shards differ by at most one group's items ({} for no items)."""
    counted = balanced_groups(items, group, ident, dict.fromkeys(map(ident, items), 1.0), total)
    return dict(counted.shard_of) if counted is not None else {}


def describe_balance(shard: tuple[int, int], balance: Mapping[str, Any]) -> str:
    """One line on how a shard's suite was split (``settings.plan.balance``)."""
    index, total = shard
    if balance.get("by") != "history":
        return f"shard {index}/{total}: split by count (no history measured these cases)"
    expected = [float(s) for s in balance.get("expected_s") or []]
    each = ", ".join(f"{k}/{total} {s:.1f} s" for k, s in enumerate(expected, start=1))
    return (f"shard {index}/{total}: balanced by measured wall time ({balance.get('known_cases')}"
            f" of {balance.get('suite_cases')} cases in the history); expected {each}")


def describe_split(total: int, split: Mapping[str, Any]) -> str:
    """One line, before the shards of ``--shards N`` start, on how the suite was split
    (:func:`kernbench.api.run.shard_split`): each shard's expected wall time, or its case
    count when no history measured the cases."""
    cases = [int(c) for c in split.get("cases") or []]
    if split.get("by") != "history":
        each = ", ".join(f"{k}/{total} {c} cases" for k, c in enumerate(cases, start=1))
        return (f"{total} shards, split by count (no history measured these cases)"
                + (f": {each}" if each else ""))
    expected = [float(s) for s in split.get("expected_s") or []]
    each = ", ".join(f"{k}/{total} {s:.1f} s" for k, s in enumerate(expected, start=1))
    return (f"{total} shards, balanced by measured wall time ({split.get('known_cases')} of "
            f"{split.get('suite_cases')} cases in the history); expected {each}")
