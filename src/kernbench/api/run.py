"""Run a suite: discover the kernels, plan the cases, run them and keep every finished result on
disk as it goes (:mod:`kernbench.api.sink`), resuming an interrupted run on request."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernbench.api.reports import clear_previous_reports
from kernbench.api.sink import OnResult, ResultSink
from kernbench.discovery.scan import KernelDiscovery
from kernbench.errors import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, KernbenchError
from kernbench.execution.held import FOLDER_NAME as HELD_FOLDER
from kernbench.execution.held import HeldProcesses
from kernbench.execution.isolation import kill_orphans
from kernbench.execution.launcher import prestarted_launcher
from kernbench.execution.planning import (
    check_sweep_globs,
    plan_key,
    select_kernels,
    unmatched_filters,
)
from kernbench.execution.runner import BenchmarkRunner, now_iso
from kernbench.execution.settings import RunSettings
from kernbench.measure.environment import collect_environment
from kernbench.measure.machine import RunState
from kernbench.results.files import check_apart_from_kernels, check_output_dir, output_lock
from kernbench.results.model import Case, CaseResult, KernelSpec, RunResult
from kernbench.results.serialize import manifest_dict

if TYPE_CHECKING:
    from kernbench.execution.resume import PreviousRun

Log = Callable[[str], None]
OnStart = Callable[[str, int, int], None]


@dataclass(frozen=True)
class RunOutcome:
    """A finished run, where its report set is and the exit code its statuses call for."""

    run: RunResult
    output_dir: Path
    exit_code: int
    not_selected: Mapping[str, str] = field(default_factory=dict)
    """Valid kernels that --backends or --precision left without a case, and why."""
    unmatched_filters: tuple[str, ...] = ()
    """--filter globs that matched no kernel (others did, or the run would have stopped)."""
    unread_precision: tuple[str, ...] = ()
    """Kernels that declare a `precision` parameter and never read it, and ran one case at
    their own precision, whatever --precision asked (:attr:`KernelSpec.precision_unread`)."""
    orphans_killed: tuple[int, ...] = ()
    """Pids of processes an earlier run, itself killed outright, had left running, that this
    run killed before it measured anything
    (:func:`kernbench.execution.isolation.kill_orphans`; the CLI warns: :func:`orphans_line`)."""


def discover(root: Path, paths: Sequence[str] | None = None,
             log: Log | None = None) -> tuple[list[KernelSpec], dict[str, Any]]:
    """Kernels under `root` and the manifest document describing them."""
    discovery = KernelDiscovery(root, paths=paths, log=log)
    specs = discovery.discover()
    return specs, manifest_dict(str(discovery.root), list(discovery.paths), specs)


def exit_code_for(results: Sequence[CaseResult]) -> int:
    """2 if a kernel is invalid (configuration error), 1 if a case failed or timed out, else 0."""
    return _exit_code({r.status for r in results})


def exit_code_for_counts(counts: Mapping[str, int]) -> int:
    """:func:`exit_code_for` of a summary's `counts` (a merge holds records, not CaseResults):
    `kernbench merge` exits as `run --shards` does for the same cases."""
    return _exit_code({status for status, n in counts.items() if status != "total" and n})


def _exit_code(statuses: set[str]) -> int:
    if "invalid" in statuses:
        return EXIT_USAGE
    if statuses & {"failed", "timeout"}:
        return EXIT_FAILURES
    return EXIT_OK


def run_suite(settings: RunSettings, output_dir: Path, paths: Sequence[str] | None = None,
              log: Log | None = None, on_result: OnResult | None = None,
              on_start: OnStart | None = None,
              extra_settings: Mapping[str, Any] | None = None,
              resume: bool = False, on_step: OnStart | None = None) -> RunOutcome:
    """Discover, run every selected case and write the JSON report set under `output_dir`
    (with summary.md); :func:`render_reports` adds the other formats. `extra_settings`
    (e.g. the suite file) is kept in summary.json's `settings` with the run's own.

    SIGINT and SIGTERM stop the run between writes (:mod:`kernbench.execution.interrupts`): the
    summary written on the way out has `complete: false`. With `resume`, `output_dir` holds such an
    interrupted run: its finished cases are kept and only the others run
    (:mod:`kernbench.execution.resume`), each case the run stopped in the middle of only with
    the processes it lacks (:mod:`kernbench.execution.held`). With `settings.interleave` (the
    default) the callbacks count worker processes and `on_step` hears of each one that did
    not finish its case (:meth:`BenchmarkRunner.run`)."""
    from kernbench.execution.interrupts import signals_handled
    from kernbench.execution.resume import load_previous

    check_output_dir(output_dir)
    specs, manifest = discover(settings.root, paths, log)
    check_apart_from_kernels(output_dir, Path(manifest["root"]), manifest["paths"])
    check_sweep_globs(settings, specs)
    selected = select_kernels(specs, settings.filters)
    previous = load_previous(output_dir) if resume else None
    planned, plan = _plan_run(settings, manifest, selected,
                              None if previous is None else _recorded_plan(previous.summary))
    killed = kill_orphans()
    # The calibration first, on a quiet machine; then the first case's fork servers start,
    # their imports overlapping the environment's reading (a resumed run starts them later).
    machine = RunState(measure=settings.fake_call_ms is None)
    with closing(prestarted_launcher(settings, planned if previous is None else ())) as launcher:
        environment = run_environment(settings, manifest["paths"])
        run_settings = {**settings_record(settings, output_dir, manifest["paths"]),
                        **identity_record(environment, settings), "plan": plan,
                        **(extra_settings or {})}
        started, kept = now_iso(), list[CaseResult]()
        if previous is not None:
            started, kept, planned, run_settings = _resume_state(
                previous, planned, run_settings, environment, log, settings.processes)
        held = HeldProcesses(output_dir / HELD_FOLDER)
        with output_lock(output_dir), signals_handled() as guard:
            sink = ResultSink(output_dir, selected, kept, guard.critical, on_result)
            with guard.critical():
                clear_previous_reports(output_dir, resumed=previous is not None)
                if previous is None:  # a new run: no earlier run's processes join its cases
                    held.clear()
                sink.start(environment, manifest, started, run_settings)
            complete = False
            try:
                BenchmarkRunner(settings, launcher).run(
                    planned, on_result=sink.record, on_start=on_start, keep=False,
                    on_step=on_step, held=held)
                complete = True
            finally:
                with guard.critical():
                    run = sink.finish(complete, machine.finish(complete))
                    if complete:
                        held.clear()
    return _outcome(run, output_dir, specs, selected, settings, killed)


def _outcome(run: RunResult, output_dir: Path, specs: Sequence[KernelSpec],
             selected: Sequence[KernelSpec], settings: RunSettings,
             killed: tuple[int, ...]) -> RunOutcome:
    return RunOutcome(run, output_dir, exit_code_for(run.results), left_out(selected, settings),
                      tuple(unmatched_filters(specs, settings.filters)),
                      unread(selected, run.results), killed)


def finished_run(settings: RunSettings, output_dir: Path,
                 paths: Sequence[str] | None = None) -> PreviousRun | None:
    """The run `output_dir` holds when it already finished (a :class:`PreviousRun`), None
    when it did not. A finished run is checked against `settings` as a resume checks them:
    flags that differ from the run's are a KernbenchError naming them, never silently
    ignored because nothing is left to run."""
    from kernbench.execution.resume import check_compatible, load_previous
    from kernbench.results.schema import read_document

    summary = output_dir / "summary.json"  # the summary alone: an unfinished run's records
    if not summary.is_file() or read_document(summary).get("complete") is not True:
        return None  # are read by the resume itself (which says why there is none)
    previous = load_previous(output_dir)
    _, manifest = discover(settings.root, paths)
    check_compatible(previous, settings_record(settings, output_dir, manifest["paths"]), None)
    return previous


def resume_split(settings: RunSettings, output_dir: Path, paths: Sequence[str] | None = None
                 ) -> tuple[list[CaseResult], list[Case | KernelSpec]]:
    """What ``run --resume output_dir`` with `settings` would do: (the finished records it
    keeps, the cases it still runs); what ``run --resume DIR --list`` shows."""
    from kernbench.execution.resume import load_previous, split_plan

    previous = load_previous(output_dir)
    specs, manifest = discover(settings.root, paths)
    planned, _ = _plan_run(settings, manifest, select_kernels(specs, settings.filters),
                           _recorded_plan(previous.summary))
    return split_plan(planned, previous.records, settings.processes)


def left_out(selected: Sequence[KernelSpec], settings: RunSettings) -> dict[str, str]:
    """The valid kernels --backends or --precision left without a case, and why."""
    from kernbench.execution.planning import not_selected

    return {spec.name: reason for spec in selected
            if spec.status != "invalid" and (reason := not_selected(spec, settings))}


def unread(selected: Sequence[KernelSpec], results: Sequence[CaseResult]) -> tuple[str, ...]:
    """The kernels that declare `precision`, never read it, and ran a case at their own
    precision (one that was invalid or failed ran none)."""
    from kernbench.results.vocabulary import precision_unread

    ran = {r.kernel_name for r in results if precision_unread(r.output)}
    return tuple(s.name for s in selected if s.name in ran)


def orphans_line(killed: Sequence[int]) -> str:
    """What a run says of the processes it killed at its start
    (:attr:`RunOutcome.orphans_killed`)."""
    shown = ", ".join(map(str, killed[:10])) + (" …" if len(killed) > 10 else "")
    return (f"killed {len(killed)} process{'es' * (len(killed) > 1)} left running by a "
            f"kernbench run that was itself killed before it could end them (pid {shown})")


def run_environment(settings: RunSettings,
                    kernel_paths: Sequence[str] = ()) -> dict[str, Any]:
    """env.json of a run on this machine: the environment and the run's testbed; `git.dirty`
    counts files git does not track in the `kernel_paths` too."""
    from kernbench.measure.identity import resolve_testbed
    from kernbench.results.files import default_cache_dir

    environment = collect_environment(settings.root, kernel_paths=kernel_paths)
    environment["testbed"] = resolve_testbed(settings.testbed,
                                             settings.testbed_dir or default_cache_dir(),
                                             environment.get("hostname"))
    return environment


def identity_record(environment: Mapping[str, Any], settings: RunSettings) -> dict[str, Any]:
    """``settings.shards`` of a run: the identity of its one shard (host, testbed, ids)."""
    from kernbench.measure.identity import shard_identity

    return {"shards": [shard_identity(environment, settings.shard)]}


def _recorded_plan(summary: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``settings.plan`` of an interrupted run's summary (None where it has none)."""
    plan = (summary.get("settings") or {}).get("plan")
    return plan if isinstance(plan, Mapping) and isinstance(plan.get("case_ids"), list) else None


def _plan_run(settings: RunSettings, manifest: Mapping[str, Any], selected: list[KernelSpec],
              recorded: Mapping[str, Any] | None = None
              ) -> tuple[list[Case | KernelSpec], dict[str, Any]]:
    """The planned cases and the plan summary.json keeps (the whole suite's size and digest,
    this shard's case ids); KernbenchError when there are no kernels or no cases to run. A
    resumed shard keeps the cases it was given (`recorded`, its run's plan): split again, by
    a history that has grown since, it would take cases another shard of its run holds."""
    from kernbench.execution.completeness import plan_record
    from kernbench.execution.resume import plan_id
    if not selected:
        where = ", ".join(manifest["paths"])
        what = f"matching {', '.join(settings.filters)} " if settings.filters else ""
        raise KernbenchError(f"no kernels {what}found under {manifest['root']} "
                             f"(paths: {where}); see --paths, --filter or [tool.kernbench] paths")
    suite = BenchmarkRunner(settings).plan(selected)
    if settings.shard is not None and recorded is not None:
        ids = set(recorded["case_ids"])
        planned: list[Case | KernelSpec] = [i for i in suite if plan_id(i) in ids]
        balance = recorded.get("balance")
    else:
        planned, balance = ((suite, None) if settings.shard is None
                            else _shard_items(settings, suite))
    # A shard of a small suite may hold no case: in a CI matrix that is normal, not an error;
    # it writes an empty report set that `kernbench merge` joins like any other.
    if not planned and settings.shard is None:
        raise KernbenchError(
            f"no cases to run: the {len(selected)} selected kernels declare none of the requested "
            f"backends ({', '.join(settings.backends or ['any'])}) or precisions "
            f"({', '.join(settings.precisions or ['any'])}); `kernbench run --list` with the same "
            "flags says why for each")
    plan = plan_record([plan_id(i) for i in suite], [plan_id(i) for i in planned])
    return planned, plan if balance is None else {**plan, "balance": balance}


HISTORY_RECORDS = 20
"""How many of the newest history records balance a shard (the newest measurement wins)."""


def _shard_items(settings: RunSettings, suite: list[Case | KernelSpec]
                 ) -> tuple[list[Case | KernelSpec], dict[str, Any]]:
    """This shard's items and how the suite was split (``settings.plan.balance``)."""
    assert settings.shard is not None
    index, total = settings.shard
    shards, balance = _split(settings, suite, total)
    return [item for item, k in zip(suite, shards, strict=True) if k == index], balance


def _split(settings: RunSettings, suite: list[Case | KernelSpec], total: int
           ) -> tuple[list[int], dict[str, Any]]:
    """The shard (1..total) of each suite item and how the suite was split: by measured wall
    time when the history under the root measured a planned case, else by count: the same
    greedy split with every case counting one, so shards differ by at most one kernel's
    cases (a hash of the kernel name put both of two kernels on one of two shards half the
    time) (:mod:`kernbench.execution.balancing`)."""
    from kernbench.execution.balancing import balanced_groups, case_walls_s, counted_groups
    from kernbench.execution.resume import plan_id
    from kernbench.results.history import load_records

    records = load_records(settings.root, limit=HISTORY_RECORDS, on_error=lambda _: None)
    walls = case_walls_s(records, settings.protocol.warmup_time_s)
    balance = balanced_groups(suite, plan_key, plan_id, walls, total)
    if balance is None:
        shards = counted_groups(suite, plan_key, plan_id, total)
        return [shards[plan_key(item)] for item in suite], {"by": "count"}
    return [balance.shard_of[plan_key(item)] for item in suite], {
        "by": "history", "known_cases": balance.known_cases, "suite_cases": len(suite),
        "expected_s": [round(s, 3) for s in balance.expected_s]}


def shard_split(settings: RunSettings, shards: int,
                paths: Sequence[str] | None = None) -> dict[str, Any]:
    """How `settings`' suite splits into `shards` (what each shard's ``settings.plan.balance``
    will say), with the case count of each shard (``cases``, shard 1 first)."""
    specs, _ = discover(settings.root, paths)
    selected = select_kernels(specs, settings.filters)
    suite = BenchmarkRunner(settings).plan(selected)
    where, balance = _split(settings, suite, shards)
    return {**balance, "suite_cases": len(suite),
            "cases": [where.count(k) for k in range(1, shards + 1)]}


def shard_kernels(settings: RunSettings, paths: Sequence[str] | None = None) -> set[str]:
    """The kernels `settings.shard` (K/N) runs, split as the run splits the suite: what
    ``run --list --shard K/N`` shows."""
    assert settings.shard is not None
    specs, _ = discover(settings.root, paths)
    suite = BenchmarkRunner(settings).plan(select_kernels(specs, settings.filters))
    return {plan_key(item) for item in _shard_items(settings, suite)[0]}


def _resume_state(previous: PreviousRun, planned: list[Case | KernelSpec],
                  run_settings: dict[str, Any], environment: Mapping[str, Any],
                  log: Log | None, processes: int = 1
                  ) -> tuple[str, list[CaseResult], list[Case | KernelSpec], dict[str, Any]]:
    """(started_at, kept records, cases still to run, settings) of a resumed run."""
    from kernbench.execution.resume import check_compatible, split_plan

    check_compatible(previous, run_settings, environment.get("fingerprint"))
    kept, todo = split_plan(planned, previous.records, processes)
    if log is not None:
        log(f"resuming {previous.directory}: {len(kept)} finished cases kept, {len(todo)} "
            "to run")
    resumed = [*(previous.summary.get("settings") or {}).get("resumed", []),
               {"at": now_iso(), "kept_cases": len(kept), "remaining_cases": len(todo)}]
    started = str(previous.summary.get("started_at") or now_iso())
    return started, kept, todo, {**run_settings, "resumed": resumed}


def settings_record(settings: RunSettings, output_dir: Path, paths: list[str]) -> dict[str, Any]:
    """The run's settings as summary.json keeps them (the plain run and each A/B side alike)."""
    protocol = asdict(settings.protocol)
    return {"iterations": protocol.pop("iterations"), "warmup": protocol.pop("warmup"),
            "warmup_time_s": protocol.pop("warmup_time_s"),
            "seed": protocol.pop("seed"), "processes": settings.processes,
            "interleave": settings.interleave,
            "isolation": settings.isolation, "protocol": protocol,
            "trace_memory": settings.trace_python, "no_l2_flush": not settings.flush_l2,
            "backends": list(settings.backends) if settings.backends else None,
            "precisions": list(settings.precisions) if settings.precisions else None,
            "filters": list(settings.filters), "timeout_s": settings.timeout_s,
            "root": str(settings.root), "paths": paths, "output_dir": str(output_dir),
            "fake_call_ms": settings.fake_call_ms, "gpu_timing": settings.gpu_timing,
            "inject_slowdown": dict(settings.inject_slowdown) or None,
            "max_memory_bytes": settings.max_memory_bytes,
            "shard": list(settings.shard) if settings.shard else None,
            "sku": settings.sku, "compile_mode": settings.compile_mode,
            "profile": settings.profile,
            "profile_iters": settings.profile_iters if settings.profile else None,
            "sweeps": {pattern: [point.label for point in points]
                       for pattern, points in settings.sweeps} or None}
