"""Tests for kernbench.measure.metrics.energy: NVML, AMD and RAPL meters against fakes at their
boundary."""

from __future__ import annotations

import importlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernbench.measure.metrics import energy as en
from kernbench.measure.metrics import meters

# --------------------------------------------------------------------------- fakes


class FakeNVMLError(Exception):
    """Stands in for pynvml.NVMLError."""


class FakeNVML:
    """The few pynvml calls the meter makes; counter readings are served in order (mJ)."""

    NVMLError = FakeNVMLError

    def __init__(self, counter_mj: list[int] | None = None, power_mw: float = 200_000.0,
                 init_error: Exception | None = None) -> None:
        self._counter: Iterator[int] | None = iter(counter_mj) if counter_mj is not None else None
        self.power_mw = power_mw
        self.init_error = init_error
        self.power_calls = 0
        self.counter_fails_after: int | None = None

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"handle{index}"

    def nvmlDeviceGetHandleByPciBusId(self, bus_id: str) -> str:
        return f"bus{bus_id}"

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
        if self._counter is None:
            raise FakeNVMLError("Not Supported")
        return next(self._counter)

    def nvmlDeviceGetPowerUsage(self, handle: str) -> float:
        self.power_calls += 1
        return self.power_mw


def _measure(meter: meters.EnergyMeter, seconds: float = 0.0) -> dict[str, Any]:
    meter.start()
    if seconds:
        time.sleep(seconds)
    return meter.stop()


# --------------------------------------------------------------------------- NVML


def test_nvml_counter_gives_exact_joules() -> None:
    fake = FakeNVML(counter_mj=[1_000, 5_000, 12_345])  # probe, start, stop
    meter = en.energy_meter_for("cuda", nvml=fake)
    region = _measure(meter, 0.01)
    assert region["method"] == "counter"
    assert region["source"] == "nvml:total_energy_consumption"
    assert region["region_energy_j"] == 7.345
    assert region["reason"] is None
    assert region["region_s"] >= 0.01
    assert region["power_w"] == pytest.approx(7.345 / region["region_s"])


def test_nvml_reads_the_device_at_the_cases_pci_bus_id() -> None:
    class Handles(FakeNVML):
        def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
            assert handle == "bus00000000:41:00.0", handle
            return super().nvmlDeviceGetTotalEnergyConsumption(handle)

    meter = en.energy_meter_for("cuda", pci_bus_id="00000000:41:00.0",
                                nvml=Handles(counter_mj=[0, 1_000, 3_000]))
    assert _measure(meter)["region_energy_j"] == 2.0


def test_nvml_counter_that_does_not_advance_is_not_zero_joules() -> None:
    meter = en.energy_meter_for("cuda", nvml=FakeNVML(counter_mj=[10, 10, 10]))
    region = _measure(meter)
    assert region["region_energy_j"] is None
    assert region["power_w"] is None
    assert "did not advance" in region["reason"]


def test_nvml_counter_failing_mid_measurement_becomes_reason() -> None:
    meter = en.energy_meter_for("cuda", nvml=FakeNVML(counter_mj=[1, 2]))  # stop read: exhausted
    region = _measure(meter)
    assert region["region_energy_j"] is None
    assert region["reason"].startswith("energy counter read failed at stop")


def test_nvml_without_counter_samples_power() -> None:
    fake = FakeNVML(counter_mj=None, power_mw=200_000.0)
    meter = en.energy_meter_for("cuda", nvml=fake)
    region = _measure(meter, 0.2)
    assert region["method"] == "sampled"
    assert region["source"] == "nvml:power_usage"
    assert region["reason"] is None
    assert region["samples"] >= 3
    assert region["region_energy_j"] == pytest.approx(200.0 * region["region_s"], rel=0.10)
    assert region["power_w"] == pytest.approx(200.0)


def test_sampled_meter_with_failing_reads_reports_reason() -> None:
    def broken() -> float:
        raise FakeNVMLError("GPU is lost")

    meter = meters.SampledMeter("nvml:power_usage", broken, interval_s=0.001)
    region = _measure(meter, 0.01)
    assert region["region_energy_j"] is None
    assert region["samples"] == 0
    assert "fewer than 2 power samples" in region["reason"]
    assert "GPU is lost" in region["reason"]


def test_nvml_reading_neither_counter_nor_power_is_null() -> None:
    fake = FakeNVML(counter_mj=None)

    def no_power(handle: str) -> float:
        raise FakeNVMLError("Not Supported")

    fake.nvmlDeviceGetPowerUsage = no_power  # type: ignore[method-assign]
    region = _measure(en.energy_meter_for("cuda", nvml=fake))
    assert region["region_energy_j"] is None
    assert region["method"] is None
    assert "neither the energy counter" in region["reason"]


def test_nvml_init_failure_gives_reason() -> None:
    fake = FakeNVML(init_error=FakeNVMLError("Driver Not Loaded"))
    region = _measure(en.energy_meter_for("cuda", nvml=fake))
    assert region["region_energy_j"] is None
    assert region["source"] is None
    assert region["reason"] == "NVML not available: FakeNVMLError: Driver Not Loaded"


def test_trapezoid_rule_exact_on_known_samples() -> None:
    samples = [(0.0, 100.0), (1.0, 200.0), (3.0, 200.0)]
    assert meters.trapezoid_j(samples) == 550.0


def skip_if_nvml_works() -> None:
    """Skip a test of the no-driver path on a machine whose NVML does work."""
    try:
        importlib.import_module("pynvml").nvmlInit()
    except Exception:
        return
    pytest.skip("this machine has a working NVML driver")


def test_real_cuda_meter_on_this_machine_is_null_with_reason() -> None:
    pytest.importorskip("pynvml")
    skip_if_nvml_works()
    region = _measure(en.energy_meter_for("cuda"))
    assert region["region_energy_j"] is None
    assert region["reason"].startswith("NVML not available")


# --------------------------------------------------------------------------- AMD


class FakeAmdSmi:
    """amdsmi stand-in: energy counts served in order, with the given key names."""

    def __init__(self, counts: list[int], resolution: float, key: str) -> None:
        self._counts = iter(counts)
        self.resolution = resolution
        self.key = key

    def amdsmi_init(self) -> None:
        return None

    def amdsmi_get_processor_handles(self) -> list[str]:
        return ["gpu0", "gpu1"]

    def amdsmi_get_gpu_device_bdf(self, handle: str) -> str:
        return {"gpu0": "0000:03:00.0", "gpu1": "0000:83:00.0"}[handle]

    def amdsmi_get_energy_count(self, handle: str) -> dict[str, Any]:
        assert handle == "gpu1"
        return {self.key: next(self._counts), "counter_resolution": self.resolution,
                "timestamp": 0}


@pytest.mark.parametrize("key", ["energy_accumulator", "power"])
def test_amdsmi_counter_with_resolution(key: str) -> None:
    fake = FakeAmdSmi([500, 1_000, 1_654], resolution=15.3, key=key)
    region = _measure(en.energy_meter_for("rocm", 1, amdsmi=fake))
    assert region["source"] == "amdsmi:energy_count"
    assert region["method"] == "counter"
    assert region["region_energy_j"] == pytest.approx(654 * 15.3 / 1e6, rel=1e-12)


def test_amdsmi_finds_the_gpu_that_ran_the_case_by_its_pci_address() -> None:
    """Device index 0 (HIP_VISIBLE_DEVICES=1 renumbers the second GPU) with its address:
    the second GPU's counter is read, not the first's."""
    fake = FakeAmdSmi([500, 1_000, 1_654], resolution=1.0, key="energy_accumulator")
    region = _measure(en.energy_meter_for("rocm", 0, amdsmi=fake,
                                          pci_bus_id="00000000:83:00.0"))
    assert region["source"] == "amdsmi:energy_count"
    assert region["region_energy_j"] == pytest.approx(654 / 1e6, rel=1e-12)


def test_rocm_smi_finds_the_card_by_its_pci_address(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_amdsmi(monkeypatch)

    def cards(uj: float) -> str:
        return json.dumps({"card0": {"PCI Bus": "0000:03:00.0", "Accumulated Energy (uJ)": "7"},
                           "card1": {"PCI Bus": "0000:83:00.0",
                                     "Accumulated Energy (uJ)": f"{uj}"}})

    outputs = iter([cards(10.0), cards(1_000_000.0), cards(3_000_000.0)])
    calls: list[list[str]] = []

    def runner(argv: list[str]) -> str:
        calls.append(argv)
        return next(outputs)

    region = _measure(en.energy_meter_for("rocm", 0, runner=runner,
                                          pci_bus_id="00000000:83:00.0"))
    assert calls[0] == ["rocm-smi", "--showenergycounter", "--json", "--showbus"]
    assert region["region_energy_j"] == 2.0
    with pytest.raises(meters.MeasureError, match=r"no card at 00000000:04:00\.0"):
        en.rocm_smi_uj(cards(1.0), 0, "00000000:04:00.0")


def test_amd_counter_dict_without_known_keys_is_rejected() -> None:
    with pytest.raises(meters.MeasureError):
        en.amd_counter_uj({"something": 1})


def _rocm_json(uj: float, card: int = 0) -> str:
    return json.dumps({f"card{card}": {"Energy counter": "123",
                                       "Accumulated Energy (uJ)": f"{uj}"}})


def _no_amdsmi(monkeypatch: pytest.MonkeyPatch) -> None:
    real = en.import_optional

    def fake_import(name: str) -> Any:
        if name == "amdsmi":
            raise ImportError("No module named 'amdsmi'")
        return real(name)

    monkeypatch.setattr(en, "import_optional", fake_import)


def test_rocm_smi_json_counter(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_amdsmi(monkeypatch)
    outputs = iter(["WARNING: something\n" + _rocm_json(10.0, 1),
                    _rocm_json(2_000_000.5, 1), _rocm_json(4_500_000.5, 1)])
    calls: list[list[str]] = []

    def runner(argv: list[str]) -> str:
        calls.append(argv)
        return next(outputs)

    region = _measure(en.energy_meter_for("rocm", 1, runner=runner))
    assert calls[0] == ["rocm-smi", "--showenergycounter", "--json"]
    assert region["source"] == "rocm-smi:energy_counter"
    assert region["region_energy_j"] == 2.5


def test_rocm_smi_missing_card_and_bad_json() -> None:
    with pytest.raises(meters.MeasureError, match="no card3"):
        en.rocm_smi_uj(_rocm_json(1.0, 0), 3)
    with pytest.raises(meters.MeasureError, match="no JSON"):
        en.rocm_smi_uj("rocm-smi: command failed", 0)


def test_no_amd_tools_gives_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_amdsmi(monkeypatch)

    def runner(argv: list[str]) -> str:
        raise FileNotFoundError(2, "No such file or directory", "rocm-smi")

    region = _measure(en.energy_meter_for("rocm", runner=runner))
    assert region["region_energy_j"] is None
    assert "amdsmi (ImportError" in region["reason"]
    assert "rocm-smi (FileNotFoundError" in region["reason"]


# --------------------------------------------------------------------------- RAPL


def _domain(root: Path, entry: str, name: str, energy_uj: int,
            max_uj: int = 262_143_328_850) -> Path:
    path = root / entry
    path.mkdir(parents=True)
    (path / "name").write_text(name + "\n")
    (path / "energy_uj").write_text(f"{energy_uj}\n")
    (path / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return path


@pytest.fixture()
def rapl_tree(tmp_path: Path) -> Path:
    root = tmp_path / "powercap"
    _domain(root, "intel-rapl:0", "package-0", 1_000_000)
    _domain(root, "intel-rapl:1", "package-1", 2_000_000)
    _domain(root, "intel-rapl:0:0", "core", 7)  # subdomain: not summed
    _domain(root, "intel-rapl-mmio:0", "package-0", 9)  # MMIO mirror: would double count
    return root


def _set(root: Path, entry: str, energy_uj: int) -> None:
    (root / entry / "energy_uj").write_text(f"{energy_uj}\n")


def test_rapl_sums_packages_only(rapl_tree: Path) -> None:
    assert [p.name for p in en.rapl_packages(rapl_tree)] == ["intel-rapl:0", "intel-rapl:1"]
    meter = en.energy_meter_for("cpu", powercap_root=rapl_tree)
    meter.start()
    _set(rapl_tree, "intel-rapl:0", 1_500_000)
    _set(rapl_tree, "intel-rapl:1", 2_250_000)
    _set(rapl_tree, "intel-rapl:0:0", 999_999)
    region = meter.stop()
    assert region["source"] == f"rapl:{rapl_tree}"
    assert region["method"] == "counter"
    assert region["region_energy_j"] == 0.75


def test_rapl_wraparound_exact(rapl_tree: Path) -> None:
    _set(rapl_tree, "intel-rapl:0", 262_143_000_000)
    meter = en.energy_meter_for("cpu", powercap_root=rapl_tree)
    meter.start()
    _set(rapl_tree, "intel-rapl:0", 1_000)
    _set(rapl_tree, "intel-rapl:1", 2_000_001)
    region = meter.stop()
    wrapped_uj = 1_000 + 262_143_328_850 - 262_143_000_000
    assert en.rapl_delta_uj(262_143_000_000, 1_000, 262_143_328_850) == wrapped_uj == 329_850
    assert region["region_energy_j"] == (wrapped_uj + 1) / 1e6


def test_rapl_wrap_without_range_is_reason() -> None:
    with pytest.raises(meters.MeasureError, match="max_energy_range_uj"):
        en.rapl_delta_uj(10, 5, None)


def test_rapl_counter_not_advancing_is_none(rapl_tree: Path) -> None:
    region = _measure(en.energy_meter_for("cpu", powercap_root=rapl_tree))
    assert region["region_energy_j"] is None
    assert "did not advance" in region["reason"]


def test_rapl_file_vanishing_mid_measurement(rapl_tree: Path) -> None:
    meter = en.energy_meter_for("cpu", powercap_root=rapl_tree)
    meter.start()
    (rapl_tree / "intel-rapl:1" / "energy_uj").unlink()
    region = meter.stop()
    assert region["region_energy_j"] is None
    assert region["reason"].startswith("energy counter read failed at stop: FileNotFoundError")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file anyway")
def test_rapl_unreadable_chmod(rapl_tree: Path) -> None:
    target = rapl_tree / "intel-rapl:0" / "energy_uj"
    target.chmod(0)
    try:
        region = _measure(en.energy_meter_for("cpu", powercap_root=rapl_tree))
    finally:
        target.chmod(0o644)
    assert region["region_energy_j"] is None
    assert "permission denied" in region["reason"]


def test_rapl_unreadable_permission_error(rapl_tree: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    real = en._read_int

    def guarded(path: Path) -> int:
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(en, "_read_int", guarded)
    region = _measure(en.energy_meter_for("cpu", powercap_root=rapl_tree))
    assert region["region_energy_j"] is None
    assert region["reason"].startswith(
        "RAPL energy_uj not readable (permission denied): run as root or chmod")


def test_rapl_absent_tree(tmp_path: Path) -> None:
    missing = tmp_path / "nothing"
    region = _measure(en.energy_meter_for("cpu", powercap_root=missing))
    assert region["region_energy_j"] is None
    assert region["reason"] == f"no RAPL domains under {missing}"


def test_real_rapl_reads_energy_or_says_why() -> None:
    region = _measure(en.energy_meter_for("cpu"), 0.05)
    if region["region_energy_j"] is None:
        assert isinstance(region["reason"], str) and region["reason"]
    else:
        assert region["region_energy_j"] >= 0
        assert region["source"] == "rapl:/sys/class/powercap"
    if not en.POWERCAP_ROOT.exists():
        assert region["reason"] == "no RAPL domains under /sys/class/powercap"


# --------------------------------------------------------------------------- misc


def test_unknown_backend_is_null() -> None:
    region = _measure(en.energy_meter_for("tpu"), 0.01)
    assert region["region_energy_j"] is None
    assert region["region_s"] >= 0.01
    assert region["reason"] == "no energy counter known for backend 'tpu'"


def test_stop_without_start_is_reason(rapl_tree: Path) -> None:
    region = en.energy_meter_for("cpu", powercap_root=rapl_tree).stop()
    assert region["region_energy_j"] is None
    assert region["reason"] == "stop() called without start()"


def test_energy_record_divides_per_call() -> None:
    region = {"region_energy_j": 3.0, "region_s": 1.5, "power_w": 2.0, "source": "rapl:x",
              "method": "counter", "reason": None, "samples": 0}
    record = en.energy_record(region, 4)
    assert record == {"energy_j": 0.75, "power_w": 2.0, "region_energy_j": 3.0, "region_s": 1.5,
                      "calls": 4, "source": "rapl:x", "method": "counter", "reason": None}


def test_energy_record_none_handling() -> None:
    assert en.energy_record(None, 10) == {
        "energy_j": None, "power_w": None, "region_energy_j": None, "region_s": None,
        "calls": 10, "source": None, "method": None, "reason": "not measured"}
    unmeasured = meters.NullMeter("no counter here").stop()
    record = en.energy_record(unmeasured, 10)
    assert record["energy_j"] is None and record["reason"] == "no counter here"
    zero_calls = en.energy_record({"region_energy_j": 1.0, "region_s": 1.0}, 0)
    assert zero_calls["energy_j"] is None
    assert zero_calls["reason"] == "no kernel calls in the region (calls=0)"
