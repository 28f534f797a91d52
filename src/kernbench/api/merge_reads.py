"""A merge's reading of its shards: in worker processes, one per core, taken in shard order.

Reading a shard is most of a merge's work: parsing its summary.json, putting its records in
merge order, and (when summary.md or index.html is to be written) taking them into a
:class:`~kernbench.reporting.summary_view.SummaryView` of that shard alone. Shards are
independent until the ordered write, so :func:`read_shards` reads them in forked worker
processes, and each writes its shard's run of the spool (the records' JSON texts as
:func:`~kernbench.results.jsontext.split_records` gave them, never parsed again) into the
merge's spool file, in a part of it that no other run takes, and sends back only what the
merge needs besides (a :class:`ShardRead`): the shard's head, where its run is, and its view,
cut to the rows any table can show and to those before the bounds of its machine's view in
the merge when it was sent. The merge takes them in shard order and joins each view into its
machine's (:meth:`~kernbench.reporting.summary_view.SummaryView.absorb`), which gives what
taking every record in order into one view gives: the output is the same, byte for byte,
however many workers read the shards. At most two shards per worker are read ahead of the
one the merge takes, so memory does not grow with the number of shards.

Workers are forked: where the platform cannot fork, in a process running other threads, or for
fewer than `PARALLEL_FROM` shards, the shards are read here, one after another.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Generator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernbench.api.merge_spool import Spool
from kernbench.errors import KernbenchError
from kernbench.execution.merging import Entry, ShardHead, read_shard
from kernbench.execution.resume import merged_sources
from kernbench.reporting.summary_view import Bounds, SummaryView

__all__ = ["PARALLEL_FROM", "ShardRead", "read_one", "read_shards", "workers_for"]

PARALLEL_FROM = 4
"""Fewer shards than this are read in this process: starting workers would cost more."""


@dataclass(frozen=True)
class ShardRead:
    """What a merge needs of a shard a worker read: its head, where the worker wrote its run
    in the spool (start and end offsets), and its view (None when not asked)."""

    head: ShardHead
    run: tuple[int, int]
    view: SummaryView | None


def read_one(source: Path, index: int, views: dict[str, SummaryView] | None
             ) -> tuple[ShardHead, bytes]:
    """Shard `index` of the merge, read from its directory `source`: its head and its run of
    the spool (:meth:`~kernbench.api.merge_spool.Spool.encode`), its records taken into its
    machine's view of `views` (none: no view)."""
    from kernbench.results.jsontext import split_records

    path = source / "summary.json"
    try:
        document, items = split_records(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise KernbenchError(f"{path}: cannot read shard summary: {exc}") from exc
    items = list(items or [])
    if document.get("complete") is not True and not merged_sources(document):
        items.extend(_left_in_kernel_files(source, document, items))
    document["results"] = [record for record, _ in items]
    head, entries = read_shard(str(source), document, [text for _, text in items])
    if views is not None:  # one view per machine: nothing is ranked across machines
        _view_kernels(views.setdefault(head.machine, SummaryView()), head, index, entries)
    return head, Spool.encode([(key, case_id, text) for key, case_id, (_, text) in entries])


def _left_in_kernel_files(source: Path, document: Mapping[str, Any],
                          listed: Sequence[tuple[Any, str]]) -> list[tuple[Any, str]]:
    """The records of a shard that did not finish that its summary.json does not list: a
    killed run's summary lists none of the cases it finished, its kernels/*.json (rewritten
    after every case) hold them. Never a record that started before the shard's run did (an
    earlier run's, left in the folder), nor a case listed already."""
    from kernbench.results.jsontext import split_records
    from kernbench.results.model import record_case_id
    from kernbench.results.schema import started_before_run

    began = document.get("started_at")
    seen = {record_case_id(record) for record, _ in listed if isinstance(record, Mapping)}
    found: list[tuple[Any, str]] = []
    for path in sorted((source / "kernels").glob("*.json")):
        try:
            _, items = split_records(path.read_bytes())
        except (OSError, ValueError) as exc:
            raise KernbenchError(f"{path}: cannot read the kernel file of a shard that did not "
                                 f"finish: {exc}") from exc
        for record, text in items or []:
            if not isinstance(record, Mapping) or started_before_run(record.get("started_at"),
                                                                     began):
                continue
            case_id = record_case_id(record)
            if case_id not in seen:
                seen.add(case_id)
                found.append((record, text))
    return found


def _view_kernels(view: SummaryView, head: ShardHead, index: int,
                  entries: Sequence[Entry]) -> None:
    """A shard's records into the view, a kernel at a time (they come in kernel order)."""
    view.declare(head.document.get("implementations"))
    group: list[tuple[Any, Any]] = []
    for position, (key, _, (record, _)) in enumerate(entries):
        if group and key[0] != group[-1][0][0]:
            view.add_kernel(group, head.machine)
            group = []
        group.append(((*key, index, position), record))
    if group:
        view.add_kernel(group, head.machine)


def workers_for(shards: int, jobs: int | None = None) -> int:
    """How many worker processes read `shards` shards: `jobs` when given, else one per core
    this process may run on; 0 (read here) where workers cannot be forked or would not pay."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return 0
    if jobs is None:
        if shards < PARALLEL_FROM:
            return 0
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
    return min(jobs, shards) if jobs > 1 else 0


def read_shards(shard_dirs: Sequence[Path], spool: Spool, views: dict[str, SummaryView] | None,
                jobs: int | None = None) -> Generator[ShardHead, None, None]:
    """Each shard of `shard_dirs` read (:func:`read_one`) by :func:`workers_for` worker
    processes: its head, in shard order, its run in the `spool` and its records in its
    machine's view of `views` (none: no views) by then. An error reading a shard is raised
    when its turn comes, so an earlier shard's problem (another machine) is found first.
    Close the iterator when done with it early: the workers are stopped then."""
    workers = workers_for(len(shard_dirs), jobs)
    if not workers:
        for index, source in enumerate(shard_dirs):
            head, run = read_one(source, index, views)
            spool.write_run(run)
            yield head
        return

    def bounds() -> dict[str, Bounds] | None:  # what each machine's view keeps no more of
        return None if views is None else {m: view.bounds() for m, view in views.items()}

    for read in _read_in_workers(shard_dirs, spool, bounds, workers):
        if views is not None and read.view is not None:
            if read.head.machine in views:
                views[read.head.machine].absorb(read.view)
            else:
                views[read.head.machine] = read.view
        spool.runs.append(read.run)
        yield read.head


_WORKER: dict[str, Any] = {}
"""In a worker process: the spool's file descriptor and the shared end of its written part."""


def _start_worker(fd: int, end: Any) -> None:
    _WORKER.update(fd=fd, end=end)


def _read_apart(source: Path, index: int, bounds: dict[str, Bounds] | None) -> ShardRead:
    """:func:`read_one` in a worker: the shard's run goes into the spool, at the end of its
    written part as it stands (taken under a lock, so no two runs overlap); its own view
    (none without `bounds`), cut to what a table can show and to what is before the bounds
    of its machine's view in the merge when it was sent (`bounds`, by machine), goes back
    with where it wrote the run."""
    views: dict[str, SummaryView] | None = {} if bounds is not None else None
    head, run = read_one(source, index, views)
    end = _WORKER["end"]
    with end.get_lock():
        start = end.value
        end.value = start + len(run)
    written = 0
    while written < len(run):
        written += os.pwrite(_WORKER["fd"], memoryview(run)[written:], start + written)
    view = next(iter(views.values())) if views else None
    if view is not None:
        view.compact((bounds or {}).get(head.machine))
    return ShardRead(head, (start, start + len(run)), view)


def _read_in_workers(shard_dirs: Sequence[Path], spool: Spool,
                     bounds: Callable[[], dict[str, Bounds] | None],
                     workers: int) -> Generator[ShardRead, None, None]:
    """Each shard read by :func:`_read_apart` in `workers` processes, in shard order; each
    sent with the `bounds` of the views as they stand (None: no views)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    spool.handle.flush()
    end = context.Value("q", spool.handle.seek(0, os.SEEK_END))
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker,
                               initargs=(spool.handle.fileno(), end))
    pending: deque[Future[ShardRead]] = deque()
    tasks = iter(enumerate(shard_dirs))
    try:
        for index, source in tasks:
            pending.append(pool.submit(_read_apart, source, index, bounds()))
            if len(pending) >= 2 * workers:
                break
        while pending:
            yield pending.popleft().result()
            for index, source in tasks:  # one more for the one taken, with the bounds it left
                pending.append(pool.submit(_read_apart, source, index, bounds()))
                break
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
