"""The library API that the CLI, tools/bench_all.py and CI call.

:func:`discover` finds kernels; :func:`run_suite` runs them and writes the report set, keeping
every finished result on disk as it goes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernbench.analysis.compare import (
    ADVICE,
    DEFAULT_ACCURACY_DRIFT,
    DEFAULT_ALPHA,
    DEFAULT_THRESHOLD,
    Thresholds,
    calibration_change,
    compare_results,
    machine_caveats,
    skipped_on_both_sides,
)
from kernbench.analysis.summary import summary_dict
from kernbench.discovery.scan import KernelDiscovery
from kernbench.errors import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, KernbenchError
from kernbench.execution.runner import (
    BenchmarkRunner,
    RunSettings,
    check_sweep_globs,
    now_iso,
    select_kernels,
)
from kernbench.measure.environment import collect_environment
from kernbench.measure.machine import RunState
from kernbench.reporting import ReportGenerator
from kernbench.results.files import read_json_object
from kernbench.results.inputs import LoadedRun, load_run, run_from_document
from kernbench.results.model import Case, CaseResult, KernelSpec, RunResult
from kernbench.results.serialize import manifest_dict, spec_dict

if TYPE_CHECKING:
    from kernbench.execution.ab import Progress

Log = Callable[[str], None]
OnResult = Callable[[CaseResult, int, int], None]
OnStart = Callable[[str, int, int], None]

__all__ = ["RunOutcome", "discover", "exit_code_for", "render_reports", "run_suite"]


@dataclass(frozen=True)
class RunOutcome:
    run: RunResult
    output_dir: Path
    exit_code: int


def discover(root: Path, paths: Sequence[str] | None = None,
             log: Log | None = None) -> tuple[list[KernelSpec], dict[str, Any]]:
    """Kernels under `root` and the manifest document describing them."""
    discovery = KernelDiscovery(root, paths=paths, log=log)
    specs = discovery.discover()
    return specs, manifest_dict(str(discovery.root), list(discovery.paths), specs)


def exit_code_for(results: Sequence[CaseResult]) -> int:
    """2 if a kernel is invalid (configuration error), 1 if a case failed or timed out, else 0."""
    statuses = {r.status for r in results}
    if "invalid" in statuses:
        return EXIT_USAGE
    if statuses & {"failed", "timeout"}:
        return EXIT_FAILURES
    return EXIT_OK


def run_suite(settings: RunSettings, output_dir: Path, paths: Sequence[str] | None = None,
              log: Log | None = None, on_result: OnResult | None = None,
              on_start: OnStart | None = None,
              extra_settings: Mapping[str, Any] | None = None,
              resume: bool = False) -> RunOutcome:
    """Discover, run every selected case and write the JSON report set under `output_dir`
    (with summary.md); :func:`render_reports` adds the other formats. `extra_settings`
    (e.g. the suite file) is kept in summary.json's `settings` with the run's own.

    SIGINT and SIGTERM stop the run between writes (:mod:`kernbench.execution.interrupts`): the
    summary written on the way out has `complete: false`. With `resume`, `output_dir` holds such an
    interrupted run: its finished cases are kept and only the others run
    (:mod:`kernbench.execution.resume`)."""
    from kernbench.execution.interrupts import signals_handled

    specs, manifest = discover(settings.root, paths, log)
    check_sweep_globs(settings, specs)
    selected = select_kernels(specs, settings.filters)
    planned = _plan_run(settings, manifest, selected)
    environment = collect_environment(settings.root)
    run_settings = {**_settings_record(settings, output_dir, manifest["paths"]),
                    **(extra_settings or {})}
    started, kept = now_iso(), list[CaseResult]()
    if resume:
        started, kept, planned, run_settings = _resume_state(
            output_dir, planned, run_settings, environment, log)
    with signals_handled() as guard:
        sink = _ResultSink(output_dir, selected, kept, guard.critical, on_result)
        with guard.critical():
            clear_previous_reports(output_dir)
            sink.start(environment, manifest, started, run_settings)
        complete = False
        machine = RunState(measure=settings.fake_call_ms is None)
        try:
            BenchmarkRunner(settings).run(planned, on_result=sink.record, on_start=on_start,
                                          keep=False)
            complete = True
        finally:
            with guard.critical():
                run = sink.finish(complete, machine.finish(complete))
    return RunOutcome(run, output_dir, exit_code_for(run.results))


def _plan_run(settings: RunSettings, manifest: Mapping[str, Any],
              selected: list[KernelSpec]) -> list[Case | KernelSpec]:
    """The planned cases; KernbenchError when there are no kernels or no cases to run."""
    if not selected:
        where = ", ".join(manifest["paths"])
        what = f"matching {', '.join(settings.filters)} " if settings.filters else ""
        raise KernbenchError(f"no kernels {what}found under {manifest['root']} "
                             f"(paths: {where}); see --paths, --filter or [tool.kernbench] paths")
    planned = BenchmarkRunner(settings).plan(selected)
    # A shard of a small suite may hold no case: in a CI matrix that is normal, not an error;
    # it writes an empty report set that `kernbench merge` joins like any other.
    if not planned and settings.shard is None:
        raise KernbenchError(
            f"no cases to run: the {len(selected)} selected kernels declare none of the requested "
            f"backends ({', '.join(settings.backends or ['any'])}) or precisions "
            f"({', '.join(settings.precisions or ['any'])}); see `kernbench list`")
    return planned


def _resume_state(output_dir: Path, planned: list[Case | KernelSpec],
                  run_settings: dict[str, Any], environment: Mapping[str, Any],
                  log: Log | None) -> tuple[str, list[CaseResult], list[Case | KernelSpec],
                                            dict[str, Any]]:
    """(started_at, kept records, cases still to run, settings) of a resumed run."""
    from kernbench.execution.resume import check_compatible, load_previous, split_plan

    previous = load_previous(output_dir)
    check_compatible(previous, run_settings, environment.get("fingerprint"))
    kept, todo = split_plan(planned, previous.records)
    if log is not None:
        log(f"resuming {output_dir}: {len(kept)} finished cases kept, {len(todo)} to run")
    resumed = [*(previous.summary.get("settings") or {}).get("resumed", []),
               {"at": now_iso(), "kept_cases": len(kept), "remaining_cases": len(todo)}]
    started = str(previous.summary.get("started_at") or now_iso())
    return started, kept, todo, {**run_settings, "resumed": resumed}


WRITE_SHARE = 0.1
"""Most of a run's wall time that rewriting kernel files may take (see :class:`_ResultSink`)."""


class _ResultSink:
    """Writes a run's files as it goes: each finished case into its kernel's file (inside the
    signal guard's critical section), the summary at the start and at the end.

    The parent's memory stays flat however many cases run: only the current kernel's records
    are held (its file is rewritten with them; a kernel met again is read back from its
    file). At the end every kernel file is read back, in the order the kernels first finished
    a case, for the summary and the returned run.

    A kernel's file holds all its records, so rewriting it after every case would cost time
    quadratic in a big sweep's points. It is rewritten after a case only when the time since
    the last write is at least 1 / :data:`WRITE_SHARE` times what that write took (writes
    then take at most ~10% of the run), and always when the next kernel starts and when the
    run stops, interrupted or not. A small kernel's file is still written after every case;
    only a process killed outright (SIGKILL) can lose the last few cases of a big sweep."""

    def __init__(self, output_dir: Path, selected: Sequence[KernelSpec],
                 kept: Sequence[CaseResult], critical: Callable[[], Any],
                 on_result: OnResult | None) -> None:
        self.reports = ReportGenerator(output_dir)
        self.entries = {s.name: spec_dict(s) for s in selected}
        self.kernels = tuple(selected)
        self._kept = list(kept)
        self._written: dict[str, None] = {}
        """Kernels whose file this run wrote, in order: an ordered set."""
        self._current: tuple[str, list[CaseResult]] = ("", [])
        self._critical = critical
        self._on_result = on_result
        self._pending = False
        """Records of the current kernel not yet in its file."""
        self._written_at, self._write_cost_s = 0.0, 0.0
        """When the last kernel-file write ended, and how long it took."""
        self._started = ""
        self._settings: dict[str, Any] = {}
        self._environment: dict[str, Any] = {}

    def start(self, environment: Mapping[str, Any], manifest: Mapping[str, Any],
              started: str, settings: dict[str, Any]) -> None:
        """env.json, the manifest, kept kernels' files and an incomplete summary.json, so a
        run killed before its end (SIGKILL, power loss) still leaves a report set to resume."""
        self._started, self._settings = started, settings
        self._environment = dict(environment)
        self.reports.write_environment(environment)
        self.reports.write_manifest(dict(manifest))
        by_kernel: dict[str, list[CaseResult]] = {}
        for result in self._kept:
            by_kernel.setdefault(result.kernel_name, []).append(result)
        for name, results in by_kernel.items():
            self.reports.write_kernel(name, self.entries.get(name), results)
            self._written[name] = None
        self.reports.write_summary(self._run(False, self._kept))
        self._kept = []

    def record(self, result: CaseResult, index: int, total: int) -> None:
        with self._critical():
            name = result.kernel_name
            if self._current[0] != name:
                self._flush()  # the previous kernel's records not yet on disk
                self._write_cost_s = 0.0
            self._records_of(name).append(result)
            self._pending = True
            if time.monotonic() - self._written_at >= self._write_cost_s / WRITE_SHARE:
                self._flush()
        if self._on_result is not None:
            self._on_result(result, index, total)

    def _flush(self) -> None:
        """Rewrite the current kernel's file with its records, if any are not on disk yet."""
        name, records = self._current
        if not self._pending or not name:
            return
        start = time.monotonic()
        self.reports.write_kernel(name, self.entries.get(name), records)
        self._written[name] = None
        self._written_at = time.monotonic()
        self._write_cost_s, self._pending = self._written_at - start, False

    def _records_of(self, name: str) -> list[CaseResult]:
        if self._current[0] != name:
            earlier = self._read_back(name) if name in self._written else []
            self._current = (name, earlier)
        return self._current[1]

    def _read_back(self, name: str) -> list[CaseResult]:
        from kernbench.execution.resume import read_document, records_of

        path = self.reports.kernel_path(name)
        return records_of(read_document(path), path)

    def finish(self, complete: bool, machine_state: Mapping[str, Any] | None = None) -> RunResult:
        self._flush()
        self._current = ("", [])
        results = [r for name in self._written for r in self._read_back(name)]
        if machine_state is not None:
            self._environment["machine_state"] = dict(machine_state)
        run = self._run(complete, results)
        self.reports.write_environment(run.environment)
        self.reports.write_summary(run)
        return run

    def _run(self, complete: bool, results: Sequence[CaseResult]) -> RunResult:
        environment = {**self._environment, "devices": _devices(results)}
        return RunResult(started_at=self._started, finished_at=now_iso(), complete=complete,
                         settings=self._settings, environment=environment,
                         kernels=self.kernels, results=tuple(results))


# Files a run owns in its output directory besides the JSON it writes as it goes. A new run
# removes them first, so no report of an earlier run into the same directory survives to be
# mistaken for this one's (comparison.json above all: every format reads it).
OWNED_FILES = ("comparison.json", "regressions.md", "index.html", "results.csv",
               "pytorch_v3.json", "github_benchmark.json", "junit.xml")
OWNED_DIRS = ("plots", "profiles")


def clear_previous_reports(output_dir: Path) -> None:
    """Remove report files an earlier run left in `output_dir` (only kernbench's own names)."""
    import shutil

    for name in OWNED_FILES:
        (output_dir / name).unlink(missing_ok=True)
    for name in OWNED_DIRS:
        shutil.rmtree(output_dir / name, ignore_errors=True)


def render_reports(output_dir: Path, formats: Sequence[str], history_root: Path | None = None,
                   source_dir: Path | None = None) -> list[Path]:
    """Render `formats` from the JSON documents of the run in `source_dir` (default:
    `output_dir`) into `output_dir`; the paths written.

    summary.json, env.json and kernels/*.json are written by the run itself, so "json" only
    copies them when rendering into another directory. History records of the run's machine
    under `history_root` feed the trends.
    """
    from kernbench.reporting.bundle import load_report_inputs
    from kernbench.reporting.formats import write_formats

    source = source_dir or output_dir
    inputs = load_report_inputs(source, history_root)
    same = source.resolve() == output_dir.resolve()
    wanted = [f for f in formats if not (same and f == "json")]
    return write_formats(inputs, output_dir, wanted)


def write_report_set(output_dir: Path, run: RunResult, manifest: dict[str, Any]) -> None:
    """Every report file of a finished run at once (A/B sides; the normal run writes as it
    goes)."""
    reports = ReportGenerator(output_dir)
    reports.write_environment(run.environment)
    reports.write_manifest(manifest)
    entries = {s.name: spec_dict(s) for s in run.kernels}
    by_kernel: dict[str, list[CaseResult]] = {}
    for result in run.results:
        by_kernel.setdefault(result.kernel_name, []).append(result)
    for name, results in by_kernel.items():
        reports.write_kernel(name, entries.get(name), results)
    reports.write_summary(run)


def run_ab(settings: RunSettings, ref: str, output_dir: Path, rounds: int,
           thresholds: Thresholds, alpha: float = DEFAULT_ALPHA,
           paths: Sequence[str] | None = None, log: Log | None = None,
           progress: Progress | None = None,
           extra_settings: Mapping[str, Any] | None = None) -> tuple[RunOutcome, dict[str, Any]]:
    """Interleaved A/B of REF (baseline, in a temporary worktree) against this tree.

    The candidate's report set goes to `output_dir`, the baseline's to `output_dir/baseline`,
    and the comparison (regressions.md, comparison.json) to `output_dir`."""
    from kernbench.execution.ab import interleave, make_side, worktree

    started = now_iso()
    clear_previous_reports(output_dir)
    environment = collect_environment(settings.root)
    with worktree(settings.root, ref) as (base_root, sha):
        base_specs, base_manifest = discover(base_root, paths, log)
        cand_specs, cand_manifest = discover(settings.root, paths, log)
        check_sweep_globs(settings, cand_specs)
        # An injected slowdown (a testing aid) is the candidate's change: not the baseline's.
        baseline = make_side("A", base_root, replace(settings, inject_slowdown=()),
                             select_kernels(base_specs, settings.filters))
        candidate = make_side("B", settings.root, settings,
                              select_kernels(cand_specs, settings.filters))
        if not baseline.planned and not candidate.planned and settings.shard is None:
            raise KernbenchError("--ab: no cases to run on either side")
        base_results, cand_results = interleave(baseline, candidate, rounds, progress)
    # bench.yaml `regression` thresholds of this tree's kernels apply, as in `compare`.
    thresholds = replace(thresholds, per_kernel={
        **{s.name: dict(s.config.regression) for s in cand_specs
           if s.config is not None and s.config.regression}, **thresholds.per_kernel})
    record = {**_settings_record(settings, output_dir, cand_manifest["paths"]),
              **(extra_settings or {}), "ab": {"ref": ref, "commit": sha, "rounds": rounds}}
    finished = now_iso()
    cand_run = RunResult(started, finished, True, record, environment,
                         tuple(select_kernels(cand_specs, settings.filters)),
                         tuple(cand_results))
    git = {**(environment.get("git") or {}), "commit": sha, "short_commit": sha[:12],
           "branch": None, "dirty": False, "ref": ref}
    base_run = RunResult(started, finished, True, record, {**environment, "git": git},
                         tuple(select_kernels(base_specs, settings.filters)),
                         tuple(base_results))
    write_report_set(output_dir, cand_run, cand_manifest)
    write_report_set(output_dir / "baseline", base_run, base_manifest)
    base = run_from_document(summary_dict(base_run), f"{ref} ({sha[:12]}), interleaved")
    cand = run_from_document(summary_dict(cand_run), "this tree, interleaved")
    document = write_run_comparison(base, cand, output_dir, thresholds, alpha, paired=True)
    return RunOutcome(cand_run, output_dir, exit_code_for(cand_results)), document


def compare_files(baseline: Path, candidate: Path, output_dir: Path,
                  threshold: float = DEFAULT_THRESHOLD,
                  accuracy_drift: float = DEFAULT_ACCURACY_DRIFT,
                  alpha: float = DEFAULT_ALPHA) -> dict[str, Any]:
    """Compare two result files; write comparison.json and regressions.md; return the
    comparison document."""
    base, cand = load_run(baseline), load_run(candidate)
    per_kernel = cand.meta.get("regression_thresholds") or {}
    return write_run_comparison(base, cand, output_dir,
                                Thresholds(threshold, accuracy_drift, per_kernel), alpha)


def write_run_comparison(base: LoadedRun, cand: LoadedRun, output_dir: Path,
                         thresholds: Thresholds, alpha: float = DEFAULT_ALPHA,
                         note: str | None = None, paired: bool = False) -> dict[str, Any]:
    from kernbench.reporting.regressions import comparison_document, write_comparison

    cases = compare_results(base.results, cand.results, thresholds, alpha, paired=paired)
    changed = None
    if not paired:  # an interleaved A/B shares the machine's changes between its two sides
        changed = calibration_change(base.meta.get("machine_state"),
                                     cand.meta.get("machine_state"))
        cases = machine_caveats(cases, base.results, cand.results, changed)
    settings = {"threshold": thresholds.latency, "accuracy_drift": thresholds.accuracy_drift,
                "alpha": alpha, "per_kernel": dict(thresholds.per_kernel), "paired": paired}
    document = comparison_document(cases, base.meta, cand.meta, settings, note,
                                   skipped_on_both_sides(base.results, cand.results))
    warnings = []
    prints = (base.meta.get("fingerprint"), cand.meta.get("fingerprint"))
    if all(prints) and prints[0] != prints[1]:
        warnings.append(f"baseline and candidate ran on different machines "
                        f"({prints[0]} vs {prints[1]}): the ratios mix code and hardware")
    if changed:
        warnings.append(f"the machine changed: {changed}; claimed changes are inconclusive, "
                        f"{ADVICE}")
    if warnings:
        document["warnings"] = warnings
    write_comparison(output_dir, document)
    return document


def merge_shards(shard_dirs: Sequence[Path],
                 output_dir: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Join shard outputs (each a report directory) into one report set under `output_dir`.

    Shards of an `--ab` run also hold `baseline/` and comparison.json: their baselines are
    merged into `output_dir/baseline` and the comparison is made again over all cases at once,
    with the shards' settings, so Benjamini-Hochberg control covers the whole suite.
    Returns the merged summary and that comparison (None for plain shards).
    """
    merged = _merge_report_sets(shard_dirs, output_dir)
    comparisons = [read_json_object(d / "comparison.json") for d in shard_dirs]
    has_baseline = [(d / "baseline" / "summary.json").is_file() for d in shard_dirs]
    if any(has_baseline):
        if not all(has_baseline) or not all(comparisons):
            raise KernbenchError("some shards hold an --ab baseline (baseline/summary.json and "
                                 "comparison.json) and some do not: merge shards of one run")
        _merge_report_sets([d / "baseline" for d in shard_dirs], output_dir / "baseline")
        first = comparisons[0] or {}
        settings = first.get("settings") or {}
        base = load_run(output_dir / "baseline")
        cand = load_run(output_dir)
        for run, side in ((base, "baseline"), (cand, "candidate")):
            run.meta["source"] = (first.get(side) or {}).get("source") or run.meta.get("source")
        thresholds = Thresholds(float(settings.get("threshold", DEFAULT_THRESHOLD)),
                                float(settings.get("accuracy_drift", DEFAULT_ACCURACY_DRIFT)),
                                dict(settings.get("per_kernel") or {}))
        comparison = write_run_comparison(base, cand, output_dir, thresholds,
                                          float(settings.get("alpha", DEFAULT_ALPHA)),
                                          paired=bool(settings.get("paired")))
        return merged, comparison
    return merged, None


def _merge_report_sets(shard_dirs: Sequence[Path], output_dir: Path) -> dict[str, Any]:
    import json

    from kernbench.execution.sharding import merge_summaries
    from kernbench.reporting.markdown import render_summary
    from kernbench.results.files import write_json_atomic, write_text_atomic

    documents = []
    for directory in shard_dirs:
        path = directory / "summary.json"
        try:
            documents.append((str(directory), json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError) as exc:
            raise KernbenchError(f"{path}: cannot read shard summary: {exc}") from exc
    merged = merge_summaries(documents)
    environment = read_json_object(shard_dirs[0] / "env.json") or merged.get("environment") or {}
    clear_previous_reports(output_dir)
    write_json_atomic(output_dir / "summary.json", merged)
    write_json_atomic(output_dir / "env.json", environment)
    write_text_atomic(output_dir / "summary.md", render_summary(merged, environment))
    for directory in shard_dirs:
        for kernel_file in sorted((directory / "kernels").glob("*.json")):
            write_text_atomic(output_dir / "kernels" / kernel_file.name,
                              kernel_file.read_text(encoding="utf-8"))
    return merged


def _devices(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """What each backend reported about its device, once per distinct description."""
    devices: list[dict[str, Any]] = []
    for result in results:
        info = dict(result.device_info)
        if info and "error" not in info and info not in devices:
            devices.append(info)
    return devices


def _settings_record(settings: RunSettings, output_dir: Path, paths: list[str]) -> dict[str, Any]:
    protocol = asdict(settings.protocol)
    return {"iterations": protocol.pop("iterations"), "warmup": protocol.pop("warmup"),
            "warmup_time_s": protocol.pop("warmup_time_s"),
            "seed": protocol.pop("seed"), "processes": settings.processes,
            "isolation": settings.isolation, "protocol": protocol,
            "backends": list(settings.backends) if settings.backends else None,
            "precisions": list(settings.precisions) if settings.precisions else None,
            "filters": list(settings.filters), "timeout_s": settings.timeout_s,
            "root": str(settings.root), "paths": paths, "output_dir": str(output_dir),
            "fake_call_ms": settings.fake_call_ms,
            "max_memory_bytes": settings.max_memory_bytes,
            "shard": list(settings.shard) if settings.shard else None,
            "sku": settings.sku, "compile_mode": settings.compile_mode,
            "profile": settings.profile,
            "profile_iters": settings.profile_iters if settings.profile else None,
            "sweeps": {pattern: [point.label for point in points]
                       for pattern, points in settings.sweeps} or None}
