"""JAX on CPU and GPU. Results are waited for with ``block_until_ready``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from kernbench.measure.backends.base import (
    Backend,
    BlockUntilReady,
    DtypeTable,
    dtypes_in,
    label,
)
from kernbench.measure.protocol import SyncChoice

if TYPE_CHECKING:
    from kernbench.measure.gpu_timing import Flush, GpuClock

_GPU_PLATFORMS = {"cuda": ("gpu", "cuda"), "rocm": ("gpu", "rocm")}
SETTLE_CPU_S = 0.25
"""The least warm-up of a JAX case on CPU (see :meth:`JaxBackend.settle_s`)."""


class JaxBackend(Backend):
    framework = "jax"
    DTYPES: ClassVar[DtypeTable] = dtypes_in("jax.numpy")

    def prepare_precision(self, precision: str) -> None:
        """JAX silently computes fp64 as fp32 unless x64 is on; a worker runs one case: turn
        it on."""
        if precision == "fp64":  # pragma: no cover - needs jax
            import jax

            jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]

    def prepare_device(self, backend: str) -> None:
        """A ``cpu`` case runs on the CPU: JAX's default device is a GPU wherever it sees one,
        so a kernel's ``jnp`` arrays of a case labelled ``cpu`` ran on the GPU of a GPU
        machine (found when a JAX ``cpu`` case's accuracy test failed on an H100). JAX is
        limited to its CPU platform before any backend starts (the GPU is never initialised).
        """
        if backend != "cpu":
            return
        import jax

        jax.config.update("jax_platforms", "cpu")  # type: ignore[no-untyped-call]

    def _devices(self) -> list[Any]:
        import jax

        return list(jax.devices())

    def unavailable_reason(self, backend: str) -> str | None:
        if backend == "cpu":
            return None
        if backend not in _GPU_PLATFORMS:
            return f"JAX has no backend {backend!r}"
        try:
            import jax

            gpus = jax.devices("gpu")
        except RuntimeError:
            gpus = []
        if not gpus:
            return f"{label(backend)} not available (JAX sees no GPU device)"
        platform_version = str(getattr(gpus[0].client, "platform_version", "")).lower()
        if backend == "rocm" and "rocm" not in platform_version:
            return "ROCm not available: JAX's GPU is not a ROCm device"
        if backend == "cuda" and "rocm" in platform_version:
            return "CUDA not available: JAX's GPU is a ROCm device"
        return None

    def device(self, backend: str) -> str:
        return "cpu" if backend == "cpu" else "gpu"

    def settle_s(self, backend: str) -> float:
        """On CPU, a jitted call's first 0.1-0.25 s after its compile run up to 2x slower
        (its median over 50 ms windows: 427 -> 218, 451 -> 229 us in fresh processes, for 1M
        floats); with a 0.1 s warm-up a case's p50 came out 236-333 us, with 0.25 s 219-236
        us against timeit's 226 (2026-11-26, a 2-core VM)."""
        return SETTLE_CPU_S if backend == "cpu" else 0.0

    def synchronizer(self, backend: str) -> SyncChoice:
        """JAX dispatches asynchronously on every device, the CPU included."""
        return BlockUntilReady()

    def _gpu(self) -> Any:
        """The GPU a case runs on: JAX's first, its default device on a GPU machine."""
        import jax

        return jax.devices("gpu")[0]

    def pci_bus_id(self, backend: str) -> str | None:
        """JAX gives no PCI address: the CUDA (or HIP) runtime's, for the device's ordinal
        (``local_hardware_id``); None where no runtime library answers."""
        if backend == "cpu":
            return None
        from kernbench.measure.backends import device_facts

        device = self._gpu()
        ordinal = getattr(device, "local_hardware_id", None)
        if ordinal is None:
            return None
        platform = str(getattr(device.client, "platform_version", "")).lower()
        return device_facts.runtime_bus_id(int(ordinal), hip="rocm" in platform)

    def resets_device_peak(self, backend: str) -> bool:
        """XLA's allocator has no public reset of ``peak_bytes_in_use``."""
        return backend == "cpu"

    def device_memory(self, backend: str, excluded_bytes: int = 0) -> dict[str, Any] | None:
        """The peak since the worker started (it cannot be reset), read after the case's
        setup and warm-up calls and before the L2 flush buffer is allocated: nothing of the
        buffer is in it, so nothing is subtracted (a subtraction would be wrong by any
        transient copy the flush made)."""
        if backend == "cpu":
            return None
        if excluded_bytes:
            raise ValueError("JAX's peak cannot be reset: read it before the flush buffer "
                             "exists instead of subtracting the buffer")
        stats = self._gpu().memory_stats() or {}
        if "peak_bytes_in_use" not in stats:
            return None
        return {"peak_mb": stats["peak_bytes_in_use"] / 2**20,
                "allocated_mb": stats.get("bytes_in_use", 0) / 2**20,
                "source": "jax Device.memory_stats() peak_bytes_in_use / bytes_in_use after "
                          "setup and the warm-up calls, before the L2 flush buffer was "
                          "allocated (JAX cannot reset its peak: it includes what the worker "
                          "allocated before the case)"}

    def gpu_clock(self, backend: str) -> GpuClock | None:
        if backend == "cpu":
            return None
        import jax

        from kernbench.measure.backends.other_gpu import JaxClock

        return JaxClock(jax.block_until_ready)

    def l2_flush(self, backend: str) -> Flush | None:
        if backend == "cpu":
            return None
        import jax
        import jax.numpy as jnp

        from kernbench.measure.backends.other_gpu import jax_flush

        return jax_flush(jax, jnp)

    def describe(self, backend: str) -> dict[str, Any]:
        import jax

        devices = jax.devices("cpu" if backend == "cpu" else "gpu")
        return {"framework": "jax", "device": self.device(backend), "jax_version": jax.__version__,
                "device_name": getattr(devices[0], "device_kind", str(devices[0]))}
