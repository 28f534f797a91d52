"""The backend interface and the CPU-only backend (NumPy, plain Python, Numba)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kernbench.protocol import PerfCounterTimer, Synchronizer, Timer

DEVICE_LABELS = {"cpu": "CPU", "cuda": "CUDA", "rocm": "ROCm"}


def label(backend: str) -> str:
    """How a device kind is written in messages ("ROCm", not "ROCM")."""
    return DEVICE_LABELS.get(backend, backend)


def iter_leaves(value: object, depth: int = 0) -> list[object]:
    """Leaves of a result that may be nested in tuples, lists and dicts (bounded depth)."""
    if depth > 8:
        return [value]
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in iter_leaves(item, depth + 1)]
    if isinstance(value, Mapping):
        return [leaf for item in value.values() for leaf in iter_leaves(item, depth + 1)]
    return [value]


def wait_for_result(result: object) -> None:
    """Block on every leaf that is an asynchronous array (JAX: ``block_until_ready``)."""
    for leaf in iter_leaves(result):
        block = getattr(leaf, "block_until_ready", None)
        if callable(block):
            block()


class ResultSync:
    """Waits for asynchronous leaves of a result, whatever framework produced them."""

    def synchronize(self, result: object) -> None:
        wait_for_result(result)


class Backend:
    """Interface: one framework's view of the device kinds."""

    framework = "python"

    def unavailable_reason(self, backend: str) -> str | None:
        """None when `backend` can run here, else why not (the case is then skipped)."""
        raise NotImplementedError

    def device(self, backend: str) -> str:
        """The device string handed to kernels that take `device`."""
        return backend

    def synchronizer(self, backend: str) -> Synchronizer:
        return ResultSync()

    def timer(self, backend: str) -> Timer:
        return PerfCounterTimer()

    def describe(self, backend: str) -> dict[str, Any]:
        """Facts about the device for the record (name, versions)."""
        return {"framework": self.framework, "device": self.device(backend)}

    def reset_device_memory(self, backend: str) -> None:
        """Reset the device allocator's peak counters before a case (GPU backends)."""
        return None

    def device_memory(self, backend: str) -> dict[str, Any] | None:
        """Device allocator figures after a case: {peak_mb, allocated_mb, source}, or None."""
        return None

    def l2_flusher(self, backend: str) -> Callable[[], object] | None:
        """A call that evicts the device's L2 cache, or None where that does not apply."""
        return None


class CpuOnlyBackend(Backend):
    """Frameworks that compute on the CPU only."""

    def __init__(self, framework: str) -> None:
        self.framework = framework

    def unavailable_reason(self, backend: str) -> str | None:
        if backend == "cpu":
            return None
        return f"{self.framework} kernels run on the CPU only; backend {backend!r} does not apply"
