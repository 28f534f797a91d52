"""Interleaved processes (``kernbench run``'s default; ``--no-interleave`` turns it off): asv's
``--interleave-rounds``.

Measured back to back, a case's ``--processes`` share one stretch of time, so a burst of load
on the machine in the middle of a suite lands on every process of one case: they agree with
each other, and a comparison of stored runs (which tests between processes) blames that
kernel with confidence. In rounds, round k runs process k of every case in plan order: a
burst then lands on one process of several cases, shows up as spread between their
processes, and the comparison says inconclusive instead of regressed.

Round 0 runs each case's first process (the one that checks accuracy, saves or loads the
reference output and profiles); rounds 1..N-1 run process k, from fork-server slot k as a
plain run does, of every case whose first process was ok. A case's record is built when its
last process finished, exactly as :meth:`BenchmarkRunner.run_case` builds it, and marked
``worker.interleaved``; records go out in plan order, as a plain run's (a case finished early,
its first process failed, waits for the cases before it). A run stopped by a signal (or an
error) keeps what finished: a case with some processes done is recorded from those
(``worker.processes`` says how many).

Until its last round a case's finished processes are held by a
:class:`~kernbench.execution.held.HeldProcesses`: a run that writes reports keeps them in its
output directory, so the parent's memory stays flat and ``--resume`` runs only the processes a
stopped run's cases still lack (a case found there with processes joins the round of its next
one).
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
    from kernbench.execution.held import HeldProcesses
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
                 callbacks: Callbacks, keep: bool, held: HeldProcesses) -> None:
        self.runner, self.planned, self.callbacks, self.keep = runner, planned, callbacks, keep
        self.held = held
        self.processes = runner.settings.processes
        cases = sum(isinstance(item, Case) for item in planned)
        self.total = len(planned) - cases + cases * self.processes
        self.done = 0
        self.counts: dict[int, int] = {}
        """Plan index -> how many processes an unfinished case has (they are in `held`)."""
        self.keys: dict[int, str] = {}
        """Plan index -> what the case's processes measure
        (:func:`kernbench.execution.held.measured_key`)."""
        self.ready: dict[int, CaseResult] = {}
        """Plan index -> a finished case's record, not yet passed on."""
        self.next_out = 0
        """The plan index of the next record to pass on."""
        self.results: list[CaseResult] = []

    def first_round(self) -> None:
        for index, item in enumerate(self.planned):
            if isinstance(item, KernelSpec):
                self._start(0, item.name)
                self._finished(0, index, invalid_result(item))
                continue
            key = self.keys[index] = self.runner.measured_key(item)
            earlier = self.held.get(item.case_id, key)  # a resumed case's finished processes
            if earlier:
                self._resumed(index, item, earlier)
                continue
            self._start(0, item.case_id)
            first = self.runner.first_process(item, slot=0)
            self.held.add(item.case_id, key, first)  # even a failed one: a kill keeps it
            if self.runner.wants_more(first):
                self.counts[index] = 1
                self._step(0, first)
            else:
                self.total -= self.processes - 1
                self._done(0, index, self._finish(item, [first]))

    def _resumed(self, index: int, case: Case, earlier: list[CaseResult]) -> None:
        """A case with processes from the run this one resumes: only the rest will run."""
        if not self.runner.wants_more(earlier[0]) or len(earlier) >= self.processes:
            self.total -= self.processes - 1
            self._done(0, index, self._finish(case, earlier[:self.processes]))
            return
        self.total -= len(earlier)
        self.counts[index] = len(earlier)

    def round(self, k: int) -> None:
        for index in [i for i, count in self.counts.items() if count == k]:
            case = self.planned[index]
            assert isinstance(case, Case)
            self._start(k, case.case_id)
            result = self.runner.other_process(case, slot=k)
            self.held.add(case.case_id, self.keys[index], result)
            self.counts[index] += 1
            if k < self.processes - 1:
                self._step(k, result)
                continue
            record = self._finish(case, self.held.get(case.case_id, self.keys[index]))
            self.ready[index] = record  # a signal from here on passes it on once
            del self.counts[index]
            self._done(k, index, record)

    def _done(self, k: int, index: int, record: CaseResult) -> None:
        """A case's record is built: pass it on in plan order; its held processes go."""
        self._finished(k, index, record)
        case = self.planned[index]
        assert isinstance(case, Case)
        self.held.release(case.case_id)

    def save_partial(self) -> None:
        """After a signal or an error: every case with finished processes, recorded from
        those (they stay held, for a resume), then every finished record not yet passed on. A
        further signal meanwhile costs at most the one record it lands in, after a second try."""
        for index in sorted(self.counts):
            case = self.planned[index]
            assert isinstance(case, Case)
            record = _twice(functools.partial(self._finish_held, index, case))
            if record is not None:
                self.ready[index] = record
        self.counts.clear()
        for index in sorted(self.ready):
            _twice(functools.partial(self._pass_on, self.ready.pop(index)))

    def _finish_held(self, index: int, case: Case) -> CaseResult | None:
        held = self.held.get(case.case_id, self.keys[index])
        return self._finish(case, held) if held else None

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
    """`action()`, tried again once if a signal (KeyboardInterrupt) interrupts it; None if it
    fails (the error that stopped the run is the one to report, and a case that cannot be
    recorded must not keep the others from being saved: its processes stay held)."""
    for _ in range(2):
        try:
            return action()
        except KeyboardInterrupt:
            continue
        except Exception:  # see above
            return None
    return None


def run_rounds(runner: BenchmarkRunner, planned: Sequence[Case | KernelSpec],
               callbacks: Callbacks, keep: bool, held: HeldProcesses) -> list[CaseResult]:
    """Run `planned` in rounds inside `runner`'s session; the records, in plan order (empty
    without `keep`: they then only go to `on_result`). The processes of unfinished cases are
    kept in `held`; a case `held` already has processes of (a resumed run's) runs only the
    rest."""
    state = _Rounds(runner, planned, callbacks, keep, held)
    try:
        state.first_round()
        for k in range(1, state.processes):
            state.round(k)
    except BaseException:  # a signal, or an error that stops the run: keep what finished
        state.save_partial()
        raise
    return state.results
