"""Tests for kernbench.measure.backends.device_facts: the flush sized from the device's
last-level cache (an AMD Infinity Cache included), for every framework alike."""

from __future__ import annotations

from kernbench.measure.backends.device_facts import MiB, arch_name, flush_bytes
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
