"""Tests for kernbench.measure.backends.device_facts: the flush sized from the device's
last-level cache (an AMD Infinity Cache included), and the PCI address NVML reads the device
by, for every framework alike (JAX's from the CUDA runtime, through a fake library)."""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from kernbench.measure.backends import device_facts
from kernbench.measure.backends.device_facts import (
    MiB,
    arch_name,
    bus_id_of_properties,
    flush_bytes,
    parse_bus_id,
    runtime_bus_id,
)
from kernbench.measure.backends.jax_backend import JaxBackend
from kernbench.measure.backends.other_gpu import JAX_FLUSH_BYTES, cupy_flush
from kernbench.measure.backends.torch_gpu import TorchCudaClock, l2_flush
from kernbench.measure.gpu_record import gpu_timing_raw
from kernbench.measure.gpu_session import time_gpu
from kernbench.measure.gpu_timing import Session
from support.fake_cuda import FakeDevice, fake_cupy, fake_torch

MI300X_L2 = 4 * MiB
"""MI300X's L2 per XCD, as its properties report it; its 256 MB Infinity Cache is not there."""


def test_the_flush_covers_the_largest_cache_known_for_the_architecture() -> None:
    assert arch_name("gfx942:sramecc+:xnack-") == "gfx942"
    assert arch_name(b"gfx942:sramecc+:xnack-") == "gfx942"
    assert flush_bytes(MI300X_L2, "gfx942:sramecc+:xnack-") == 512 * MiB
    assert flush_bytes(8 * MiB, "gfx90a:sramecc+:xnack-") == 16 * MiB  # no Infinity Cache
    assert flush_bytes(50 * MiB, None) == 100 * MiB  # CUDA: twice the L2
    assert flush_bytes(300 * MiB, "gfx942") == 600 * MiB  # never below twice the L2
    assert flush_bytes(0, None) == 0
    assert 512 * MiB == JAX_FLUSH_BYTES


def test_a_rocm_torch_flush_is_sized_from_the_infinity_cache_and_recorded() -> None:
    device = FakeDevice(5_000.0, 8_000.0, l2_bytes=MI300X_L2)
    torch = fake_torch(device, hip="6.2", arch="gfx942:sramecc+:xnack-")
    flush = l2_flush(torch)
    assert flush is not None and flush.bytes == 512 * MiB
    assert device.allocated == 512 * MiB  # the buffer is that large
    run = Session(device.kernel(3_000.0), TorchCudaClock(torch), flush, 3, 10)
    raw = gpu_timing_raw(time_gpu(run, "cold", (), 0.0), "cold")
    assert raw["modes"]["cold"]["flush"] == {"bytes": 512 * MiB, "per": "call"}


def test_a_cuda_torch_flush_stays_twice_the_l2() -> None:
    device = FakeDevice(5_000.0, 8_000.0, l2_bytes=50 * MiB)
    flush = l2_flush(fake_torch(device))
    assert flush is not None and flush.bytes == 100 * MiB


def test_a_rocm_cupy_flush_is_sized_from_the_infinity_cache() -> None:
    device = FakeDevice(5_000.0, 8_000.0, l2_bytes=MI300X_L2)
    flush = cupy_flush(fake_cupy(device, arch=b"gfx942:sramecc+:xnack-"))
    assert flush is not None and flush.bytes == 512 * MiB
    assert device.allocated == 512 * MiB
    plain = cupy_flush(fake_cupy(FakeDevice(5_000.0, 8_000.0, l2_bytes=MI300X_L2)))
    assert plain is not None and plain.bytes == 8 * MiB


class FakeRuntime:
    """libcudart (or libamdhip64) as ctypes loads it: cudaDeviceGetPCIBusId writes the address
    of device `ordinal` into the buffer it is given."""

    def __init__(self, addresses: dict[int, bytes], symbol: str = "cudaDeviceGetPCIBusId"):
        self.asked: list[int] = []

        def get_bus_id(buffer: Any, length: int, ordinal: int) -> int:
            self.asked.append(ordinal)
            if ordinal not in addresses:
                return 101  # cudaErrorInvalidDevice
            ctypes.memmove(buffer, addresses[ordinal] + b"\0", len(addresses[ordinal]) + 1)
            return 0
        setattr(self, symbol, get_bus_id)


def loader(runtime: FakeRuntime, path_part: str) -> Callable[[str], Any]:
    def load(path: str) -> Any:
        if path_part not in path:
            raise OSError(f"{path}: cannot open shared object file")
        return runtime
    return load


def test_nvmls_spelling_of_every_source_of_a_pci_address() -> None:
    assert parse_bus_id("0000:41:00.0") == "00000000:41:00.0"
    assert parse_bus_id(b"0000:c1:00.0\0") == "00000000:C1:00.0"
    assert parse_bus_id("") is None and parse_bus_id("GPU-1234") is None
    props = SimpleNamespace(pci_bus_id=0x41, pci_domain_id=0, pci_device_id=0)
    assert bus_id_of_properties(props) == "00000000:41:00.0"
    assert bus_id_of_properties(SimpleNamespace()) is None


def test_the_cuda_runtime_gives_the_address_of_a_device_ordinal() -> None:
    runtime = FakeRuntime({0: b"0000:41:00.0", 1: b"0000:C1:00.0"})
    assert runtime_bus_id(1, load=loader(runtime, "libcudart")) == "00000000:C1:00.0"
    assert runtime_bus_id(7, load=loader(runtime, "libcudart")) is None  # no such device
    assert runtime_bus_id(0, load=loader(runtime, "nothing-loads")) is None
    hip = FakeRuntime({0: b"0000:0c:00.0"}, symbol="hipDeviceGetPCIBusId")
    assert runtime_bus_id(0, hip=True, load=loader(hip, "libamdhip64")) == "00000000:0C:00.0"


def test_jax_asks_the_runtime_for_its_devices_ordinal(monkeypatch: pytest.MonkeyPatch) -> None:
    """JAX has no PCI address of its own: the runtime's, for the device's local_hardware_id."""
    runtime = FakeRuntime({0: b"0000:41:00.0", 3: b"0000:C1:00.0"})
    gpu = SimpleNamespace(local_hardware_id=3, id=0,
                          client=SimpleNamespace(platform_version="cuda 12.3"))
    monkeypatch.setitem(sys.modules, "jax", SimpleNamespace(devices=lambda kind=None: [gpu]))
    real = device_facts.runtime_bus_id
    monkeypatch.setattr(device_facts, "runtime_bus_id", lambda ordinal, hip=False: real(
        ordinal, hip, load=loader(runtime, "libcudart")))
    backend = JaxBackend()
    assert backend.pci_bus_id("cuda") == "00000000:C1:00.0"
    assert runtime.asked == [3] and backend.pci_bus_id("cpu") is None
    gpu.local_hardware_id = None  # a JAX too old to say: unknown, never index 0
    assert backend.pci_bus_id("cuda") is None
