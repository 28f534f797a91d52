"""BenchmarkRunner: plans cases (kernel x backend x precision) and runs each in a worker.

The parent never imports a kernel or a framework. For each case it writes a
:class:`~kernbench.execution.jobs.WorkerJob`, runs the worker isolated, forked or spawned
(:mod:`kernbench.execution.launcher`), reads the worker's reply and turns every
outcome, including a crash, a timeout or a missing reply, into a
:class:`~kernbench.results.model.CaseResult` (:mod:`kernbench.execution.outcomes`). Cases run
one after another: benchmarks that share cores disturb each other.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

from kernbench.errors import KernbenchError
from kernbench.execution.held import HeldProcesses, measured_key
from kernbench.execution.isolation import WorkerExit
from kernbench.execution.jobs import (
    JobImplementation,
    ProfileRequest,
    WorkerJob,
    WorkerReply,
    dump_job,
    load_reply,
)
from kernbench.execution.launcher import WorkerLauncher, make_launcher
from kernbench.execution.limits import explain_memory_limit
from kernbench.execution.outcomes import (
    apply_golden,
    build_result,
    invalid_result,
    reference_failure,
    unavailable_result,
    work_record,
)
from kernbench.execution.planning import plan_cases, select_kernels
from kernbench.execution.references import (
    ReferenceKey,
    is_reference,
    reference_implementation,
    reference_key,
)
from kernbench.execution.replicates import merge_replicates
from kernbench.execution.settings import RunSettings
from kernbench.execution.stacks import read_stack, stack_path
from kernbench.measure.metrics.peaks import cpu_peak, gpu_peak
from kernbench.results.files import (
    live_scratch,
    memory_scratch_dir,
    sweep_dead_scratch,
)
from kernbench.results.model import (
    Case,
    CaseResult,
    Implementation,
    KernelSpec,
)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


class BenchmarkRunner:
    """Runs cases in isolated worker processes, one at a time."""

    def __init__(self, settings: RunSettings, launcher: WorkerLauncher | None = None) -> None:
        self.settings = settings
        self._launcher = launcher
        """Shared with another runner (both sides of --ab), or made by :meth:`session`."""
        self._references: dict[ReferenceKey, str | None] = {}
        """Reference case -> None when its saved output exists, else why not."""
        self._unavailable: dict[tuple[str, str], str] = {}
        """(framework, backend) -> why a worker found that device unavailable."""
        self._scratch: Path | None = None
        """The run's scratch folder (saved reference outputs)."""
        self._cases: Path | None = None
        """Where each worker's job and reply go: in memory where possible
        (:func:`~kernbench.results.files.memory_scratch_dir`)."""
        self._cpu_peak: dict[str, Any] | None = None

    def plan(self, specs: Iterable[KernelSpec]) -> list[Case | KernelSpec]:
        """Cases to run, plus invalid kernels (which become `invalid` records): the whole suite
        (a shard's share is cut by :mod:`kernbench.api.run`, and for ``--ab`` by
        :func:`kernbench.execution.ab.shard_sides`)."""
        planned: list[Case | KernelSpec] = []
        for spec in select_kernels(specs, self.settings.filters):
            if spec.status == "invalid":
                planned.append(spec)
            else:
                planned.extend(plan_cases(spec, self.settings))
        return planned

    def run(self, planned: Sequence[Case | KernelSpec],
            on_result: Callable[[CaseResult, int, int], None] | None = None,
            on_start: Callable[[str, int, int], None] | None = None,
            keep: bool = True,
            on_step: Callable[[str, int, int], None] | None = None,
            held: HeldProcesses | None = None) -> list[CaseResult]:
        """Run the planned cases in order; `on_start(label, index, total)` before each and
        `on_result(result, index, total)` after each (1-based index). With `keep` False the
        results only go to `on_result` (constant memory) and the list returned is empty.

        With `interleave` and several processes the processes run in rounds
        (:mod:`kernbench.execution.rounds`): index and total then count worker processes,
        `on_start` comes before each, `on_result` when a case's last one finished, and
        `on_step(line, index, total)` after each of the others. `held` keeps the processes of
        unfinished cases (:mod:`kernbench.execution.held`); a case it already has processes of,
        from a run this one resumes, runs only the rest, interleaved or not."""
        results = []
        held = held or HeldProcesses()
        with self.session():
            if self.settings.interleave and self.settings.processes > 1:
                from kernbench.execution.rounds import Callbacks, run_rounds

                return run_rounds(self, planned, Callbacks(on_start, on_result, on_step), keep,
                                  held)
            for index, item in enumerate(planned, start=1):
                if on_start is not None:
                    on_start(item.case_id if isinstance(item, Case) else item.name, index,
                             len(planned))
                result = (invalid_result(item) if isinstance(item, KernelSpec) else
                          self._run_held(item, held))
                if isinstance(item, Case):
                    held.release(item.case_id)
                if keep:
                    results.append(result)
                if on_result is not None:
                    on_result(result, index, len(planned))
        return results

    @contextmanager
    def session(self) -> Iterator[None]:
        """Scratch space for one run's saved reference outputs, and the run's worker launcher
        (its fork servers); both go at the end."""
        owned = self._launcher is None
        if owned:
            self._launcher = make_launcher(self.settings)
        with _run_scratch() as scratch, _case_scratch(Path(scratch)) as cases:
            self._scratch, self._cases = Path(scratch), cases
            try:
                yield
            finally:
                self._scratch = self._cases = None
                if owned and self._launcher is not None:
                    self._launcher.close()
                    self._launcher = None

    @contextmanager
    def workers(self, launcher: WorkerLauncher) -> Iterator[None]:
        """Start this runner's workers with `launcher` (its fork servers, which the caller
        owns and closes) inside the block, e.g. one launcher per --ab round shared by both
        sides."""
        previous, self._launcher = self._launcher, launcher
        try:
            yield
        finally:
            self._launcher = previous

    def _run_held(self, case: Case, held: HeldProcesses) -> CaseResult:
        """`case`'s processes back to back, each kept in `held` (for a resume) as it ends."""
        key = self.measured_key(case)
        done = held.get(case.case_id, key)
        if self.settings.processes == 1:  # the case's one process is its record
            return self.run_case(case, done=done)
        return self.run_case(case, done=done, hold=partial(held.add, case.case_id, key))

    def run_case(self, case: Case, slot: int = 0, done: Sequence[CaseResult] = (),
                 hold: Callable[[CaseResult], object] = lambda _: None) -> CaseResult:
        """Run one case in `processes` fresh worker processes (process k from replicate slot
        `slot + k`, see kernbench.execution.launcher) and build its record. `done` are processes
        of it already finished (a resumed run's): only the rest run, `hold` hearing of each. A
        device found unavailable to a framework stays so: its later cases start no worker."""
        results = list(done[:self.settings.processes])
        while len(results) < self.settings.processes and (
                not results or self.wants_more(results[0])):
            results.append(self.other_process(case, slot + len(results)) if results else
                           self.first_process(case, slot))
            hold(results[-1])
        return self.finish_case(case, results if self.wants_more(results[0]) else results[:1])

    def measured_key(self, case: Case) -> str:
        """What the case's processes measure (:func:`kernbench.execution.held.measured_key`)."""
        return measured_key(self._job(case))

    def first_process(self, case: Case, slot: int = 0) -> CaseResult:
        """The case's first process (the one that checks accuracy, saves or loads the
        reference output and profiles), or its skip when the device is known unavailable."""
        known = self._unavailable.get((case.framework, case.backend))
        if known is not None:
            return unavailable_result(case, known, now_iso())
        return self._run_once(case, first=True, slot=slot)

    def wants_more(self, first: CaseResult) -> bool:
        """Whether the case's other processes run after this first one."""
        return self.settings.processes > 1 and first.status == "ok"

    def other_process(self, case: Case, slot: int) -> CaseResult:
        """One more process of the case (no accuracy check), from replicate slot `slot`."""
        return self._run_once(case, first=False, slot=slot)

    def finish_case(self, case: Case, results: Sequence[CaseResult]) -> CaseResult:
        """The case's record from its processes' records, in process order: merged (work
        figures at the median of every process) and checked against its golden value."""
        if len(results) == 1:
            return apply_golden(results[0], case, self.settings.sku)
        merged = merge_replicates(results)
        if merged.work and merged.status == "ok":  # figures at the median of every process
            peak = self._peak_for(case, merged.device_info.get("device_name"))
            merged = dataclasses.replace(merged, work=work_record(
                merged.work, merged.samples_ms, peak, merged.precision))
        return apply_golden(merged, case, self.settings.sku)

    def _run_once(self, case: Case, first: bool, slot: int = 0) -> CaseResult:
        started = now_iso()
        job = self._reference_job(case) if first else dataclasses.replace(
            self._job(case), skip_accuracy=True)
        if first and self.settings.profile and self.settings.profile_dir is not None:
            job = dataclasses.replace(job, profile=ProfileRequest(
                self.settings.profile, self.settings.profile_iters, self.settings.profile_dir,
                case.case_id))
        timeout = _timeout_for(case, self.settings.timeout_s)
        reply, exit_info = self._launch(job, timeout, slot)
        if reply is not None and reply.backend_unavailable and reply.reason:
            self._unavailable[(case.framework, case.backend)] = reply.reason
        key = reference_key(case)
        if job.save_output_path is not None and key is not None:
            saved = job.save_output_path.is_file()
            self._references[key] = None if saved else reference_failure(reply, exit_info,
                                                                          timeout)
        peak = (self._peak_for(case, (reply.device or {}).get("device_name"))
                if reply is not None and reply.work else None)
        result = build_result(case, reply, exit_info, started, timeout, peak)
        return explain_memory_limit(result, self.settings.max_memory_bytes)

    def _peak_for(self, case: Case, device_name: object) -> dict[str, Any] | None:
        """The device's peak, for % of peak: the GPU table, or this CPU's probe (measured once
        per machine and cached). Only looked up for cases that declare work."""
        if self.settings.fake_call_ms is not None:
            return None
        if case.backend != "cpu":
            return gpu_peak(str(device_name)) if device_name else None
        if self.settings.cache_dir is None:
            return None
        if self._cpu_peak is None:
            from kernbench.measure.environment import collect_environment
            from kernbench.results.fingerprint import machine_fingerprint

            fingerprint = machine_fingerprint(collect_environment(self.settings.root,
                                                                  run_git=False))
            self._cpu_peak = cpu_peak(self.settings.cache_dir, fingerprint)
        return self._cpu_peak

    def _launch(self, job: WorkerJob, timeout: float,
                slot: int = 0) -> tuple[WorkerReply | None, WorkerExit]:
        """Write the job, run its worker, read its reply (None when it left none); a reply
        the parent cannot read fails the case, not the run."""
        # Inside a session, the job's folder is in the run's folder of cases: a run killed
        # outright (SIGKILL) leaves that folder behind, not one per case.
        with tempfile.TemporaryDirectory(prefix="kernbench-case-", dir=self._cases) as tmp:
            job = dataclasses.replace(job, result_path=Path(tmp) / "result.json")
            job_path = Path(tmp) / "job.json"
            dump_job(job, job_path)
            with self._launcher_for_call() as launcher:
                exit_info = launcher.run(job.framework, slot, job_path, self.settings.root,
                                         timeout, self.settings.max_memory_bytes)
            if exit_info.timed_out:
                exit_info = dataclasses.replace(
                    exit_info, stack=read_stack(stack_path(job.result_path)))
            try:
                return load_reply(job.result_path), exit_info
            except KernbenchError as exc:
                return WorkerReply(status="failed", reason=f"unreadable reply: {exc}"), exit_info

    @contextmanager
    def _launcher_for_call(self) -> Iterator[WorkerLauncher]:
        """The session's launcher; outside a session, one made for this call alone."""
        if self._launcher is not None:
            yield self._launcher
            return
        launcher = make_launcher(dataclasses.replace(self.settings, isolation="spawn"))
        try:
            yield launcher
        finally:
            launcher.close()

    def _reference_job(self, case: Case) -> WorkerJob:
        """The case's job with what saves (for the reference case) or loads (for the others)
        a reference output named by bench.yaml `reference`. The reference is computed on
        demand when the run does not include its case."""
        job = self._job(case)
        key = reference_key(case)
        if self._scratch is None or key is None:
            return job
        path = self._scratch / f"ref-{abs(hash(key))}.npz"
        if is_reference(case):
            return dataclasses.replace(job, save_output_path=path, is_reference=True)
        if key not in self._references:
            self._references[key] = self._compute_reference(case, key, path)
        error = self._references[key]
        if error is not None:
            return dataclasses.replace(job, reference_error=f"{key.label}: {error}")
        return dataclasses.replace(job, reference_output_path=path, reference_label=key.label)

    def _compute_reference(self, case: Case, key: ReferenceKey, path: Path) -> str | None:
        reference_case = dataclasses.replace(case, backend=key.backend, precision=key.precision,
                                             implementation=reference_implementation(case))
        timeout = _timeout_for(case, self.settings.timeout_s)
        job = dataclasses.replace(self._job(reference_case), reference_only=True,
                                  save_output_path=path)
        reply, exit_info = self._launch(job, timeout)
        return None if path.is_file() else reference_failure(reply, exit_info, timeout)

    def _job(self, case: Case) -> WorkerJob:
        """The job of one worker process of `case` (its result path is set at launch)."""
        spec, config, settings = case.kernel, case.kernel.config, self.settings
        impl = case.implementation
        return WorkerJob(
            kernel_file=settings.root / spec.path, root=settings.root, kernel_name=spec.name,
            function_name=impl.function if impl else spec.function_name,
            implementation=implementation_job(impl, settings.compile_mode),
            framework=case.framework, backend=case.backend, precision=case.precision,
            problem_size=case.problem_size, settings=settings.protocol,
            result_path=Path(), skip_rules=config.skip_conditions if config else (),
            tolerances=dict(config.tolerances) if config else {},
            work=dict(config.work) if config and config.work else None,
            config_source=config.source if config else None,
            trace_python=settings.trace_python, flush_l2=settings.flush_l2,
            gpu_timing=settings.gpu_timing or (config.gpu_timing if config else None) or "cold",
            fake_call_ms=settings.fake_call_ms,
            slowdown=_slowdown_for(spec.name, settings.inject_slowdown),
            sys_path=tuple(((settings.root / spec.path).parent / p).resolve()
                           for p in (config.sys_path if config else ())))


def implementation_job(impl: Implementation | None,
                       compile_mode: str | None = None) -> JobImplementation | None:
    """What the worker needs of an implementation: its name, setup and compile options (with
    the run's --compile-mode, when given, in place of the implementation's mode)."""
    if impl is None:
        return None
    options = dict(impl.compile) if impl.compile is not None else None
    if options is not None and compile_mode is not None:
        options["mode"] = compile_mode
    return JobImplementation(impl.name, impl.setup, options)


def _slowdown_for(name: str, rules: Sequence[tuple[str, float]]) -> float | None:
    for pattern, factor in rules:
        if fnmatch.fnmatchcase(name, pattern):
            return factor
    return None


def _timeout_for(case: Case, default: float) -> float:
    config = case.kernel.config
    return config.timeout_s if config and config.timeout_s else default


CASES_SCRATCH_PREFIX = "kernbench-cases-"
"""The in-memory scratch folder of a run is ``<prefix><pid>-<random>``, held while the run
lives (:func:`~kernbench.results.files.live_scratch`): a later run removes those whose process
is gone and that no run holds."""


RUN_SCRATCH_PREFIX = "kernbench-run-"
"""The run's scratch folder on disk, ``<tmp>/<prefix><pid>-<random>``, made and swept like
the cases' (a run killed outright leaves one behind)."""


@contextmanager
def _run_scratch() -> Iterator[Path]:
    place = Path(tempfile.gettempdir())
    sweep_dead_scratch(place, RUN_SCRATCH_PREFIX)
    with live_scratch(place, RUN_SCRATCH_PREFIX) as folder:
        yield folder


@contextmanager
def _case_scratch(scratch: Path) -> Iterator[Path]:
    """The run's folder of cases' job folders: in memory where possible (creating and
    deleting files there costs a tenth of what it costs on a disk), else `scratch`."""
    place = memory_scratch_dir()
    with ExitStack() as stack:
        cases = scratch
        if place is not None:
            try:
                sweep_dead_scratch(Path(place), CASES_SCRATCH_PREFIX)  # runs killed outright
                cases = stack.enter_context(live_scratch(Path(place), CASES_SCRATCH_PREFIX))
            except OSError:
                pass
        yield cases
