"""Tests for kernbench.measure.metrics.gpu_state: NVML facts through a fake module, throttle
names."""

from __future__ import annotations

from typing import Any

import pytest
from test_energy import skip_if_nvml_works

from kernbench.measure.metrics import gpu_state as gs


class FakeNVMLError(Exception):
    """Stands in for pynvml.NVMLError."""


class FakeNVML:
    """The pynvml calls gpu_state makes, with pynvml's constant names and values."""

    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0
    nvmlClocksThrottleReasonGpuIdle = 0x1
    nvmlClocksThrottleReasonApplicationsClocksSetting = 0x2
    nvmlClocksThrottleReasonSwPowerCap = 0x4
    nvmlClocksThrottleReasonHwSlowdown = 0x8
    nvmlClocksThrottleReasonSyncBoost = 0x10
    nvmlClocksThrottleReasonSwThermalSlowdown = 0x20
    nvmlClocksThrottleReasonHwThermalSlowdown = 0x40
    nvmlClocksThrottleReasonHwPowerBrakeSlowdown = 0x80
    nvmlClocksThrottleReasonDisplayClockSetting = 0x100

    def __init__(self, reasons: int = 0, failing: frozenset[str] = frozenset(),
                 init_error: Exception | None = None) -> None:
        self.reasons = reasons
        self.failing = failing
        self.init_error = init_error
        self.inits = 0
        self.shutdowns = 0
        self.bus_ids: list[str] = []
        self.indices: list[int] = []
        self.count = 1
        """GPUs NVML sees."""
        self.sm_clocks: list[int] = []
        """SM clocks served in turn (then 1980 MHz, the maximum)."""
        self.masks: list[int] = []
        """Throttle reasons served in turn (then `reasons`)."""

    def _check(self, name: str) -> None:
        if name in self.failing:
            raise FakeNVMLError(f"{name}: Not Supported")

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error
        self.inits += 1

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        self._check("count")
        return self.count

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        self._check("handle")
        self.indices.append(index)
        return f"h{index}"

    def nvmlDeviceGetHandleByPciBusId(self, bus_id: str) -> str:
        self._check("handle")
        self.bus_ids.append(bus_id)
        return f"bus{bus_id}"

    def nvmlDeviceGetName(self, handle: str) -> bytes:
        self._check("name")
        return b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetClockInfo(self, handle: str, clock: int) -> int:
        self._check("clock")
        if clock == self.NVML_CLOCK_SM and self.sm_clocks:
            return self.sm_clocks.pop(0)
        return {self.NVML_CLOCK_SM: 1980, self.NVML_CLOCK_MEM: 2619}[clock]

    def nvmlDeviceGetMaxClockInfo(self, handle: str, clock: int) -> int:
        self._check("maxclock")
        return {self.NVML_CLOCK_SM: 1980, self.NVML_CLOCK_MEM: 2619}[clock]

    def nvmlDeviceGetTemperature(self, handle: str, sensor: int) -> int:
        self._check("temperature")
        assert sensor == self.NVML_TEMPERATURE_GPU
        return 41

    def nvmlDeviceGetPowerUsage(self, handle: str) -> int:
        self._check("power")
        return 71_234

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: str) -> int:
        self._check("limit")
        return 700_000

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: str) -> int:
        self._check("events")
        return self.masks.pop(0) if self.masks else self.reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: str) -> int:
        self._check("throttle")
        return self.reasons


def test_full_state_from_fake_nvml() -> None:
    fake = FakeNVML(reasons=0x1 | 0x4)
    state = gs.gpu_state(0, nvml=fake)
    assert state == {
        "name": "NVIDIA H100 80GB HBM3", "sm_clock_mhz": 1980, "mem_clock_mhz": 2619,
        "max_sm_clock_mhz": 1980, "temperature_c": 41, "power_w": 71.234,
        "power_limit_w": 700.0, "throttle_reasons": ["GpuIdle", "SwPowerCap"],
        "throttled": True, "source": "nvml"}
    assert fake.inits == fake.shutdowns == 1


@pytest.mark.parametrize(("mask", "names", "throttled"), [
    (0, [], False),
    (0x1 | 0x2, ["GpuIdle", "ApplicationsClocksSetting"], False),
    (0x40, ["HwThermalSlowdown"], True),
    (0x100, ["DisplayClockSetting"], True),
    (0x2 | 0x80, ["ApplicationsClocksSetting", "HwPowerBrakeSlowdown"], True),
])
def test_throttled_flag(mask: int, names: list[str], throttled: bool) -> None:
    state = gs.gpu_state(nvml=FakeNVML(reasons=mask))
    assert state["throttle_reasons"] == names
    assert state["throttled"] is throttled


def test_partial_failures_keep_other_fields() -> None:
    fake = FakeNVML(reasons=0x8, failing=frozenset({"temperature", "power", "events"}))
    state = gs.gpu_state(nvml=fake)
    assert state["temperature_c"] is None
    assert state["power_w"] is None
    assert state["power_limit_w"] == 700.0
    assert state["sm_clock_mhz"] == 1980
    assert state["throttle_reasons"] == ["HwSlowdown"]  # fell back to the older throttle call
    assert state["throttled"] is True
    assert state["source"] == "nvml"


def test_both_reason_queries_failing_gives_none() -> None:
    state = gs.gpu_state(nvml=FakeNVML(reasons=0x4, failing=frozenset({"events", "throttle"})))
    assert state["throttle_reasons"] is None
    assert state["throttled"] is None
    assert state["name"] == "NVIDIA H100 80GB HBM3"


def test_init_failure_gives_reason() -> None:
    state = gs.gpu_state(nvml=FakeNVML(init_error=FakeNVMLError("Driver Not Loaded")))
    assert state == {"source": None,
                     "reason": "NVML not available: FakeNVMLError: Driver Not Loaded"}


def test_missing_device_gives_reason_and_shuts_down() -> None:
    fake = FakeNVML(failing=frozenset({"handle"}))
    state = gs.gpu_state(3, nvml=fake)
    assert state["source"] is None
    assert state["reason"].startswith("NVML device 3: FakeNVMLError")
    assert fake.shutdowns == 1


def test_no_nvml_on_this_machine() -> None:
    skip_if_nvml_works()
    state = gs.gpu_state()
    assert state["source"] is None
    assert state["reason"].startswith("NVML not available")


def test_throttle_flags_uses_real_pynvml_constants() -> None:
    pynvml: Any = pytest.importorskip("pynvml")
    mask = (pynvml.nvmlClocksThrottleReasonSwThermalSlowdown
            | pynvml.nvmlClocksThrottleReasonSyncBoost)
    assert gs.throttle_flags(mask) == ["SyncBoost", "SwThermalSlowdown"]
    assert gs.throttle_flags(pynvml.nvmlClocksThrottleReasonNone) == []


def test_throttle_flags_names_unknown_bits() -> None:
    assert gs.throttle_flags(0x4 | 0x1000) == ["SwPowerCap", "Unknown(0x1000)"]
    state = gs.gpu_state(nvml=FakeNVML(reasons=0x1 | 0x4000))
    assert state["throttle_reasons"] == ["GpuIdle", "Unknown(0x4000)"]
    assert state["throttled"] is True


# -- the device that ran the case, and the blocks it ran ----------------------------------------


def test_the_device_is_found_by_its_pci_bus_id() -> None:
    fake = FakeNVML()
    state = gs.gpu_state(nvml=fake, pci_bus_id="00000000:41:00.0")
    assert fake.bus_ids == ["00000000:41:00.0"]
    assert state["pci_bus_id"] == "00000000:41:00.0"
    assert state["source"] == "nvml"


def test_a_quiet_block_is_kept() -> None:
    guard = gs.block_guard("00000000:41:00.0", nvml=FakeNVML())
    assert guard is not None
    guard.begin()
    assert guard.end() is None


@pytest.mark.parametrize(("masks", "clocks", "why"), [
    ([0x20, 0], [], "throttled: SwThermalSlowdown"),  # before the block
    ([0x4, 0x4], [1680, 1680], None),  # the power cap is a heavy kernel's steady state
    ([0x4, 0x4], [1400, 1400], "SM clock under 75% of its maximum (1980 MHz)"),
    ([0, 0x40], [], "throttled: HwThermalSlowdown"),  # after it
    ([0, 0], [1400], "SM clock under 75% of its maximum (1980 MHz)"),  # 1400 < 1485
    ([0x1, 0x1], [300, 300], None),  # an idle GPU's low clock says nothing of the block
    ([0x2, 0], [1500], None),  # pinned application clocks are not throttling; 1500 >= 1485
    ([0x2, 0x2], [1410, 1410], None),  # pinned well below the maximum, on purpose
])
def test_a_throttled_or_slow_block_is_discarded(masks: list[int], clocks: list[int],
                                                why: str | None) -> None:
    fake = FakeNVML()
    fake.masks, fake.sm_clocks = list(masks), list(clocks)
    guard = gs.block_guard(None, nvml=fake)
    assert guard is not None
    guard.begin()
    assert guard.end() == why


def test_no_guard_without_nvml() -> None:
    assert gs.block_guard(None, nvml=FakeNVML(init_error=FakeNVMLError("no driver"))) is None


def test_without_a_bus_id_several_gpus_are_never_read_at_index_0() -> None:
    """Index 0 may be another GPU than the one that ran the case: null with the reason."""
    fake = FakeNVML()
    fake.count = 2
    device = gs.nvml_device(None, nvml=fake)
    assert device.refusal == ("NVML not read: the PCI bus id of the GPU that ran the case is "
                              "unknown and NVML sees 2 GPUs, so index 0 may be another one")
    assert device.state(nvml=fake) == {"source": None, "reason": device.refusal}
    assert device.guard(nvml=fake) is None
    assert fake.indices == [] and fake.bus_ids == []
    assert fake.inits == fake.shutdowns == 1  # the count was read, then NVML closed


def test_one_gpu_is_read_at_index_0_and_a_known_bus_id_by_its_address() -> None:
    fake = FakeNVML()
    single = gs.nvml_device(None, nvml=fake)
    assert single.refusal is None and single.state(nvml=fake)["source"] == "nvml"
    assert fake.indices == [0]
    fake.count = 8
    known = gs.nvml_device("00000000:41:00.0", nvml=fake)
    assert known.refusal is None and known.state(nvml=fake)["pci_bus_id"] == "00000000:41:00.0"
    assert gs.nvml_device(None, nvml=FakeNVML(init_error=FakeNVMLError("x"))).refusal is None


def test_a_guard_undoes_its_own_nvml_init_once_when_closed() -> None:
    fake = FakeNVML()
    guard = gs.block_guard(None, nvml=fake)
    assert guard is not None and (fake.inits, fake.shutdowns) == (1, 0)
    guard.close()
    guard.close()
    assert (fake.inits, fake.shutdowns) == (1, 1)


def test_a_guard_that_finds_no_device_lets_nvml_go() -> None:
    fake = FakeNVML(failing=frozenset({"handle"}))
    assert gs.block_guard(None, nvml=fake) is None
    assert (fake.inits, fake.shutdowns) == (1, 1)
