"""What summary.md shows, gathered kernel by kernel in memory that does not grow with the run.

summary.md is rendered from a :class:`SummaryView`, for a run of any size. The view takes the
records of one kernel on one machine at a time (:meth:`SummaryView.add_kernel`) and keeps:

* per table, the first `MAX_ROWS` rows in summary order (the leaderboard: the fastest; the
  accuracy table of a larger run: its failures first), and how many rows there were;
* per kind of finding, the first ones in the order Key Findings lists them, and how many;
* per recommendation, the first `MAX_NAMED` case ids, and how many more;
* what is taken over every case: counts, the fastest and slowest case, which backends the
  machine lacks.

So a run with at most `MAX_ROWS` rows in each table shows all of them; a larger one (a merge
of many shards) shows the first of each table and says how many more summary.json holds. A
merge feeds the view shard by shard and never holds every record. Pairs (a narrow precision
against fp32 of the same shape, a kernel on two backends) are judged within the records of one
kernel on one machine, as a sharded run keeps every case of a kernel in one shard.

Positions order the records of one machine as summary.json lists them (a run's index, or a
merge's sort key); machines come in the order given to :meth:`SummaryView.finish`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from kernbench.reporting import findings as fx
from kernbench.reporting import recommendations as rx
from kernbench.reporting.availability import AbsentBackend, BackendCases, has_gpu
from kernbench.reporting.caveats import CAVEAT_ORDER, caveat_findings
from kernbench.reporting.firsts import MAX_ROWS, Firsts
from kernbench.reporting.gpu_modes import gpu_row
from kernbench.reporting.implementations import implementation_tables
from kernbench.reporting.views import (
    PROBLEM_STATUSES,
    Record,
    case_id,
    chart_record,
    ci95_ms,
    mappings,
    number,
    over_peak,
    p50_ms,
    section,
)

__all__ = ["CHART_KERNELS", "MAX_LISTED", "MAX_NAMED", "MAX_ROWS", "Bounds", "Firsts",
           "SummaryView", "summary_view"]

MAX_NAMED = 50
"""The most case ids a recommendation names; the rest are counted."""
MAX_LISTED = 12
"""Key Findings lists at most this many findings per group and counts the rest."""
CHART_KERNELS = 20
"""The charts of a large run's index.html draw the cases of this many kernels, the first."""
Bounds = dict[tuple[str, Hashable], dict[Hashable, Any]]
"""Per table of a view, per machine, the key from which it keeps no more rows."""


class SummaryView:
    """The figures of summary.md, taken kernel by kernel (see the module docstring)."""

    def __init__(self, implementations: object = None) -> None:
        """`implementations`: the summary's (kernels with several implementations); a merge
        adds each shard's with :meth:`declare` before its records."""
        self.declared: dict[str, Any] = {}
        self.declare(implementations)
        self.backends: dict[str, BackendCases] = {}
        self.rows = {name: Firsts() for name in (
            "problems", "flagged", "failing", "passing", "worked", "over_peak", "profiles",
            "gpu", "unchecked", "failures", "accuracy", "tails", "unstable", "narrow",
            "growth", "narrow_advice", "memory_advice", "backend_advice", "failed_ids",
            "timeout_ids", "invalid_ids", "low_compute", "low_bandwidth", "caveats")}
        self.skipped: dict[str, Firsts] = {}
        self.boards: dict[Hashable, Firsts] = {}
        self.extremes: dict[str, tuple[Any, Record]] = {}
        self.failed_files: set[str] = set()
        self.gpu_modes: set[str] = set()
        self.gpu_overhead = False
        self.implementations: list[tuple[Hashable, Any, Record]] = []
        self.charted = Firsts(CHART_KERNELS)
        """Per kernel that has them, its successful timed records (for index.html's charts)."""
        self.machines: Sequence[Hashable] = (None,)
        """The machines in summary order; set before reading the view's results."""

    def declare(self, implementations: object) -> None:
        """Kernels with several implementations (a summary's ``implementations``)."""
        if isinstance(implementations, Mapping):
            self.declared.update(implementations)

    def add_kernel(self, records: Sequence[tuple[Any, Record]], machine: Hashable = None) -> None:
        """The records of one kernel on one machine, each with its position."""
        timed: list[tuple[float, str, Record]] = []
        for position, record in records:
            p50 = self._add(machine, position, record)
            if p50 is not None and record.get("status") == "ok":
                timed.append((p50, str(record.get("case_id")), record))
        if records and str(records[0][1].get("kernel_name")) in self.declared:
            self.implementations.extend((machine, p, r) for p, r in records)
        if timed:
            self.charted.add_made(records[0][0], lambda: [chart_record(r, p50)
                                                          for p50, _, r in timed], machine)
        if len(timed) > 1:
            timed.sort(key=lambda entry: (entry[0], entry[1]))
            self._add_pairs([record for _, _, record in timed])

    def _add_pairs(self, ok: list[Record]) -> None:
        """What pairs of one kernel's successful cases (fastest first) call for."""
        shapes: dict[int, str] = {}

        def shape(record: Record) -> str:
            found = shapes.get(id(record))
            if found is None:
                found = shapes[id(record)] = fx.shape_key(record)
            return found

        pairs = fx.narrow_pairs((), ok, shape)
        slower, grown = fx.slower_pairs((), pairs), fx.grown_pairs((), pairs)
        for finding in fx.narrow_findings(slower):
            self.rows["narrow"].add(finding.case_id, finding)
        for finding in fx.growth_findings(grown):
            self.rows["growth"].add(finding.case_id, finding)
        for advice in rx.narrow_advice(slower):
            self.rows["narrow_advice"].add(advice.case_ids[0], advice)
        for advice in rx.memory_advice(grown):
            self.rows["memory_advice"].add(advice.case_ids[0], advice)
        if len({record.get("backend") for record in ok}) > 1:
            kernel = str(ok[0].get("kernel_name"))
            for index, advice in enumerate(rx.backend_advice((), ok, shape)):
                self.rows["backend_advice"].add((kernel, index), advice)

    def _add(self, machine: Hashable, position: Any, record: Record) -> float | None:
        """Takes one record; its p50, when it has one."""
        rows, status = self.rows, record.get("status")
        backend = str(record.get("backend"))
        entry = self.backends.get(backend)
        if entry is None:
            entry = self.backends[backend] = BackendCases((machine, position))
        entry.add(machine, position, record)
        if status == "skipped":
            self.skipped.setdefault(backend, Firsts()).add(position, record, machine)
        elif status in PROBLEM_STATUSES:
            rows["problems"].add(position, record, machine)
        if record.get("warnings"):
            rows["flagged"].add(position, record, machine)
        if (record.get("profile") or {}).get("path"):
            rows["profiles"].add(position, record, machine)
        self._add_accuracy(machine, position, record)
        for finding in caveat_findings(record):
            rows["caveats"].add((CAVEAT_ORDER.index(finding.kind), position), finding,
                                machine)
        work = record.get("work")
        if status == "ok" and work:
            rows["worked"].add(position, record, machine)
            if over_peak(work.get("pct_peak_compute")) or over_peak(work.get("pct_peak_bandwidth")):
                rows["over_peak"].add(position, case_id(record), machine)
        if status == "ok" and (record.get("timing") or {}).get("modes"):
            self._add_gpu(machine, position, record)
        p50 = p50_ms(record)
        if p50 is not None:
            self._add_timed(machine, position, record, p50)
        return p50

    def _add_gpu(self, machine: Hashable, position: Any, record: Record) -> None:
        row = gpu_row(record)
        if row is not None:
            self.rows["gpu"].add(position, row, machine)
            self.gpu_modes.update(row["cells"])
            self.gpu_overhead = self.gpu_overhead or row["launch_overhead_us"] is not None

    def _add_accuracy(self, machine: Hashable, position: Any, record: Record) -> None:
        rows, status = self.rows, record.get("status")
        passed = (record.get("accuracy") or {}).get("passed")
        if passed is False:
            rows["failing"].add(position, record, machine)
            rows["accuracy"].add(position, record, machine)
        elif passed is not None:
            rows["passing"].add(position, record, machine)
        elif status == "ok":
            rows["unchecked"].add(position, record, machine)
        if passed is not False and status in PROBLEM_STATUSES:
            rows["failures"].add(position, fx.failure_finding(record), machine)
            rows[f"{status}_ids"].add(position, case_id(record), machine)
            if status == "failed":
                self.failed_files.add(rx.failure_file(record))

    def _add_timed(self, machine: Hashable, position: Any, record: Record, p50: float) -> None:
        rows = self.rows
        interval = ci95_ms(record)
        if interval is None or (interval[1] - interval[0]) > fx.NOISY_CI_RATIO * p50:
            unstable = fx.unstable_finding(record)
            if unstable is not None:
                rows["unstable"].add(fx.unstable_order(unstable), unstable)
        p99 = number(section(record, "timing").get("latency_ms_p99"))
        if p99 is not None and p99 > fx.TAIL_RATIO * p50:  # its finding is made at the end
            rows["tails"].add(position, record, machine)
        if record.get("status") != "ok":
            return
        key = (p50, str(record.get("case_id")))
        if "fastest" not in self.extremes or key < self.extremes["fastest"][0]:
            self.extremes["fastest"] = (key, record)
        if "slowest" not in self.extremes or key >= self.extremes["slowest"][0]:
            self.extremes["slowest"] = (key, record)
        board = self.boards.get(record.get("fingerprint"))
        if board is None:
            board = self.boards[record.get("fingerprint")] = Firsts()
        board.add((p50, position), record, machine)
        peak = rx.peak_pct(record)
        if peak is not None and peak[1] < rx.LOW_PCT_PEAK:
            rows[f"low_{peak[0]}"].add(key, (case_id(record), peak[1]))

    def absorb(self, other: SummaryView) -> None:
        """Take in the view of later records (a later shard's, as a merge's worker took it):
        the view is then what taking them all in order here would have given."""
        self.declare(other.declared)
        for backend, cases in other.backends.items():
            if backend in self.backends:
                self.backends[backend].absorb(cases)
            else:
                self.backends[backend] = cases
        for name, firsts in other._tables():
            self._table(name).absorb(firsts)
        for kind, (key, record) in other.extremes.items():
            mine = self.extremes.get(kind)  # the first fastest, the last slowest, as _add_timed
            if mine is None or (key < mine[0] if kind == "fastest" else key >= mine[0]):
                self.extremes[kind] = (key, record)
        self.failed_files |= other.failed_files
        self.gpu_modes |= other.gpu_modes
        self.gpu_overhead = self.gpu_overhead or other.gpu_overhead
        self.implementations.extend(other.implementations)

    def _tables(self) -> Iterator[tuple[tuple[str, Hashable], Firsts]]:
        for group in ("rows", "skipped", "boards"):
            for name, firsts in getattr(self, group).items():
                yield (group, name), firsts
        yield ("charted", None), self.charted

    def _table(self, name: tuple[str, Hashable]) -> Firsts:
        group, key = name
        return self.charted if group == "charted" else getattr(self, group).setdefault(
            key, Firsts())

    def bounds(self) -> Bounds:
        """Per table, per machine, the key from which this view keeps no more rows."""
        return {name: dict(firsts.bound) for name, firsts in self._tables() if firsts.bound}

    def compact(self, bounds: Bounds | None = None) -> None:
        """Drop what no table will show (before the view is sent to another process), and the
        rows past `bounds` (:meth:`bounds` of the view this one will be absorbed into, as it
        stood before: its bounds only come earlier, so it would pass over them)."""
        for name, firsts in self._tables():
            firsts.compact((bounds or {}).get(name))

    # --- at the end ------------------------------------------------------------------------

    def _rank(self, machine: Hashable) -> int:
        return self.machines.index(machine) if machine in self.machines else len(self.machines)

    def items(self, name: str) -> list[Any]:
        return self.rows[name].items(self.machines)

    def absent(self, environment: Mapping[str, Any]) -> list[AbsentBackend]:
        """The backends this machine lacks (:mod:`kernbench.reporting.availability`'s rule),
        in first-seen order."""
        gpus = environment.get("gpus")
        if not isinstance(gpus, list):
            return []
        def seen(first: tuple[Hashable, Any]) -> tuple[int, Any]:
            return self._rank(first[0]), first[1]

        found = []
        for backend, entry in sorted(self.backends.items(), key=lambda item: seen(item[1].first)):
            if (backend in ("cpu", "n/a", "None") or not entry.skipped_only
                    or has_gpu(backend, mappings(gpus))):
                continue
            kernels = sorted(entry.kernels, key=lambda name: seen(entry.kernels[name]))
            found.append(AbsentBackend(backend, (), tuple(kernels[:MAX_ROWS]),
                                       tuple(entry.reasons.most_common()), cases=entry.cases,
                                       more_kernels=max(0, len(kernels) - MAX_ROWS)))
        return found

    def implementation_tables(self, absent: Sequence[AbsentBackend]) -> list[Any]:
        ordered = sorted(self.implementations,
                         key=lambda entry: (self._rank(entry[0]), entry[1]))
        summary = {"implementations": self.declared, "results": [r for _, _, r in ordered]}
        return implementation_tables(summary, absent)

    def skipped_rows(self, absent: Sequence[AbsentBackend]) -> tuple[list[Record], int]:
        """The skipped rows of backends the machine has (not `absent`), in summary order, and
        how many more."""
        lacking = {a.backend for a in absent}
        kept = [self.skipped[b] for b in self.skipped if b not in lacking]
        entries = sorted((e for rows in kept for e in rows.entries(self.machines)),
                         key=lambda e: (e[0], e[1]))[:MAX_ROWS]
        return [r for _, _, r in entries], sum(rows.count for rows in kept) - len(entries)

    def checked(self) -> tuple[list[Record], int]:
        """The accuracy table's rows, in summary order; when there are more than `MAX_ROWS`,
        the failures first. And how many rows are left out."""
        failing, passing = self.rows["failing"], self.rows["passing"]
        total = failing.count + passing.count
        if total <= MAX_ROWS:
            both = failing.entries(self.machines) + passing.entries(self.machines)
            return [r for _, _, r in sorted(both, key=lambda e: (e[0], e[1]))], 0
        rows = (failing.items(self.machines) + passing.items(self.machines))[:MAX_ROWS]
        return rows, total - len(rows)

    def findings(self, tables: Sequence[Any]) -> list[tuple[str, list[fx.Finding], int]]:
        """Key Findings: (group title, its first findings, how many it has), in order."""
        rows = self.rows
        found: list[tuple[list[fx.Finding], int]] = [
            ([fx.extreme_finding(kind, self.extremes[kind][1])], 1)
            for kind in ("fastest", "slowest")
            if kind in self.extremes and (kind == "fastest" or rows_ok(self) > 1)]
        best = fx.best_implementations(tables)
        found.extend([([f], 1) for f in best])
        found.append((self.items("unstable")[:MAX_LISTED], rows["unstable"].count))
        found.append(([fx.accuracy_finding(r) for r in self.items("accuracy")[:MAX_LISTED]],
                      rows["accuracy"].count))
        tails = [fx.tail_finding(r) for r in self.items("tails")[:MAX_LISTED]]
        for name, items in (("failures", self.items("failures")), ("narrow", self.items("narrow")),
                            ("tails", [f for f in tails if f is not None]),
                            ("growth", self.items("growth")), ("caveats", self.items("caveats"))):
            found.append((items[:MAX_LISTED], rows[name].count))
        groups: dict[str, tuple[list[fx.Finding], int]] = {}
        for items, count in found:
            if not items:
                continue
            title = items[0].group
            listed, total = groups.get(title, ([], 0))
            groups[title] = (listed + items, total + count)
        return [(title, items, total) for title, (items, total) in groups.items()]

    def board(self, fingerprints: Sequence[Any] | None) -> tuple[list[Record], int]:
        """The leaderboard of the machines `fingerprints` (None: of every case), fastest
        first, and how many cases it leaves out."""
        boards = self.boards.values() if fingerprints is None else [
            self.boards[f] for f in fingerprints if f in self.boards]
        entries = sorted(((key[0], rank, key[1], record) for board in boards
                          for rank, key, record in board.entries(self.machines)),
                         key=lambda entry: entry[:3])[:MAX_ROWS]
        return [entry[3] for entry in entries], sum(b.count for b in boards) - len(entries)

    def advice(self, settings: Mapping[str, Any],
               comparison: Mapping[str, Any] | None) -> list[rx.Recommendation]:
        """Recommendations, as :func:`kernbench.reporting.recommendations.recommendations`
        gives them, each kind listing its first cases (or pieces of advice) and counting the
        rest."""
        rows = self.rows
        regressed, inconclusive = rx.comparison_advice(comparison, settings.get("runner"))
        accuracy = [rx.accuracy_recommendation(r) for r in self.items("accuracy")[:MAX_LISTED]]
        ids = {status: tuple(self.items(f"{status}_ids")) for status in rx.FAILURE_KINDS}
        files = sorted(self.failed_files)
        low = {kind: self.items(f"low_{kind}") for kind in ("compute", "bandwidth")}
        return rx.capped(MAX_NAMED, [
            *accuracy, *_more("accuracy", rows["accuracy"].count - len(accuracy),
                              "more cases fail their accuracy check (see Accuracy)"),
            *rx.failure_advice(ids, files[:MAX_LISTED],
                               {s: rows[f"{s}_ids"].more for s in rx.FAILURE_KINDS},
                               max(0, len(files) - MAX_LISTED)),
            *regressed,
            *rx.noise_advice(_ids(self.items("unstable")), settings, rows["unstable"].more),
            *rx.tail_advice(tuple(dict.fromkeys(case_id(r) for r in self.items("tails"))),
                            settings, rows["tails"].more),
            *self._listed("narrow_advice", "narrow_slower"),
            *self._listed("memory_advice", "memory_growth"),
            *rx.peak_advice(low, {kind: rows[f"low_{kind}"].more for kind in low}),
            *self._listed("backend_advice", "backend_slower"), *inconclusive])

    def _listed(self, name: str, kind: str) -> list[rx.Recommendation]:
        found = self.items(name)[:MAX_LISTED]
        return [*found, *_more(kind, self.rows[name].count - len(found),
                               "more pieces of this advice, one per kernel")]


def summary_view(document: Mapping[str, Any]) -> SummaryView:
    """The view of a whole summary document, its records taken kernel by kernel."""
    view = SummaryView(document.get("implementations"))
    groups: dict[tuple[str, str], list[tuple[int, Mapping[str, Any]]]] = {}
    for index, record in enumerate(mappings(document.get("results"))):
        key = (str(record.get("fingerprint")), str(record.get("kernel_name")))
        groups.setdefault(key, []).append((index, record))
    for records in groups.values():
        view.add_kernel(records)
    return view


def _ids(found: Iterable[fx.Finding]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f.case_id for f in found))


def _more(kind: str, count: int, what: str) -> list[rx.Recommendation]:
    """A last recommendation saying how many of `kind` are not listed."""
    return [rx.Recommendation(kind, (), f"{count} {what}.")] if count > 0 else []


def rows_ok(view: SummaryView) -> int:
    """How many successful timed cases the view saw."""
    return sum(board.count for board in view.boards.values())
