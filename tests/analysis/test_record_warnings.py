"""The warnings a record's facts call for (analysis.summary.record_warnings)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kernbench.analysis.summary import record_warnings
from support.summaries import result


def gpu_warning(reasons: list[str]) -> dict[str, object] | None:
    case = replace(result("k", backend="cuda"),
                   gpu_state={"before": {}, "after": {"throttled": True,
                                                      "throttle_reasons": reasons}})
    found = [w for w in record_warnings(case) if w["code"] == "gpu_throttled"]
    return found[0] if found else None


def test_a_power_cap_is_named_as_the_kernels_own_power_limit() -> None:
    warning = gpu_warning(["GpuIdle", "SwPowerCap"])
    assert warning is not None
    assert warning["value"] == "GpuIdle, SwPowerCap"
    assert warning["message"] == (
        "the GPU was at its power cap at the end of sampling (GpuIdle, SwPowerCap): its "
        "clocks were power-limited, as they are whenever this kernel runs sustained")


@pytest.mark.parametrize("reasons", [["HwThermalSlowdown"], ["SwPowerCap", "HwSlowdown"]])
def test_heat_or_a_hardware_slowdown_is_throttling(reasons: list[str]) -> None:
    warning = gpu_warning(reasons)
    assert warning is not None
    assert warning["message"] == ("the GPU was throttling at the end of sampling "
                                  f"({', '.join(reasons)})")


def test_no_warning_without_throttling() -> None:
    case = replace(result("k", backend="cuda"),
                   gpu_state={"before": {}, "after": {"throttled": False}})
    assert [w for w in record_warnings(case) if w["code"] == "gpu_throttled"] == []
