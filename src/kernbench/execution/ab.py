"""Interleaved A/B on one machine (``--ab REF``): the baseline commit against this tree.

REF is checked out into a temporary git worktree (the working tree and index of the
repository are not touched). Both trees' kernels are discovered, cases are matched, and the
rounds alternate: in every round each case runs once on each side, in one fresh worker process
each, A first in even rounds and B first in odd ones. Whatever the machine does over time
(frequency, thermal state, a neighbour's load) then hits both sides alike, and each round adds
one process-level replicate per side for the comparison.

Each round's workers, both sides', fork from fork servers started for that round alone: a
worker inherits its server's address-space layout and hash seed, so workers of one server
share them. With one server per side for the whole run, every round of a side shared one
layout, and a layout that happened to be slower on one side moved every round the same way
(the sign test then calls identical code changed). Fresh servers each round make the rounds
independent again, and one server for both sides of a round puts the two processes of a pair
on the same layout, which the pair's difference then cancels.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kernbench.analysis.compare import case_key
from kernbench.analysis.gitref import prefix_in_repository, resolve_ref
from kernbench.errors import KernbenchError
from kernbench.execution.launcher import make_launcher
from kernbench.execution.outcomes import invalid_result
from kernbench.execution.planning import plan_key
from kernbench.execution.replicates import merge_replicates
from kernbench.execution.runner import BenchmarkRunner
from kernbench.execution.settings import RunSettings
from kernbench.results.files import live_scratch, sweep_dead_scratch
from kernbench.results.model import Case, CaseResult, KernelSpec


class Progress(Protocol):
    """Told before and after each worker run: a label, the 1-based count and the total."""

    def case_started(self, label: str, index: int, total: int) -> None: ...

    def case_finished(self, line: str, index: int, total: int) -> None: ...


@dataclass(frozen=True)
class Side:
    """One side of the A/B: its tree, its runner and its planned work."""

    label: str
    root: Path
    runner: BenchmarkRunner
    planned: list[Case | KernelSpec]
    suite: list[Case | KernelSpec]
    """Every shard's planned work (`planned` without ``--shard``)."""

    def keyed(self) -> dict[str, Case]:
        return {_key(c): c for c in self.planned if isinstance(c, Case)}

    def plan_record(self) -> dict[str, Any]:
        """``settings.plan`` of this side's report set, so a merge of its shards checks that
        every case of the suite came back (:mod:`kernbench.execution.completeness`)."""
        from kernbench.execution.completeness import plan_record
        from kernbench.execution.resume import plan_id

        return plan_record([plan_id(i) for i in self.suite], [plan_id(i) for i in self.planned])


def _key(case: Case) -> str:
    size = "" if case.problem_size is None else repr(case.problem_size)
    return f"{case.case_id}{size}"


@contextlib.contextmanager
def worktree(root: Path, ref: str) -> Iterator[tuple[Path, str]]:
    """A detached worktree of `ref` in a temporary folder, removed afterwards; yields the
    folder that stands for `root` in it (`root` may lie below the repository's top) and the
    commit."""
    sha = resolve_ref(root, ref)
    if sha is None:
        raise KernbenchError(f"--ab {ref}: no such commit in {root} (is it a git repository, "
                             "and is the ref fetched?)")
    place = Path(tempfile.gettempdir())
    if sweep_dead_scratch(place, WORKTREE_PREFIX):  # an --ab run killed outright left one
        _git(root, "worktree", "prune", check=False)
    prefix = prefix_in_repository(root)
    with live_scratch(place, WORKTREE_PREFIX) as folder:
        target = folder / "baseline"
        _git(root, "worktree", "add", "--detach", "--quiet", str(target), sha)
        try:
            if not (target / prefix).is_dir():
                raise KernbenchError(f"--ab {ref}: --root is {prefix.rstrip('/')} in its "
                                     f"repository, and {ref} has no such folder")
            yield target / prefix, sha
        finally:
            _git(root, "worktree", "remove", "--force", str(target), check=False)
            _git(root, "worktree", "prune", check=False)
            shutil.rmtree(folder, ignore_errors=True)


WORKTREE_PREFIX = "kernbench-ab-"
"""--ab's worktree lives in ``<tmp>/<prefix><pid>-<random>/baseline``, held while its run
lives: a run killed outright leaves it, and the next --ab removes it (and git's record of
it, with `git worktree prune`)."""


def _git(root: Path, *args: str, check: bool = True) -> None:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          timeout=120, check=False)
    if check and done.returncode != 0:
        raise KernbenchError(f"git {' '.join(args[:2])} failed: {done.stderr.strip()}")


Runs = dict[tuple[str, str], list[CaseResult]]
"""Each (side label, case key)'s records, one per round it finished."""


def interleave(baseline: Side, candidate: Side, rounds: int,
               progress: Progress | None = None, runs: Runs | None = None
               ) -> tuple[list[CaseResult], list[CaseResult]]:
    """Run both sides' cases in alternating rounds; one merged record per case and side.
    `runs` (filled as rounds finish) keeps what finished when Ctrl-C or SIGTERM stops it
    (:func:`finished_rounds`)."""
    keyed = {side.label: side.keyed() for side in (baseline, candidate)}
    keys = sorted(set(keyed[baseline.label]) | set(keyed[candidate.label]))
    runs = {} if runs is None else runs
    total = rounds * sum(len(cases) for cases in keyed.values())
    done = 0
    launcher = make_launcher(baseline.runner.settings)
    with baseline.runner.session(), candidate.runner.session():
        for round_index in range(rounds):
            # This round's fork servers; what could not fork in an earlier round is not retried.
            launcher = launcher.fresh() if round_index else launcher
            with contextlib.closing(launcher), baseline.runner.workers(launcher), \
                    candidate.runner.workers(launcher):
                order = (baseline, candidate) if round_index % 2 == 0 else (candidate, baseline)
                label = f"round {round_index + 1}/{rounds}"
                done = _round(order, keyed, keys, runs, label, (done, total), progress)
    return (_merged(baseline, runs), _merged(candidate, runs))


def _round(order: tuple[Side, Side], keyed: dict[str, dict[str, Case]], keys: Sequence[str],
           runs: Runs, label: str, counts: tuple[int, int],
           progress: Progress | None) -> int:
    """One round: each case (`keyed`: each side's cases by key) once on each side, the sides
    in `order`; the count of cases done after it."""
    done, total = counts
    for key in keys:
        for side in order:
            case = keyed[side.label].get(key)
            if case is None:
                continue
            what = f"{label} {side.label} {case.case_id}"
            if progress is not None:
                progress.case_started(what, done + 1, total)
            result = side.runner.run_case(case)
            runs.setdefault((side.label, key), []).append(result)
            done += 1
            if progress is not None:
                # The record's id: a native case is named by the precision it returned.
                progress.case_finished(f"{label} {side.label} {result.case_id}: "
                                       f"{result.status}", done, total)
    return done


def _merged(side: Side, runs: Runs) -> list[CaseResult]:
    results = [invalid_result(s) for s in side.planned if isinstance(s, KernelSpec)]
    for key in sorted(side.keyed()):
        if runs.get((side.label, key)):
            results.append(merge_replicates(runs[(side.label, key)]))
    return results


def finished_rounds(baseline: Side, candidate: Side, runs: Runs
                    ) -> tuple[list[CaseResult], list[CaseResult]]:
    """Both sides' records from the rounds that finished before an interruption. A case on
    both sides keeps the rounds both finished (its k-th processes still ran side by side);
    a case no round finished is left out."""
    on_both = set(baseline.keyed()) & set(candidate.keyed())
    trimmed: Runs = {}
    for (label, key), records in runs.items():
        other = candidate.label if label == baseline.label else baseline.label
        count = (min(len(records), len(runs.get((other, key), []))) if key in on_both
                 else len(records))
        if count:
            trimmed[(label, key)] = records[:count]
    return _merged(baseline, trimmed), _merged(candidate, trimmed)


def make_side(label: str, root: Path, settings: RunSettings,
              specs: Sequence[KernelSpec]) -> Side:
    """A side whose every case runs one process per round; its whole suite is planned (see
    :func:`shard_sides` for ``--shard``)."""
    runner = BenchmarkRunner(dataclasses.replace(settings, root=root, processes=1))
    suite = runner.plan(specs)
    return Side(label, root, runner, suite, suite)


def shard_sides(baseline: Side, candidate: Side, shard: tuple[int, int]) -> tuple[Side, Side]:
    """Both sides cut to shard K of N. The kernels of both suites are split together by count
    (:func:`kernbench.execution.balancing.counted_groups`, every case of either side counting
    one), so a kernel's baseline and candidate share a shard, every machine that sees the same
    two trees computes the same split, and no shard is empty while there are N kernels."""
    from kernbench.execution.balancing import counted_groups
    from kernbench.execution.resume import plan_id

    index, total = shard
    shard_of = counted_groups([*baseline.suite, *candidate.suite], plan_key, plan_id, total)

    def cut(side: Side) -> Side:
        return dataclasses.replace(side, planned=[
            item for item in side.suite if shard_of[plan_key(item)] == index])

    return cut(baseline), cut(candidate)


__all__ = ["Runs", "Side", "case_key", "finished_rounds", "interleave", "make_side",
           "shard_sides", "worktree"]
