"""Immutable result and specification objects.

Everything the harness knows travels in these frozen dataclasses: what a kernel is
(:class:`KernelSpec`), one thing to measure (:class:`Case`), what one measurement produced
(:class:`CaseResult`, which keeps the raw samples) and a whole run (:class:`RunResult`).
Summaries (percentiles, intervals) are derived from the raw samples by
:mod:`kernbench.analysis.stats`, never stored instead of them. This module imports nothing else of
the package but :mod:`kernbench.results.measurement` (the part a worker needs, re-exported
here) and :mod:`kernbench.results.readonly`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from kernbench.results.measurement import NATIVE, Measurement, ProtocolSettings, SkipRule
from kernbench.results.readonly import ReadOnlyDict

__all__ = [
    "HARNESS_ARGS", "IMPL_PREFIX", "MAX_SWEEP_POINTS", "NATIVE", "STATUSES", "WORKER_KEYS",
    "BenchConfig", "Case", "CaseResult", "Implementation", "KernelSpec", "Measurement",
    "ProtocolSettings", "ReadOnlyDict", "RunResult", "SkipRule", "Status", "SweepPoint",
    "case_id_of",
    "case_suffix", "point_of", "record_case_id",
]  # fmt: skip

Status = Literal["ok", "failed", "skipped", "timeout", "invalid"]
STATUSES: tuple[Status, ...] = ("ok", "failed", "skipped", "timeout", "invalid")

HARNESS_ARGS = ("precision", "backend", "device", "seed")
"""Arguments the harness passes only to functions that declare them."""

MAX_SWEEP_POINTS = 10_000
"""Most cases one kernel's bench.yaml `sweep` may expand to (per backend and precision)."""

WORKER_KEYS = ("pid", "exit_code", "signal", "wall_s", "stdout_tail", "stderr_tail",
               "stdout_bytes", "stderr_bytes")
"""Keys of a record's `worker` facts (all None for a kernel that never ran)."""


IMPL_PREFIX = "impl="
"""How an implementation is named inside a case id: `softmax[cpu,fp32,impl=jax,rows=64]`."""


def case_suffix(point: str | None = None, implementation: str | None = None) -> str | None:
    """What a case id holds after backend and precision (`impl=jax,rows=64`, `rows=64`,
    `impl=jax`), or None: the keys of golden `points`."""
    parts = [IMPL_PREFIX + implementation] if implementation else []
    if point:
        parts.append(point)
    return ",".join(parts) or None


def case_id_of(kernel: str, backend: str, precision: str, point: str | None = None,
               implementation: str | None = None) -> str:
    """`gemm[cpu,fp32]`; `gemm[cpu,fp32,m=64,k=64,n=64]` for a point of a sweep;
    `softmax[cpu,fp32,impl=jax,rows=64]` for one implementation of a kernel that has several."""
    suffix = case_suffix(point, implementation)
    return f"{kernel}[{backend},{precision}{',' + suffix if suffix else ''}]"


def record_case_id(record: Mapping[str, Any]) -> str:
    """A result record's ``case_id``, or ``kernel[backend,precision]`` rebuilt for a record
    (an older or hand-written one) that has none."""
    found = record.get("case_id")
    if isinstance(found, str) and found:
        return found
    return case_id_of(str(record.get("kernel_name")), str(record.get("backend")),
                      str(record.get("precision")))


def point_of(case_id: object, kernel: str, backend: str, precision: str,
             implementation: str | None = None) -> str | None:
    """The sweep point a record's case id names (the inverse of :func:`case_id_of`), else None."""
    prefix = case_id_of(kernel, backend, precision, implementation=implementation)[:-1] + ","
    if isinstance(case_id, str) and case_id.startswith(prefix) and case_id.endswith("]"):
        return case_id[len(prefix):-1] or None
    return None


@dataclass(frozen=True)
class Implementation:
    """One of several implementations of a kernel (bench.yaml `implementations`): they run on
    the same inputs and every one but the reference is checked against the reference's output."""

    name: str
    """File-name safe; part of the case id (`impl=NAME`)."""
    function: str
    """The module-level function that does the work."""
    framework: str | None
    """What it is written in (numpy, pytorch, jax, ...): how its inputs are converted and its
    results waited for. None until discovery fills in the kernel's own framework."""
    setup: str | None = None
    """Its own setup function; None: the kernel's `setup`, whose NumPy arrays the harness
    converts to this implementation's framework (so all see the same values)."""
    backends: tuple[str, ...] = ()
    """Device kinds it runs on; empty: the kernel's, less those its framework cannot use."""
    compile: Mapping[str, Any] | None = None
    """torch.compile options ({mode, fullgraph, dynamic, backend}); None: run eagerly."""


@dataclass(frozen=True)
class SweepPoint:
    """One point of a bench.yaml `sweep`: its name in case ids and the keyword arguments it
    sets (merged over a mapping `problem_size`)."""

    label: str
    """Readable, unique within the kernel and file-name safe, e.g. `m=64,k=64,n=64`."""
    values: Mapping[str, Any]


@dataclass(frozen=True)
class BenchConfig:
    """A validated bench.yaml. `raw` keeps the mapping as read, for keys later versions add."""

    source: str
    problem_size: Any = None
    precisions: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()
    tolerances: Mapping[str, Any] = field(default_factory=dict)
    skip_conditions: tuple[SkipRule, ...] = ()
    function_name: str | None = None
    framework: str | None = None
    description: str | None = None
    timeout_s: float | None = None
    gpu_timing: str | None = None
    """How this kernel's GPU cases are timed (kernbench.measure.gpu_timing), unless
    ``--gpu-timing`` says otherwise."""
    reference: Mapping[str, str] | None = None
    """The case whose output is the reference for the others: {backend?, precision?}."""
    golden: Mapping[str, Mapping[str, float]] | None = None
    """Golden median latency per GPU SKU: {sku: {time_ms, tolerance_multiplier?, size_bytes?}}."""
    ignore_skus: tuple[str, ...] = ()
    regression: Mapping[str, float] | None = None
    """Per-kernel practical thresholds for comparisons: {latency, accuracy_drift}."""
    work: Mapping[str, str | float] | None = None
    """Formulas (or numbers) for `flops` and `bytes` over problem-size variables."""
    sweep: tuple[SweepPoint, ...] = ()
    """The expanded `sweep`: one case per point (empty: the single `problem_size`)."""
    implementations: tuple[Implementation, ...] = ()
    """Several implementations of the kernel, compared on the same inputs (empty: one, the
    module's benchmark function)."""
    reference_implementation: str | None = None
    """The implementation the others are checked against (the first one unless
    `reference.implementation` names another)."""
    sys_path: tuple[str, ...] = ()
    """Folders, relative to the kernel's, put first on sys.path before the kernel is imported
    (discovery checks that they stay inside the root)."""
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class KernelSpec:
    """A discovered kernel, read from its source with `ast` (never imported)."""

    name: str
    path: str
    """Path of the kernel's file relative to the run's root, with forward slashes."""
    function_name: str = "run_benchmark"
    framework: str = "python"
    frameworks: tuple[str, ...] = ()
    backends: tuple[str, ...] = ("cpu",)
    dependencies: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()
    """Names the benchmark function declares (so the harness knows what to pass)."""
    has_setup: bool = False
    setup_parameters: tuple[str, ...] = ()
    signature_known: bool = True
    """False when the function is bound by assignment or import, so its parameters are unseen."""
    ignores_precision: bool = False
    """`run_benchmark` or `setup` declares `precision` but neither reads it: the kernel runs
    at its own precision whatever it is asked, so it gets one native case, never a label it
    does not honour."""
    reads_precision_context: bool = False
    """The source calls ``current_precision()``: it takes its precision from the case, so it
    runs once per precision like a kernel with a `precision` parameter."""
    config: BenchConfig | None = None
    config_path: str | None = None
    status: Literal["ok", "invalid"] = "ok"
    error: str | None = None

    @property
    def takes_precision(self) -> bool:
        """Whether `run_benchmark` or `setup` declares `precision` (else: one native case).
        A kernel with several implementations always does: the harness casts their inputs."""
        if self.config and self.config.implementations:
            return True
        declared = "precision" in self.parameters or "precision" in self.setup_parameters
        return (declared and not self.ignores_precision) or self.reads_precision_context

    @property
    def precision_unread(self) -> bool:
        """Declares `precision`, never reads it, and takes no precision another way (the
        casts of its implementations, ``current_precision()``): one native case, labelled by
        its output's precision whatever was asked."""
        return self.ignores_precision and not self.takes_precision


@dataclass(frozen=True)
class Case:
    """One measurement to make: a kernel on one backend at one precision and problem size."""

    kernel: KernelSpec
    backend: str
    precision: str
    problem_size: Any = None
    point: str | None = None
    """The bench.yaml sweep point's label, when the kernel has a sweep."""
    implementation: Implementation | None = None
    """Which of the kernel's implementations, when it has several."""

    @property
    def case_id(self) -> str:
        return case_id_of(self.kernel.name, self.backend, self.precision, self.point,
                          self.implementation.name if self.implementation else None)

    @property
    def framework(self) -> str:
        impl = self.implementation
        return impl.framework if impl and impl.framework else self.kernel.framework


@dataclass(frozen=True)
class CaseResult:
    """The outcome of one case. Timing summaries are derived from `samples_ms`. Its mappings
    are :class:`ReadOnlyDict`s, whatever mapping it was given."""

    kernel_name: str
    kernel_path: str
    framework: str
    backend: str
    precision: str
    problem_size: Any
    status: Status
    reason: str | None = None
    """The error (failed/timeout/invalid) or skip reason; None when ok."""
    samples_ms: tuple[float, ...] = ()
    process_sample_counts: tuple[int, ...] = ()
    """How many of `samples_ms` each worker process took, in order (empty: all from one)."""
    inner_loops: int = 0
    warmup_iterations: int = 0
    warmup_ms: tuple[float, ...] = ()
    warmup_s: float | None = None
    """Wall time the kernel ran before its first sample (warmup calls, calibration and
    untimed blocks up to ``--warmup-time``); the longest of the worker processes."""
    timer: str | None = None
    timer_overhead_ns: float | None = None
    timer_resolution_ns: float | None = None
    memory: Mapping[str, Any] = field(default_factory=dict)
    energy: Mapping[str, Any] = field(default_factory=dict)
    accuracy: Mapping[str, Any] = field(default_factory=dict)
    output: Mapping[str, Any] = field(default_factory=dict)
    """Description of the returned value (type, dtype, shape), never the value itself."""
    device: str | None = None
    device_info: Mapping[str, Any] = field(default_factory=dict)
    work: Mapping[str, Any] | None = None
    """flops/bytes counts and what they give: GFLOP/s, GB/s, intensity, % of peak."""
    gpu_state: Mapping[str, Any] | None = None
    """NVML clocks, temperature and throttle reasons before and after the samples."""
    l2_flush: bool | None = None
    gpu_timing: Mapping[str, Any] | None = None
    """A GPU case's timing modes: {requested, primary, modes: {name: {mode, requested_mode,
    reason, flush, calls_per_sample, samples_us, discarded_blocks, discard_reasons}}}; the
    primary mode's samples are `samples_ms` too. None for a CPU case."""
    golden: Mapping[str, Any] | None = None
    """The golden-value check for this machine's SKU, when the kernel has a golden table."""
    started_at: str | None = None
    duration_s: float | None = None
    worker: Mapping[str, Any] = field(default_factory=dict)
    """Process facts: pid, exit code or signal, tails of stdout and stderr."""
    point: str | None = None
    """The bench.yaml sweep point's label (it is part of `case_id`); None without a sweep."""
    profile: Mapping[str, Any] | None = None
    """`--profile` outcome: {path (relative to the output dir), kind, iterations, wall_s}, or
    {path: None, reason}; None when no profile was asked for."""
    implementation: str | None = None
    """The implementation's name (it is part of `case_id`); None for a single-function kernel."""
    machine: Mapping[str, Any] | None = None
    """What else the machine did while the samples were taken (kernbench.measure.machine): the cores
    other processes kept busy and the stolen share, over every worker process's window
    together (the busiest process's in records of older workers), and the processes' speed
    probes; without /proc/stat only the probes; None where not measured (a fake clock, a case
    that did not run)."""
    compile: Mapping[str, Any] | None = None
    """torch.compile facts: mode, first_call_s (compilation included), graphs compiled and
    recompilations during timing; None for an eager implementation."""
    fingerprint: str | None = None
    """The fingerprint of the machine that ran the case, as its record names it (records read
    back); None while a run is under way (the run's environment names it)."""
    testbed: str | None = None
    """The testbed (``--testbed``) that ran the case, as its record names it; None alike."""

    def __post_init__(self) -> None:
        for name in _CASE_MAPPINGS:
            value = getattr(self, name)
            if value is not None and type(value) is not ReadOnlyDict:
                object.__setattr__(self, name, ReadOnlyDict(value))

    @property
    def success(self) -> bool:
        return self.status == "ok"

    @property
    def case_id(self) -> str:
        return case_id_of(self.kernel_name, self.backend, self.precision, self.point,
                          self.implementation)


_CASE_MAPPINGS = tuple(f.name for f in fields(CaseResult) if str(f.type).startswith("Mapping"))


@dataclass(frozen=True)
class RunResult:
    """A whole run: settings, environment, the manifest and every case's result."""

    started_at: str
    finished_at: str | None
    complete: bool
    settings: Mapping[str, Any]
    environment: Mapping[str, Any]
    kernels: tuple[KernelSpec, ...]
    results: tuple[CaseResult, ...]
