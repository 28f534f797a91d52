"""A GPU case's timing modes as records show them: each mode's median, IQR, p10 and p90 derived
from its raw samples, ``launch_overhead_us``, and processes merged before anything is derived.

The raw form is what a worker reports (:mod:`kernbench.measure.gpu_record`)::

    {"requested": "all", "primary": "cold",
     "modes": {"cold": {"mode", "requested_mode", "reason", "flush": {"bytes", "per"},
                        "calls_per_sample", "samples_us", "discarded_blocks",
                        "discard_reasons"}, ...}}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from kernbench.analysis.stats import iqr, percentile
from kernbench.results.vocabulary import KERNEL_SYNC_FLUSH

__all__ = ["MIXED_MODE", "RAW_MODE_KEYS", "gpu_timing_summary", "merge_gpu_timing", "timing_mode"]

RAW_MODE_KEYS = ("mode", "requested_mode", "reason", "flush", "calls_per_sample", "samples_us",
                 "discarded_blocks", "discard_reasons")
"""What a record keeps of each mode besides the figures derived from its samples."""


def mode_summary(raw: Mapping[str, Any]) -> dict[str, Any]:
    """One mode's record: its raw facts, the calls measured (`n`) and the quantiles (µs)."""
    samples = [float(s) for s in raw.get("samples_us") or ()]
    figures: dict[str, float | None] = dict.fromkeys(
        ("median_us", "iqr_us", "p10_us", "p90_us"))
    if samples:
        figures = {"median_us": percentile(samples, 50), "iqr_us": iqr(samples),
                   "p10_us": percentile(samples, 10), "p90_us": percentile(samples, 90)}
    return {"mode": raw.get("mode"), "requested_mode": raw.get("requested_mode"),
            "reason": raw.get("reason"), "flush": raw.get("flush"),
            "n": (int(raw["calls"]) if raw.get("calls") is not None
                  else len(samples) * int(raw.get("calls_per_sample") or 0)), **figures,
            **{k: raw.get(k) for k in RAW_MODE_KEYS[4:]}}


def launch_overhead(modes: Mapping[str, Mapping[str, Any]]) -> tuple[float | None, str | None]:
    """Medians of ``sync`` minus the kernels' device time under sync's own flush policy (the
    L2 flushed once per sample; ``kernel`` flushes it before every call, so a cold-L2 kernel
    figure would be subtracted from a mostly warm one), or None and why."""
    sync, kernel = modes.get("sync"), modes.get(KERNEL_SYNC_FLUSH)
    if sync is None or kernel is None:
        return None, (f"needs the sync mode and the kernels' device time under its flush policy "
                      f"({KERNEL_SYNC_FLUSH}): --gpu-timing all")
    if kernel.get("requested_mode") is not None:
        return None, f"the kernels' device time was not measured: {kernel.get('reason')}"
    if kernel.get("median_us") is None:
        return None, f"the kernels' device time has no figure: {kernel.get('reason')}"
    if sync.get("median_us") is None:
        return None, f"the sync mode has no figure: {sync.get('reason')}"
    return float(sync["median_us"]) - float(kernel["median_us"]), None


def gpu_timing_summary(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The keys a GPU record's ``timing`` gains: the primary mode's figures at the top
    (``mode`` is what the samples hold), every mode under ``modes``, the raw form under
    ``gpu_timing`` for readers, and ``launch_overhead_us`` when every mode was taken."""
    modes = {name: mode_summary(m) for name, m in (raw.get("modes") or {}).items()}
    primary = modes.get(str(raw.get("primary")), {})
    summary: dict[str, Any] = {k: primary.get(k) for k in (
        "mode", "requested_mode", "reason", "flush", "n", "median_us", "iqr_us", "p10_us",
        "p90_us", "discarded_blocks", "discard_reasons")}
    summary["modes"] = modes
    if raw.get("requested") == "all":
        overhead, why = launch_overhead(modes)
        summary["launch_overhead_us"] = overhead
        summary["launch_overhead_reason"] = why
    summary["gpu_timing"] = dict(raw)
    return summary


MIXED_MODE = "mixed"
"""What a merged mode's samples hold when its processes measured in different modes (one
captured a graph, another fell back to hot): not one thing, so never compared."""


def _merged_mode(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One mode of several processes. Each process calibrates its own calls per sample; where
    they differ, the merged mode keeps the total `calls` instead. Where the processes measured
    in different modes (a fallback in some of them), the mode is :data:`MIXED_MODE`, with
    which process measured what in its reason, whatever the order of the processes."""
    reasons: Counter[str] = Counter()
    for part in parts:
        reasons.update(part.get("discard_reasons") or {})
    merged = {**parts[0],
              "samples_us": [s for part in parts for s in part.get("samples_us") or ()],
              "discarded_blocks": sum(int(p.get("discarded_blocks") or 0) for p in parts),
              "discard_reasons": dict(reasons)}
    if len({p.get("calls_per_sample") for p in parts}) > 1:
        merged["calls_per_sample"] = None
        merged["calls"] = sum(len(p.get("samples_us") or ()) * int(p.get("calls_per_sample") or 0)
                              for p in parts)
    measured = [str(p.get("mode")) for p in parts]
    if len(set(measured)) > 1:
        merged["mode"] = MIXED_MODE
        merged["reason"] = ("the processes measured in different modes (" + ", ".join(
            f"process {i}: {m}" for i, m in enumerate(measured, start=1)) + ")")
    return merged


def merge_gpu_timing(records: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """Several processes' raw timing as one: samples concatenated in process order,
    discarded blocks summed."""
    present = [r for r in records if r]
    if not present:
        return None
    names = dict.fromkeys(n for r in present for n in (r.get("modes") or {}))
    modes = {n: _merged_mode([r["modes"][n] for r in present if n in (r.get("modes") or {})])
             for n in names}
    return {**present[0], "modes": modes}


def timing_mode(gpu_timing: Mapping[str, Any] | None) -> str | None:
    """The mode a record's samples were taken in (None: a CPU case, no GPU modes)."""
    if not gpu_timing:
        return None
    primary = (gpu_timing.get("modes") or {}).get(gpu_timing.get("primary")) or {}
    mode = primary.get("mode")
    return str(mode) if mode is not None else None
