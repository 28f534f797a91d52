"""Interleaved processes (``kernbench run --interleave``): asv's ``--interleave-rounds``.

A plain run measures a case's ``--processes`` back to back, so a burst of load on the machine
in the middle of a suite lands on every process of one case: they agree with each other, and a
comparison of stored runs (which tests between processes) blames that kernel with confidence.
In rounds, round k runs process k of every case in plan order: a burst then lands on one
process of several cases, shows up as spread between their processes, and the comparison
says inconclusive instead of regressed.

Round 0 runs each case's first process (the one that checks accuracy, saves or loads the
reference output and profiles); rounds 1..N-1 run process k, from fork-server slot k as a
plain run does, of every case whose first process was ok. A case's record is built when its
last process finished, exactly as :meth:`BenchmarkRunner.run_case` builds it, and marked
``worker.interleaved``; records go out in plan order, as a plain run's (a case finished early,
its first process failed, waits for the cases before it). A run stopped by a signal keeps
what finished: a case with some processes done is recorded from those
(``worker.processes`` says how many), and ``--resume`` runs such a case again in full
(:func:`kernbench.execution.resume.split_plan`).

The parent holds each unfinished case's per-process records until its last round, so the
memory of a run grows with the suite (a plain run's stays flat).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from kernbench.execution.outcomes import invalid_result
from kernbench.results.model import Case, CaseResult, KernelSpec

if TYPE_CHECKING:
    from kernbench.execution.runner import BenchmarkRunner

__all__ = ["Callbacks", "run_rounds"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class Callbacks:
    """What a run tells its caller: `on_start(label, step, total)` before each worker process,
    `on_result(record, step, total)` when a case is finished, `on_step(line, step, total)`
    after each process that did not finish its case. Steps count worker processes."""

    on_start: Callable[[str, int, int], None] | None = None
    on_result: Callable[[CaseResult, int, int], None] | None = None
    on_step: Callable[[str, int, int], None] | None = None


class _Rounds:
    """The state of one interleaved run: the processes each unfinished case has so far, and
    the finished records waiting for the cases before them (records go out in plan order, as
    a plain run's do)."""

    def __init__(self, runner: BenchmarkRunner, planned: Sequence[Case | KernelSpec],
                 callbacks: Callbacks, keep: bool) -> None:
        self.runner, self.planned, self.callbacks, self.keep = runner, planned, callbacks, keep
        self.processes = runner.settings.processes
        cases = sum(isinstance(item, Case) for item in planned)
        self.total = len(planned) - cases + cases * self.processes
        self.done = 0
        self.partial: dict[int, list[CaseResult]] = {}
        """Plan index -> the finished processes of a case still to run more."""
        self.ready: dict[int, CaseResult] = {}
        """Plan index -> a finished case's record, not yet passed on."""
        self.next_out = 0
        """The plan index of the next record to pass on."""
        self.results: list[CaseResult] = []

    def first_round(self) -> None:
        for index, item in enumerate(self.planned):
            name = item.case_id if isinstance(item, Case) else item.name
            self._start(0, name)
            if isinstance(item, KernelSpec):
                self._finished(0, index, invalid_result(item))
                continue
            first = self.runner.first_process(item, slot=0)
            if self.runner.wants_more(first):
                self.partial[index] = [first]
                self._step(0, first)
            else:
                self.total -= self.processes - 1
                self._finished(0, index, self._finish(item, [first]))

    def round(self, k: int) -> None:
        for index in list(self.partial):
            case = self.planned[index]
            assert isinstance(case, Case)
            self._start(k, case.case_id)
            self.partial[index].append(self.runner.other_process(case, slot=k))
            if k < self.processes - 1:
                self._step(k, self.partial[index][-1])
                continue
            record = self._finish(case, self.partial[index])  # a signal here keeps them
            del self.partial[index]
            self._finished(k, index, record)

    def save_partial(self) -> None:
        """After a signal: every case with finished processes, recorded from those, then every
        finished record not yet passed on. A further signal meanwhile costs at most the one
        record it lands in, after a second try."""
        for index, results in sorted(self.partial.items()):
            case = self.planned[index]
            assert isinstance(case, Case)
            record = _twice(functools.partial(self._finish, case, results))
            if record is not None:
                self.ready[index] = record
        self.partial.clear()
        for index in sorted(self.ready):
            _twice(functools.partial(self._pass_on, self.ready.pop(index)))

    def _finish(self, case: Case, results: list[CaseResult]) -> CaseResult:
        record = self.runner.finish_case(case, results)
        if results[0].worker.get("pid") is None:  # never ran (a known unavailable device)
            return record
        return dataclasses.replace(record, worker={
            **record.worker, "processes": len(results), "interleaved": True})

    def _label(self, k: int, name: str) -> str:
        return f"round {k + 1}/{self.processes} {name}"

    def _start(self, k: int, name: str) -> None:
        if self.callbacks.on_start is not None:
            self.callbacks.on_start(self._label(k, name), self.done + 1, self.total)

    def _step(self, k: int, result: CaseResult) -> None:
        self.done += 1
        self._say(k, result)

    def _say(self, k: int, result: CaseResult) -> None:
        if self.callbacks.on_step is not None:
            why = f": {result.reason}" if result.status != "ok" and result.reason else ""
            self.callbacks.on_step(f"{self._label(k, result.case_id)}: {result.status}{why}",
                                   self.done, self.total)

    def _finished(self, k: int, index: int, record: CaseResult) -> None:
        """A case's record is done: pass it on with every one after it that waited, once
        every case before it in the plan has been passed on; until then say so as a step."""
        self.done += 1
        self.ready[index] = record
        if index != self.next_out:
            self._say(k, record)
        while self.next_out in self.ready:
            self._pass_on(self.ready.pop(self.next_out))
            self.next_out += 1

    def _pass_on(self, record: CaseResult) -> None:
        if self.keep:
            self.results.append(record)
        if self.callbacks.on_result is not None:
            self.callbacks.on_result(record, self.done, self.total)


def _twice(action: Callable[[], _T]) -> _T | None:
    """`action()`, tried again once if a signal (KeyboardInterrupt) interrupts it."""
    for _ in range(2):
        try:
            return action()
        except KeyboardInterrupt:
            continue
    return None


def run_rounds(runner: BenchmarkRunner, planned: Sequence[Case | KernelSpec],
               callbacks: Callbacks, keep: bool = True) -> list[CaseResult]:
    """Run `planned` in rounds inside `runner`'s session; the records, in plan order (empty
    without `keep`: they then only go to `on_result`)."""
    state = _Rounds(runner, planned, callbacks, keep)
    try:
        state.first_round()
        for k in range(1, state.processes):
            state.round(k)
    except KeyboardInterrupt:
        state.save_partial()
        raise
    return state.results
