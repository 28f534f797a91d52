"""Tests for kernbench.measure.backends: availability, synchronisation and device timers.

GPU logic is tested against small fake ``torch``/``jax``/``cupy`` objects so it runs on any
machine; the few tests that need a real CUDA device are marked ``gpu`` and skip without one.
"""

from __future__ import annotations

import importlib.util
import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from kernbench.measure.backends import backend_for, wait_for_result
from kernbench.measure.backends.base import (
    BlockUntilReady,
    CpuOnlyBackend,
    label,
    sync_for_result,
    walk_leaves,
)
from kernbench.measure.backends.cupy_backend import CupyBackend, CupyEventTimer, CupyStreamSync
from kernbench.measure.backends.jax_backend import JaxBackend
from kernbench.measure.backends.numpy_backend import NumpyBackend
from kernbench.measure.backends.torch_backend import CudaEventTimer, TorchBackend, TorchDeviceSync
from kernbench.measure.backends.torch_gpu import TorchCudaClock
from kernbench.measure.protocol import PerfCounterTimer, SyncFromResult, timer_overhead_ns
from kernbench.results.vocabulary import BACKEND_NAMES
from support.fake_cuda import FakeDevice
from support.fake_cuda import fake_torch as simulated_torch
from support.gpus import torch_has_cuda


def jax_has_gpu() -> bool:
    try:
        import jax

        return bool(jax.devices("gpu"))
    except (ImportError, RuntimeError):
        return False


CUPY_INSTALLED = importlib.util.find_spec("cupy") is not None
needs_no_cuda = pytest.mark.skipif(torch_has_cuda(), reason="a CUDA device is present")
gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch_has_cuda(), reason="needs a CUDA device")


# --- fakes ----------------------------------------------------------------------------------


class Blocking:
    """A fake asynchronous array: counts block_until_ready calls into a shared log."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def block_until_ready(self) -> Blocking:
        self.log.append(self.name)
        return self


def fake_torch(hip: str | None = None, available: bool = True) -> SimpleNamespace:
    """The stream simulator (launch 5 us, sync 8 us) as ``torch``."""
    torch = simulated_torch(FakeDevice(launch_ns=5_000.0, sync_ns=8_000.0), hip=hip)
    torch.cuda.is_available = lambda: available
    return torch


def with_torch(monkeypatch: pytest.MonkeyPatch, torch: SimpleNamespace) -> TorchBackend:
    backend = TorchBackend()
    monkeypatch.setattr(backend, "_torch", lambda: torch)
    return backend


def fake_jax(monkeypatch: pytest.MonkeyPatch, platform_version: str | None) -> None:
    """Install a fake `jax` whose GPU list is empty (None) or one device on that platform."""

    def devices(kind: str | None = None) -> list[Any]:
        if platform_version is None:
            raise RuntimeError("Unknown backend: 'gpu' requested")
        client = SimpleNamespace(platform_version=platform_version)
        return [SimpleNamespace(client=client, device_kind="Fake GPU")]

    monkeypatch.setitem(sys.modules, "jax", SimpleNamespace(devices=devices, __version__="0.0"))


def fake_cupy(monkeypatch: pytest.MonkeyPatch, available: bool = True, is_hip: bool = False,
              elapsed_ms: float = 0.5) -> SimpleNamespace:
    log: list[str] = []
    stream = SimpleNamespace(synchronize=lambda: log.append("stream_sync"))

    class Event:
        def __init__(self) -> None:
            self.recorded = self.synchronized = False

        def record(self) -> None:
            self.recorded = True

        def synchronize(self) -> None:
            self.synchronized = True

    def get_elapsed_time(start: Event, end: Event) -> float:
        assert start.recorded and end.recorded and end.synchronized
        return elapsed_ms

    cuda = SimpleNamespace(is_available=lambda: available, Event=Event,
                           runtime=SimpleNamespace(is_hip=is_hip),
                           get_elapsed_time=get_elapsed_time,
                           get_current_stream=lambda: stream)
    cupy = SimpleNamespace(cuda=cuda, log=log)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return cupy


# --- backend_for and the CPU-only backend ---------------------------------------------------


@pytest.mark.parametrize(("framework", "kind"), [
    ("pytorch", TorchBackend), ("jax", JaxBackend), ("cupy", CupyBackend),
    ("numpy", NumpyBackend), ("python", CpuOnlyBackend), ("numba", CpuOnlyBackend),
    ("triton", TorchBackend),
])
def test_backend_for(framework: str, kind: type) -> None:
    backend = backend_for(framework)
    assert type(backend) is kind
    if issubclass(kind, CpuOnlyBackend):
        assert backend.framework == framework


def test_a_file_importing_triton_is_timed_by_the_torch_backend() -> None:
    """Discovery names a Triton kernel's framework "triton" (GPU only); the backend that runs
    it is PyTorch's, so its CUDA cases are timed with CUDA events, graphs and the profiler."""
    import ast

    from kernbench.discovery.source import find_function, spec_from_tree

    tree = ast.parse("import torch\nimport triton\n\ndef run_benchmark(problem_size=8):\n"
                     "    return problem_size\n")
    definition = find_function(tree, "run_benchmark")
    assert definition is not None
    spec = spec_from_tree("k.py", tree, "run_benchmark", definition)
    assert spec.framework == "triton"
    assert spec.backends == ("cuda",)
    assert isinstance(backend_for(spec.framework), TorchBackend)


def test_device_kinds_and_labels() -> None:
    assert BACKEND_NAMES == ("cpu", "cuda", "rocm")
    assert [label(k) for k in BACKEND_NAMES] == ["CPU", "CUDA", "ROCm"]
    assert label("tpu") == "tpu"


@pytest.mark.parametrize("backend", ["cuda", "rocm"])
def test_numpy_runs_on_cpu_only(backend: str) -> None:
    numpy_backend = backend_for("numpy")
    assert numpy_backend.unavailable_reason("cpu") is None
    assert numpy_backend.unavailable_reason(backend) == (
        f"numpy kernels run on the CPU only; backend {backend!r} does not apply")


def test_cpu_backend_defaults() -> None:
    backend = backend_for("numpy")
    assert backend.device("cpu") == "cpu"
    assert isinstance(backend.timer("cpu"), PerfCounterTimer)
    assert isinstance(backend.synchronizer("cpu"), SyncFromResult)
    assert backend.describe("cpu") == {"framework": "numpy", "device": "cpu"}


# --- PyTorch --------------------------------------------------------------------------------


def test_torch_cpu_is_available() -> None:
    pytest.importorskip("torch")
    assert TorchBackend().unavailable_reason("cpu") is None


@needs_no_cuda
def test_torch_without_a_gpu() -> None:
    pytest.importorskip("torch")
    backend = TorchBackend()
    assert backend.unavailable_reason("cuda") == \
        "CUDA not available (torch.cuda.is_available() is False)"
    assert backend.unavailable_reason("rocm") == \
        "ROCm not available (torch.cuda.is_available() is False)"


def test_torch_unknown_backend() -> None:
    assert TorchBackend().unavailable_reason("tpu") == "PyTorch has no backend 'tpu'"


def test_torch_cuda_build(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = with_torch(monkeypatch, fake_torch(hip=None))
    assert backend.unavailable_reason("cuda") is None
    assert backend.unavailable_reason("rocm") == "ROCm not available: this PyTorch is a CUDA build"


def test_torch_rocm_build(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = with_torch(monkeypatch, fake_torch(hip="6.1"))
    assert backend.unavailable_reason("rocm") is None
    assert backend.unavailable_reason("cuda") == "CUDA not available: this PyTorch is a ROCm build"


def test_torch_no_device_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = with_torch(monkeypatch, fake_torch(available=False))
    assert backend.unavailable_reason("cuda") == \
        "CUDA not available (torch.cuda.is_available() is False)"


def test_torch_devices_timers_and_syncs(monkeypatch: pytest.MonkeyPatch) -> None:
    device = FakeDevice(launch_ns=5_000.0, sync_ns=8_000.0)
    backend = with_torch(monkeypatch, simulated_torch(device))
    assert [backend.device(k) for k in BACKEND_NAMES] == ["cpu", "cuda", "cuda"]
    assert isinstance(backend.timer("cpu"), PerfCounterTimer)
    assert isinstance(backend.synchronizer("cpu"), SyncFromResult)
    assert backend.gpu_clock("cpu") is None and backend.l2_flush("cpu") is None
    for kind in ("cuda", "rocm"):
        assert isinstance(backend.timer(kind), CudaEventTimer)
        assert isinstance(backend.synchronizer(kind), TorchDeviceSync)
        assert isinstance(backend.gpu_clock(kind), TorchCudaClock)
    backend.synchronizer("cuda").synchronize(None)
    assert device.log == ["sync"]  # the sync is wired to the given torch module


def test_torch_flush_buffer_is_twice_the_l2_and_the_bus_id_is_nvmls(
        monkeypatch: pytest.MonkeyPatch) -> None:
    backend = with_torch(monkeypatch, fake_torch())
    flush = backend.l2_flush("cuda")
    assert flush is not None and flush.bytes == 2 * 50 * 2**20
    assert backend.pci_bus_id("cuda") == "00000000:41:00.0"
    assert backend.device_memory("cuda", flush.bytes) == {
        "peak_mb": 0.0, "allocated_mb": 0.0,
        "source": "torch.cuda.max_memory_reserved / max_memory_allocated during the case, "
                  f"less the {flush.bytes} B L2 flush buffer"}


def test_torch_describe_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = with_torch(monkeypatch, fake_torch())
    assert backend.describe("cuda") == {
        "framework": "pytorch", "device": "cuda", "torch_version": "9.9.9", "num_threads": 8,
        "device_name": "Fake GPU 9000", "total_memory_mb": 80 * 1024.0,
        "l2_cache_mb": 50.0, "multiprocessors": 132,
        "cuda_version": "12.4", "hip_version": None}


def test_torch_describe_cpu() -> None:
    torch = pytest.importorskip("torch")
    info = TorchBackend().describe("cpu")
    assert info == {"framework": "pytorch", "device": "cpu", "torch_version": torch.__version__,
                    "num_threads": torch.get_num_threads()}


def test_cuda_event_timer_times_the_queued_work_in_ns() -> None:
    device = FakeDevice(launch_ns=5_000.0, sync_ns=8_000.0)
    timer = CudaEventTimer(simulated_torch(device))
    assert timer.name == "cuda_event"
    token = timer.start()
    device.kernel(1_250_000.0)()  # 1.25 ms of device work, queued after a 5 us launch
    assert timer.stop(token) == 1_255_000.0
    assert device.log == ["kernel"]  # the stop event is waited for, not the whole device


def test_cuda_event_timer_overhead_through_the_protocol() -> None:
    timer = CudaEventTimer(simulated_torch(FakeDevice(launch_ns=5_000.0, sync_ns=8_000.0)))
    assert timer_overhead_ns(timer, probes=11) == 0.0  # two events with nothing between


def test_torch_device_sync_waits_for_the_device_and_never_walks_the_result() -> None:
    device = FakeDevice(launch_ns=5_000.0, sync_ns=8_000.0)
    log: list[str] = []
    TorchDeviceSync(simulated_torch(device)).synchronize(
        (Blocking("a", log), {"b": Blocking("b", log)}))
    assert device.log == ["sync"] and log == []


# --- JAX ------------------------------------------------------------------------------------


def test_jax_cpu_is_available() -> None:
    assert JaxBackend().unavailable_reason("cpu") is None


@pytest.mark.skipif(jax_has_gpu(), reason="JAX sees a GPU")
@pytest.mark.parametrize(("backend", "name"), [("cuda", "CUDA"), ("rocm", "ROCm")])
def test_jax_without_a_gpu(backend: str, name: str) -> None:
    pytest.importorskip("jax")
    assert JaxBackend().unavailable_reason(backend) == \
        f"{name} not available (JAX sees no GPU device)"


def test_jax_unknown_backend() -> None:
    assert JaxBackend().unavailable_reason("tpu") == "JAX has no backend 'tpu'"


def test_jax_cuda_device(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_jax(monkeypatch, "cuda 12.3")
    backend = JaxBackend()
    assert backend.unavailable_reason("cuda") is None
    assert backend.unavailable_reason("rocm") == \
        "ROCm not available: JAX's GPU is not a ROCm device"


def test_jax_rocm_device(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_jax(monkeypatch, "rocm 6.0.2")
    backend = JaxBackend()
    assert backend.unavailable_reason("rocm") is None
    assert backend.unavailable_reason("cuda") == "CUDA not available: JAX's GPU is a ROCm device"


def test_jax_no_gpu_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_jax(monkeypatch, None)
    assert JaxBackend().unavailable_reason("cuda") == \
        "CUDA not available (JAX sees no GPU device)"


def test_jax_device_memory_is_the_unresettable_peak_and_never_subtracts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    stats = {"peak_bytes_in_use": 3 * 2**20, "bytes_in_use": 2**20}
    gpu = SimpleNamespace(memory_stats=lambda: stats)
    monkeypatch.setitem(sys.modules, "jax", SimpleNamespace(devices=lambda kind=None: [gpu]))
    backend = JaxBackend()
    assert backend.resets_device_peak("cuda") is False
    assert backend.resets_device_peak("cpu") is True and TorchBackend().resets_device_peak("cuda")
    memory = backend.device_memory("cuda")
    assert memory is not None and memory["peak_mb"] == 3.0 and memory["allocated_mb"] == 1.0
    assert memory["source"].startswith("jax Device.memory_stats() peak_bytes_in_use")
    with pytest.raises(ValueError, match="read it before the flush buffer exists"):
        backend.device_memory("cuda", excluded_bytes=512 * 2**20)
    assert backend.device_memory("cpu") is None


def test_jax_devices_and_describe() -> None:
    jax = pytest.importorskip("jax")
    backend = JaxBackend()
    assert [backend.device(k) for k in BACKEND_NAMES] == ["cpu", "gpu", "gpu"]
    info = backend.describe("cpu")
    assert info["framework"] == "jax"
    assert info["device"] == "cpu"
    assert info["jax_version"] == jax.__version__
    assert info["device_name"] == jax.devices("cpu")[0].device_kind
    assert isinstance(backend.synchronizer("cpu"), BlockUntilReady)


# --- CuPy -----------------------------------------------------------------------------------


def test_cupy_never_runs_on_cpu() -> None:
    assert CupyBackend().unavailable_reason("cpu") == "CuPy runs on GPUs only"


@pytest.mark.skipif(CUPY_INSTALLED, reason="cupy is installed")
def test_cupy_not_installed() -> None:
    assert CupyBackend().unavailable_reason("cuda") == "CuPy is not installed"


def test_cupy_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cupy(monkeypatch, is_hip=False)
    assert CupyBackend().unavailable_reason("cuda") is None
    assert CupyBackend().unavailable_reason("rocm") == \
        "ROCm not available: this CuPy is a CUDA build"
    fake_cupy(monkeypatch, is_hip=True)
    assert CupyBackend().unavailable_reason("rocm") is None
    assert CupyBackend().unavailable_reason("cuda") == \
        "CUDA not available: this CuPy is a ROCm build"
    fake_cupy(monkeypatch, available=False)
    assert CupyBackend().unavailable_reason("cuda") == \
        "CUDA not available (cupy.cuda.is_available() is False)"


def test_cupy_timer_and_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    cupy = fake_cupy(monkeypatch, elapsed_ms=0.5)
    backend = CupyBackend()
    timer = backend.timer("cuda")
    assert isinstance(timer, CupyEventTimer)
    assert timer.stop(timer.start()) == 0.5e6
    sync = backend.synchronizer("cuda")
    assert isinstance(sync, CupyStreamSync)
    sync.synchronize(None)
    assert cupy.log == ["stream_sync"]
    assert backend.device("rocm") == "cuda"


# --- waiting for results --------------------------------------------------------------------


def test_wait_for_result_blocks_on_every_nested_leaf() -> None:
    log: list[str] = []
    result = {"a": [Blocking("a1", log), (Blocking("a2", log), Blocking("a3", log))],
              "b": Blocking("b", log), "c": 5, "d": "text", "e": None}
    assert wait_for_result(result) is None
    assert sorted(log) == ["a1", "a2", "a3", "b"]


def test_wait_for_result_ignores_non_callable_attributes() -> None:
    wait_for_result(SimpleNamespace(block_until_ready=True))
    wait_for_result([1, 2.0, "x", b"y", None])


def test_walk_leaves_is_bounded_on_cycles() -> None:
    loop: list[object] = []
    loop.append(loop)
    leaves = list(walk_leaves(loop))
    assert leaves == [loop]  # the depth limit stops at the cycle instead of recursing forever
    wait_for_result(loop)


def test_walk_leaves_is_lazy() -> None:
    class Endless(list[object]):
        def __iter__(self) -> Any:
            count = 0
            while True:
                count += 1
                yield count

    leaves = walk_leaves(Endless())
    assert [next(leaves) for _ in range(3)] == [1, 2, 3]


def test_a_synchronous_result_needs_no_wait() -> None:
    assert sync_for_result(None) is None
    assert sync_for_result([0.5] * 1_000_000) is None
    assert sync_for_result({"a": np.ones(3), "b": (1, 2.0)}) is None


def test_a_result_with_a_jax_style_leaf_gets_block_until_ready() -> None:
    log: list[str] = []
    sync = sync_for_result({"n": 3, "x": Blocking("x", log)})
    assert isinstance(sync, BlockUntilReady)
    sync.synchronize(Blocking("only", log))  # one array: its own method, no walk
    assert log == ["only"]


def test_the_result_probe_looks_at_a_bounded_number_of_leaves() -> None:
    log: list[str] = []
    assert sync_for_result([0] * 16 + [Blocking("late", log)]) is None
    assert isinstance(sync_for_result([0] * 15 + [Blocking("x", log)]), BlockUntilReady)


def test_a_cuda_tensor_leaf_gets_a_device_synchronise(monkeypatch: pytest.MonkeyPatch) -> None:
    device = FakeDevice(launch_ns=5_000.0, sync_ns=8_000.0)
    monkeypatch.setitem(sys.modules, "torch", simulated_torch(device))
    sync = sync_for_result([SimpleNamespace(is_cuda=True)])
    assert isinstance(sync, TorchDeviceSync)
    sync.synchronize(None)
    assert device.log == ["sync"]
    assert sync_for_result([SimpleNamespace(is_cuda=False)]) is None


def test_wait_for_result_blocks_real_jax_arrays(monkeypatch: pytest.MonkeyPatch) -> None:
    jnp = pytest.importorskip("jax.numpy")
    a, b = jnp.ones(3), jnp.arange(4.0)
    array_type = type(a)
    original = array_type.block_until_ready
    seen: list[int] = []

    def spy(self: Any) -> Any:
        seen.append(id(self))
        return original(self)

    monkeypatch.setattr(array_type, "block_until_ready", spy)
    wait_for_result((a, {"b": b, "n": 3}))
    assert sorted(seen) == sorted([id(a), id(b)])
    monkeypatch.undo()
    wait_for_result([a * 2, b + 1])  # the real method, end to end
    assert a.is_ready() and b.is_ready()


# --- real GPU -------------------------------------------------------------------------------


@gpu
@needs_cuda
def test_real_torch_cuda_backend() -> None:
    import torch

    backend = TorchBackend()
    assert backend.unavailable_reason("cuda") is None
    info = backend.describe("cuda")
    assert info["device_name"] == torch.cuda.get_device_name(0)
    assert info["total_memory_mb"] > 0


@gpu
@needs_cuda
def test_real_cuda_event_timer_times_queued_work() -> None:
    import torch

    timer = CudaEventTimer(torch)
    sync = TorchDeviceSync(torch)
    x = torch.randn(2048, 2048, device="cuda")
    sync.synchronize(x)
    token = timer.start()
    torch.cuda._sleep(50_000_000)  # tens of milliseconds of GPU work, launched asynchronously
    elapsed = timer.stop(token)
    assert elapsed > 1e6  # more than 1 ms: the wait covers the queued work, not the launch
    small = timer.stop(timer.start())
    assert 0 <= small < elapsed


def test_only_jax_on_cpu_asks_for_a_longer_warm_up() -> None:
    assert JaxBackend().settle_s("cpu") == 0.25
    assert JaxBackend().settle_s("cuda") == 0.0
    assert NumpyBackend().settle_s("cpu") == TorchBackend().settle_s("cpu") == 0.0


@pytest.mark.parametrize(("asked", "settle", "used"), [
    (0.1, 0.25, 0.25), (0.5, 0.25, 0.5), (0.0, 0.25, 0.0), (0.1, 0.0, 0.1)])
def test_a_warm_up_shorter_than_the_backend_settles_in_is_raised_unless_it_is_off(
        asked: float, settle: float, used: float) -> None:
    from kernbench.execution.measuring import settled
    from kernbench.results.model import ProtocolSettings

    settings = ProtocolSettings(warmup_time_s=asked)
    assert settled(settings, settle).warmup_time_s == used
    assert settled(settings, settle) is settings or asked < settle
