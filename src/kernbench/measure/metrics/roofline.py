"""Roofline figures of one case: achieved rates, arithmetic intensity and % of peak.

:func:`work_figures` combines a case's latency, the work one call does (flops and bytes,
e.g. from bench.yaml ``work`` formulas, see :mod:`kernbench.config.formulas`) and the machine's
peak (:func:`kernbench.measure.metrics.peaks.gpu_peak` or
:func:`~kernbench.measure.metrics.peaks.cpu_peak`).

Units: GFLOP/s and GB/s use 1e9; arithmetic intensity is flop/byte.  A figure that cannot be
computed (missing or non-positive input, unknown peak) is ``None`` — never 0.

Which compute peak a precision uses: ``fp64``, ``fp32``, ``tf32``, ``fp16``, ``bf16``,
``fp8`` (also ``fp8_e4m3``/``fp8_e5m2``) and ``int8`` (and the aliases ``float64``,
``double``, ``float32``, ``float``, ``float16``, ``half``, ``bfloat16``) pick the peak of that
name.  For GPUs ``fp32`` is the *non-tensor* FP32 figure on NVIDIA (a kernel that opts into
TF32 should be labelled ``tf32``) and the full-precision matrix figure on AMD; see
:mod:`kernbench.measure.metrics.peaks`.  ``"native"`` (a kernel that takes no precision) and any
other label pick no compute peak, since the data type is unknown: ``pct_peak_compute`` and
``bound`` are then None, while bandwidth figures are still computed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["PRECISION_PEAK_KEYS", "peak_bandwidth_gbs", "peak_gflops", "work_figures"]

PRECISION_PEAK_KEYS: Mapping[str, str] = {
    "fp64": "fp64", "float64": "fp64", "double": "fp64",
    "fp32": "fp32", "float32": "fp32", "float": "fp32",
    "tf32": "tf32",
    "fp16": "fp16", "float16": "fp16", "half": "fp16",
    "bf16": "bf16", "bfloat16": "bf16",
    "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8",
    "int8": "int8",
}
"""Precision label -> key of the peak tables (``tflops`` / ``gflops``)."""


def _positive(value: object) -> float | None:
    """``value`` as a float when it is a finite number > 0, else None (bools are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and number > 0 else None


def _non_negative(value: object) -> float | None:
    """``value`` as a float when it is a finite number >= 0, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _ratio(numerator: float | None, denominator: float | None,
           scale: float = 1.0) -> float | None:
    if numerator is None or denominator is None:
        return None
    return scale * numerator / denominator


def peak_gflops(peak: Mapping[str, Any] | None, precision: str) -> float | None:
    """The compute peak in GFLOP/s (GOP/s for int8) for ``precision``, or None if unknown.

    Reads ``peak["tflops"][key]`` (x 1000) or else ``peak["gflops"][key]``.
    """
    key = PRECISION_PEAK_KEYS.get(precision.lower()) if isinstance(precision, str) else None
    if peak is None or key is None:
        return None
    tflops, gflops = peak.get("tflops"), peak.get("gflops")
    if isinstance(tflops, Mapping) and _positive(tflops.get(key)) is not None:
        return 1000.0 * float(tflops[key])
    if isinstance(gflops, Mapping):
        return _positive(gflops.get(key))
    return None


def peak_bandwidth_gbs(peak: Mapping[str, Any] | None) -> float | None:
    """The memory-bandwidth peak in GB/s, or None if unknown."""
    return None if peak is None else _positive(peak.get("memory_bandwidth_gbs"))


def _bound(intensity: float | None, ridge: float | None) -> str | None:
    if intensity is None or ridge is None:
        return None
    return "memory" if intensity < ridge else "compute"


def work_figures(latency_ms: float | None, flops: float | None, bytes_moved: float | None,
                 peak: Mapping[str, Any] | None, precision: str) -> dict[str, Any]:
    """Roofline figures of one call that took ``latency_ms`` and did ``flops``/``bytes_moved``.

    Returns ``flops``, ``bytes``, ``gflops_per_s``, ``gb_per_s``, ``arithmetic_intensity``
    (flop/byte), ``pct_peak_compute`` and ``pct_peak_bandwidth`` (100 x achieved / peak),
    ``peak_gflops_per_s``, ``peak_gb_per_s``, ``ridge_point`` (peak flop/s / peak byte/s, in
    flop/byte), ``peak_source`` and ``bound``: "memory" when the intensity is below the ridge
    point, "compute" at or above it, None unless both peaks and the intensity are known.
    """
    work = _non_negative(flops)
    moved = _non_negative(bytes_moved)
    latency = _positive(latency_ms)
    gflops_per_s = _ratio(work, latency, 1e-6)  # flop / ms -> GFLOP/s
    gb_per_s = _ratio(moved, latency, 1e-6)
    intensity = _ratio(work, _positive(moved))
    compute_peak = peak_gflops(peak, precision)
    bandwidth_peak = peak_bandwidth_gbs(peak)
    ridge = _ratio(compute_peak, bandwidth_peak)
    source = peak.get("source") if peak is not None else None
    return {
        "flops": work,
        "bytes": moved,
        "gflops_per_s": gflops_per_s,
        "gb_per_s": gb_per_s,
        "arithmetic_intensity": intensity,
        "pct_peak_compute": _ratio(gflops_per_s, compute_peak, 100.0),
        "pct_peak_bandwidth": _ratio(gb_per_s, bandwidth_peak, 100.0),
        "peak_gflops_per_s": compute_peak,
        "peak_gb_per_s": bandwidth_peak,
        "ridge_point": ridge,
        "peak_source": source if isinstance(source, str) else None,
        "bound": _bound(intensity, ridge),
    }
