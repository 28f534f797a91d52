"""Tests for kernbench.measure.metrics.roofline: achieved rates, intensity, % of peak and bound."""

from __future__ import annotations

from typing import Any

import pytest

from kernbench.measure.metrics.peaks import gpu_peak
from kernbench.measure.metrics.roofline import (
    PRECISION_PEAK_KEYS,
    peak_bandwidth_gbs,
    peak_gflops,
    work_figures,
)

KEYS = {"flops", "bytes", "gflops_per_s", "gb_per_s", "arithmetic_intensity", "pct_peak_compute",
        "pct_peak_bandwidth", "peak_gflops_per_s", "peak_gb_per_s", "ridge_point", "peak_source",
        "bound"}

# A made-up GPU with round numbers: ridge point fp32 = 10_000 GFLOP/s / 1000 GB/s = 10 flop/B.
GPU: dict[str, Any] = {
    "name": "Test GPU", "source": "test sheet", "memory_bandwidth_gbs": 1000.0,
    "l2_cache_mb": 8.0,
    "tflops": {"fp64": 5.0, "fp32": 10.0, "tf32": 40.0, "fp16": 80.0, "bf16": 80.0,
               "fp8": None, "int8": 160.0},
}
# A measured CPU record as cpu_peak() returns it.
CPU: dict[str, Any] = {"source": "measured attainable", "memory_bandwidth_gbs": 20.0,
                       "gflops": {"fp64": 100.0, "fp32": 200.0}}


def test_exact_arithmetic_on_hand_picked_numbers() -> None:
    # 2e9 flop and 4e8 bytes in 2 ms: 1000 GFLOP/s, 200 GB/s, intensity 5 flop/B.
    fig = work_figures(2.0, 2e9, 4e8, GPU, "fp32")
    assert set(fig) == KEYS
    assert fig["flops"] == 2e9 and fig["bytes"] == 4e8
    assert fig["gflops_per_s"] == pytest.approx(1000.0, rel=1e-12)
    assert fig["gb_per_s"] == pytest.approx(200.0, rel=1e-12)
    assert fig["arithmetic_intensity"] == 5.0
    assert fig["peak_gflops_per_s"] == 10_000.0 and fig["peak_gb_per_s"] == 1000.0
    assert fig["pct_peak_compute"] == pytest.approx(10.0, rel=1e-12)
    assert fig["pct_peak_bandwidth"] == pytest.approx(20.0, rel=1e-12)
    assert fig["ridge_point"] == 10.0
    assert fig["peak_source"] == "test sheet"
    assert fig["bound"] == "memory"


def test_compute_bound_above_the_ridge_point() -> None:
    fig = work_figures(1.0, 1e10, 1e8, GPU, "fp32")  # intensity 100 > 10
    assert fig["arithmetic_intensity"] == 100.0
    assert fig["bound"] == "compute"
    assert fig["pct_peak_compute"] == pytest.approx(100.0)  # 1e10 flop in 1 ms = 10 TFLOP/s


def test_exactly_at_the_ridge_point_is_compute_bound() -> None:
    assert work_figures(1.0, 1e9, 1e8, GPU, "fp32")["bound"] == "compute"


def test_precision_picks_its_peak_and_so_the_ridge() -> None:
    # intensity 50: memory-bound against fp16's ridge (80), compute-bound against fp32's (10).
    fp16 = work_figures(1.0, 5e9, 1e8, GPU, "fp16")
    fp32 = work_figures(1.0, 5e9, 1e8, GPU, "fp32")
    assert fp16["peak_gflops_per_s"] == 80_000.0 and fp16["ridge_point"] == 80.0
    assert fp16["bound"] == "memory" and fp32["bound"] == "compute"
    assert fp16["pct_peak_compute"] == pytest.approx(6.25)
    assert fp32["pct_peak_compute"] == pytest.approx(50.0)


@pytest.mark.parametrize(("label", "expected"), [
    ("fp64", 5000.0), ("float64", 5000.0), ("double", 5000.0), ("FP32", 10_000.0),
    ("float32", 10_000.0), ("tf32", 40_000.0), ("half", 80_000.0), ("bfloat16", 80_000.0),
    ("int8", 160_000.0), ("fp8", None), ("fp8_e4m3", None), ("native", None), ("fp4", None),
])
def test_peak_gflops_per_precision(label: str, expected: float | None) -> None:
    assert peak_gflops(GPU, label) == expected


def test_cpu_record_uses_gflops() -> None:
    fig = work_figures(1.0, 1e8, 1e7, CPU, "fp64")  # 100 GFLOP/s, 10 GB/s, intensity 10
    assert fig["peak_gflops_per_s"] == 100.0
    assert fig["pct_peak_compute"] == pytest.approx(100.0)
    assert fig["pct_peak_bandwidth"] == pytest.approx(50.0)
    assert fig["ridge_point"] == 5.0 and fig["bound"] == "compute"
    assert fig["peak_source"] == "measured attainable"


def test_native_precision_has_no_compute_peak_but_keeps_bandwidth() -> None:
    fig = work_figures(2.0, 2e9, 4e8, GPU, "native")
    assert fig["pct_peak_compute"] is None and fig["peak_gflops_per_s"] is None
    assert fig["ridge_point"] is None and fig["bound"] is None
    assert fig["pct_peak_bandwidth"] == pytest.approx(20.0)
    assert fig["gflops_per_s"] == pytest.approx(1000.0)


def test_unknown_peak_gives_none_not_zero() -> None:
    fig = work_figures(2.0, 2e9, 4e8, None, "fp32")
    assert fig["gflops_per_s"] == pytest.approx(1000.0)
    for key in ("pct_peak_compute", "pct_peak_bandwidth", "peak_gflops_per_s", "peak_gb_per_s",
                "ridge_point", "peak_source", "bound"):
        assert fig[key] is None, key


def test_partial_peak() -> None:
    only_bw = {"memory_bandwidth_gbs": 500.0}
    fig = work_figures(1.0, 1e9, 1e8, only_bw, "fp32")
    assert fig["pct_peak_bandwidth"] == pytest.approx(20.0)
    assert fig["pct_peak_compute"] is None and fig["bound"] is None
    assert fig["peak_source"] is None


def test_missing_latency_leaves_rates_none() -> None:
    for latency in (None, 0.0, -1.0, float("nan"), float("inf")):
        fig = work_figures(latency, 2e9, 4e8, GPU, "fp32")
        assert fig["gflops_per_s"] is None and fig["gb_per_s"] is None
        assert fig["pct_peak_compute"] is None and fig["pct_peak_bandwidth"] is None
        assert fig["arithmetic_intensity"] == 5.0  # does not need the latency
        assert fig["bound"] == "memory"


def test_missing_flops() -> None:
    fig = work_figures(2.0, None, 4e8, GPU, "fp32")
    assert fig["flops"] is None and fig["gflops_per_s"] is None
    assert fig["arithmetic_intensity"] is None and fig["pct_peak_compute"] is None
    assert fig["bound"] is None
    assert fig["gb_per_s"] == pytest.approx(200.0)


def test_missing_bytes() -> None:
    fig = work_figures(2.0, 2e9, None, GPU, "fp32")
    assert fig["bytes"] is None and fig["gb_per_s"] is None
    assert fig["arithmetic_intensity"] is None and fig["bound"] is None
    assert fig["pct_peak_compute"] == pytest.approx(10.0)


def test_zero_bytes_has_no_intensity() -> None:
    fig = work_figures(1.0, 1e9, 0, GPU, "fp32")
    assert fig["bytes"] == 0.0 and fig["gb_per_s"] == 0.0
    assert fig["arithmetic_intensity"] is None and fig["bound"] is None


def test_zero_flops_is_a_real_zero() -> None:
    fig = work_figures(1.0, 0, 1e9, GPU, "fp32")
    assert fig["gflops_per_s"] == 0.0 and fig["arithmetic_intensity"] == 0.0
    assert fig["bound"] == "memory"


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), True, "100"])
def test_invalid_work_counts_are_none(bad: Any) -> None:
    fig = work_figures(1.0, bad, bad, GPU, "fp32")
    assert fig["flops"] is None and fig["bytes"] is None
    assert fig["gflops_per_s"] is None and fig["gb_per_s"] is None


@pytest.mark.parametrize("bad_peak", [0.0, -5.0, None, float("nan"), "10", True])
def test_invalid_peak_figures_are_ignored(bad_peak: Any) -> None:
    peak = {"memory_bandwidth_gbs": bad_peak, "tflops": {"fp32": bad_peak},
            "gflops": {"fp32": bad_peak}, "source": 3}
    assert peak_gflops(peak, "fp32") is None and peak_bandwidth_gbs(peak) is None
    fig = work_figures(1.0, 1e9, 1e8, peak, "fp32")
    assert fig["pct_peak_compute"] is None and fig["pct_peak_bandwidth"] is None
    assert fig["peak_source"] is None  # not a string


def test_with_a_real_table_entry() -> None:
    peak = gpu_peak("NVIDIA A100-SXM4-80GB")
    assert peak is not None
    # 8192^3 fp16 GEMM: 2*8192^3 flop; inputs+output 3*8192^2*2 bytes; in 4 ms.
    n = 8192
    fig = work_figures(4.0, 2 * n**3, 3 * n * n * 2, peak, "fp16")
    assert fig["gflops_per_s"] == pytest.approx(2 * n**3 / 4e6)
    assert fig["pct_peak_compute"] == pytest.approx(100 * (2 * n**3 / 4e6) / 312_000.0)
    assert fig["ridge_point"] == pytest.approx(312_000.0 / 2039.0)
    assert fig["bound"] == "compute"
    assert "A100" in fig["peak_source"]


def test_precision_table_targets_are_peak_keys() -> None:
    assert set(PRECISION_PEAK_KEYS.values()) == {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8",
                                                 "int8"}
