"""A run's JSON documents as they are written: ``summary.json`` and the ``kernels/*.json`` records.

Writing is where figures are derived: each record's ``timing`` summary (percentiles, the
median's interval) and its measurement-quality ``warnings`` come from the raw samples through
:mod:`kernbench.analysis.stats`. That is why the writer sits here, above the statistics, and
not in :mod:`kernbench.results.serialize`, which reads the documents back without them (readers
rebuild :class:`~kernbench.results.model.CaseResult` from the raw samples and never trust the
summary).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernbench import __version__
from kernbench.analysis.gpu_summary import gpu_timing_summary
from kernbench.analysis.stats import quality_warnings, summarize_ms
from kernbench.results.model import CaseResult, RunResult
from kernbench.results.schema import SCHEMA_VERSION
from kernbench.results.serialize import counts, implementations_dict
from kernbench.results.vocabulary import (
    BENIGN_THROTTLE_REASONS,
    precision_unread,
    ran_unread,
)

__all__ = ["machine_of", "record_dict", "record_warnings", "summary_dict", "timing_dict"]


def timing_dict(result: CaseResult) -> dict[str, Any]:
    """The seed's `timing` fields, plus calibration facts and the raw samples."""
    timing = summarize_ms(result.samples_ms)
    timing.update(inner_loops=result.inner_loops, warmup_iterations=result.warmup_iterations,
                  timer=result.timer, timer_overhead_ns=result.timer_overhead_ns,
                  timer_resolution_ns=result.timer_resolution_ns,
                  warmup_ms=list(result.warmup_ms), warmup_s=result.warmup_s,
                  samples_ms=list(result.samples_ms),
                  process_sample_counts=list(result.process_sample_counts))
    if result.gpu_timing:
        timing.update(gpu_timing_summary(result.gpu_timing))
    return timing


def _throttle_message(reasons: list[str], named: str) -> str:
    if set(reasons) - BENIGN_THROTTLE_REASONS == {"SwPowerCap"}:
        return (f"the GPU was at its power cap at the end of sampling ({named}): its clocks "
                "were power-limited, as they are whenever this kernel runs sustained")
    return f"the GPU was throttling at the end of sampling ({named})"


def record_warnings(result: CaseResult) -> list[dict[str, Any]]:
    """Statistical warnings from the samples, plus those the case's facts call for."""
    warnings = quality_warnings(result.samples_ms, result.timer_overhead_ns,
                                result.inner_loops, result.timer_resolution_ns,
                                result.worker.get("entry_point"))
    after = (result.gpu_state or {}).get("after") or {}
    if after.get("throttled"):
        listed = list(after.get("throttle_reasons") or [])
        reasons = ", ".join(listed) or "unknown"
        warnings.append({"code": "gpu_throttled", "value": reasons,
                         "message": _throttle_message(listed, reasons)})
    if result.memory.get("python_source"):
        warnings.append({"code": "tracemalloc", "value": True,
                         "message": "tracemalloc was on: Python code ran slower than usual"})
    if precision_unread(result.output):
        warnings.append({"code": "precision_unread", "value": result.precision,
                         "message": "the kernel declares a `precision` parameter but never "
                                    f"reads it: {ran_unread(result.precision)}"})
    recompiles = (result.compile or {}).get("recompiles_during_timing")
    if isinstance(recompiles, int) and recompiles > 0:
        warnings.append({"code": "recompiled_during_timing", "value": recompiles,
                         "message": f"torch.compile compiled {recompiles} new graph(s) during "
                                    "warmup and sampling: the samples include compilation"})
    return warnings


def record_dict(result: CaseResult) -> dict[str, Any]:
    """One case's record, with the seed's field names first."""
    memory = {"peak_mb": None, "allocated_mb": None, "source": None, **result.memory}
    if not result.memory:
        memory["reason"] = f"not measured: the case did not run ({result.status})"

    record: dict[str, Any] = {
        "kernel_name": result.kernel_name,
        "case_id": result.case_id,
        "backend": result.backend,
        "precision": result.precision,
        "problem_size": result.problem_size,
        "timing": timing_dict(result),
        "memory": memory,
        "energy": dict(result.energy),
        "accuracy": dict(result.accuracy),
        "success": result.success,
        "status": result.status,
        "reason": result.reason,
        "warnings": record_warnings(result),
        "framework": result.framework,
        "kernel_path": result.kernel_path,
        "device": result.device,
        "device_info": dict(result.device_info),
        "work": dict(result.work) if result.work else None,
        "gpu_state": dict(result.gpu_state) if result.gpu_state else None,
        "l2_flush": result.l2_flush,
        "golden": dict(result.golden) if result.golden else None,
        "output": dict(result.output),
        "started_at": result.started_at,
        "duration_s": result.duration_s,
        "worker": dict(result.worker),
        "machine": dict(result.machine) if result.machine else None,
    }
    if result.profile is not None:  # only runs with --profile carry the field
        record["profile"] = dict(result.profile)
    if result.implementation is not None:  # only kernels with several implementations
        record["implementation"] = result.implementation
        record["compile"] = dict(result.compile) if result.compile else None
    return record

def machine_of(environment: Mapping[str, Any]) -> dict[str, Any]:
    """The machine every record of a run names: its fingerprint and testbed."""
    return {"fingerprint": environment.get("fingerprint"), "testbed": environment.get("testbed")}


def summary_dict(run: RunResult) -> dict[str, Any]:
    machine = machine_of(run.environment)
    return {
        "schema_version": SCHEMA_VERSION,
        "kernbench_version": __version__,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "complete": run.complete,
        "settings": dict(run.settings),
        "environment": {k: run.environment.get(k) for k in
                        ("fingerprint", "hostname", "testbed", "git", "python", "cpu",
                         "gpus", "machine_state")},
        "counts": counts(run.results),
        "regression_thresholds": {k.name: dict(k.config.regression) for k in run.kernels
                                  if k.config is not None and k.config.regression},
        "implementations": implementations_dict(run.kernels),
        "results": [{**record_dict(r), **machine} for r in run.results],
        **({} if run.complete else {"unfinished_cases": unfinished_cases(run)}),
    }


def unfinished_cases(run: RunResult) -> list[str]:
    """The cases of an interrupted run that have fewer worker processes than it asked for
    (its rounds stopped between them): their figures stand on part of their replicates, and
    --resume runs the processes they lack."""
    wanted = run.settings.get("processes")
    if not isinstance(wanted, int):
        return []
    return [r.case_id for r in run.results
            if r.status == "ok" and _processes(r) < wanted]


def _processes(result: CaseResult) -> int:
    """How many worker processes took a case's samples (one keeps no per-process counts)."""
    return len(result.process_sample_counts) or (1 if result.samples_ms else 0)

