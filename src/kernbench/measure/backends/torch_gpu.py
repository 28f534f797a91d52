"""PyTorch's side of the GPU timing modes (CUDA and ROCm): CUDA events as marks, CUDA graphs,
``torch.profiler`` device times, the cache flush buffer and the device's PCI bus id.

Everything goes through the ``torch`` module handed in, so tests run it on a stream simulator.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from kernbench.measure.backends.device_facts import bus_id_of_properties, flush_bytes
from kernbench.measure.gpu_timing import CaptureFailed, Flush, ProfilerUnavailable

CALL_RANGE = "kernbench::call"
"""The ``record_function`` range around each profiled call."""


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


class TorchCudaClock:
    """Marks are CUDA events recorded on the current stream; read after a synchronise."""

    name = "cuda_event"

    def __init__(self, torch_module: Any) -> None:
        self._torch = torch_module
        self._graphs: list[Any] = []
        """Captured graphs, kept alive as long as their replays may run."""

    def mark(self) -> object:
        event = self._torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def mark_after(self, result: object) -> object:
        return self.mark()  # the stream is in order: the event follows the call's kernels

    def wait(self, result: object) -> None:
        self._torch.cuda.synchronize()  # the result is never walked: its kernels were queued

    def synchronize(self) -> None:
        self._torch.cuda.synchronize()

    def elapsed_ns(self, start: object, end: object) -> float:
        return float(start.elapsed_time(end)) * 1e6  # type: ignore[attr-defined]  # ms -> ns

    def capture(self, body: Callable[[], object]) -> Callable[[], object]:
        """Capture `body` into a ``torch.cuda.CUDAGraph`` after one call on a side stream (as
        PyTorch's documentation asks, so lazy initialisation happens outside the capture)."""
        cuda = self._torch.cuda
        try:
            side = cuda.Stream()
            with cuda.stream(side):
                body()
            cuda.synchronize()
            graph = cuda.CUDAGraph()
            with cuda.graph(graph):
                body()
        except Exception as exc:
            self._recover()
            raise CaptureFailed(_describe(exc)) from exc
        self._graphs.append(graph)
        return graph.replay  # type: ignore[no-any-return]

    def _recover(self) -> None:
        with contextlib.suppress(Exception):  # the failed capture's error is the one reported
            self._torch.cuda.synchronize()

    def kernel_times_ns(self, call: Callable[[], object], before: Callable[[], object] | None,
                        count: int) -> list[float]:
        """Each call's kernels' device time, from ``torch.profiler`` (CUPTI on CUDA, roctracer
        on ROCm): the device time of a ``record_function`` range around the call; `before`
        (the kernel's reset, the flush) runs outside the range, so its kernels are not summed."""
        try:
            profiler = self._torch.profiler
            activities = [profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.CUDA]
            with profiler.profile(activities=activities) as prof:
                for _ in range(count):
                    if before is not None:
                        before()
                    with profiler.record_function(CALL_RANGE):
                        call()
                self._torch.cuda.synchronize()
            events = prof.events()
        except Exception as exc:
            raise ProfilerUnavailable(f"torch.profiler failed: {_describe(exc)}") from exc
        return _call_times_ns(events, count)


def _call_times_ns(events: Any, count: int) -> list[float]:
    """Device time (ns) of each host-side call range; the device-side copy of the annotation
    (device_type CUDA, its span including idle gaps) is left out."""
    times = []
    for event in events:
        if event.name != CALL_RANGE or not str(getattr(event, "device_type", "CPU")).endswith(
                "CPU"):
            continue
        total: Any = getattr(event, "device_time_total", None)
        if total is None:  # PyTorch before 2.4
            total = getattr(event, "cuda_time_total", 0.0)
        times.append(float(total) * 1e3)  # us -> ns
    if len(times) != count or not any(times):
        raise ProfilerUnavailable(
            f"torch.profiler recorded no device time for the calls ({len(times)} of {count} "
            "ranges, none with kernels): is CUPTI available to this process?")
    return times


def l2_flush(torch_module: Any) -> Flush | None:
    """A buffer of twice the device's last-level cache and a write of it: its L2 (from its
    properties), or on ROCm the Infinity Cache behind it, known by ``gcnArchName``; None where
    neither size is known."""
    cuda = torch_module.cuda
    props = cuda.get_device_properties(cuda.current_device())
    size = flush_bytes(int(getattr(props, "L2_cache_size", 0) or 0),
                       getattr(props, "gcnArchName", None))
    if size <= 0:
        return None
    buffer = torch_module.empty(size, dtype=torch_module.uint8, device="cuda")
    return Flush(bytes=size, run=buffer.zero_)


def pci_bus_id(torch_module: Any) -> str | None:
    """NVML's spelling (``00000000:41:00.0``) of the current device's PCI address."""
    cuda = torch_module.cuda
    return bus_id_of_properties(cuda.get_device_properties(cuda.current_device()))
