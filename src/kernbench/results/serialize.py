"""Model objects <-> the versioned JSON documents kernbench writes.

Timing summaries in the JSON are derived from the raw samples here, at write time; readers
rebuild :class:`~kernbench.results.model.CaseResult` from the raw samples and never trust the
summary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from kernbench import __version__
from kernbench.analysis.stats import quality_warnings, summarize_ms
from kernbench.results.model import BenchConfig, CaseResult, KernelSpec, RunResult, point_of
from kernbench.results.schema import SCHEMA_VERSION, migrate


def timing_dict(result: CaseResult) -> dict[str, Any]:
    """The seed's `timing` fields, plus calibration facts and the raw samples."""
    timing = summarize_ms(result.samples_ms)
    timing.update(inner_loops=result.inner_loops, warmup_iterations=result.warmup_iterations,
                  timer=result.timer, timer_overhead_ns=result.timer_overhead_ns,
                  timer_resolution_ns=result.timer_resolution_ns,
                  warmup_ms=list(result.warmup_ms), warmup_s=result.warmup_s,
                  samples_ms=list(result.samples_ms),
                  process_sample_counts=list(result.process_sample_counts))
    return timing


def record_warnings(result: CaseResult) -> list[dict[str, Any]]:
    """Statistical warnings from the samples, plus those the case's facts call for."""
    warnings = quality_warnings(result.samples_ms, result.timer_overhead_ns,
                                result.inner_loops, result.timer_resolution_ns)
    after = (result.gpu_state or {}).get("after") or {}
    if after.get("throttled"):
        reasons = ", ".join(after.get("throttle_reasons") or []) or "unknown"
        warnings.append({"code": "gpu_throttled", "value": reasons,
                         "message": f"the GPU was throttling at the end of sampling ({reasons})"})
    if result.memory.get("python_source"):
        warnings.append({"code": "tracemalloc", "value": True,
                         "message": "tracemalloc was on: Python code ran slower than usual"})
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


def result_from_dict(data: Mapping[str, Any]) -> CaseResult:
    """Rebuild a record from its JSON (the summary fields are recomputed from samples)."""
    timing = data.get("timing") or {}
    return CaseResult(
        kernel_name=data["kernel_name"], kernel_path=data.get("kernel_path", ""),
        framework=data.get("framework", "python"), backend=data["backend"],
        precision=data["precision"], problem_size=data.get("problem_size"),
        status=data["status"], reason=data.get("reason"),
        samples_ms=tuple(timing.get("samples_ms") or ()),
        process_sample_counts=tuple(timing.get("process_sample_counts") or ()),
        inner_loops=timing.get("inner_loops") or 0,
        warmup_iterations=timing.get("warmup_iterations") or 0,
        warmup_ms=tuple(timing.get("warmup_ms") or ()), warmup_s=timing.get("warmup_s"),
        timer=timing.get("timer"),
        timer_overhead_ns=timing.get("timer_overhead_ns"),
        timer_resolution_ns=timing.get("timer_resolution_ns"), memory=data.get("memory") or {},
        energy=data.get("energy") or {}, accuracy=data.get("accuracy") or {},
        output=data.get("output") or {}, device=data.get("device"),
        device_info=data.get("device_info") or {}, work=data.get("work"),
        gpu_state=data.get("gpu_state"), l2_flush=data.get("l2_flush"),
        golden=data.get("golden"),
        started_at=data.get("started_at"), duration_s=data.get("duration_s"),
        worker=data.get("worker") or {}, profile=data.get("profile"),
        machine=data.get("machine"),
        implementation=data.get("implementation"), compile=data.get("compile"),
        point=point_of(data.get("case_id"), data["kernel_name"], data["backend"],
                       data["precision"], data.get("implementation")))


def spec_dict(spec: KernelSpec) -> dict[str, Any]:
    """A manifest entry."""
    data = {
        "name": spec.name, "path": spec.path, "function_name": spec.function_name,
        "framework": spec.framework, "frameworks": list(spec.frameworks),
        "backends": list(spec.backends), "dependencies": list(spec.dependencies),
        "parameters": list(spec.parameters), "has_setup": spec.has_setup,
        "setup_parameters": list(spec.setup_parameters),
        "ignores_precision": spec.ignores_precision,
        "config_path": spec.config_path, "status": spec.status, "error": spec.error,
        "config": _config_dict(spec.config),
    }
    return data


def _config_dict(config: BenchConfig | None) -> dict[str, Any] | None:
    if config is None:
        return None
    data = dataclasses.asdict(config)
    data.pop("raw", None)
    data.pop("sweep", None)
    if config.sweep:  # the bench.yaml spec and its size, not up to 10,000 points
        data["sweep"] = config.raw.get("sweep")
        data["sweep_points"] = len(config.sweep)
    return data


def manifest_dict(root: str, paths: list[str], specs: list[KernelSpec]) -> dict[str, Any]:
    invalid = sum(1 for s in specs if s.status == "invalid")
    return {"schema_version": SCHEMA_VERSION, "kernbench_version": __version__, "root": root,
            "paths": paths, "count": len(specs), "invalid": invalid,
            "kernels": [spec_dict(s) for s in specs]}


def counts(results: list[CaseResult] | tuple[CaseResult, ...]) -> dict[str, int]:
    tally = {"total": len(results), "ok": 0, "failed": 0, "skipped": 0, "timeout": 0,
             "invalid": 0}
    for result in results:
        tally[result.status] += 1
    return tally


def summary_dict(run: RunResult) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kernbench_version": __version__,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "complete": run.complete,
        "settings": dict(run.settings),
        "environment": {k: run.environment.get(k) for k in
                        ("fingerprint", "hostname", "git", "python", "cpu", "gpus",
                         "machine_state")},
        "counts": counts(run.results),
        "regression_thresholds": {k.name: dict(k.config.regression) for k in run.kernels
                                  if k.config is not None and k.config.regression},
        "implementations": implementations_dict(run.kernels),
        "results": [record_dict(r) for r in run.results],
    }


def implementations_dict(kernels: tuple[KernelSpec, ...]) -> dict[str, Any]:
    """Kernels with several implementations: {kernel: {reference, names}}, for the reports'
    side-by-side tables (speedups are over the reference implementation)."""
    return {k.name: {"reference": k.config.reference_implementation,
                     "names": [i.name for i in k.config.implementations]}
            for k in kernels if k.config is not None and k.config.implementations}


def results_from_summary(document: dict[str, Any], source: str) -> list[CaseResult]:
    """Records of a summary.json (migrated to the current schema first)."""
    document = migrate(document, source)
    return [result_from_dict(r) for r in document.get("results", [])]
