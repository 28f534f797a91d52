"""CuPy on CUDA (or ROCm builds): stream synchronisation and CUDA-event timing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from kernbench.measure.backends.base import Backend, DtypeTable, label
from kernbench.measure.backends.numpy_backend import NUMPY_DTYPES
from kernbench.measure.protocol import Synchronizer, Timer

if TYPE_CHECKING:
    from kernbench.measure.gpu_timing import Flush, GpuClock


class CupyEventTimer:
    name = "cuda_event"

    def __init__(self, cupy_module: Any) -> None:
        self._cp = cupy_module

    def start(self) -> object:
        event = self._cp.cuda.Event()
        event.record()
        return event

    def stop(self, token: object) -> float:
        end = self._cp.cuda.Event()
        end.record()
        end.synchronize()
        return float(self._cp.cuda.get_elapsed_time(token, end)) * 1e6


class CupyStreamSync:
    """Waits for the current stream; the result is never walked."""

    def __init__(self, cupy_module: Any) -> None:
        self._cp = cupy_module

    def synchronize(self, result: object) -> None:
        self._cp.cuda.get_current_stream().synchronize()


class CupyBackend(Backend):
    framework = "cupy"
    DTYPES: ClassVar[DtypeTable] = NUMPY_DTYPES  # CuPy arrays take NumPy's dtype objects

    def unavailable_reason(self, backend: str) -> str | None:
        if backend == "cpu":
            return "CuPy runs on GPUs only"
        try:
            import cupy
        except ImportError:
            return "CuPy is not installed"
        if not cupy.cuda.is_available():
            return f"{label(backend)} not available (cupy.cuda.is_available() is False)"
        is_hip = bool(getattr(cupy.cuda.runtime, "is_hip", False))
        if (backend == "rocm") != is_hip:
            build = "ROCm" if is_hip else "CUDA"
            return f"{label(backend)} not available: this CuPy is a {build} build"
        return None

    def device(self, backend: str) -> str:
        return "cuda"

    def synchronizer(self, backend: str) -> Synchronizer:
        import cupy

        return CupyStreamSync(cupy)

    def timer(self, backend: str) -> Timer:
        import cupy

        return CupyEventTimer(cupy)

    def gpu_clock(self, backend: str) -> GpuClock | None:
        import cupy

        from kernbench.measure.backends.other_gpu import CupyClock

        return CupyClock(cupy)

    def l2_flush(self, backend: str) -> Flush | None:
        import cupy

        from kernbench.measure.backends.other_gpu import cupy_flush

        return cupy_flush(cupy)

    def pci_bus_id(self, backend: str) -> str | None:
        import cupy

        from kernbench.measure.backends.device_facts import parse_bus_id

        return parse_bus_id(cupy.cuda.Device().pci_bus_id)
