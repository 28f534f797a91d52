"""What a worker reports of a GPU case's timing: each mode's raw samples and what they mean.

The reply's ``gpu_timing`` holds, per mode, the samples (µs per call) and the facts needed to
read them (the mode actually measured, why it fell back, the flush, calls per sample, blocks
discarded for throttling). The summary figures (median, IQR, p10, p90, ``launch_overhead_us``)
are derived from these samples when the record is written
(:func:`kernbench.analysis.gpu_summary.gpu_timing_summary`), so several processes' samples
merge before anything is summarised.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: a CPU case's worker need not import the GPU modules
    from kernbench.measure.gpu_session import GpuOutcome
    from kernbench.measure.gpu_timing import ModeResult


def mode_raw(result: ModeResult, flush_bytes: int | None) -> dict[str, Any]:
    """One mode's raw record."""
    return {"mode": result.mode, "requested_mode": result.requested, "reason": result.reason,
            "flush": {"bytes": flush_bytes if result.flush_per != "none" else None,
                      "per": result.flush_per},
            "calls_per_sample": result.calls_per_sample,
            "samples_us": [s / 1e3 for s in result.samples_ns],
            "discarded_blocks": len(result.discarded),
            "discard_reasons": dict(Counter(result.discarded))}


def gpu_timing_raw(outcome: GpuOutcome, requested: str) -> dict[str, Any]:
    """The reply's ``gpu_timing``: the option asked for, the mode the samples hold, and every
    mode measured (keyed by the mode asked for: a fallback keeps its name and says so)."""
    modes = {(r.requested or r.mode): mode_raw(r, outcome.flush_bytes) for r in outcome.modes}
    primary = outcome.primary.requested or outcome.primary.mode
    return {"requested": requested, "primary": primary, "modes": modes}


def missing_figure(raw: dict[str, Any] | None) -> str | None:
    """Why a case has no figure at all: the mode its samples were to hold could not be measured
    (``--gpu-timing kernel`` without a profiler); None when it has one."""
    if not raw:
        return None
    primary = raw["modes"][raw["primary"]]
    if primary["samples_us"]:
        return None
    return f"not timed: {raw['primary']} mode: {primary['reason']}"
