"""Merge the results of one case measured in several worker processes (``--processes N``).

The process is the unit of replication: each process imports the kernel afresh, so its
address-space layout, allocator state and caches differ, and so can its speed. Keeping each
process's samples as a group (``process_sample_counts``) lets the comparison treat processes,
not samples, as the independent observations.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from kernbench.analysis.gpu_summary import merge_gpu_timing
from kernbench.measure.machine import summed_activity
from kernbench.results.model import CaseResult


def merge_replicates(results: Sequence[CaseResult]) -> CaseResult:
    """One record from the per-process records of a case.

    The first process that did not finish ``ok`` decides the status (a case that crashes one
    time in three is broken). Otherwise samples are concatenated in process order, memory is
    the highest peak, energy is summed over all timed regions, and accuracy, warmup and output
    come from the first process (the only one that checks accuracy).
    """
    if not results:
        raise ValueError("no results to merge")
    first = results[0]
    for index, result in enumerate(results, start=1):
        if result.status != "ok":  # accuracy: the first process's check, whoever failed
            return dataclasses.replace(
                result, reason=f"process {index} of {len(results)}: {result.reason}",
                accuracy=first.accuracy)
    counts = tuple(c for r in results for c in (r.process_sample_counts or (len(r.samples_ms),)))
    return dataclasses.replace(
        first,
        samples_ms=tuple(s for r in results for s in r.samples_ms),
        process_sample_counts=counts,
        memory=max((r.memory for r in results), key=lambda m: m.get("peak_mb") or 0.0),
        energy=_summed_energy([r.energy for r in results]),
        duration_s=sum(r.duration_s or 0.0 for r in results),
        warmup_s=max((r.warmup_s for r in results if r.warmup_s is not None), default=None),
        worker={**first.worker, "processes": len(results)},
        machine=_merged_machine([r.machine for r in results]),
        gpu_timing=merge_gpu_timing([r.gpu_timing for r in results]),
    )


def _merged_machine(states: Sequence[Mapping[str, Any] | None]) -> Mapping[str, Any] | None:
    """The machine activity over every process's samples together (their windows summed:
    /proc/stat's 10 ms ticks make one short window's reading off by 0.2-0.4 cores, and the
    busiest of ten such readings called an idle machine busy), with the median speed probe
    of all the case's processes and each process's own probe (``process_speed_probes_us``, in
    process order, None where one had none): a comparison leaves out a process that ran in
    the VM's slow mode (kernbench.analysis.process_modes). Windows without their raw seconds
    (a worker of an older version) give the busiest process's reading, as before. A hog that
    ran during one or two of ten windows no longer makes the case busy: it slowed a minority
    of processes, which the comparison's trimming and typical-process check weigh down."""
    measured = [dict(s) for s in states if s]
    if not measured:
        return None
    busiest = max(measured, key=lambda s: (s.get("other_cpu_cores") or 0.0,
                                           s.get("steal_share") or 0.0))
    merged = {**busiest, **(summed_activity(measured) or {})}
    befores = [s["speed_probe_before_us"] for s in measured if s.get("speed_probe_before_us")]
    if befores:
        merged["speed_probe_before_us"] = round(statistics.median(befores), 2)
    speeds = [s["speed_probe_us"] for s in measured if s.get("speed_probe_us")]
    if not speeds:
        return merged
    return {**merged, "speed_probe_us": round(statistics.median(speeds), 2),
            "process_speed_probes_us": [(s or {}).get("speed_probe_us") for s in states]}


def _summed_energy(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Energy per call over every process's timed region, if every region was measured."""
    first = dict(records[0])
    regions = [r.get("region_energy_j") for r in records]
    calls = [r.get("calls") for r in records]
    seconds = [r.get("region_s") for r in records]
    if any(v is None for v in (*regions, *calls, *seconds)) or not sum(calls):  # type: ignore[arg-type]
        return first
    total_j = sum(regions)  # type: ignore[arg-type]
    total_s = sum(seconds)  # type: ignore[arg-type]
    first.update(region_energy_j=total_j, region_s=total_s, calls=sum(calls),  # type: ignore[arg-type]
                 energy_j=total_j / sum(calls),  # type: ignore[arg-type]
                 power_w=total_j / total_s if total_s else None)
    return first
