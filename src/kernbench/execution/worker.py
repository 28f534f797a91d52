"""The per-case worker process: ``python -m kernbench.execution.worker JOB.json``.

It loads the :class:`~kernbench.execution.jobs.WorkerJob`, evaluates the case's skip conditions,
checks the backend, imports the kernel, calls its optional ``setup``, runs the protocol
(:mod:`kernbench.execution.measuring`) and writes one
:class:`~kernbench.execution.jobs.WorkerReply` (atomically) to the path named in the job. The
reply never travels over stdout: whatever a kernel prints cannot be mistaken for it, and the
parent only keeps a bounded tail of the output.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib.util
import os
import random
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import IO

from kernbench.errors import ConfigError, SkipCase, UnsupportedPrecision
from kernbench.execution.contract import BoundKernel, import_kernel, resolve_function
from kernbench.execution.describe import describe_output
from kernbench.execution.jobs import WorkerJob, WorkerReply, dump_reply, load_job
from kernbench.execution.measuring import bind, measure_case
from kernbench.execution.stacks import STACK_SIGNAL, stack_path
from kernbench.measure.backends import backend_for
from kernbench.measure.backends.base import Backend
from kernbench.measure.precision import set_current_precision
from kernbench.measure.protocol import wait_untimed
from kernbench.results.measurement import NATIVE, SkipRule

OPTIONAL_MODULES = {"torch", "jax", "jaxlib", "flax", "cupy", "pycuda", "triton", "tensorflow",
                    "numba", "ml_dtypes"}
"""Missing imports of these mean "not installed here" (skipped), not a broken kernel (failed)."""


class CaseSkipped(Exception):
    """The case cannot run here; the message is the reason."""


class BackendUnavailable(CaseSkipped):
    """The framework cannot use the case's device kind here (no GPU, wrong build)."""


def main(argv: list[str] | None = None, before_exit: Callable[[], None] | None = None) -> None:
    """Run the job named in `argv`; `before_exit` is called once the reply is written (a
    forked worker tells its server that it is leaving: :mod:`kernbench.execution.serving`)."""
    args = sys.argv[1:] if argv is None else argv
    job = load_job(Path(args[0]))
    stack_file: IO[str] = sys.stderr  # where a timeout's dump goes (kernbench.execution.stacks)
    with contextlib.suppress(OSError):
        stack_file = stack_path(job.result_path).open("w", encoding="utf-8")
    faulthandler.register(STACK_SIGNAL, file=stack_file, all_threads=True)  # keeps it open
    dump_reply(run_job(job), job.result_path)
    sys.stdout.flush()
    sys.stderr.flush()
    if before_exit is not None:
        before_exit()
    # Leave at once: a kernel's non-daemon threads or atexit hooks must not hold the case.
    os._exit(0)


def run_job(job: WorkerJob) -> WorkerReply:
    """Run one case; every outcome becomes a reply, never an exception. A configuration
    error only the worker can find (a problem_size key no function of the imported kernel
    takes, a work formula's unknown variable) makes the case `invalid`, as discovery makes a
    kernel with a broken bench.yaml; an exception of the kernel's own makes it `failed`."""
    try:
        return _run_case(job)
    except BackendUnavailable as exc:
        return WorkerReply(status="skipped", reason=str(exc), backend_unavailable=True)
    except CaseSkipped as exc:
        return WorkerReply(status="skipped", reason=str(exc))
    except (SkipCase, UnsupportedPrecision) as exc:
        return WorkerReply(status="skipped", reason=f"{type(exc).__name__}: {exc}")
    except ConfigError as exc:  # bench.yaml asks what the imported kernel cannot take
        return WorkerReply(status="invalid", reason=exc.message[:2000])
    except ModuleNotFoundError as exc:
        root = (exc.name or "").split(".")[0]
        if root in OPTIONAL_MODULES and importlib.util.find_spec(root) is None:
            return WorkerReply(status="skipped",
                               reason=f"requires {root}, which is not installed")
        return _failure(exc)
    except BaseException as exc:
        unsupported = _unsupported_precision(exc, job.precision)
        if unsupported is not None:
            return WorkerReply(status="skipped", reason=unsupported)
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


def _failure(exc: BaseException) -> WorkerReply:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    said = str(exc) or ("no message" if not isinstance(exc, MemoryError)
                        else "an allocation failed")
    reason = (f"the kernel called sys.exit({exc.code!r}) (SystemExit): a kernel must return, "
              "not exit" if isinstance(exc, SystemExit) else f"{type(exc).__name__}: {said}")
    return WorkerReply(status="failed", reason=reason[:2000], traceback=text[-8000:])


def _run_case(job: WorkerJob) -> WorkerReply:
    backend_name, precision = job.backend, job.precision
    _check_skip_rules(job.skip_rules, backend_name, precision, job.config_source)
    backend = backend_for(job.framework)
    reason = backend.unavailable_reason(backend_name)
    if reason:
        raise BackendUnavailable(reason)
    backend.prepare_device(backend_name)
    settings = job.settings
    set_current_precision(precision)
    _seed_everything(settings.seed)
    module = import_kernel(job.kernel_file, job.root, job.kernel_name, job.sys_path)
    _seed_everything(settings.seed)  # again: the kernel may have imported numpy or torch
    function = resolve_function(module, job.function_name)
    harness = {"precision": precision, "backend": backend_name,
               "device": backend.device(backend_name), "seed": settings.seed}
    if precision == NATIVE:
        del harness["precision"]
    if job.reference_only:
        return _reference_only(job, backend, bind(job, module, function, harness))
    return measure_case(job, settings, backend, module, function, harness)


def _reference_only(job: WorkerJob, backend: Backend, kernel: BoundKernel) -> WorkerReply:
    """Compute the bench.yaml reference case's output once (untimed) and save it."""
    from kernbench.measure.metrics.outputs import save_output

    assert job.save_output_path is not None, "a reference-only job names where to save"
    value = kernel.call()
    wait_untimed(backend.synchronizer(job.backend), value)
    save_output(value, job.save_output_path)
    return WorkerReply(status="ok", reference_only=True, output=describe_output(value))


def _check_skip_rules(rules: tuple[SkipRule, ...], backend: str, precision: str,
                      source: str | None) -> None:
    """CaseSkipped when a rule applies (its `check`, when it has one, evaluated here: the
    condition parser is imported only then)."""
    for rule in rules:
        if not rule.applies_to(backend, precision):
            continue
        if rule.check is None:
            raise CaseSkipped(rule.reason)
        from kernbench.config.conditions import parse_condition

        if parse_condition(rule.check, source or "bench.yaml",
                           "skip_conditions.check").evaluate():
            raise CaseSkipped(f"{rule.reason} ({rule.check})")


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed % 2**32)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


if __name__ == "__main__":
    main()
