"""Tests for kernbench.measure.gpu_session: a GPU case end to end on the stream simulator,
and energy over a flush-free region of its own."""

from __future__ import annotations

from typing import Any

import pytest

from kernbench.measure.backends.torch_gpu import TorchCudaClock, l2_flush
from kernbench.measure.gpu_session import AllBlocksDiscarded, measure_gpu
from kernbench.measure.metrics.energy import energy_record
from kernbench.measure.metrics.meters import region_reading
from kernbench.results.model import ProtocolSettings
from support.fake_cuda import FakeDevice, fake_torch

SETTINGS = ProtocolSettings(warmup=1, iterations=3, warmup_time_s=0.0)


class CountingMeter:
    """A meter that reports a fixed energy and the device's flushes seen while it ran."""

    source = "test"

    def __init__(self, device: FakeDevice, region_s: float) -> None:
        self.device, self.region_s = device, region_s
        self.started_at = -1
        self.region_log: list[str] = []
        """What the device ran (and the host's syncs) while the meter ran."""

    def start(self) -> None:
        self.started_at = len(self.device.log)

    def stop(self) -> dict[str, Any]:
        self.region_log = self.device.log[self.started_at:]
        assert "flush" not in self.region_log, "a flush in the region"
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


def test_with_a_reset_the_energy_region_resets_before_every_call_and_says_so() -> None:
    """Back-to-back calls of an in-place kernel would work on their own output: each call of
    the region follows the kernel's reset, still with no flush; the record says it includes
    the resets (:func:`energy_record`)."""
    device = FakeDevice(5_000.0, 8_000.0)
    meter = CountingMeter(device, region_s=0.02)
    result = run(device, meter=meter, min_energy_s=0.01,
                 reset=device.kernel(4_000.0, name="reset"))
    launched = [e for e in meter.region_log if e != "sync"]
    assert result.energy_calls > 0 and result.energy_calls % 125 == 0
    assert launched == ["reset", "kernel"] * result.energy_calls
    assert set(result.outcome.primary.samples_ns) == {3_000.0}
    record = energy_record(result.energy_region, result.energy_calls, includes_reset=True)
    assert record["includes_reset"] is True
    assert record["energy_j"] == 2.0 / result.energy_calls
    assert "includes_reset" not in energy_record(result.energy_region, result.energy_calls)


def test_a_gpu_that_throttles_throughout_fails_the_case_with_the_reason() -> None:
    class Throttled:
        def begin(self) -> None:
            return None

        def end(self) -> str | None:
            return "throttled: HwSlowdown"

    with pytest.raises(AllBlocksDiscarded, match=r"cold mode: every one of 6 blocks was "
                                                  r"discarded \(throttled: HwSlowdown\)"):
        run(FakeDevice(5_000.0, 8_000.0), guard=Throttled())
