"""Tests for kernbench.analysis.gpu_summary: figures derived from each mode's raw samples,
processes merged, launch overhead."""

from __future__ import annotations

from typing import Any

from kernbench.analysis.gpu_summary import (
    gpu_timing_summary,
    merge_gpu_timing,
    timing_mode,
)


def raw_mode(mode: str, samples_us: list[float], requested: str | None = None,
             reason: str | None = None, discarded: dict[str, int] | None = None) -> dict[str, Any]:
    return {"mode": mode, "requested_mode": requested, "reason": reason,
            "flush": {"bytes": 100, "per": "call"}, "calls_per_sample": 10,
            "samples_us": samples_us, "discarded_blocks": sum((discarded or {}).values()),
            "discard_reasons": discarded or {}}


def raw_all(kernel: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"requested": "all", "primary": "cold", "modes": {
        "cold": raw_mode("cold", [3.0, 3.0, 4.0, 5.0, 3.0]),
        "sync": raw_mode("sync", [16.0, 16.0, 17.0]),
        "kernel": raw_mode("kernel", [4.5, 5.0, 5.5]),  # a cold L2 before every call
        "kernel_sync_flush": kernel or raw_mode("kernel_sync_flush", [2.5, 3.0, 3.5])}}


def test_the_primary_mode_is_at_the_top_with_its_quantiles() -> None:
    summary = gpu_timing_summary(raw_all())
    assert summary["mode"] == "cold"
    assert summary["flush"] == {"bytes": 100, "per": "call"}
    assert summary["n"] == 50  # 5 samples of 10 calls
    assert summary["median_us"] == 3.0
    assert summary["iqr_us"] == 1.0
    assert summary["p10_us"] == 3.0
    assert summary["p90_us"] == 4.6
    assert set(summary["modes"]) == {"cold", "sync", "kernel", "kernel_sync_flush"}
    assert summary["modes"]["sync"]["median_us"] == 16.0
    # sync 16 - the kernels' 3 under sync's flush policy (not kernel's cold-L2 5)
    assert summary["launch_overhead_us"] == 13.0
    assert summary["launch_overhead_reason"] is None
    assert summary["gpu_timing"] == raw_all()  # the raw form, for readers


def test_launch_overhead_is_null_with_a_reason_when_the_kernel_time_fell_back() -> None:
    fell_back = raw_mode("cold", [3.0], requested="kernel_sync_flush",
                         reason="torch.profiler failed")
    summary = gpu_timing_summary(raw_all(kernel=fell_back))
    assert summary["launch_overhead_us"] is None
    assert summary["launch_overhead_reason"] == \
        "the kernels' device time was not measured: torch.profiler failed"


def test_launch_overhead_is_null_with_a_reason_when_the_kernel_time_has_no_figure() -> None:
    summary = gpu_timing_summary(raw_all(kernel=raw_mode("kernel_sync_flush", [],
                                                         reason="no CUPTI")))
    assert summary["modes"]["kernel_sync_flush"]["median_us"] is None
    assert summary["modes"]["kernel_sync_flush"]["n"] == 0
    assert summary["launch_overhead_us"] is None
    assert summary["launch_overhead_reason"] == "the kernels' device time has no figure: no CUPTI"


def test_a_record_without_the_kernels_time_under_sync_flush_has_no_launch_overhead() -> None:
    """Written before the launch overhead compared like with like: kernel (a cold L2 per call)
    is never subtracted from sync (a flush per sample) instead."""
    raw = raw_all()
    del raw["modes"]["kernel_sync_flush"]
    summary = gpu_timing_summary(raw)
    assert summary["launch_overhead_us"] is None
    assert "kernel_sync_flush" in summary["launch_overhead_reason"]


def test_one_mode_has_no_launch_overhead_key() -> None:
    summary = gpu_timing_summary({"requested": "hot", "primary": "hot",
                                  "modes": {"hot": raw_mode("hot", [5.0])}})
    assert "launch_overhead_us" not in summary
    assert summary["median_us"] == 5.0


def test_processes_merge_samples_and_discards_before_anything_is_derived() -> None:
    first = {"requested": "hot", "primary": "hot",
             "modes": {"hot": raw_mode("hot", [5.0, 5.0], discarded={"throttled: HwSlowdown": 1})}}
    second = {"requested": "hot", "primary": "hot",
              "modes": {"hot": raw_mode("hot", [6.0], discarded={"throttled: HwSlowdown": 2})}}
    merged = merge_gpu_timing([first, second])
    assert merged is not None
    hot = merged["modes"]["hot"]
    assert hot["samples_us"] == [5.0, 5.0, 6.0]
    assert hot["discarded_blocks"] == 3
    assert hot["discard_reasons"] == {"throttled: HwSlowdown": 3}
    assert merge_gpu_timing([None, None]) is None


def test_processes_with_their_own_calls_per_sample_count_every_call() -> None:
    first = {"requested": "hot", "primary": "hot", "modes": {"hot": raw_mode("hot", [5.0] * 3)}}
    second = {"requested": "hot", "primary": "hot",
              "modes": {"hot": {**raw_mode("hot", [6.0] * 3), "calls_per_sample": 100}}}
    for order in ([first, second], [second, first]):
        merged = merge_gpu_timing(order)
        assert merged is not None
        assert gpu_timing_summary(merged)["n"] == 3 * 10 + 3 * 100


def test_processes_that_measured_in_different_modes_merge_as_mixed_in_any_order() -> None:
    graph = {"requested": "graph", "primary": "graph",
             "modes": {"graph": raw_mode("graph", [10.0] * 3)}}
    fell_back = {"requested": "graph", "primary": "graph", "modes": {"graph": raw_mode(
        "hot", [25.0] * 3, requested="graph", reason="capture failed")}}
    one, other = merge_gpu_timing([graph, fell_back]), merge_gpu_timing([fell_back, graph])
    assert timing_mode(one) == timing_mode(other) == "mixed"
    assert one is not None and "process 1: graph, process 2: hot" in one["modes"]["graph"]["reason"]


def test_timing_mode_is_what_the_samples_hold() -> None:
    assert timing_mode(None) is None
    assert timing_mode(raw_all()) == "cold"
    fell_back = {"requested": "graph", "primary": "graph",
                 "modes": {"graph": raw_mode("hot", [5.0], requested="graph")}}
    assert timing_mode(fell_back) == "hot"
