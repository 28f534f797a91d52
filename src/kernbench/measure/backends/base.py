"""The backend interface and the CPU-only backend (NumPy, plain Python, Numba)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from itertools import islice
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from kernbench.measure.protocol import (
    PerfCounterTimer,
    SyncChoice,
    SyncFromResult,
    Synchronizer,
    Timer,
)
from kernbench.results.vocabulary import BACKEND_LABELS, DTYPE_NAMES

if TYPE_CHECKING:
    from kernbench.measure.gpu_timing import Flush, GpuClock

DtypeTable = Mapping[str, tuple[str, str]]
"""Canonical precision -> (module, attribute) of a framework's dtype for it."""

def dtypes_in(module: str, precisions: tuple[str, ...] | None = None) -> DtypeTable:
    """A dtype table for a framework whose `module` names its dtypes the NumPy way (all of
    them, or only `precisions`)."""
    chosen = precisions or tuple(DTYPE_NAMES)
    return MappingProxyType({p: (module, DTYPE_NAMES[p]) for p in chosen})

PROBED_LEAVES = 16
"""How many leaves of a first result :func:`sync_for_result` looks at (and
:func:`kernbench.api.gpu.gpu_target` of a result or the arguments)."""


def label(backend: str) -> str:
    """How a device kind is written in messages ("ROCm", not "ROCM")."""
    return BACKEND_LABELS.get(backend, backend)


def walk_leaves(value: object, depth: int = 0) -> Iterator[object]:
    """Leaves of a result that may be nested in tuples, lists and dicts (bounded depth),
    lazily: a caller that needs only the first few never walks a long list."""
    if depth > 8:
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from walk_leaves(item, depth + 1)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from walk_leaves(item, depth + 1)
    else:
        yield value


def wait_for_result(result: object) -> None:
    """Block on every leaf that is an asynchronous array (JAX: ``block_until_ready``). For
    untimed waits only (a reference output, a profile): it walks the whole result."""
    for leaf in walk_leaves(result):
        block = getattr(leaf, "block_until_ready", None)
        if callable(block):
            block()


class BlockUntilReady:
    """JAX's wait: ``jax.block_until_ready`` on the result (its own pytree walk, in C++), or
    the array's own method when the result is one array."""

    def synchronize(self, result: object) -> None:
        block = getattr(result, "block_until_ready", None)
        if callable(block):
            block()
        elif "jax" in sys.modules:
            sys.modules["jax"].block_until_ready(result)
        else:
            wait_for_result(result)


def sync_for_result(result: object) -> Synchronizer | None:
    """The wait a result needs, judged from its first few leaves: JAX-style arrays get
    ``block_until_ready``, CUDA tensors a device synchronise, anything else none."""
    for leaf in islice(walk_leaves(result), PROBED_LEAVES):
        if callable(getattr(leaf, "block_until_ready", None)):
            return BlockUntilReady()
        if getattr(leaf, "is_cuda", False) is True and "torch" in sys.modules:
            from kernbench.measure.backends.torch_backend import TorchDeviceSync

            return TorchDeviceSync(sys.modules["torch"])
        if type(leaf).__module__.startswith("cupy") and "cupy" in sys.modules:
            from kernbench.measure.backends.cupy_backend import CupyStreamSync

            return CupyStreamSync(sys.modules["cupy"])
    return None


class Backend:
    """Interface: one framework's view of the device kinds."""

    framework = "python"
    DTYPES: ClassVar[DtypeTable] = MappingProxyType({})
    """The framework's dtypes, by canonical precision; a precision left out has none."""

    def prepare_precision(self, precision: str) -> None:
        """Make the framework able to compute in `precision` before its dtype is handed out."""
        return None

    def prepare_device(self, backend: str) -> None:
        """Make `backend` the framework's default device before the kernel is imported, where
        the framework would otherwise pick another (JAX puts arrays on a GPU when it sees one)."""
        return None

    def unavailable_reason(self, backend: str) -> str | None:
        """None when `backend` can run here, else why not (the case is then skipped)."""
        raise NotImplementedError

    def device(self, backend: str) -> str:
        """The device string handed to kernels that take `device`."""
        return backend

    def synchronizer(self, backend: str) -> SyncChoice:
        """How each timed call is waited for. By default: decided from the first result, so a
        synchronous result costs nothing and an asynchronous one is still waited for."""
        return SyncFromResult(sync_for_result)

    def timer(self, backend: str) -> Timer:
        return PerfCounterTimer()

    def settle_s(self, backend: str) -> float:
        """The least warm-up, in seconds, the framework needs on `backend` to reach its steady
        speed; a run's ``warmup_time_s`` below it is raised to it (unless warm-up is off)."""
        return 0.0

    def describe(self, backend: str) -> dict[str, Any]:
        """Facts about the device for the record (name, versions)."""
        return {"framework": self.framework, "device": self.device(backend)}

    def reset_device_memory(self, backend: str) -> None:
        """Reset the device allocator's peak counters before a case (GPU backends)."""
        return None

    def resets_device_peak(self, backend: str) -> bool:
        """False where the device allocator's peak cannot be reset (JAX): a GPU case's memory
        is then read after its warm-up, before the L2 flush buffer is allocated, so the
        buffer is never counted as the kernel's."""
        return True

    def device_memory(self, backend: str, excluded_bytes: int = 0) -> dict[str, Any] | None:
        """Device allocator figures after a case: {peak_mb, allocated_mb, source}, or None.
        `excluded_bytes` (the L2 flush buffer, live all along) is not the kernel's."""
        return None

    def gpu_clock(self, backend: str) -> GpuClock | None:
        """Marks on the device's timeline for the GPU timing modes; None: not a GPU case (it
        is timed by the protocol of :mod:`kernbench.measure.protocol`)."""
        return None

    def l2_flush(self, backend: str) -> Flush | None:
        """The buffer and write that evict the device's L2 cache; None where unknown."""
        return None

    def pci_bus_id(self, backend: str) -> str | None:
        """The PCI address of the device the case runs on (NVML's spelling), if known."""
        return None


class CpuOnlyBackend(Backend):
    """Frameworks that compute on the CPU only."""

    def __init__(self, framework: str) -> None:
        self.framework = framework

    def unavailable_reason(self, backend: str) -> str | None:
        if backend == "cpu":
            return None
        return f"{self.framework} kernels run on the CPU only; backend {backend!r} does not apply"
