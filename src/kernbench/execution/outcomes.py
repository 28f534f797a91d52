"""How a worker's outcome becomes a record: its reply, or its absence after a crash or a
timeout, turned into a :class:`~kernbench.results.model.CaseResult`, plus the records of
cases no worker ran (invalid kernels, devices found unavailable) and the golden check."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeGuard

from kernbench.analysis.golden import detect_sku, golden_check
from kernbench.analysis.stats import percentile
from kernbench.execution.isolation import WorkerExit, exit_words
from kernbench.execution.jobs import WorkerReply
from kernbench.execution.stacks import timeout_detail
from kernbench.measure.metrics.roofline import work_figures
from kernbench.results.model import (
    NATIVE,
    WORKER_KEYS,
    Case,
    CaseResult,
    KernelSpec,
    case_suffix,
)
from kernbench.results.vocabulary import PRECISION_UNREAD

NO_REPLY = "not measured: no worker reported on this case (it did not run, or ended first)"
"""Why a record without a worker's reply (an invalid kernel, an unavailable device, a crash or
a timeout) has no energy and no accuracy figures: the worker measures both, and none reported."""
NOT_MEASURED_ENERGY = {"energy_j": None, "power_w": None, "source": None, "reason": NO_REPLY}
NOT_MEASURED_ACCURACY = {"rmse": None, "max_error": None, "passed": None, "reason": NO_REPLY}


def invalid_result(spec: KernelSpec) -> CaseResult:
    """The single record an invalid kernel gets: it names the error, it measured nothing."""
    return CaseResult(kernel_name=spec.name, kernel_path=spec.path, framework=spec.framework,
                      backend="n/a", precision="n/a", problem_size=None, status="invalid",
                      reason=spec.error, energy=NOT_MEASURED_ENERGY,
                      accuracy=NOT_MEASURED_ACCURACY, worker=dict.fromkeys(WORKER_KEYS))


def unavailable_result(case: Case, reason: str, started: str) -> CaseResult:
    """The record of a case skipped because an earlier worker of the run found its device
    unavailable to its framework; no worker ran."""
    return CaseResult(kernel_name=case.kernel.name, kernel_path=case.kernel.path,
                      framework=case.framework, backend=case.backend, precision=case.precision,
                      problem_size=case.problem_size, point=case.point,
                      implementation=case.implementation.name if case.implementation else None,
                      status="skipped", reason=f"{reason} (as an earlier case of this run found)",
                      energy=NOT_MEASURED_ENERGY, accuracy=NOT_MEASURED_ACCURACY,
                      worker=dict.fromkeys(WORKER_KEYS), started_at=started, duration_s=0.0)


def build_result(case: Case, reply: WorkerReply | None, exit_info: WorkerExit,
                 started: str, timeout: float,
                 peak: Mapping[str, Any] | None = None) -> CaseResult:
    """Turn the worker's reply (or its absence) into a record."""
    spec = case.kernel
    base: dict[str, Any] = dict(
        kernel_name=spec.name, kernel_path=spec.path, framework=case.framework,
        backend=case.backend, precision=case.precision, problem_size=case.problem_size,
        point=case.point, implementation=case.implementation.name if case.implementation else None,
        started_at=started, duration_s=exit_info.wall_s,
        worker=worker_facts(exit_info), energy=NOT_MEASURED_ENERGY, accuracy=NOT_MEASURED_ACCURACY)
    if not usable(reply, exit_info):
        status, reason = died_reason(exit_info, timeout)
        return CaseResult(status=status, reason=reason, **base)  # type: ignore[arg-type]
    if reply.traceback:
        base["worker"] = {**base["worker"], "traceback": reply.traceback}
    output = reply.output or {}
    if case.precision == NATIVE and output.get("precision"):
        base["precision"] = output["precision"]
    if output and spec.precision_unread:  # its label is its output's, whatever was asked
        output = {**output, **PRECISION_UNREAD}
    samples_ms = tuple(s / 1e6 for s in reply.samples_ns or ())
    warmup_ms = tuple(s / 1e6 for s in reply.warmup_ns or ())
    if reply.energy:
        base["energy"] = reply.energy
    if reply.accuracy:
        base["accuracy"] = reply.accuracy
    device_info = reply.device or {}
    return CaseResult(
        status=reply.status, reason=reply.reason,  # type: ignore[arg-type]
        samples_ms=samples_ms, inner_loops=reply.inner_loops or 0,
        warmup_iterations=len(warmup_ms), warmup_ms=warmup_ms, warmup_s=reply.warmup_s,
        timer=reply.timer, timer_overhead_ns=reply.timer_overhead_ns,
        timer_resolution_ns=reply.timer_resolution_ns, memory=reply.memory or {},
        output=output, device=device_info.get("device"), device_info=device_info,
        work=work_record(reply.work, samples_ms, peak, base["precision"]),
        gpu_state=reply.gpu_state, l2_flush=reply.l2_flush, profile=reply.profile,
        gpu_timing=reply.gpu_timing,
        compile=reply.compile, machine=reply.machine, **base)


def work_record(counts: Mapping[str, Any] | None, samples_ms: tuple[float, ...],
                peak: Mapping[str, Any] | None, precision: str) -> dict[str, Any] | None:
    """GFLOP/s, GB/s, intensity and % of peak at the median latency, when work is declared."""
    if not counts:
        return None
    latency = percentile(samples_ms, 50) if samples_ms else None
    figures = work_figures(latency, counts.get("flops"), counts.get("bytes"), peak, precision)
    sources = {k: v for k, v in counts.items() if k.endswith("_source")}
    if peak is None:
        sources["peak_reason"] = ("% of peak left out: no peak is known for this device, or "
                                  "the CPU probe was skipped (--no-cpu-peak)")
    return {**figures, **sources}


def worker_facts(exit_info: WorkerExit) -> dict[str, Any]:
    """The record's `worker` facts (WORKER_KEYS, and isolation details)."""
    facts = {"pid": exit_info.pid, "exit_code": exit_info.returncode,
             "signal": exit_info.signal_name, "wall_s": exit_info.wall_s,
             "stdout_tail": exit_info.stdout_tail, "stderr_tail": exit_info.stderr_tail,
             "stdout_bytes": exit_info.stdout_bytes, "stderr_bytes": exit_info.stderr_bytes,
             "isolation": exit_info.isolation}
    if exit_info.note:
        facts["isolation_note"] = exit_info.note
    if exit_info.stack:
        facts["stack_at_timeout"] = exit_info.stack
    return facts


def usable(reply: WorkerReply | None, exit_info: WorkerExit) -> TypeGuard[WorkerReply]:
    """Whether the worker's reply stands: there is one, and neither the timeout nor its fork
    server's end (:attr:`WorkerExit.cause`) ended the worker; else :func:`died_reason`."""
    return reply is not None and not exit_info.timed_out and not exit_info.cause


def died_reason(exit_info: WorkerExit, timeout: float) -> tuple[str, str]:
    """Status and reason of a worker that left no reply (or ran out of time)."""
    if exit_info.timed_out:
        detail = timeout_detail(exit_info.stack)
        return "timeout", (f"timed out after {timeout:g} s; the worker and its children were "
                           f"killed{f'; {detail}' if detail else ''}"
                           f"{f'; {exit_info.cause}' if exit_info.cause else ''}")
    last = exit_info.stderr_tail.strip().splitlines()[-1:] or [""]
    detail = f": {last[0][:300]}" if last[0] else ""
    if exit_info.cause:
        return "failed", f"{exit_info.cause}{detail}"
    how = exit_words(exit_info.returncode).removeprefix("was ")
    return "failed", f"worker {how} before reporting a result{detail}"


def reference_failure(reply: WorkerReply | None, exit_info: WorkerExit, timeout: float) -> str:
    """Why a reference case saved no output, for the accuracy of the cases checked against it."""
    if not usable(reply, exit_info):
        return died_reason(exit_info, timeout)[1]
    return f"{reply.status}: {reply.reason or 'no output saved'}"


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
