"""The checks a worker makes after the samples: accuracy against a reference, and the work
(flops, bytes) a case does. Both run once, untimed, in the case's worker process."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernbench.execution.contract import BoundKernel, problem_kwargs
from kernbench.execution.jobs import WorkerJob
from kernbench.results.measurement import NATIVE

NO_ACCURACY = {"rmse": None, "max_error": None, "relative_error": None, "passed": None}

ITEMSIZE = {"fp64": 8, "fp32": 4, "fp16": 2, "bf16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1}


def accuracy(job: WorkerJob, kernel: BoundKernel, value: object,
             precision: str) -> dict[str, Any]:
    """Compare with the reference case's saved output (bench.yaml `reference` or the reference
    implementation), else the kernel's reference() (the reference case itself too, when the
    kernel has one); computed once, after timing."""
    if job.reference_error:
        return {**NO_ACCURACY, "reason": f"not checked: {job.reference_error}"}
    reference_function = kernel.reference_function()
    if job.reference_output_path is not None:
        from kernbench.measure.metrics.outputs import load_output

        reference = load_output(job.reference_output_path)
        source = job.reference_label
    elif reference_function is not None:
        reference = kernel.reference()
        source = f"{reference_function.__name__}()"
    elif job.is_reference:
        return {**NO_ACCURACY, "reason": "this case is the reference for the kernel's others"}
    else:
        return {**NO_ACCURACY, "reason": "not checked: the kernel has no reference() and its "
                                         "bench.yaml names no reference case"}
    from kernbench.measure.metrics.accuracy import compute_accuracy

    return {**compute_accuracy(value, reference, precision, job.tolerances or None),
            "reference_source": source}


def accuracy_failure(checked: Mapping[str, Any]) -> str:
    """The failure reason of an accuracy check that did not pass."""
    if checked.get("mismatch"):
        return f"accuracy check failed: {checked['mismatch']}"
    exceeded = checked.get("exceeded", [])
    parts = [f"{name} {_num(checked.get(name))} > {_num(checked['tolerances'].get(name))}"
             for name in exceeded]
    if checked.get("nan_count"):
        parts.insert(0, f"{checked['nan_count']} NaN/inf values where the reference is finite")
    own = checked.get("reason")
    if isinstance(own, str) and own and (not parts or any(checked.get(name) is None
                                                          for name in exceeded)):
        return f"accuracy check failed: {own}"  # what no figure says (NaN positions, inf)
    return "accuracy check failed: " + ("; ".join(parts) or "see accuracy")


def _num(value: object) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def check_formula_variables(job: WorkerJob) -> None:
    """Before setup and timing: a bench.yaml `work` formula reading a variable the case does
    not have (not a problem-size key, not `itemsize`) is a ConfigError naming the key."""
    variables = [*problem_kwargs(job.problem_size), "itemsize"]
    for key, formula in (job.work or {}).items():
        if isinstance(formula, str):
            from kernbench.config.formulas import parse_formula  # only kernels with formulas

            parse_formula(formula, str(job.config_source), f"work.{key}").check_variables(
                variables)


def work_counts(job: WorkerJob, kernel: BoundKernel,
                output: Mapping[str, Any]) -> dict[str, Any] | None:
    """flops and bytes moved: bench.yaml `work` formulas, else the kernel's flops() and
    bytes_moved() functions; None when the kernel declares neither."""
    formulas = job.work or {}
    precision = job.precision if job.precision != NATIVE else output.get("precision")
    variables = {**kernel.sizes, "itemsize": ITEMSIZE.get(str(precision), 0)}
    counts: dict[str, Any] = {}
    for key, function_name in (("flops", "flops"), ("bytes", "bytes_moved")):
        formula = formulas.get(key)
        if isinstance(formula, str):
            from kernbench.config.formulas import parse_formula  # only kernels with formulas

            counts[key] = parse_formula(formula, str(job.config_source),
                                        f"work.{key}").evaluate(variables)
            counts[f"{key}_source"] = f"bench.yaml work.{key}: {formula}"
        elif isinstance(formula, (int, float)):
            counts[key], counts[f"{key}_source"] = float(formula), f"bench.yaml work.{key}"
        else:
            value = kernel.work(function_name)
            if value is not None:
                counts[key], counts[f"{key}_source"] = value, f"{function_name}()"
    return counts or None
