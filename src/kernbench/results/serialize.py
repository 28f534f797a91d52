"""Model objects <-> the versioned JSON documents kernbench writes, read side and manifests.

Reading rebuilds :class:`~kernbench.results.model.CaseResult` from the raw samples and never
trusts the summary figures beside them. The writer of ``summary.json`` and the per-kernel
records, which derives those figures, is :mod:`kernbench.analysis.summary`: it needs the
statistics, and this room imports nothing above it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from kernbench import __version__
from kernbench.results.model import BenchConfig, CaseResult, KernelSpec, point_of
from kernbench.results.schema import SCHEMA_VERSION, migrate


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
        gpu_timing=timing.get("gpu_timing"),
        golden=data.get("golden"),
        started_at=data.get("started_at"), duration_s=data.get("duration_s"),
        worker=data.get("worker") or {}, profile=data.get("profile"),
        machine=data.get("machine"),
        implementation=data.get("implementation"), compile=data.get("compile"),
        fingerprint=data.get("fingerprint"), testbed=data.get("testbed"),
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
        "reads_precision_context": spec.reads_precision_context,
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
