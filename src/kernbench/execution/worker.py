"""The per-case worker process: ``python -m kernbench.execution.worker JOB.json``.

It evaluates the case's skip conditions, checks the backend, imports the kernel, calls its
optional ``setup``, runs the protocol and writes one JSON result file (atomically) to the path
named in the job. The result never travels over stdout: whatever a kernel prints cannot be
mistaken for it, and the parent only keeps a bounded tail of the output.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import random
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from kernbench.config.conditions import parse_condition
from kernbench.config.formulas import parse_formula
from kernbench.errors import SkipCase, UnsupportedPrecision
from kernbench.execution.contract import BoundKernel, ContractError, bind_kernel, import_kernel
from kernbench.measure.backends import backend_for
from kernbench.measure.backends.base import Backend, walk_leaves
from kernbench.measure.compiling import CompileWatch, compile_function
from kernbench.measure.machine import ActivityProbe
from kernbench.measure.metrics import MetricsCollector
from kernbench.measure.metrics.energy import EnergyMeter, NullMeter, energy_meter_for, energy_record
from kernbench.measure.metrics.gpu_state import gpu_state
from kernbench.measure.metrics.memory import merge_device_memory
from kernbench.measure.precision import ignored_precision, precision_of_dtype
from kernbench.measure.profiling import DEFAULT_PROFILE_ITERS, profile_case
from kernbench.measure.protocol import wait_untimed
from kernbench.results.files import write_text_atomic
from kernbench.results.model import NATIVE, ProtocolSettings

OPTIONAL_MODULES = {"torch", "jax", "jaxlib", "flax", "cupy", "pycuda", "triton", "tensorflow",
                    "numba", "ml_dtypes"}
"""Missing imports of these mean "not installed here" (skipped), not a broken kernel (failed)."""


NO_ACCURACY = {"rmse": None, "max_error": None, "relative_error": None, "passed": None}


class CaseSkipped(Exception):
    """The case cannot run here; the message is the reason."""


class BackendUnavailable(CaseSkipped):
    """The framework cannot use the case's device kind here (no GPU, wrong build)."""


class FakeClock:
    """Deterministic time for ``--debug-fake-timer``: each kernel call costs a fixed step."""

    name = "fake"

    def __init__(self, step_ns: float) -> None:
        self.now = 0.0
        self.step_ns = step_ns

    def start(self) -> object:
        return self.now

    def stop(self, token: object) -> float:
        assert isinstance(token, float)
        return self.now - token

    def wrap(self, call: Callable[[], object]) -> Callable[[], object]:
        def ticking() -> object:
            self.now += self.step_ns
            return call()
        return ticking


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    job = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    result = run_job(job)
    write_text_atomic(Path(job["result_path"]), json.dumps(result, allow_nan=True))
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave at once: a kernel's non-daemon threads or atexit hooks must not hold the case.
    os._exit(0)


def run_job(job: Mapping[str, Any]) -> dict[str, Any]:
    """Run one case; every outcome becomes a result dict, never an exception."""
    try:
        return {"status": "ok", **_run_case(job)}
    except BackendUnavailable as exc:
        return {"status": "skipped", "reason": str(exc), "backend_unavailable": True}
    except CaseSkipped as exc:
        return {"status": "skipped", "reason": str(exc)}
    except (SkipCase, UnsupportedPrecision) as exc:
        return {"status": "skipped", "reason": f"{type(exc).__name__}: {exc}"}
    except ModuleNotFoundError as exc:
        root = (exc.name or "").split(".")[0]
        if root in OPTIONAL_MODULES and importlib.util.find_spec(root) is None:
            return {"status": "skipped", "reason": f"requires {root}, which is not installed"}
        return _failure(exc)
    except BaseException as exc:
        unsupported = _unsupported_precision(exc, str(job.get("precision")))
        if unsupported is not None:
            return {"status": "skipped", "reason": unsupported}
        return _failure(exc)


DTYPE_WORDS = {"fp64": ("double", "float64"), "fp16": ("half", "float16"),
               "bf16": ("bfloat16",), "fp8_e4m3": ("float8_e4m3",), "fp8_e5m2": ("float8_e5m2",),
               "int8": ("'char'", "int8")}
UNSUPPORTED_WORDS = ("not implemented for", "not supported", "unsupported dtype",
                     "does not support")


def _unsupported_precision(exc: BaseException, precision: str) -> str | None:
    """A framework's own "no kernel for this dtype here" error means the precision cannot run
    on this device (skipped), not that the kernel is broken (failed)."""
    if not isinstance(exc, (RuntimeError, TypeError, NotImplementedError, ValueError)):
        return None
    text = str(exc).lower()
    words = DTYPE_WORDS.get(precision, ())
    if any(w in text for w in UNSUPPORTED_WORDS) and any(w in text for w in words):
        return f"{precision} cannot run here: {type(exc).__name__}: {str(exc)[:300]}"
    return None


def _failure(exc: BaseException) -> dict[str, Any]:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    reason = (f"the kernel called sys.exit({exc.code!r}) (SystemExit): a kernel must return, "
              "not exit" if isinstance(exc, SystemExit) else f"{type(exc).__name__}: {exc}")
    return {"status": "failed", "reason": reason[:2000], "traceback": text[-8000:]}


def _run_case(job: Mapping[str, Any]) -> dict[str, Any]:
    backend_name, precision = job["backend"], job["precision"]
    _check_skip_rules(job.get("skip_rules", []), backend_name, precision)
    backend = backend_for(job["framework"])
    reason = backend.unavailable_reason(backend_name)
    if reason:
        raise BackendUnavailable(reason)
    settings = ProtocolSettings(**job["settings"])
    _seed_everything(settings.seed)
    module = import_kernel(Path(job["kernel_file"]), Path(job["root"]), job["kernel_name"])
    _seed_everything(settings.seed)  # again: the kernel may have imported numpy or torch
    function = getattr(module, job["function_name"], None)
    if not callable(function):
        raise ContractError(f"{job['function_name']} is not a callable in {job['kernel_file']}")
    harness = {"precision": precision, "backend": backend_name,
               "device": backend.device(backend_name), "seed": settings.seed}
    if precision == NATIVE:
        del harness["precision"]
    if job.get("reference_only"):
        return _reference_only(job, backend, _bind(job, module, function, harness))
    return _measure_case(job, settings, backend, module, function, harness)


def _bind(job: Mapping[str, Any], module: ModuleType, function: Callable[..., Any],
          harness: Mapping[str, Any]) -> BoundKernel:
    """Setup and arguments: an implementation's own setup as it is, else the kernel's setup,
    whose NumPy arrays an implementation gets converted to its framework and precision."""
    impl = job.get("implementation")
    if not impl:
        return bind_kernel(module, function, job.get("problem_size"), harness)
    if impl.get("setup"):
        return bind_kernel(module, function, job.get("problem_size"), harness, impl["setup"])

    def convert(prepared: Mapping[str, Any]) -> Mapping[str, Any]:
        from kernbench.measure.convert import to_framework

        return to_framework(prepared, job["framework"], job["precision"], job["backend"])
    return bind_kernel(module, function, job.get("problem_size"), harness, convert=convert)


def _measure_case(job: Mapping[str, Any], settings: ProtocolSettings, backend: Backend,
                  module: ModuleType, function: Callable[..., Any],
                  harness: Mapping[str, Any]) -> dict[str, Any]:
    """Setup, the protocol with memory, energy and GPU state around it, then the checks."""
    backend_name = job["backend"]
    collector = MetricsCollector(settings, backend.timer(backend_name),
                                 backend.synchronizer(backend_name))
    fake = job.get("fake_call_ms") is not None
    meter = NullMeter("not measured: --debug-fake-timer runs on a fake clock") if fake \
        else energy_meter_for(backend_name)
    region: dict[str, Any] = {}
    gpu_before = gpu_state() if backend_name == "cuda" and not fake else None
    options = (job.get("implementation") or {}).get("compile")
    watch = CompileWatch(options) if options is not None else None
    if options is not None:
        function = compile_function(function, options)
    backend.reset_device_memory(backend_name)
    with collector.measure_memory(bool(job.get("trace_python"))) as host_memory:
        kernel = _bind(job, module, function, harness)
        call = kernel.bare_call()
        if watch is not None:  # compiles outside the protocol: never in warmup or samples
            watch.first_call(call, backend.synchronizer(backend_name))
        if fake:  # no settling on a fake clock: its calls take no real time to warm up
            clock = FakeClock(float(job["fake_call_ms"]) * 1e6)
            call, collector.timer = clock.wrap(call), clock
            collector.settings = dataclasses.replace(settings, warmup_time_s=0.0)
        if job.get("slowdown"):
            call = slowed(call, float(job["slowdown"]))
        flush = backend.l2_flusher(backend_name) if job.get("flush_l2", True) else None
        probe = None if fake else ActivityProbe()
        outcome = collector.time_execution(call, flush, _metered(meter, region))
        machine = None if probe is None else probe.stop()
    m = outcome.measurement
    output = describe_output(outcome.last_result)
    result: dict[str, Any] = {
        "samples_ns": list(m.samples_ns), "inner_loops": m.inner_loops,
        "warmup_ns": list(m.warmup_ns), "warmup_s": None if fake else m.warmup_s,
        "timer": m.timer,
        "timer_overhead_ns": m.timer_overhead_ns, "timer_resolution_ns": _resolution_ns(m.timer),
        "memory": merge_device_memory(host_memory, backend.device_memory(backend_name)),
        "energy": energy_record(region, m.inner_loops * len(m.samples_ns)),
        "output": output, "device": _safe_describe(backend, backend_name),
        "l2_flush": flush is not None, "work": _work_counts(job, kernel, output),
        "machine": machine,
    }
    if gpu_before is not None:
        result["gpu_state"] = {"before": gpu_before, "after": gpu_state()}
    if watch is not None:
        result["compile"] = watch.record()
    if job.get("save_output_path"):
        from kernbench.measure.metrics.outputs import save_output

        save_output(outcome.last_result, Path(job["save_output_path"]))
    # The case's precision sets the tolerance; the output's dtype only labels native kernels.
    label = job["precision"] if job["precision"] != NATIVE else output.get("precision")
    if job.get("skip_accuracy"):
        result["accuracy"] = {**NO_ACCURACY, "reason": "checked in the case's first process"}
    else:
        result["accuracy"] = _accuracy(job, kernel, outcome.last_result, str(label or NATIVE))
        if result["accuracy"].get("passed") is False:
            result.update(status="failed", reason=_accuracy_failure(result["accuracy"]))
    ignored = ignored_precision(job["precision"], output["items"])
    if ignored is not None and result.get("status") != "failed":
        result.update(status="failed", reason=ignored)
    if job.get("profile") and job.get("profile_dir"):
        result["profile"] = _profile(job, backend, kernel)
    return result


def _profile(job: Mapping[str, Any], backend: Backend, kernel: BoundKernel) -> dict[str, Any]:
    """Extra calls under the requested profiler, after the samples and the accuracy check
    (so neither sees them); a profiling failure never fails the case."""
    try:
        return profile_case(str(job["profile"]), kernel.call,
                            backend.synchronizer(job["backend"]),
                            int(job.get("profile_iters") or DEFAULT_PROFILE_ITERS),
                            Path(job["profile_dir"]), str(job.get("case_id") or "case"),
                            str(job["framework"]), str(job["backend"]))
    except Exception as exc:
        return {"path": None, "kind": job["profile"],
                "reason": f"profiling failed: {type(exc).__name__}: {exc}"[:500]}


def slowed(call: Callable[[], object], factor: float) -> Callable[[], object]:
    """Testing aid (--debug-inject-slowdown): each call takes `factor` times as long, by a busy
    wait after it, so detection rates can be measured against a known, real slowdown."""
    def slow_call() -> object:
        start = time.perf_counter_ns()
        result = call()
        until = start + (time.perf_counter_ns() - start) * factor
        while time.perf_counter_ns() < until:
            pass
        return result
    return slow_call


@contextmanager
def _metered(meter: EnergyMeter, sink: dict[str, Any]) -> Iterator[None]:
    """Energy over the timed samples only (warmup and calibration excluded)."""
    meter.start()
    try:
        yield
    finally:
        sink.update(meter.stop())


def _resolution_ns(timer: str) -> float | None:
    if timer != "perf_counter_ns":
        return None
    return time.get_clock_info("perf_counter").resolution * 1e9


def _reference_only(job: Mapping[str, Any], backend: Backend,
                    kernel: BoundKernel) -> dict[str, Any]:
    """Compute the bench.yaml reference case's output once (untimed) and save it."""
    from kernbench.measure.metrics.outputs import save_output

    value = kernel.call()
    wait_untimed(backend.synchronizer(job["backend"]), value)
    save_output(value, Path(job["save_output_path"]))
    return {"reference_only": True, "output": describe_output(value)}


def _accuracy(job: Mapping[str, Any], kernel: BoundKernel, value: object,
              precision: str) -> dict[str, Any]:
    """Compare with the reference case's saved output (bench.yaml `reference` or the reference
    implementation), else the kernel's reference() (the reference case itself too, when the
    kernel has one); computed once, after timing."""
    tolerances = job.get("tolerances") or None
    if job.get("reference_error"):
        return {**NO_ACCURACY, "reason": f"not checked: {job['reference_error']}"}
    if job.get("reference_output_path"):
        from kernbench.measure.metrics.outputs import load_output

        reference = load_output(Path(job["reference_output_path"]))
        source = str(job.get("reference_label", "reference case"))
    elif kernel.reference_function() is not None:
        reference = kernel.reference()
        source = f"{kernel.reference_function().__name__}()"  # type: ignore[union-attr]
    elif job.get("is_reference"):
        return {**NO_ACCURACY, "reason": "this case is the reference for the kernel's others"}
    else:
        return {**NO_ACCURACY, "reason": "not checked: the kernel has no reference() and its "
                                         "bench.yaml names no reference case"}
    from kernbench.measure.metrics.accuracy import compute_accuracy

    return {**compute_accuracy(value, reference, precision, tolerances),
            "reference_source": source}


def _accuracy_failure(accuracy: Mapping[str, Any]) -> str:
    if accuracy.get("mismatch"):
        return f"accuracy check failed: {accuracy['mismatch']}"
    parts = [f"{name} {_num(accuracy.get(name))} > {_num(accuracy['tolerances'].get(name))}"
             for name in accuracy.get("exceeded", [])]
    if accuracy.get("nan_count"):
        parts.insert(0, f"{accuracy['nan_count']} NaN/inf values where the reference is finite")
    return "accuracy check failed: " + ("; ".join(parts) or "see accuracy")


def _num(value: object) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


ITEMSIZE = {"fp64": 8, "fp32": 4, "fp16": 2, "bf16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1}


def _work_counts(job: Mapping[str, Any], kernel: BoundKernel,
                 output: Mapping[str, Any]) -> dict[str, Any] | None:
    """flops and bytes moved: bench.yaml `work` formulas, else the kernel's flops() and
    bytes_moved() functions; None when the kernel declares neither."""
    formulas = job.get("work") or {}
    precision = job["precision"] if job["precision"] != NATIVE else output.get("precision")
    variables = {**kernel.sizes, "itemsize": ITEMSIZE.get(str(precision), 0)}
    counts: dict[str, Any] = {}
    for key, function_name in (("flops", "flops"), ("bytes", "bytes_moved")):
        formula = formulas.get(key)
        if isinstance(formula, str):
            counts[key] = parse_formula(formula, str(job.get("config_source")),
                                        f"work.{key}").evaluate(variables)
            counts[f"{key}_source"] = f"bench.yaml work.{key}: {formula}"
        elif isinstance(formula, (int, float)):
            counts[key], counts[f"{key}_source"] = float(formula), f"bench.yaml work.{key}"
        else:
            value = kernel.work(function_name)
            if value is not None:
                counts[key], counts[f"{key}_source"] = value, f"{function_name}()"
    return counts or None


def _check_skip_rules(rules: list[Mapping[str, Any]], backend: str, precision: str) -> None:
    for rule in rules:
        if rule.get("backend") not in (None, backend):
            continue
        if rule.get("precision") not in (None, precision):
            continue
        check = rule.get("check")
        if check is None or parse_condition(check, rule.get("source", "bench.yaml"),
                                            "skip_conditions.check").evaluate():
            suffix = f" ({check})" if check else ""
            raise CaseSkipped(f"{rule['reason']}{suffix}")


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed % 2**32)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def describe_output(value: object) -> dict[str, Any]:
    """Type, dtype, shape and precision of a result (of its first leaves), never its data.
    One lazy pass over the leaves (a list of a million floats is walked once, untimed)."""
    described: list[dict[str, Any]] = []
    count, nbytes = 0, 0
    sized = True
    for leaf in walk_leaves(value):
        if count < 8:
            described.append(_describe_leaf(leaf))
        count += 1
        size = getattr(leaf, "nbytes", None) if sized else None
        if isinstance(size, int):
            nbytes += size
        else:
            sized = False
    first = next((d for d in described if d.get("precision")), None)
    return {"type": type(value).__name__, "leaves": count, "items": described,
            "precision": first["precision"] if first else None,
            "nbytes": nbytes if sized else None}


def _describe_leaf(leaf: object) -> dict[str, Any]:
    dtype = getattr(leaf, "dtype", None)
    shape = getattr(leaf, "shape", None)
    info: dict[str, Any] = {"type": type(leaf).__name__}
    if dtype is not None:
        info["dtype"] = str(dtype)
        info["precision"] = precision_of_dtype(dtype)
    elif isinstance(leaf, float):
        info["precision"] = "fp64"
    if shape is not None:
        try:
            info["shape"] = [int(s) for s in shape]
        except (TypeError, ValueError):
            info["shape"] = str(shape)
    return info


def _safe_describe(backend: Any, backend_name: str) -> dict[str, Any]:
    try:
        return dict(backend.describe(backend_name))
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


if __name__ == "__main__":
    main()
