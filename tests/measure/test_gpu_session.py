"""Tests for kernbench.measure.gpu_session: a GPU case end to end on the stream simulator,
and energy over a flush-free region of its own."""

from __future__ import annotations

from typing import Any

import pytest

from kernbench.measure.backends.torch_gpu import TorchCudaClock, l2_flush
from kernbench.measure.gpu_session import AllBlocksDiscarded, measure_gpu
from kernbench.measure.metrics.meters import region_reading
from kernbench.results.model import ProtocolSettings
from support.fake_cuda import FakeDevice, fake_torch

SETTINGS = ProtocolSettings(warmup=1, iterations=3, warmup_time_s=0.0)


class CountingMeter:
    """A meter that reports a fixed energy and the device's flushes seen while it ran."""

    source = "test"

    def __init__(self, device: FakeDevice, region_s: float) -> None:
        self.device, self.region_s = device, region_s
        self.flushes_at_start = -1

    def start(self) -> None:
        self.flushes_at_start = self.device.log.count("flush")

    def stop(self) -> dict[str, Any]:
        assert self.device.log.count("flush") == self.flushes_at_start, "a flush in the region"
        return region_reading(2.0, self.region_s, "test", "counter", None)


def run(device: FakeDevice, **kwargs: Any) -> Any:
    torch = fake_torch(device)
    return measure_gpu(device.kernel(3_000.0), TorchCudaClock(torch), l2_flush(torch),
                       SETTINGS, "cold", **kwargs)


def test_energy_is_read_over_back_to_back_calls_without_a_flush() -> None:
    device = FakeDevice(5_000.0, 8_000.0)
    result = run(device, meter=CountingMeter(device, region_s=0.02), min_energy_s=0.01)
    assert result.energy_calls > 0 and result.energy_calls % 125 == 0  # whole blocks
    assert result.energy_region["region_energy_j"] == 2.0
    assert result.energy_region["reason"] is None


def test_energy_over_a_region_under_the_minimum_is_null_with_the_reason() -> None:
    device = FakeDevice(5_000.0, 8_000.0)
    result = run(device, meter=CountingMeter(device, region_s=0.005), min_energy_s=0.01)
    region = result.energy_region
    assert region["region_energy_j"] is None and region["power_w"] is None
    assert region["reason"] == ("the energy region lasted 0.005 s, under the 0.01 s a reading "
                                "needs")


def test_without_a_meter_no_device_time_is_spent_on_energy() -> None:
    device = FakeDevice(5_000.0, 8_000.0)
    result = run(device)
    assert result.energy_calls == 0
    assert result.energy_region["reason"] == "not measured"
    assert set(result.outcome.primary.samples_ns) == {3_000.0}


def test_a_gpu_that_throttles_throughout_fails_the_case_with_the_reason() -> None:
    class Throttled:
        def begin(self) -> None:
            return None

        def end(self) -> str | None:
            return "throttled: HwSlowdown"

    with pytest.raises(AllBlocksDiscarded, match=r"cold mode: every one of 6 blocks was "
                                                  r"discarded \(throttled: HwSlowdown\)"):
        run(FakeDevice(5_000.0, 8_000.0), guard=Throttled())
