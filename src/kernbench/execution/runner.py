"""BenchmarkRunner: plans cases (kernel x backend x precision) and runs each in a worker.

The parent never imports a kernel or a framework. For each case it writes a job file, runs
``python -m kernbench.execution.worker`` isolated (:mod:`kernbench.execution.isolation`), reads the
result file and turns every outcome, including a crash, a timeout or a missing result, into a
:class:`~kernbench.results.model.CaseResult`. Cases run one after another: benchmarks that share
cores disturb each other.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from kernbench.analysis.golden import detect_sku, golden_check
from kernbench.analysis.stats import percentile
from kernbench.config.sweeps import problem_size_at
from kernbench.discovery.scan import GPU_CAPABLE_FRAMEWORKS
from kernbench.errors import KernbenchError
from kernbench.execution.isolation import WorkerExit
from kernbench.execution.launcher import WorkerLauncher
from kernbench.execution.limits import explain_memory_limit
from kernbench.execution.replicates import merge_replicates
from kernbench.execution.sharding import select_shard
from kernbench.measure.metrics.peaks import cpu_peak, gpu_peak
from kernbench.measure.metrics.roofline import work_figures
from kernbench.measure.precision import canonical
from kernbench.results.files import read_json_object
from kernbench.results.model import (
    NATIVE,
    WORKER_KEYS,
    Case,
    CaseResult,
    Implementation,
    KernelSpec,
    ProtocolSettings,
    SweepPoint,
    case_suffix,
)

DEFAULT_PRECISION = "fp32"
NOT_MEASURED_ENERGY = {"energy_j": None, "power_w": None, "source": None,
                       "reason": "not measured: this version of kernbench reads no energy counter"}
NOT_MEASURED_ACCURACY = {"rmse": None, "max_error": None, "passed": None,
                         "reason": "not measured: this version of kernbench checks no reference"}


@dataclass(frozen=True)
class RunSettings:
    """Everything that selects and shapes the cases of a run."""

    root: Path
    protocol: ProtocolSettings = field(default_factory=ProtocolSettings)
    backends: tuple[str, ...] | None = None
    """Requested device kinds; None means each kernel's declared backends."""
    precisions: tuple[str, ...] | None = None
    """Requested precisions; None means each kernel's declared precisions."""
    filters: tuple[str, ...] = ()
    timeout_s: float = 300.0
    processes: int = 3
    """Worker processes per case; their samples are kept as groups (see
    kernbench.execution.replicates)."""
    shard: tuple[int, int] | None = None
    """Run only shard K of N (1-based) of the planned cases, split stably by kernel."""
    sku: str | None = None
    """The SKU golden values are looked up for; None: detected from the GPU's name."""
    trace_python: bool = False
    """Opt-in tracemalloc of Python allocations (slows Python code inside the timed region)."""
    flush_l2: bool = True
    """Evict the GPU's L2 cache before every sample (GPU cases only)."""
    cache_dir: Path | None = None
    """Where machine-level measurements (the CPU peak probe) are cached; None: no CPU peak."""
    inject_slowdown: tuple[tuple[str, float], ...] = ()
    """Testing aid: (kernel glob, factor) pairs; matching kernels' calls take factor x as long
    (a busy wait after each call), to measure how well comparisons detect a known slowdown."""
    fake_call_ms: float | None = None
    """Debug mode: every kernel call takes exactly this long on a fake clock."""
    profile: str | None = None
    """Profiler run after each case's timed samples (cprofile, torch or jax); None: none."""
    profile_iters: int = 5
    """Kernel calls made under the profiler."""
    profile_dir: Path | None = None
    """The run's output directory: profiles go to its `profiles/` folder."""
    compile_mode: str | None = None
    """torch.compile mode for every implementation with `compile:` (None: each one's own)."""
    sweeps: tuple[tuple[str, tuple[SweepPoint, ...]], ...] = ()
    """Suite-file sweeps: (kernel-name glob, points) replacing matching kernels' bench.yaml
    sweep."""
    sweeps_source: str = "suite file"
    """The file `sweeps` came from, for error messages."""
    max_memory_bytes: int | None = None
    """Address-space limit (RLIMIT_AS) of each worker; None: no limit
    (kernbench.execution.limits)."""
    isolation: str = "fork"
    """How workers start: "fork" (from a preloaded server per framework, spawned where fork
    is unsafe) or "spawn" (a fresh interpreter per worker); see kernbench.execution.launcher."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def select_kernels(specs: Iterable[KernelSpec], filters: Sequence[str]) -> list[KernelSpec]:
    """Kernels whose name matches any of the glob `filters` (all when there are none)."""
    if not filters:
        return list(specs)
    return [s for s in specs if any(fnmatch.fnmatchcase(s.name, f) for f in filters)]


def plan_backends(spec: KernelSpec, requested: tuple[str, ...] | None,
                  implementation: Implementation | None = None) -> list[str]:
    declared = implementation.backends if implementation and implementation.backends \
        else spec.backends
    if requested is None:
        return list(declared)
    framework = implementation.framework if implementation else spec.framework
    gpu_capable = framework in GPU_CAPABLE_FRAMEWORKS and "cuda" in declared
    return [b for b in requested if b in declared or (b == "rocm" and gpu_capable)]


def plan_precisions(spec: KernelSpec, requested: tuple[str, ...] | None) -> list[str]:
    if not spec.takes_precision:
        return [NATIVE]
    declared = list(spec.config.precisions) if spec.config and spec.config.precisions else []
    if requested is None:
        return declared or [DEFAULT_PRECISION]
    wanted = [canonical(p) for p in requested]  # "fp8" asks for what bench.yaml calls fp8_e4m3
    return [p for p in declared if p in wanted] if declared else list(dict.fromkeys(wanted))


def plan_cases(spec: KernelSpec, settings: RunSettings) -> list[Case]:
    """The cases of one valid kernel under the run's backend and precision selection: each
    implementation (when it has several) x backend x precision x sweep point. Reference cases
    (bench.yaml `reference`, or the reference implementation) come first, so the others can
    compare to their saved outputs."""
    config = spec.config
    problem_size = config.problem_size if config else None
    points = _sweep_points(spec, settings)
    sizes = ([(problem_size_at(problem_size, p), p.label) for p in points] if points
             else [(problem_size, None)])
    variants: tuple[Implementation | None, ...] = (config.implementations if config and
                                                   config.implementations else (None,))
    cases = [Case(spec, backend, precision, size, point, impl)
             for impl in variants
             for backend in plan_backends(spec, settings.backends, impl)
             for precision in plan_precisions(spec, settings.precisions)
             for size, point in sizes]
    return sorted(cases, key=lambda c: not _is_reference(c))


def unavailable_result(case: Case, reason: str) -> CaseResult:
    """The record of a case skipped because an earlier worker of the run found its device
    unavailable to its framework; no worker ran."""
    return CaseResult(kernel_name=case.kernel.name, kernel_path=case.kernel.path,
                      framework=case.framework, backend=case.backend, precision=case.precision,
                      problem_size=case.problem_size, point=case.point,
                      implementation=case.implementation.name if case.implementation else None,
                      status="skipped", reason=f"{reason} (as an earlier case of this run found)",
                      energy=NOT_MEASURED_ENERGY, accuracy=NOT_MEASURED_ACCURACY,
                      worker=dict.fromkeys(WORKER_KEYS), started_at=now_iso(), duration_s=0.0)


def check_sweep_globs(settings: RunSettings, specs: Iterable[KernelSpec]) -> None:
    """Every suite-file `sweeps` glob must match a discovered kernel: a typo would otherwise
    leave the kernel at its bench.yaml sweep without a word."""
    names = sorted(s.name for s in specs)
    for pattern, _ in settings.sweeps:
        if not any(fnmatch.fnmatchcase(name, pattern) for name in names):
            shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
            raise KernbenchError(f"{settings.sweeps_source}: key 'sweeps.{pattern}': expected a "
                                 f"glob matching a kernel (kernels: {shown or 'none'})")


def _sweep_points(spec: KernelSpec, settings: RunSettings) -> tuple[SweepPoint, ...]:
    """The kernel's bench.yaml sweep, or the suite file's sweep for it (the first glob that
    matches its name wins)."""
    for pattern, points in settings.sweeps:
        if fnmatch.fnmatchcase(spec.name, pattern):
            problem_size = spec.config.problem_size if spec.config else None
            if problem_size is not None and not isinstance(problem_size, Mapping):
                raise KernbenchError(
                    f"{settings.sweeps_source}: key 'sweeps.{pattern}': kernel {spec.name} has "
                    f"a scalar problem_size ({problem_size!r}); a sweep needs a mapping, or none")
            return points
    return spec.config.sweep if spec.config else ()


def invalid_result(spec: KernelSpec) -> CaseResult:
    """The single record an invalid kernel gets: it names the error, it measured nothing."""
    return CaseResult(kernel_name=spec.name, kernel_path=spec.path, framework=spec.framework,
                      backend="n/a", precision="n/a", problem_size=None, status="invalid",
                      reason=spec.error, energy=NOT_MEASURED_ENERGY,
                      accuracy=NOT_MEASURED_ACCURACY, worker=dict.fromkeys(WORKER_KEYS))


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
        self._cpu_peak: dict[str, Any] | None = None

    def plan(self, specs: Iterable[KernelSpec]) -> list[Case | KernelSpec]:
        """Cases to run, plus invalid kernels (which become `invalid` records); with
        `shard`, only this shard's stable share of them."""
        planned: list[Case | KernelSpec] = []
        for spec in select_kernels(specs, self.settings.filters):
            if spec.status == "invalid":
                planned.append(spec)
            else:
                planned.extend(plan_cases(spec, self.settings))
        if self.settings.shard is None:
            return planned
        return select_shard(planned, _plan_key, self.settings.shard)

    def run(self, planned: Sequence[Case | KernelSpec],
            on_result: Callable[[CaseResult, int, int], None] | None = None,
            on_start: Callable[[str, int, int], None] | None = None,
            keep: bool = True) -> list[CaseResult]:
        """Run the planned cases in order; `on_start(label, index, total)` before each and
        `on_result(result, index, total)` after each (1-based index). With `keep` False the
        results only go to `on_result` (constant memory) and the list returned is empty."""
        results = []
        with self.session():
            for index, item in enumerate(planned, start=1):
                if on_start is not None:
                    on_start(item.case_id if isinstance(item, Case) else item.name, index,
                             len(planned))
                result = (invalid_result(item) if isinstance(item, KernelSpec)
                          else self.run_case(item))
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
        with tempfile.TemporaryDirectory(prefix="kernbench-run-") as scratch:
            self._scratch = Path(scratch)
            try:
                yield
            finally:
                self._scratch = None
                if owned and self._launcher is not None:
                    self._launcher.close()
                    self._launcher = None

    def run_case(self, case: Case, slot: int = 0) -> CaseResult:
        """Run one case in `processes` fresh worker processes and build its record; process k
        starts from replicate slot `slot + k` (see kernbench.execution.launcher). A device a worker
        found unavailable to a framework stays so for the rest of the run: later cases of
        that framework and backend are skipped without starting a worker."""
        known = self._unavailable.get((case.framework, case.backend))
        if known is not None:
            return unavailable_result(case, known)
        first = self._run_once(case, first=True, slot=slot)
        if self.settings.processes <= 1 or first.status != "ok":
            return apply_golden(first, case, self.settings.sku)
        others = [self._run_once(case, first=False, slot=slot + k)
                  for k in range(1, self.settings.processes)]
        merged = merge_replicates([first, *others])
        if merged.work and merged.status == "ok":  # figures at the median of every process
            peak = self._peak_for(case, merged.device_info.get("device_name"))
            merged = dataclasses.replace(merged, work=_work(merged.work, merged.samples_ms, peak,
                                                            {"precision": merged.precision}))
        return apply_golden(merged, case, self.settings.sku)

    def _run_once(self, case: Case, first: bool, slot: int = 0) -> CaseResult:
        started = now_iso()
        extra: dict[str, Any] = (self._reference_fields(case) if first
                                 else {"skip_accuracy": True})
        if first and self.settings.profile and self.settings.profile_dir is not None:
            extra.update(profile=self.settings.profile, profile_iters=self.settings.profile_iters,
                         profile_dir=str(self.settings.profile_dir), case_id=case.case_id)
        timeout = _timeout_for(case, self.settings.timeout_s)
        payload, exit_info = self._launch(self._job(case), extra, timeout, case.framework, slot)
        if payload and payload.get("backend_unavailable") and payload.get("reason"):
            self._unavailable[(case.framework, case.backend)] = str(payload["reason"])
        key = _reference_key(case)
        if extra.get("save_output_path") and key is not None:
            saved = Path(extra["save_output_path"]).is_file()
            self._references[key] = None if saved else _reference_failure(payload, exit_info,
                                                                           timeout)
        peak = (self._peak_for(case, (payload.get("device") or {}).get("device_name"))
                if payload and payload.get("work") else None)
        result = build_result(case, payload, exit_info, started, timeout, peak)
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
            from kernbench.measure.environment import collect_environment, machine_fingerprint

            fingerprint = machine_fingerprint(collect_environment(self.settings.root,
                                                                  run_git=False))
            self._cpu_peak = cpu_peak(self.settings.cache_dir, fingerprint)
        return self._cpu_peak

    def _launch(self, job: dict[str, Any], extra: dict[str, Any], timeout: float,
                framework: str, slot: int = 0) -> tuple[dict[str, Any] | None, WorkerExit]:
        with tempfile.TemporaryDirectory(prefix="kernbench-") as tmp:
            result_path = Path(tmp) / "result.json"
            job_path = Path(tmp) / "job.json"
            job = {**job, **extra, "result_path": str(result_path)}
            job_path.write_text(json.dumps(job), encoding="utf-8")
            with self._launcher_for_call() as launcher:
                exit_info = launcher.run(framework, slot, job_path, self.settings.root, timeout,
                                         self.settings.max_memory_bytes)
            return read_json_object(result_path), exit_info

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

    def _reference_fields(self, case: Case) -> dict[str, Any]:
        """Job fields that save (for the reference case) or load (for the others) a reference
        output named by bench.yaml `reference`. The reference is computed on demand when the
        run does not include its case."""
        if self._scratch is None or _reference_key(case) is None:
            return {}
        key = _reference_key(case)
        assert key is not None
        path = self._scratch / f"ref-{abs(hash(key))}.npz"
        if _is_reference(case):
            return {"save_output_path": str(path), "is_reference": True}
        if key not in self._references:
            self._references[key] = self._compute_reference(case, key, path)
        error = self._references[key]
        label = (f"reference implementation {key.implementation} [{key.backend},{key.precision}]"
                 if key.implementation else f"reference case [{key.backend},{key.precision}]")
        if error is not None:
            return {"reference_error": f"{label}: {error}"}
        return {"reference_output_path": str(path), "reference_label": label}

    def _compute_reference(self, case: Case, key: ReferenceKey, path: Path) -> str | None:
        reference_case = dataclasses.replace(case, backend=key.backend, precision=key.precision,
                                             implementation=_reference_impl(case))
        timeout = _timeout_for(case, self.settings.timeout_s)
        payload, exit_info = self._launch(
            self._job(reference_case), {"reference_only": True, "save_output_path": str(path)},
            timeout, reference_case.framework)
        return None if path.is_file() else _reference_failure(payload, exit_info, timeout)

    def _job(self, case: Case) -> dict[str, Any]:
        spec = case.kernel
        config = spec.config
        rules = [dict(dataclasses.asdict(rule), source=config.source)
                 for rule in config.skip_conditions] if config else []
        impl = case.implementation
        return {
            "kernel_file": str(self.settings.root / spec.path), "root": str(self.settings.root),
            "kernel_name": spec.name,
            "function_name": impl.function if impl else spec.function_name,
            "implementation": _implementation_job(impl, self.settings.compile_mode),
            "framework": case.framework, "backend": case.backend, "precision": case.precision,
            "problem_size": case.problem_size, "skip_rules": rules,
            "settings": dataclasses.asdict(self.settings.protocol),
            "tolerances": dict(config.tolerances) if config else {},
            "work": dict(config.work) if config and config.work else None,
            "config_source": config.source if config else None,
            "trace_python": self.settings.trace_python, "flush_l2": self.settings.flush_l2,
            "fake_call_ms": self.settings.fake_call_ms,
            "slowdown": _slowdown_for(spec.name, self.settings.inject_slowdown),
        }


def _slowdown_for(name: str, rules: Sequence[tuple[str, float]]) -> float | None:
    for pattern, factor in rules:
        if fnmatch.fnmatchcase(name, pattern):
            return factor
    return None


def _plan_key(item: Case | KernelSpec) -> str:
    # A kernel's cases share its shard, so a bench.yaml reference case stays beside the others.
    return item.kernel.name if isinstance(item, Case) else item.name


def apply_golden(result: CaseResult, case: Case, sku: str | None) -> CaseResult:
    """Check the median against the kernel's golden value for this SKU; slower fails."""
    config = case.kernel.config
    if config is None or not config.golden or result.status != "ok":
        return result
    found = sku or detect_sku(result.device_info.get("device_name"), case.backend)
    latency = percentile(result.samples_ms, 50) if result.samples_ms else None
    check = golden_check(config.golden, config.ignore_skus, found, latency,
                         result.output.get("nbytes"),
                         case_suffix(case.point, case.implementation.name
                                     if case.implementation else None))
    if check is None:
        return result
    if check.get("passed") is False:
        return dataclasses.replace(result, golden=check, status="failed",
                                   reason=f"golden check failed: {check.get('reason')}")
    return dataclasses.replace(result, golden=check)


def _timeout_for(case: Case, default: float) -> float:
    config = case.kernel.config
    return config.timeout_s if config and config.timeout_s else default


class ReferenceKey(NamedTuple):
    """The case whose saved output a case is checked against."""

    kernel: str
    backend: str
    precision: str
    point: str
    """The sweep point: each point of a sweep has its own reference output."""
    implementation: str
    """The reference implementation ("" for a kernel with one)."""


def _reference_impl(case: Case) -> Implementation | None:
    config = case.kernel.config
    name = config.reference_implementation if config else None
    if config is None or name is None:
        return None
    return next(i for i in config.implementations if i.name == name)


def _reference_key(case: Case) -> ReferenceKey | None:
    """The reference case of `case`: bench.yaml `reference` {backend, precision,
    implementation} with the case's own for what it leaves out; the reference implementation
    runs on the case's backend if it can, else on its first."""
    config = case.kernel.config
    impl = _reference_impl(case)
    if config is None or (not config.reference and impl is None):
        return None
    reference = config.reference or {}
    backend = reference.get("backend", case.backend)
    if impl is not None and "backend" not in reference and impl.backends \
            and backend not in impl.backends:
        backend = impl.backends[0]
    return ReferenceKey(case.kernel.name, backend, reference.get("precision", case.precision),
                        case.point or "", impl.name if impl else "")


def _is_reference(case: Case) -> bool:
    key = _reference_key(case)
    name = case.implementation.name if case.implementation else ""
    return key is not None and (case.backend, case.precision, name) == (
        key.backend, key.precision, key.implementation)


def _implementation_job(impl: Implementation | None,
                        compile_mode: str | None = None) -> dict[str, Any] | None:
    """What the worker needs of an implementation: its name, setup and compile options (with
    the run's --compile-mode, when given, in place of the implementation's mode)."""
    if impl is None:
        return None
    options = dict(impl.compile) if impl.compile is not None else None
    if options is not None and compile_mode is not None:
        options["mode"] = compile_mode
    return {"name": impl.name, "setup": impl.setup, "compile": options}


def _reference_failure(payload: dict[str, Any] | None, exit_info: WorkerExit,
                       timeout: float) -> str:
    if payload is None or exit_info.timed_out:
        return _died_reason(exit_info, timeout)[1]
    return f"{payload.get('status', 'failed')}: {payload.get('reason') or 'no output saved'}"


def make_launcher(settings: RunSettings) -> WorkerLauncher:
    """The launcher of a run: its isolation mode, one fork-server slot per process."""
    return WorkerLauncher(settings.isolation, _worker_env(), slots=settings.processes)


def _worker_env() -> dict[str, str]:
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])  # makes `kernbench` importable
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _worker_facts(exit_info: WorkerExit) -> dict[str, Any]:
    facts = {"pid": exit_info.pid, "exit_code": exit_info.returncode,
             "signal": exit_info.signal_name, "wall_s": exit_info.wall_s,
             "stdout_tail": exit_info.stdout_tail, "stderr_tail": exit_info.stderr_tail,
             "stdout_bytes": exit_info.stdout_bytes, "stderr_bytes": exit_info.stderr_bytes,
             "isolation": exit_info.isolation}
    if exit_info.note:
        facts["isolation_note"] = exit_info.note
    return facts


def _died_reason(exit_info: WorkerExit, timeout: float) -> tuple[str, str]:
    if exit_info.timed_out:
        return "timeout", f"timed out after {timeout:g} s; the worker and its children were killed"
    if exit_info.signal_name:
        how = f"killed by {exit_info.signal_name}"
    else:
        how = f"exited with code {exit_info.returncode}"
    last = exit_info.stderr_tail.strip().splitlines()[-1:] or [""]
    detail = f": {last[0][:300]}" if last[0] else ""
    return "failed", f"worker {how} before reporting a result{detail}"


def build_result(case: Case, payload: dict[str, Any] | None, exit_info: WorkerExit,
                 started: str, timeout: float,
                 peak: Mapping[str, Any] | None = None) -> CaseResult:
    """Turn the worker's result file (or its absence) into a record."""
    spec = case.kernel
    base: dict[str, Any] = dict(
        kernel_name=spec.name, kernel_path=spec.path, framework=case.framework,
        backend=case.backend, precision=case.precision, problem_size=case.problem_size,
        point=case.point, implementation=case.implementation.name if case.implementation else None,
        started_at=started, duration_s=exit_info.wall_s,
        worker=_worker_facts(exit_info), energy=NOT_MEASURED_ENERGY, accuracy=NOT_MEASURED_ACCURACY)
    if payload is None or exit_info.timed_out:
        status, reason = _died_reason(exit_info, timeout)
        return CaseResult(status=status, reason=reason, **base)  # type: ignore[arg-type]
    if payload.get("traceback"):
        base["worker"] = {**base["worker"], "traceback": payload["traceback"]}
    output = payload.get("output") or {}
    if case.precision == NATIVE and output.get("precision"):
        base["precision"] = output["precision"]
    samples_ms = tuple(s / 1e6 for s in payload.get("samples_ns") or [])
    warmup_ms = tuple(s / 1e6 for s in payload.get("warmup_ns") or [])
    for key in ("energy", "accuracy"):
        if payload.get(key):
            base[key] = payload[key]
    device_info = payload.get("device") or {}
    return CaseResult(
        status=payload["status"], reason=payload.get("reason"), samples_ms=samples_ms,
        inner_loops=payload.get("inner_loops", 0), warmup_iterations=len(warmup_ms),
        warmup_ms=warmup_ms, warmup_s=payload.get("warmup_s"), timer=payload.get("timer"),
        timer_overhead_ns=payload.get("timer_overhead_ns"),
        timer_resolution_ns=payload.get("timer_resolution_ns"),
        memory=payload.get("memory") or {}, output=output, device=device_info.get("device"),
        device_info=device_info, work=_work(payload.get("work"), samples_ms, peak, base),
        gpu_state=payload.get("gpu_state"), l2_flush=payload.get("l2_flush"),
        profile=payload.get("profile"), compile=payload.get("compile"),
        machine=payload.get("machine"), **base)


def _work(counts: Mapping[str, Any] | None, samples_ms: tuple[float, ...],
          peak: Mapping[str, Any] | None, base: Mapping[str, Any]) -> dict[str, Any] | None:
    """GFLOP/s, GB/s, intensity and % of peak at the median latency, when work is declared."""
    if not counts:
        return None
    latency = percentile(samples_ms, 50) if samples_ms else None
    figures = work_figures(latency, counts.get("flops"), counts.get("bytes"), peak,
                           base["precision"])
    sources = {k: v for k, v in counts.items() if k.endswith("_source")}
    if peak is None:
        sources["peak_reason"] = "no known peak for this device: % of peak left out"
    return {**figures, **sources}
