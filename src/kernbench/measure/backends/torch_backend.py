"""PyTorch on CPU, CUDA and ROCm. CUDA/ROCm cases are timed with CUDA events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from kernbench.measure.backends.base import Backend, DtypeTable, dtypes_in, label
from kernbench.measure.protocol import SyncChoice, Timer

if TYPE_CHECKING:
    from kernbench.measure.gpu_timing import Flush, GpuClock


class CudaEventTimer:
    """Times GPU work with a pair of CUDA events on the current stream.

    The stop event is synchronised before `elapsed_time` is read, so the interval covers the
    queued work, not its launch.
    """

    name = "cuda_event"

    def __init__(self, torch_module: Any) -> None:
        self._torch = torch_module

    def start(self) -> object:
        event = self._torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def stop(self, token: object) -> float:
        end = self._torch.cuda.Event(enable_timing=True)
        end.record()
        end.synchronize()
        return float(token.elapsed_time(end)) * 1e6  # type: ignore[attr-defined]  # ms -> ns


class TorchDeviceSync:
    """Waits for the device's queue (``torch.cuda.synchronize``); the result itself is never
    walked: every kernel it holds was queued on the device."""

    def __init__(self, torch_module: Any) -> None:
        self._synchronize = torch_module.cuda.synchronize

    def synchronize(self, result: object) -> None:
        self._synchronize()


class TorchBackend(Backend):
    framework = "pytorch"
    DTYPES: ClassVar[DtypeTable] = dtypes_in("torch")

    def _torch(self) -> Any:
        import torch

        return torch

    def unavailable_reason(self, backend: str) -> str | None:
        if backend == "cpu":
            return None
        if backend not in ("cuda", "rocm"):
            return f"PyTorch has no backend {backend!r}"
        torch = self._torch()
        if not torch.cuda.is_available():
            return f"{label(backend)} not available (torch.cuda.is_available() is False)"
        is_hip = getattr(torch.version, "hip", None) is not None
        if backend == "rocm" and not is_hip:
            return "ROCm not available: this PyTorch is a CUDA build"
        if backend == "cuda" and is_hip:
            return "CUDA not available: this PyTorch is a ROCm build"
        return None

    def device(self, backend: str) -> str:
        return "cpu" if backend == "cpu" else "cuda"  # ROCm builds expose HIP devices as "cuda"

    def prepare_device(self, backend: str) -> None:
        """A ``cpu`` case sees no GPU: on an H100 a CPU case's ``torch.compile`` started CUDA
        (Inductor asks what devices there are) and failed with "CUDA error: out of memory"
        while another process held the GPU. PyTorch reads the visible devices when it first
        starts CUDA, which a worker has not done yet (a fork server that had is not forked
        from)."""
        if backend == "cpu":
            import os

            os.environ["CUDA_VISIBLE_DEVICES"] = os.environ["HIP_VISIBLE_DEVICES"] = ""

    def synchronizer(self, backend: str) -> SyncChoice:
        if backend == "cpu":  # CPU tensors are computed when the call returns
            return super().synchronizer(backend)
        return TorchDeviceSync(self._torch())

    def timer(self, backend: str) -> Timer:
        if backend == "cpu":
            return super().timer(backend)
        return CudaEventTimer(self._torch())

    def reset_device_memory(self, backend: str) -> None:
        if backend != "cpu":
            self._torch().cuda.reset_peak_memory_stats()

    def device_memory(self, backend: str, excluded_bytes: int = 0) -> dict[str, Any] | None:
        if backend == "cpu":
            return None
        cuda = self._torch().cuda
        source = "torch.cuda.max_memory_reserved / max_memory_allocated during the case"
        if excluded_bytes:
            source += f", less the {excluded_bytes} B L2 flush buffer"
        return {"peak_mb": (cuda.max_memory_reserved() - excluded_bytes) / 2**20,
                "allocated_mb": (cuda.max_memory_allocated() - excluded_bytes) / 2**20,
                "source": source}

    def gpu_clock(self, backend: str) -> GpuClock | None:
        if backend == "cpu":
            return None
        from kernbench.measure.backends.torch_gpu import TorchCudaClock

        return TorchCudaClock(self._torch())

    def l2_flush(self, backend: str) -> Flush | None:
        if backend == "cpu":
            return None
        from kernbench.measure.backends.torch_gpu import l2_flush

        return l2_flush(self._torch())

    def pci_bus_id(self, backend: str) -> str | None:
        if backend == "cpu":
            return None
        from kernbench.measure.backends.torch_gpu import pci_bus_id

        return pci_bus_id(self._torch())

    def describe(self, backend: str) -> dict[str, Any]:
        torch = self._torch()
        info: dict[str, Any] = {"framework": "pytorch", "device": self.device(backend),
                                "torch_version": torch.__version__,
                                "num_threads": torch.get_num_threads()}
        if backend != "cpu":
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            info.update(device_name=props.name, total_memory_mb=props.total_memory / 2**20,
                        l2_cache_mb=getattr(props, "L2_cache_size", 0) / 2**20,
                        multiprocessors=getattr(props, "multi_processor_count", None),
                        cuda_version=torch.version.cuda,
                        hip_version=getattr(torch.version, "hip", None))
        return info
