"""``kernbench.bench`` on a GPU: a function whose result (or inputs) live on a CUDA or ROCm
device is timed as ``kernbench run`` times a GPU case, in a GPU timing mode (``cold`` by
default: the L2 flushed before each call, a CUDA event pair around each call, no host
synchronise per call; see the README, GPU timing modes).

Timing such a function with the host clock around a device synchronise, as a CPU function is
timed, puts the launch and the synchronise into every figure: measured on an H100 in one
process, a 1,024-element add read 19.8 us against ``triton.testing.do_bench``'s 4.5 us, and a
4,096² bf16 matmul 223 us against 195 us (``benchmarks/bench_gpu.py`` prints both side by
side).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from itertools import islice
from typing import Any

from kernbench.measure.backends.base import PROBED_LEAVES, walk_leaves
from kernbench.results.model import ProtocolSettings

__all__ = ["gpu_target", "guess_gpu_framework", "measure_on_gpu", "off_timed_device"]


def gpu_target(*values: object) -> tuple[str, str] | None:
    """``(framework, backend)`` of the first GPU array among the leaves of `values` (a
    PyTorch CUDA/ROCm tensor, a CuPy array, a JAX array on a GPU), or None."""
    for value in values:
        for leaf in islice(walk_leaves(value), PROBED_LEAVES):
            found = _leaf_target(leaf)
            if found is not None:
                return found
    return None


def _leaf_target(leaf: object) -> tuple[str, str] | None:
    root = type(leaf).__module__.split(".")[0]
    if root == "torch" and getattr(leaf, "is_cuda", False) is True:
        version = getattr(sys.modules.get("torch"), "version", None)
        return "pytorch", "rocm" if getattr(version, "hip", None) else "cuda"
    if root == "cupy":
        return "cupy", "cuda"
    devices = getattr(leaf, "devices", None)
    if root in ("jax", "jaxlib") and callable(devices):
        platforms = {getattr(d, "platform", None) for d in devices()}
        if platforms & {"gpu", "cuda", "rocm"}:
            return "jax", "rocm" if "rocm" in platforms else "cuda"
    return None


def off_timed_device(*values: object) -> str | None:
    """Why a GPU array among `values` (its first leaves) is not on the device a GPU clock
    times (the current CUDA device; JAX's first GPU), or None: events recorded on device 0
    while the kernel runs on device 1 time an idle queue."""
    for value in values:
        for leaf in islice(walk_leaves(value), PROBED_LEAVES):
            found = _device_mismatch(leaf) if _leaf_target(leaf) is not None else None
            if found is not None:
                return found
    return None


def _device_mismatch(leaf: object) -> str | None:
    root = type(leaf).__module__.split(".")[0]
    if root == "torch":
        index, current = getattr(getattr(leaf, "device", None), "index", None), None
        cuda = getattr(sys.modules.get("torch"), "cuda", None)
        if cuda is not None and hasattr(cuda, "current_device"):
            current = cuda.current_device()
        if isinstance(index, int) and isinstance(current, int) and index != current:
            return (f"the arrays are on cuda:{index}, the current device is cuda:{current}: "
                    f"call torch.cuda.set_device({index}) first, or move them")
    if root == "cupy":
        index = getattr(getattr(leaf, "device", None), "id", None)
        current = getattr(sys.modules["cupy"].cuda.Device(), "id", None)
        if isinstance(index, int) and isinstance(current, int) and index != current:
            return (f"the arrays are on GPU {index}, the current device is GPU {current}: run "
                    f"it under `with cupy.cuda.Device({index}):`")
    if root in ("jax", "jaxlib"):
        jax = sys.modules.get("jax")
        mine = next(iter(leaf.devices()), None)  # type: ignore[attr-defined]
        first = jax.devices(mine.platform)[0] if jax is not None and mine is not None else None
        if mine is not None and first is not None and mine != first:
            return (f"the arrays are on {mine}, and kernbench times JAX's first GPU, {first}: "
                    f"put them there (jax.device_put)")
    return None


def guess_gpu_framework(backend: str) -> str:
    """The framework of a function said to run on `backend` whose arrays did not say which
    (it returns None and takes none): the one GPU framework this process has imported. With
    several imported (torch brought in by another library, say), waiting on the wrong one's
    queue would time an idle GPU: that is refused, never guessed."""
    from kernbench.errors import KernbenchError

    imported = [(module, framework) for module, framework in
                (("torch", "pytorch"), ("cupy", "cupy"), ("jax", "jax")) if module in sys.modules]
    if len(imported) == 1:
        return imported[0][1]
    both = "both" if len(imported) == 2 else "all"
    what = (f"{' and '.join(m for m, _ in imported)} are {both} imported, so which one's queue "
            "to wait for is not known" if imported else
            "no GPU framework (torch, cupy, jax) is imported: nothing says how to time it")
    raise KernbenchError(f"kernbench.bench: backend={backend!r}, but neither the function's "
                         f"result nor its arguments are GPU arrays, and {what}; return the "
                         "function's output array (or pass it one) so its framework is read "
                         "off it")


def measure_on_gpu(call: Callable[[], object], protocol: ProtocolSettings,
                   target: tuple[str, str], mode: str) -> tuple[dict[str, Any], object]:
    """`call` in GPU timing `mode` on `target`'s device, as a worker measures a GPU case
    (warm-up settled as the backend asks, the L2 flush buffer kept out of the memory figures):
    the facts ``kernbench.bench`` records, and the last call's result (waited for).

    On CUDA, blocks are guarded by NVML as a worker guards them
    (:class:`~kernbench.measure.metrics.gpu_state.ThrottleGuard`: heat and hardware slowdowns
    and low clocks are discarded and retaken; the power cap, a heavy kernel's steady state, is
    kept)."""
    from kernbench.errors import KernbenchError
    from kernbench.execution.measuring import DeviceMemory, case_nvml, settled
    from kernbench.measure.backends import backend_for
    from kernbench.measure.gpu_record import gpu_timing_raw, missing_figure
    from kernbench.measure.gpu_session import AllBlocksDiscarded, measure_gpu

    framework, name = target
    backend = backend_for(framework)
    refusal = backend.unavailable_reason(name)
    clock = backend.gpu_clock(name) if refusal is None else None
    if clock is None:  # never time a GPU function with a clock that cannot see its device
        raise KernbenchError(f"kernbench.bench: backend={name!r} ({framework}): "
                             f"{refusal or 'no GPU clock for it'}")
    memory = DeviceMemory(backend, name, gpu=True, wanted=True)
    nvml = case_nvml(backend, name)
    guard = nvml.guard() if nvml is not None else None
    try:
        run = measure_gpu(call, clock, memory.start(), settled(protocol, backend.settle_s(name)),
                          mode, guard)
    except AllBlocksDiscarded as exc:
        raise KernbenchError(f"kernbench.bench: {exc}") from None
    finally:
        if guard is not None:
            guard.close()
    outcome = run.outcome
    m = outcome.measurement
    untimed = missing_figure(gpu_timing_raw(outcome, mode))
    if untimed is not None:  # an "ok" result of no sample would be a baseline of nothing
        raise KernbenchError(f"kernbench.bench: {untimed}")
    return {"samples_ms": [s / 1e6 for s in m.samples_ns], "inner_loops": m.inner_loops,
            "warmup_ms": [s / 1e6 for s in m.warmup_ns], "warmup_s": m.warmup_s,
            "timer": m.timer, "timer_overhead_ns": m.timer_overhead_ns,
            "memory": dict(memory.end() or {}), "gpu_timing": gpu_timing_raw(outcome, mode),
            "l2_flush": memory.flush is not None,
            "device": backend.device(name)}, outcome.last_result
