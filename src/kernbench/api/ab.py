"""Interleaved A/B: a git ref (the baseline, in a temporary worktree) against this tree, case by
case in alternating rounds, so both sides share the machine's drift."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernbench.analysis.compare import DEFAULT_ALPHA, Thresholds
from kernbench.analysis.summary import summary_dict
from kernbench.api.compare import write_run_comparison
from kernbench.api.reports import clear_previous_reports, write_report_set
from kernbench.api.run import (
    Log,
    RunOutcome,
    discover,
    exit_code_for,
    identity_record,
    run_environment,
    settings_record,
)
from kernbench.errors import KernbenchError
from kernbench.execution.isolation import kill_orphans
from kernbench.execution.planning import check_sweep_globs, select_kernels
from kernbench.execution.runner import now_iso
from kernbench.execution.settings import RunSettings
from kernbench.results.inputs import run_from_document
from kernbench.results.model import CaseResult, KernelSpec, RunResult

if TYPE_CHECKING:
    from kernbench.execution.ab import Progress, Runs, Side

def run_ab(settings: RunSettings, ref: str, output_dir: Path, rounds: int,
           thresholds: Thresholds, alpha: float = DEFAULT_ALPHA,
           paths: Sequence[str] | None = None, log: Log | None = None,
           progress: Progress | None = None,
           extra_settings: Mapping[str, Any] | None = None) -> tuple[RunOutcome, dict[str, Any]]:
    """Interleaved A/B of REF (baseline, in a temporary worktree) against this tree.

    The candidate's report set goes to `output_dir`, the baseline's to `output_dir/baseline`,
    and the comparison (regressions.md, comparison.json) to `output_dir`. Ctrl-C or SIGTERM
    stops it between writes: both report sets are written from the rounds that finished
    (``complete: false``), with no comparison, and the interrupt goes on."""
    from kernbench.discovery.scan import KernelDiscovery
    from kernbench.execution.ab import finished_rounds, interleave, make_side, shard_sides, worktree
    from kernbench.execution.interrupts import signals_handled
    from kernbench.results.files import check_apart_from_kernels, check_output_dir, output_lock

    started = now_iso()
    check_output_dir(output_dir)
    where = KernelDiscovery(settings.root, paths=paths)
    check_apart_from_kernels(output_dir, where.root, where.paths)
    killed = kill_orphans()
    runs: Runs = {}
    with output_lock(output_dir), signals_handled() as guard, \
            worktree(settings.root, ref) as (base_root, sha):
        clear_previous_reports(output_dir)
        environment = run_environment(settings)
        base_specs, base_manifest = discover(base_root, paths, log)
        cand_specs, cand_manifest = discover(settings.root, paths, log)
        check_sweep_globs(settings, cand_specs)
        # An injected slowdown (a testing aid) is the candidate's change: not the baseline's.
        baseline = make_side("A", base_root, replace(settings, inject_slowdown=()),
                             select_kernels(base_specs, settings.filters))
        candidate = make_side("B", settings.root, settings,
                              select_kernels(cand_specs, settings.filters))
        if settings.shard is not None:
            baseline, candidate = shard_sides(baseline, candidate, settings.shard)
        if settings.shard is None:
            _check_comparable(ref, baseline.planned, candidate.planned)
        sides = _Sides(settings, ref, sha, rounds, started, environment, output_dir,
                       (base_specs, base_manifest, baseline),
                       (cand_specs, cand_manifest, candidate), extra_settings)
        try:
            base_results, cand_results = interleave(baseline, candidate, rounds, progress, runs)
        except KeyboardInterrupt:
            with guard.critical():
                sides.write(*finished_rounds(baseline, candidate, runs), complete=False)
            raise
    cand_run, base_run = sides.write(base_results, cand_results, complete=True)
    # bench.yaml `regression` thresholds of this tree's kernels apply, as in `compare`.
    thresholds = replace(thresholds, per_kernel={
        **{s.name: dict(s.config.regression) for s in cand_specs
           if s.config is not None and s.config.regression}, **thresholds.per_kernel})
    base = run_from_document(summary_dict(base_run), f"{ref} ({sha[:12]}), interleaved")
    cand = run_from_document(summary_dict(cand_run), "this tree, interleaved")
    document = write_run_comparison(base, cand, output_dir, thresholds, alpha, paired=True)
    return RunOutcome(cand_run, output_dir, exit_code_for(cand_results),
                      orphans_killed=killed), document


SideParts = tuple[list[KernelSpec], dict[str, Any], "Side"]


def _check_comparable(ref: str, baseline: Sequence[Any], candidate: Sequence[Any]) -> None:
    """KernbenchError (before any round runs) when no kernel is planned on both sides: every
    round would run, and the comparison could only say "no case ran in both runs"."""
    from kernbench.execution.planning import plan_key

    if not baseline and not candidate:
        raise KernbenchError("--ab: no cases to run on either side")
    at_ref, here = {plan_key(i) for i in baseline}, {plan_key(i) for i in candidate}
    if not at_ref & here:
        raise KernbenchError(
            f"--ab {ref}: no selected kernel is on both sides ({len(here)} only in this tree, "
            f"{len(at_ref)} only at {ref}): nothing would be compared; see --filter")


@dataclass(frozen=True)
class _Sides:
    """What both sides' report sets are written from, but their results."""

    settings: RunSettings
    ref: str
    sha: str
    rounds: int
    started: str
    environment: dict[str, Any]
    output_dir: Path
    baseline: SideParts
    candidate: SideParts
    extra_settings: Mapping[str, Any] | None

    def write(self, base_results: list[CaseResult], cand_results: list[CaseResult],
              complete: bool) -> tuple[RunResult, RunResult]:
        """Both report sets: this tree's in `output_dir`, the baseline's in its baseline/."""
        settings, environment = self.settings, self.environment
        base_specs, base_manifest, baseline = self.baseline
        cand_specs, cand_manifest, candidate = self.candidate
        record = {**settings_record(settings, self.output_dir, cand_manifest["paths"]),
                  **identity_record(environment, settings), **(self.extra_settings or {}),
                  "processes": self.rounds,  # a case's processes a side: one per round
                  "ab": {"ref": self.ref, "commit": self.sha, "rounds": self.rounds}}
        finished = now_iso()
        cand_run = RunResult(self.started, finished, complete,
                             {**record, "plan": candidate.plan_record()}, environment,
                             tuple(select_kernels(cand_specs, settings.filters)),
                             tuple(cand_results))
        git = {**(environment.get("git") or {}), "commit": self.sha,
               "short_commit": self.sha[:12], "branch": None, "dirty": False, "ref": self.ref}
        base_run = RunResult(self.started, finished, complete,
                             {**record, "plan": baseline.plan_record()},
                             {**environment, "git": git},
                             tuple(select_kernels(base_specs, settings.filters)),
                             tuple(base_results))
        write_report_set(self.output_dir, cand_run, cand_manifest)
        write_report_set(self.output_dir / "baseline", base_run, base_manifest)
        return cand_run, base_run
