"""Tests for kernbench.measure.metrics.peaks: the GPU spec-sheet table and the cached CPU probe."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

import pytest

from kernbench.measure.metrics import peaks
from kernbench.measure.metrics.peaks import (
    CPU_PROBE_METHOD,
    GPU_PEAKS,
    PRECISION_KEYS,
    cpu_peak,
    cpu_peak_path,
    gpu_peak,
    probe_cpu,
)

FINGERPRINT = "0123456789abcdef"

# ---------------------------------------------------------------------------- GPU matching


@pytest.mark.parametrize(("device", "entry"), [
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5 80GB"),
    ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe 80GB"),
    ("NVIDIA H200", "NVIDIA H200 SXM 141GB"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4 80GB"),
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 SXM4 40GB"),
    ("NVIDIA A100-PCIE-40GB", "NVIDIA A100 PCIe 40GB"),
    ("NVIDIA A100 80GB PCIe", "NVIDIA A100 PCIe 80GB"),
    ("NVIDIA L40S", "NVIDIA L40S"),
    ("NVIDIA L4", "NVIDIA L4"),
    ("NVIDIA A10", "NVIDIA A10"),
    ("Tesla T4", "NVIDIA T4"),
    ("Tesla V100-SXM2-32GB", "NVIDIA V100 SXM2"),
    ("Tesla V100-SXM2-16GB", "NVIDIA V100 SXM2"),
    ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"),
    ("AMD Instinct MI300X", "AMD Instinct MI300X"),
    ("AMD Instinct MI250X", "AMD Instinct MI250X (one GCD)"),
    ("AMD Instinct MI210", "AMD Instinct MI210"),
])
def test_real_device_names_match(device: str, entry: str) -> None:
    found = gpu_peak(device)
    assert found is not None and found["name"] == entry


@pytest.mark.parametrize("device", [
    "nvidia h100 pcie", "NVIDIA H100 PCIE", "nvidia a100_sxm4_80gb", "  tesla   t4  ",
])
def test_matching_is_case_and_separator_insensitive(device: str) -> None:
    assert gpu_peak(device) is not None


@pytest.mark.parametrize("device", [
    "", "NVIDIA GeForce GTX 1080", "Intel(R) Data Center GPU Max 1550", "cpu",
    "NVIDIA L40",                  # not an L40S, and "L4" must not match inside "L40"
    "NVIDIA A10G",                 # AWS part with other figures; "A10" is a whole word only
    "NVIDIA A100",                 # which A100? no variant named -> unknown
    "NVIDIA GH200 480GB",          # "H200" must not match inside "GH200"
    "NVIDIA H200 NVL",             # lower-clocked variant: excluded, not given H200 SXM figures
    "NVIDIA H100 NVL",
    "Tesla V100-PCIE-16GB",
    "NVIDIA GeForce RTX 4090 D",
    "NVIDIA GeForce RTX 4090 Laptop GPU",
    "AMD Instinct MI250X/MI250",   # ROCm's name for both MI250X and MI250: ambiguous
])
def test_unknown_or_ambiguous_devices_give_none(device: str) -> None:
    assert gpu_peak(device) is None


def _entry(name: str, *match: str, exclude: tuple[str, ...] = (), bw: float = 1.0) -> Any:
    return peaks._gpu(name, f"sheet of {name}", match, exclude=exclude, bw=bw, l2=None)


def test_most_specific_entry_wins_whatever_the_order() -> None:
    generic, pcie = _entry("generic", "H100"), _entry("pcie", "H100 PCIe")
    for table in ([generic, pcie], [pcie, generic]):
        assert gpu_peak("NVIDIA H100 PCIe", table)["name"] == "pcie"  # type: ignore[index]
        assert gpu_peak("NVIDIA H100 SXM5", table)["name"] == "generic"  # type: ignore[index]


def test_tie_between_entries_is_ambiguous() -> None:
    table = [_entry("one", "X100"), _entry("two", "X100")]
    assert gpu_peak("Vendor X100", table) is None


def test_exclude_removes_an_entry_from_the_running() -> None:
    table = [_entry("sxm", "H200", exclude=("NVL",)), _entry("nvl", "H200 NVL", bw=2.0)]
    assert gpu_peak("NVIDIA H200 NVL", table)["name"] == "nvl"  # type: ignore[index]
    assert gpu_peak("NVIDIA H200", table)["name"] == "sxm"  # type: ignore[index]


def test_result_is_a_copy_without_matching_fields() -> None:
    first = gpu_peak("NVIDIA H100 PCIe")
    assert first is not None
    assert set(first) == {"name", "source", "memory_bandwidth_gbs", "l2_cache_mb", "tflops",
                          "kind"}
    assert first["kind"] == "gpu"
    first["tflops"]["fp32"] = -1.0
    second = gpu_peak("NVIDIA H100 PCIe")
    assert second is not None and second["tflops"]["fp32"] == 51.0


def test_unknown_precision_key_is_refused_by_the_table_builder() -> None:
    with pytest.raises(ValueError, match="fp4"):
        peaks._gpu("x", "sheet", ("x",), bw=1.0, l2=None, fp4=1.0)


# ---------------------------------------------------------------------------- GPU table


def _positive_or_none(value: object) -> bool:
    if value is None:
        return True
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)


@pytest.mark.parametrize("entry", GPU_PEAKS, ids=[e["name"] for e in GPU_PEAKS])
def test_every_entry_is_well_formed(entry: dict[str, Any]) -> None:
    assert set(entry) == {"name", "source", "match", "exclude", "memory_bandwidth_gbs",
                          "l2_cache_mb", "tflops"}
    assert isinstance(entry["name"], str) and entry["name"]
    assert isinstance(entry["source"], str) and len(entry["source"]) > 10
    assert entry["match"] and all(isinstance(p, str) and p for p in entry["match"])
    assert _positive_or_none(entry["memory_bandwidth_gbs"])
    assert entry["memory_bandwidth_gbs"] is not None  # every listed GPU has a sheet figure
    assert _positive_or_none(entry["l2_cache_mb"])
    assert tuple(entry["tflops"]) == PRECISION_KEYS
    assert all(_positive_or_none(v) for v in entry["tflops"].values())
    assert entry["tflops"]["fp32"] is not None


@pytest.mark.parametrize("entry", GPU_PEAKS, ids=[e["name"] for e in GPU_PEAKS])
def test_every_entry_is_found_by_its_own_patterns(entry: dict[str, Any]) -> None:
    for pattern in entry["match"]:
        found = gpu_peak(f"Vendor {pattern}")
        assert found is not None and found["name"] == entry["name"]


@pytest.mark.parametrize("entry", GPU_PEAKS, ids=[e["name"] for e in GPU_PEAKS])
def test_precision_ordering_is_plausible(entry: dict[str, Any]) -> None:
    """Lower precision never has a lower dense peak than higher precision on the same GPU."""
    t = entry["tflops"]
    chain = [t[k] for k in ("fp64", "fp32", "fp16", "fp8") if t[k] is not None]
    assert chain == sorted(chain)
    if t["bf16"] is not None and t["fp16"] is not None:
        assert t["bf16"] == t["fp16"]


def test_required_gpus_are_in_the_table() -> None:
    names = " | ".join(e["name"] for e in GPU_PEAKS)
    for required in ("H100 SXM5", "H100 PCIe", "H200", "A100 SXM4 80GB", "A100 PCIe 40GB",
                     "L40S", "L4", "A10", "T4", "V100 SXM2", "RTX 4090", "MI300X", "MI250X",
                     "MI210"):
        assert required in names


def test_spot_check_figures() -> None:
    h100 = gpu_peak("NVIDIA H100 80GB HBM3")
    a100 = gpu_peak("NVIDIA A100-SXM4-80GB")
    assert h100 is not None and a100 is not None
    assert h100["memory_bandwidth_gbs"] == 3350.0 and h100["tflops"]["bf16"] == 989.5
    assert a100["tflops"]["fp16"] == 312.0 and a100["tflops"]["fp8"] is None


# ---------------------------------------------------------------------------- CPU cache


class FakeProbe:
    def __init__(self, bandwidth: float = 12.5) -> None:
        self.calls = 0
        self.bandwidth = bandwidth

    def __call__(self) -> dict[str, Any]:
        self.calls += 1
        return {"memory_bandwidth_gbs": self.bandwidth, "gflops": {"fp64": 50.0, "fp32": 100.0},
                "method": CPU_PROBE_METHOD, "source": "fake"}


def test_probe_runs_once_and_is_cached(tmp_path: Path) -> None:
    probe = FakeProbe()
    first = cpu_peak(tmp_path, FINGERPRINT, probe)
    second = cpu_peak(tmp_path, FINGERPRINT, probe)
    assert probe.calls == 1
    assert first == second
    assert first["fingerprint"] == FINGERPRINT and first["memory_bandwidth_gbs"] == 12.5


def test_cache_file_content(tmp_path: Path) -> None:
    record = cpu_peak(tmp_path, FINGERPRINT, FakeProbe())
    path = tmp_path / f"cpu_peak-{FINGERPRINT}.json"
    assert cpu_peak_path(tmp_path, FINGERPRINT) == path
    assert json.loads(path.read_text(encoding="utf-8")) == record
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left


def test_cache_dir_is_created(tmp_path: Path) -> None:
    cache = tmp_path / "a" / "b"
    cpu_peak(cache, FINGERPRINT, FakeProbe())
    assert (cache / f"cpu_peak-{FINGERPRINT}.json").is_file()


def test_other_fingerprint_probes_again(tmp_path: Path) -> None:
    probe = FakeProbe()
    cpu_peak(tmp_path, FINGERPRINT, probe)
    other = cpu_peak(tmp_path, "fedcba9876543210", probe)
    assert probe.calls == 2
    assert other["fingerprint"] == "fedcba9876543210"
    assert len(list(tmp_path.glob("cpu_peak-*.json"))) == 2


@pytest.mark.parametrize("content", ["{not json", "", "[1, 2]", "null", "\xff\xfe",
                                     '{"fingerprint": "someone-else", "gflops": {}}'])
def test_corrupt_or_foreign_cache_is_probed_again(tmp_path: Path, content: str) -> None:
    path = cpu_peak_path(tmp_path, FINGERPRINT)
    path.write_text(content, encoding="latin-1")
    probe = FakeProbe(bandwidth=7.0)
    record = cpu_peak(tmp_path, FINGERPRINT, probe)
    assert probe.calls == 1 and record["memory_bandwidth_gbs"] == 7.0
    assert json.loads(path.read_text(encoding="utf-8")) == record  # repaired


def test_unwritable_cache_still_returns_the_probe(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise OSError("read-only file system")

    monkeypatch.setattr(peaks, "_write_atomic", fail)
    probe = FakeProbe()
    assert cpu_peak(tmp_path, FINGERPRINT, probe)["memory_bandwidth_gbs"] == 12.5
    assert cpu_peak(tmp_path, FINGERPRINT, probe)["memory_bandwidth_gbs"] == 12.5
    assert probe.calls == 2


def test_non_finite_probe_result_is_returned_but_not_cached(tmp_path: Path) -> None:
    def probe() -> dict[str, Any]:
        return {"memory_bandwidth_gbs": float("inf")}

    assert math.isinf(cpu_peak(tmp_path, FINGERPRINT, probe)["memory_bandwidth_gbs"])
    assert not list(tmp_path.iterdir())


def test_probe_must_return_a_dict(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="not a dict"):
        cpu_peak(tmp_path, FINGERPRINT, lambda: [1, 2])  # type: ignore[arg-type,return-value]


@pytest.mark.parametrize("fingerprint", ["", "../etc", "a/b", ".", "..", "x" * 200, "a b"])
def test_unsafe_fingerprints_are_refused(tmp_path: Path, fingerprint: str) -> None:
    with pytest.raises(ValueError, match="fingerprint"):
        cpu_peak(tmp_path, fingerprint, FakeProbe())


def test_write_is_atomic_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = cpu_peak_path(tmp_path, FINGERPRINT)
    path.write_text('{"fingerprint": "old"}', encoding="utf-8")

    def broken_replace(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    cpu_peak(tmp_path, FINGERPRINT, FakeProbe())
    assert path.read_text(encoding="utf-8") == '{"fingerprint": "old"}'
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


# ---------------------------------------------------------------------------- real probe


def test_real_probe_with_small_sizes() -> None:
    start = time.perf_counter()
    record = probe_cpu(copy_mib=8, matmul_n=128, repeats=3, budget_s=0.5)
    assert time.perf_counter() - start < 5.0
    assert record["memory_bandwidth_gbs"] > 0
    assert record["gflops"]["fp64"] > 0 and record["gflops"]["fp32"] > 0
    assert record["method"] == CPU_PROBE_METHOD
    assert "measured" in record["source"] and "not the theoretical" in record["source"]
    assert record["sizes"] == {"copy_mib": 8, "matmul_n": 128, "repeats": 3}
    assert record["measured_at"].endswith("Z") and record["seconds"] >= 0
    json.dumps(record, allow_nan=False)


def test_real_probe_through_the_cache(tmp_path: Path) -> None:
    def small() -> dict[str, Any]:
        return probe_cpu(copy_mib=4, matmul_n=64, repeats=2, budget_s=0.2)

    record = cpu_peak(tmp_path, FINGERPRINT, small)
    assert record["memory_bandwidth_gbs"] > 0
    assert cpu_peak(tmp_path, FINGERPRINT, small)["measured_at"] == record["measured_at"]


def test_best_seconds_keeps_the_minimum_and_respects_repeats() -> None:
    durations = iter([0.0, 0.03, 0.01, 0.02])
    calls: list[int] = []

    def run() -> None:
        calls.append(1)
        time.sleep(next(durations))

    best = peaks._best_seconds(run, repeats=3, budget_s=10.0)
    assert len(calls) == 4  # one warm-up + three timed
    assert 0.01 <= best < 0.02
