"""Measure a live function under the protocol: ``kernbench.bench`` and the pytest fixture.

``bench(fn, *args, **kwargs)`` times ``fn(*args, **kwargs)`` exactly as a worker times a
kernel (:class:`~kernbench.measure.metrics.MetricsCollector`: warmup, a calibrated inner loop,
timed samples; peak memory around them), in this process by default or in forked children
(``isolation="fork"``, ``processes=N``: each child is one replicate, as ``--processes`` gives a
run). The outcome is a frozen :class:`~kernbench.results.model.CaseResult` with the raw
samples, wrapped in a :class:`BenchResult` that notebooks display.

``backend`` and ``precision`` are labels of the record (what the case id says), not
conversions: the function runs on what it is given (one that asks
``kernbench.current_precision()`` reads the label, as a worker's kernel reads its case's). A
function whose result or inputs live on a GPU (PyTorch CUDA/ROCm tensors, CuPy arrays, JAX
arrays on a GPU), or one given ``backend="cuda"``, is timed as ``kernbench run`` times a GPU
case, in a GPU timing mode (``gpu_timing``, ``cold`` by default: :mod:`kernbench.api.gpu`);
other asynchronous results are waited for, chosen from the first result as for a kernel of
unknown framework. A precision left out is read off the dtype of the result (float64 -> fp64),
else ``native``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kernbench.api.display import BenchComparison, BenchResult
from kernbench.config.values import MAX_ITERATIONS
from kernbench.errors import KernbenchError, UnsupportedPrecision
from kernbench.execution.settings import check_timeout
from kernbench.results.model import NATIVE, CaseResult, ProtocolSettings
from kernbench.results.vocabulary import (
    GPU_BACKENDS,
    GPU_TIMING_CHOICES,
    PRECISION_NAMES,
    canonical_precision,
)

__all__ = ["ISOLATIONS", "BenchOptions", "bench", "compare", "measure_function"]

ISOLATIONS = ("none", "fork")
"""``none``: measure in this process; ``fork``: in forked children, one per process."""

NOT_MEASURED_ENERGY = {"energy_j": None, "power_w": None, "source": None,
                       "reason": "not measured: kernbench.bench and the pytest fixture read no "
                                 "energy counter (kernbench run does)"}
NOT_MEASURED_ACCURACY = {"rmse": None, "max_error": None, "passed": None,
                         "reason": "not measured: a live function has no reference (the test's "
                                   "own assertions check it)"}

_FRAMEWORKS = {"numpy": "numpy", "torch": "pytorch", "jax": "jax", "jaxlib": "jax",
               "cupy": "cupy"}


@dataclass(frozen=True)
class BenchOptions:
    """How one function is measured and labelled (the keywords of ``bench`` and of
    ``@pytest.mark.kernbench``)."""

    iterations: int = 30
    """Timed samples per process."""
    warmup: int = 3
    backend: str | None = None
    """The record's device kind; None: read off the arrays (``cuda``/``rocm`` where the result
    or the inputs live on a GPU, else ``cpu``). ``cuda``/``rocm`` time the function in GPU
    timing mode `gpu_timing` even when no array says so (a function that returns None)."""
    gpu_timing: str = "cold"
    """How a GPU function is timed: cold, hot, graph, kernel, sync or all (README, GPU timing
    modes); ignored on the CPU."""
    precision: str | None = None
    isolation: str = "none"
    processes: int = 1
    """Forked processes (replicates); more than one needs ``isolation="fork"``."""
    timeout_s: float | None = None
    """Time limit of each forked process (isolation ``fork`` only)."""
    name: str | None = None
    """The record's kernel name (default: the function's qualified name)."""

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], source: str,
                     base: BenchOptions | None = None) -> BenchOptions:
        """Options from `values` over `base`; KernbenchError naming `source` and every
        unknown key at once."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise KernbenchError(f"{source}: unknown option(s) {', '.join(map(repr, unknown))}; "
                                 f"expected some of {', '.join(sorted(known))}")
        return dataclasses.replace(base or cls(), **values).checked(source)

    def checked(self, source: str = "kernbench.bench") -> BenchOptions:
        """Self, or KernbenchError naming `source`, the option and what was expected."""
        for key in ("iterations", "processes"):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise KernbenchError(f"{source}: {key} must be an integer >= 1, not {value!r}")
        if self.iterations > MAX_ITERATIONS:  # as --iters and --kernbench-iterations
            raise KernbenchError(f"{source}: iterations must be at most {MAX_ITERATIONS}, not "
                                 f"{self.iterations!r}")
        if not isinstance(self.warmup, int) or isinstance(self.warmup, bool) or self.warmup < 0:
            raise KernbenchError(f"{source}: warmup must be an integer >= 0, not "
                                 f"{self.warmup!r}")
        if self.isolation not in ISOLATIONS:
            raise KernbenchError(f"{source}: isolation must be one of {', '.join(ISOLATIONS)}, "
                                 f"not {self.isolation!r}")
        if self.processes > 1 and self.isolation != "fork":
            raise KernbenchError(f"{source}: processes={self.processes} needs isolation='fork' "
                                 "(replicates are separate processes)")
        if self.gpu_timing not in GPU_TIMING_CHOICES:
            raise KernbenchError(f"{source}: gpu_timing must be one of "
                                 f"{', '.join(GPU_TIMING_CHOICES)}, not {self.gpu_timing!r}")
        for key in ("backend", "precision", "name"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, str) or not value):
                raise KernbenchError(f"{source}: {key} must be a non-empty string, not "
                                     f"{value!r}")
        precision = _precision_label(self.precision, source)
        if self.timeout_s is not None:
            check_timeout(self.timeout_s, f"{source}: timeout_s")
            if self.isolation != "fork":
                raise KernbenchError(f"{source}: timeout_s needs isolation='fork' (a call in "
                                     "this process cannot be stopped; a forked child is killed)")
        return self if precision == self.precision else dataclasses.replace(
            self, precision=precision)

    @property
    def protocol(self) -> ProtocolSettings:
        return ProtocolSettings(warmup=self.warmup, iterations=self.iterations)


_OTHER_DTYPES = re.compile(r"(u?int|complex)\d+|bool")
"""Precision labels besides the floating ones: integer, complex and bool dtype names."""


def _precision_label(precision: str | None, source: str) -> str | None:
    """The label as bench.yaml writes it (``float32`` -> ``fp32``); a typo (``fp33``) made a
    case id no baseline would ever match, and is a KernbenchError. (A backend label stays
    free: ``mps`` or ``xpu`` names a device kernbench times as CPU.)"""
    if precision is None or precision == NATIVE or _OTHER_DTYPES.fullmatch(precision):
        return precision
    try:
        return canonical_precision(precision)
    except UnsupportedPrecision:
        raise KernbenchError(f"{source}: precision must be one of {', '.join(PRECISION_NAMES)}"
                             f", {NATIVE}, or an integer, complex or bool dtype name (int64), "
                             f"not {precision!r}") from None


def bench(fn: Callable[..., object], *args: Any, backend: str | None = None,
          precision: str | None = None, name: str | None = None, iterations: int = 30,
          warmup: int = 3, isolation: str = "none", processes: int = 1,
          timeout_s: float | None = None, gpu_timing: str = "cold",
          **kwargs: Any) -> BenchResult:
    """Time ``fn(*args, **kwargs)`` under kernbench's protocol; the result keeps the samples.

    The keywords above are kernbench's; every other keyword goes to `fn` (pass a function
    whose own parameters share those names through ``functools.partial``). An exception
    raised by `fn` propagates (in-process) or becomes a KernbenchError with the child's
    traceback (``isolation="fork"``)."""
    if not callable(fn):
        raise KernbenchError(f"kernbench.bench: the first argument must be the function to "
                             f"time, not {type(fn).__name__} {fn!r:.60}")
    options = BenchOptions(iterations=iterations, warmup=warmup, backend=backend,
                           gpu_timing=gpu_timing, precision=precision, isolation=isolation,
                           processes=processes, timeout_s=timeout_s, name=name).checked()
    return measure_function(fn, args, kwargs, options)[0]


def compare(baseline: BenchResult, candidate: BenchResult, threshold: float = 0.10,
            alpha: float = 0.05) -> BenchComparison:
    """`candidate` against `baseline` with the statistics of ``kernbench compare``: the ratio
    of medians (candidate / baseline), its interval, and a verdict that claims a change only
    when it is significant at `alpha` and beyond `threshold` (0.10: 10%).

    Results measured in one process each are compared sample against sample (Mann-Whitney),
    which the comparison's note calls optimistic; ``processes=3`` or more on both sides
    (``isolation="fork"``) compares process medians (Welch), as a run does."""
    from kernbench.analysis.compare import Thresholds, compare_results

    if not (isinstance(threshold, (int, float)) and not isinstance(threshold, bool)
            and math.isfinite(threshold) and threshold > 0):
        raise KernbenchError(f"kernbench.compare: threshold must be a finite number > 0, not "
                             f"{threshold!r}")
    if not (isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0 < alpha < 1):
        raise KernbenchError(f"kernbench.compare: alpha must be a number > 0 and < 1, not "
                             f"{alpha!r}")
    for side, value in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(value, BenchResult):
            raise KernbenchError(f"kernbench.compare: {side} must be what kernbench.bench "
                                 f"returned, not {type(value).__name__}")
    base = baseline.case
    renamed = dataclasses.replace(  # one case measured twice: the same key on both sides
        candidate.case, kernel_name=base.kernel_name, backend=base.backend,
        precision=base.precision, problem_size=base.problem_size, point=base.point,
        implementation=base.implementation)
    cases = compare_results([base], [renamed], Thresholds(latency=threshold), alpha,
                            entry_point="kernbench.bench")
    return BenchComparison(baseline, candidate, cases[0])


def measure_function(fn: Callable[..., object], args: tuple[Any, ...],
                     kwargs: Mapping[str, Any], options: BenchOptions,
                     kernel_path: str | None = None, problem_size: Any = None,
                     point: str | None = None, entry_point: str = "kernbench.bench"
                     ) -> tuple[BenchResult, object]:
    """The protocol on ``fn(*args, **kwargs)`` with `options`: the result, and what the last
    timed call returned (None with isolation ``fork``: it stayed in the child). `kernel_path`,
    `problem_size` and `point` label the record (the pytest plugin passes the test's file
    and parameters); `entry_point` (``worker.entry_point``) is where the user set `options`,
    so that a warning's hint names the knob there (the plugin passes ``pytest``)."""
    # The function itself where it takes nothing, as timeit calls it; else a partial (its call
    # is C code): a Python wrapper added a frame, ~50 ns, to every timed call.
    call: Callable[[], object] = functools.partial(fn, *args, **kwargs) if args or kwargs else fn
    started = _now_iso()
    value: object = None
    if options.isolation == "fork":
        from kernbench.execution.forked import run_forked

        _refuse_unforkable(fn, args, kwargs)
        parts = [run_forked(lambda: _measure_once(call, options, (args, kwargs))[0],
                            options.timeout_s) for _ in range(options.processes)]
    else:
        part, value = _measure_once(call, options, (args, kwargs))
        parts = [part]
    name = options.name or getattr(fn, "__qualname__", None) or type(fn).__name__
    path = kernel_path if kernel_path is not None else _source_of(fn)
    results = [_case_result(part, name, path, options, problem_size, point, started,
                            entry_point) for part in parts]
    if len(results) == 1:
        return BenchResult(results[0]), value
    from kernbench.execution.replicates import merge_replicates

    return BenchResult(merge_replicates(results)), value


def _uses_jax(fn: object, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """Whether the call shows JAX: a jitted function or JAX arrays among its arguments (one
    that makes its arrays inside says nothing: a timeout then says why it may have hung)."""
    import sys

    jax = sys.modules.get("jax")
    if jax is None:
        return False
    if hasattr(fn, "lower") and hasattr(fn, "trace"):  # jax.jit's wrapped functions
        return True
    from kernbench.measure.backends.base import walk_leaves

    return any(isinstance(leaf, jax.Array) for leaf in walk_leaves((list(args), dict(kwargs))))


def _refuse_unforkable(fn: object, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    """A forked child cannot use a GPU its parent has initialised (CUDA forbids it), and a
    process holding GPU arrays has: refuse before forking, saying what to do instead. Nor can
    it use JAX once its backend runs in the parent: it waits forever on the backend's threads,
    which the fork did not copy (torch's thread pool does the same; a timeout says so)."""
    import sys

    from kernbench.api.gpu import gpu_target

    bridge = sys.modules.get("jax._src.xla_bridge")
    started = bridge is not None and bool(getattr(bridge, "_backends", None))
    if started and _uses_jax(fn, args, kwargs):
        raise KernbenchError(
            "kernbench.bench: isolation='fork' after JAX has started its backend in this "
            "process: a forked child deadlocks on the backend's threads, which the fork did not "
            "copy; use isolation='none', or time it with `kernbench run`, whose workers are "
            "forked before any backend starts")
    found = gpu_target(args, kwargs)
    if found is not None:
        raise KernbenchError(f"kernbench.bench: isolation='fork' cannot time a function of "
                             f"{found[0]} arrays on a GPU: this process has initialised the "
                             "device, and a forked child cannot use it; use isolation='none'")


def _measure_once(call: Callable[[], object], options: BenchOptions,
                  inputs: tuple[object, ...] = ()) -> tuple[dict[str, Any], object]:
    """One process's measurement as JSON-able facts (a forked child sends them back), and the
    last timed call's result. One untimed call first says where the function runs: on a GPU
    (its result or `inputs` hold GPU arrays, or `options.backend` names a GPU) it is timed in
    a GPU timing mode (:mod:`kernbench.api.gpu`), else by the CPU protocol."""
    from kernbench.execution.describe import describe_output, unevaluated
    from kernbench.measure.precision import precision_in_force

    with precision_in_force(options.precision):  # what a kernel's current_precision() reads
        first = call()
        lazy = unevaluated(first)
        if lazy is not None:  # timed as it stands, it would read nanoseconds for any work
            raise KernbenchError(
                f"kernbench.bench: {lazy.replace('run_benchmark', 'the function')}")
        target = _target(first, inputs, options.backend)
        began = time.monotonic()
        if target is not None:
            from kernbench.api.gpu import measure_on_gpu

            part, last = measure_on_gpu(call, options.protocol, target, options.gpu_timing)
        else:
            part, last = _measure_cpu(call, options.protocol)
    return {**part, "output": describe_output(last), "framework": _framework_of(last),
            "backend": target[1] if target is not None else options.backend or "cpu",
            "duration_s": time.monotonic() - began, "pid": os.getpid()}, last


def _target(first: object, inputs: tuple[object, ...],
            backend: str | None) -> tuple[str, str] | None:
    """Where the function runs, ``(framework, backend)`` on a GPU, or None for the CPU; a
    `backend` given that contradicts its arrays is refused."""
    from kernbench.api.gpu import gpu_target, guess_gpu_framework, off_timed_device

    found = gpu_target(first, *inputs)
    elsewhere = off_timed_device(first, *inputs) if found is not None else None
    if elsewhere is not None:
        raise KernbenchError(f"kernbench.bench: {elsewhere}")
    if found is not None and backend == "cpu":
        raise KernbenchError(f"kernbench.bench: backend='cpu', but the function works on "
                             f"{found[0]} arrays on a GPU; leave backend out (it is read off "
                             f"the arrays) or pass backend={found[1]!r}")
    if backend in GPU_BACKENDS:  # the label asked for ("rocm" for a HIP device, say)
        return (found[0] if found is not None else guess_gpu_framework(backend)), backend
    return found


def _measure_cpu(call: Callable[[], object],
                 protocol: ProtocolSettings) -> tuple[dict[str, Any], object]:
    from kernbench.measure.metrics import MetricsCollector

    collector = MetricsCollector(protocol)
    with collector.measure_memory() as memory:
        outcome = collector.time_execution(call)
    measurement = outcome.measurement
    return {"samples_ms": [s / 1e6 for s in measurement.samples_ns],
            "inner_loops": measurement.inner_loops,
            "warmup_ms": [s / 1e6 for s in measurement.warmup_ns],
            "warmup_s": measurement.warmup_s, "timer": measurement.timer,
            "timer_overhead_ns": measurement.timer_overhead_ns,
            "memory": dict(memory)}, outcome.last_result


def _case_result(part: Mapping[str, Any], name: str, path: str, options: BenchOptions,
                 problem_size: Any, point: str | None, started: str,
                 entry_point: str) -> CaseResult:
    output = part["output"]
    return CaseResult(
        kernel_name=name, kernel_path=path, framework=part["framework"],
        backend=part["backend"], precision=options.precision or output.get("precision") or NATIVE,
        problem_size=problem_size, status="ok", samples_ms=tuple(part["samples_ms"]),
        inner_loops=part["inner_loops"], warmup_iterations=options.warmup,
        warmup_ms=tuple(part["warmup_ms"]), warmup_s=part["warmup_s"], timer=part["timer"],
        timer_overhead_ns=part["timer_overhead_ns"], memory=part["memory"], output=output,
        energy=NOT_MEASURED_ENERGY, accuracy=NOT_MEASURED_ACCURACY, device=part.get("device"),
        l2_flush=part.get("l2_flush"), gpu_timing=part.get("gpu_timing"), started_at=started,
        duration_s=part["duration_s"], point=point,
        worker={"pid": part["pid"], "isolation": options.isolation, "entry_point": entry_point,
                **({"forked_from": session_id()} if options.isolation == "fork" else {})})


@functools.cache
def session_id() -> str:
    """This Python session's id: every replicate forked from it shares its address-space
    layout and hash seed, so a comparison treats them as independent only against replicates
    of the same session (kernbench.analysis.process_modes)."""
    import uuid

    return uuid.uuid4().hex


def _framework_of(value: object) -> str:
    """The framework of a result: the package of its first leaf's type, else python."""
    from kernbench.measure.backends.base import walk_leaves

    leaf = next(iter(walk_leaves(value)), value)
    root = type(leaf).__module__.split(".")[0]
    return _FRAMEWORKS.get(root, "python")


def _source_of(fn: Callable[..., object]) -> str:
    import inspect

    try:
        found = inspect.getsourcefile(fn)
    except TypeError:
        found = None
    if not found:
        return "<unknown>"
    try:
        return os.path.relpath(found).replace(os.sep, "/")
    except ValueError:  # another drive (Windows)
        return found


def _now_iso() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
