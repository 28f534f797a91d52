"""kernbench.bench on a GPU function (kernbench.api.gpu), on the FIFO stream simulator: it is
timed in a GPU timing mode with events, as `kernbench run` times a GPU case, never by the host
clock around a synchronise (which read 19.8 us for a 4.5 us add on an H100)."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

import kernbench
from kernbench.api.gpu import gpu_target
from kernbench.errors import KernbenchError
from support.fake_cuda import FakeDevice, fake_torch
from support.nvml import OneGpuNVML

KERNEL_NS, LAUNCH_NS, SYNC_NS = 3_000.0, 5_000.0, 8_000.0


class CudaTensor:
    """What a PyTorch CUDA tensor shows of itself to kernbench: its module and `is_cuda`."""

    __module__ = "torch"
    is_cuda = True


def on_fake_gpu(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A kernel of 3 us device time (5 us to launch, 8 us to synchronise) returning a CUDA
    tensor, with the simulator standing in for ``torch``."""
    device = FakeDevice(LAUNCH_NS, SYNC_NS)
    monkeypatch.setitem(__import__("sys").modules, "torch", fake_torch(device))

    def kernel() -> CudaTensor:
        device.launch(KERNEL_NS)
        return CudaTensor()
    return kernel


def test_a_gpu_function_is_timed_by_events_in_cold_mode(
        monkeypatch: pytest.MonkeyPatch) -> None:
    case = kernbench.bench(on_fake_gpu(monkeypatch), iterations=5).case
    assert (case.backend, case.framework, case.timer) == ("cuda", "pytorch", "cuda_event")
    # the kernel's device time alone: no launch (5 us), no synchronise (8 us)
    assert statistics.median(case.samples_ms) == pytest.approx(KERNEL_NS / 1e6)
    assert case.gpu_timing is not None and case.gpu_timing["primary"] == "cold"
    assert case.l2_flush is True
    assert case.memory["peak_mb"] == 0.0  # the flush buffer is not the kernel's


def test_a_gpu_result_shows_its_timing_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    shown = kernbench.bench(on_fake_gpu(monkeypatch), iterations=3, name="add")
    assert shown.gpu_timing_mode == "cold"
    assert repr(shown).startswith("<BenchResult add[cuda,native]: median 3 µs (cold), ")
    assert "GPU timing mode</th><td style='text-align:left'>cold</td>" in shown._repr_html_()
    assert kernbench.bench(len, "abc", iterations=2).gpu_timing_mode is None


def test_another_gpu_timing_mode_is_asked_for_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    case = kernbench.bench(on_fake_gpu(monkeypatch), iterations=3, gpu_timing="sync").case
    assert statistics.median(case.samples_ms) == pytest.approx(
        (KERNEL_NS + LAUNCH_NS + SYNC_NS) / 1e6)
    assert case.gpu_timing is not None and case.gpu_timing["primary"] == "sync"


def test_a_cpu_label_on_a_gpu_function_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(KernbenchError, match=r"backend='cpu', but the function works on "
                                             r"pytorch arrays on a GPU.*backend='cuda'"):
        kernbench.bench(on_fake_gpu(monkeypatch), backend="cpu", iterations=2)


def test_fork_isolation_of_gpu_arrays_is_refused_before_forking() -> None:
    with pytest.raises(KernbenchError, match="isolation='fork' cannot time a function of "
                                             "pytorch arrays on a GPU"):
        kernbench.bench(lambda x: x, CudaTensor(), isolation="fork", iterations=2)


def test_an_unknown_gpu_timing_mode_is_refused() -> None:
    with pytest.raises(KernbenchError, match="gpu_timing must be one of cold, hot, graph, "
                                             "kernel, sync, all, not 'warm'"):
        kernbench.bench(len, "abc", gpu_timing="warm")


def test_a_cuda_label_without_a_gpu_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    for other in ("cupy", "jax"):  # torch alone: the one GPU framework the label can mean
        monkeypatch.delitem(sys.modules, other, raising=False)
    with pytest.raises(KernbenchError, match=r"backend='cuda' \(pytorch\): CUDA not available"):
        kernbench.bench(lambda: None, backend="cuda", iterations=2)


def test_arrays_on_the_cpu_are_no_gpu_target() -> None:
    np = pytest.importorskip("numpy")
    assert gpu_target(np.zeros(3), [1.0, 2.0], {"a": None}) is None
    assert gpu_target([np.zeros(1), CudaTensor()]) == ("pytorch", "cuda")
    jax = pytest.importorskip("jax")
    on_cpu = jax.device_put(jax.numpy.zeros(3), jax.devices("cpu")[0])
    assert gpu_target(on_cpu) is None


class HotNVML(OneGpuNVML):
    """pynvml on one GPU whose every second read says it slowed down for heat (0x40)."""

    NVML_CLOCK_SM = 1

    def __init__(self, mask: int) -> None:
        super().__init__()
        self.mask, self.reads = mask, 0

    def nvmlDeviceGetHandleByPciBusId(self, bus_id: str) -> str:
        return bus_id

    def nvmlDeviceGetMaxClockInfo(self, handle: str, clock: int) -> int:
        return 1980

    def nvmlDeviceGetClockInfo(self, handle: str, clock: int) -> int:
        return 1700

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: str) -> int:
        self.reads += 1
        return self.mask if self.reads % 4 == 0 else 0  # the end read of every second block


@pytest.mark.parametrize(("mask", "discarded"), [(0x40, True), (0x4, False)])
def test_nvml_guards_the_blocks_as_a_workers_guard_does(
        monkeypatch: pytest.MonkeyPatch, mask: int, discarded: bool) -> None:
    """Heat discards a block (retaken); the power cap, a heavy kernel's steady state, does not."""
    nvml = HotNVML(mask)
    monkeypatch.setitem(__import__("sys").modules, "pynvml", nvml)
    case = kernbench.bench(on_fake_gpu(monkeypatch), iterations=6).case
    assert case.gpu_timing is not None
    cold = case.gpu_timing["modes"]["cold"]
    assert nvml.reads > 0
    assert nvml.open == 0  # every init the measurement made is undone
    assert len(case.samples_ms) == 6
    if discarded:
        assert cold["discarded_blocks"] >= 1
        assert set(cold["discard_reasons"]) == {"throttled: HwThermalSlowdown"}
    else:
        assert cold["discarded_blocks"] == 0


def test_a_mode_that_gave_no_figure_is_an_error_not_an_empty_result(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`kernel` mode needs the profiler; without one the worker records the case skipped,
    and kernbench.bench must not return an "ok" result of no sample either."""
    device = FakeDevice(LAUNCH_NS, SYNC_NS)
    monkeypatch.setitem(__import__("sys").modules, "torch", fake_torch(device, profiler=False))

    def kernel() -> CudaTensor:
        device.launch(KERNEL_NS)
        return CudaTensor()

    with pytest.raises(KernbenchError, match=r"^kernbench.bench: not timed: kernel mode: "):
        kernbench.bench(kernel, iterations=3, gpu_timing="kernel")


class AlwaysHotNVML(HotNVML):
    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: str) -> int:
        return 0x40


def test_a_gpu_that_throttles_throughout_is_a_kernbench_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "pynvml", AlwaysHotNVML(0x40))
    with pytest.raises(KernbenchError, match=r"kernbench.bench: cold mode: every one of \d+ "
                                             r"blocks was discarded \(throttled: "):
        kernbench.bench(on_fake_gpu(monkeypatch), iterations=3)


def test_arrays_on_another_gpu_than_the_timed_one_are_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The events go on the current device's stream: a kernel on cuda:1 while cuda:0 is
    current would be timed as an idle queue (near zero), with cuda:0's memory and state."""
    from types import SimpleNamespace

    kernel = on_fake_gpu(monkeypatch)  # torch.cuda.current_device() is 0

    class OnSecondGpu(CudaTensor):
        __module__ = "torch"
        device = SimpleNamespace(index=1)

    with pytest.raises(KernbenchError, match=r"the arrays are on cuda:1, the current device "
                                             r"is cuda:0: call torch.cuda.set_device\(1\)"):
        kernbench.bench(lambda x: kernel(), OnSecondGpu(), iterations=3)

    class OnFirstGpu(CudaTensor):
        __module__ = "torch"
        device = SimpleNamespace(index=0)

    assert kernbench.bench(lambda x: kernel(), OnFirstGpu(), iterations=3).n == 3


@pytest.mark.parametrize(("imported", "expected"), [
    (("torch",), "pytorch"), (("cupy",), "cupy"),
    (("torch", "cupy"), "torch and cupy are both imported"),
    (("torch", "cupy", "jax"), "torch and cupy and jax are all imported"),
    ((), "no GPU framework")])
def test_a_gpu_backend_without_gpu_arrays_takes_the_one_framework_imported(
        monkeypatch: pytest.MonkeyPatch, imported: tuple[str, ...], expected: str) -> None:
    """Never a guess among several: torch brought in by another library would have its
    queue waited on while a cupy kernel ran."""
    import sys
    import types

    from kernbench.api.gpu import guess_gpu_framework

    for module in ("torch", "cupy", "jax"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    for module in imported:
        monkeypatch.setitem(sys.modules, module, types.ModuleType(module))
    if len(imported) == 1:
        assert guess_gpu_framework("cuda") == expected
    else:
        with pytest.raises(KernbenchError, match=expected):
            guess_gpu_framework("cuda")
