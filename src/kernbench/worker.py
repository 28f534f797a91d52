"""The per-case worker process: ``python -m kernbench.worker JOB.json``.

It evaluates the case's skip conditions, checks the backend, imports the kernel, calls its
optional ``setup``, runs the protocol and writes one JSON result file (atomically) to the path
named in the job. The result never travels over stdout: whatever a kernel prints cannot be
mistaken for it, and the parent only keeps a bounded tail of the output.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kernbench.backends import backend_for
from kernbench.backends.base import iter_leaves
from kernbench.conditions import parse_condition
from kernbench.contract import ContractError, bind_kernel, import_kernel
from kernbench.errors import SkipCase, UnsupportedPrecision
from kernbench.metrics import MetricsCollector
from kernbench.model import NATIVE, ProtocolSettings
from kernbench.precision import precision_of_dtype
from kernbench.protocol import Timer

OPTIONAL_MODULES = {"torch", "jax", "jaxlib", "flax", "cupy", "pycuda", "triton", "tensorflow",
                    "numba", "ml_dtypes"}
"""Missing imports of these mean "not installed here" (skipped), not a broken kernel (failed)."""


class CaseSkipped(Exception):
    """The case cannot run here; the message is the reason."""


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
    write_atomic(Path(job["result_path"]), json.dumps(result, allow_nan=True))
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave at once: a kernel's non-daemon threads or atexit hooks must not hold the case.
    os._exit(0)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def run_job(job: Mapping[str, Any]) -> dict[str, Any]:
    """Run one case; every outcome becomes a result dict, never an exception."""
    try:
        return {"status": "ok", **_run_case(job)}
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
        return _failure(exc)


def _failure(exc: BaseException) -> dict[str, Any]:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return {"status": "failed", "reason": f"{type(exc).__name__}: {exc}"[:2000],
            "traceback": text[-8000:]}


def _run_case(job: Mapping[str, Any]) -> dict[str, Any]:
    backend_name, precision = job["backend"], job["precision"]
    _check_skip_rules(job.get("skip_rules", []), backend_name, precision)
    backend = backend_for(job["framework"])
    reason = backend.unavailable_reason(backend_name)
    if reason:
        raise CaseSkipped(reason)
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
    timer: Timer = backend.timer(backend_name)
    collector = MetricsCollector(settings, timer, backend.synchronizer(backend_name))
    with collector.measure_memory() as memory:
        kernel = bind_kernel(module, function, job.get("problem_size"), harness)
        call = kernel.call
        if job.get("fake_call_ms") is not None:
            clock = FakeClock(float(job["fake_call_ms"]) * 1e6)
            call, collector.timer = clock.wrap(call), clock
        outcome = collector.time_execution(call)
    m = outcome.measurement
    return {"samples_ns": list(m.samples_ns), "inner_loops": m.inner_loops,
            "warmup_ns": list(m.warmup_ns), "timer": m.timer,
            "timer_overhead_ns": m.timer_overhead_ns, "memory": memory,
            "output": describe_output(outcome.last_result),
            "device": _safe_describe(backend, backend_name)}


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
    """Type, dtype, shape and precision of a result (of its first leaves), never its data."""
    leaves = iter_leaves(value)
    described = [_describe_leaf(leaf) for leaf in leaves[:8]]
    first = next((d for d in described if d.get("precision")), None)
    return {"type": type(value).__name__, "leaves": len(leaves), "items": described,
            "precision": first["precision"] if first else None}


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
