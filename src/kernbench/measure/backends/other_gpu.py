"""CuPy's and JAX's side of the GPU timing modes, in the same vocabulary as PyTorch's.

* CuPy: CUDA events on the stream the timed work runs on (the current stream; a graph's
  replays run on their non-blocking capture stream, which the default stream does not wait
  for, so their marks are recorded there), stream capture into a graph (CuPy >= 13), no
  per-call profiler (``kernel`` has no figure, with the reason), the flush a fill of a
  buffer twice the device's last-level cache (``l2CacheSize`` from the runtime's device
  properties, or a ROCm part's Infinity Cache by its ``gcnArchName``).
* JAX: no events, so marks are the host clock after ``block_until_ready``: ``hot`` is N
  dispatches then one ``block_until_ready``, divided by N; ``cold`` waits for a jitted write
  of the flush buffer (donated, so no second buffer lives), then times one call and its wait,
  so a JAX ``cold`` figure includes dispatch and wait latency. No CUDA-graph capture (XLA
  compiles the jitted function into its own graph; ``graph`` falls back to ``hot``) and no
  per-call device time (``kernel`` has no figure, with the reason). A kernel's ``reset`` is
  waited for through the flush queued after it (or through its own result, without a flush).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernbench.measure.backends.device_facts import LARGEST_LAST_LEVEL_CACHE, flush_bytes
from kernbench.measure.gpu_timing import CaptureFailed, Flush, ProfilerUnavailable

JAX_FLUSH_BYTES = max(512 * 2**20, 2 * LARGEST_LAST_LEVEL_CACHE)
"""JAX reports no cache size: a buffer at least twice the largest last-level GPU cache known
(MI300X's 256 MB Infinity Cache) is flushed instead, and the record says how many bytes."""


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


@dataclass(frozen=True)
class Replayed:
    """What a CuPy graph replay returns: the stream its work was queued on."""

    stream: Any


class CupyClock:
    """CUDA events through CuPy; a device synchronise waits."""

    name = "cuda_event"

    def __init__(self, cupy_module: Any) -> None:
        self._cp = cupy_module
        self._graphs: list[Any] = []

    def mark(self) -> object:
        event = self._cp.cuda.Event()
        event.record()  # on the current stream
        return event

    def mark_after(self, result: object) -> object:
        """A replay's work is on its capture stream: the event goes there, behind it."""
        if not isinstance(result, Replayed):
            return self.mark()
        event = self._cp.cuda.Event()
        event.record(result.stream)
        return event

    def wait(self, result: object) -> None:
        self.synchronize()

    def synchronize(self) -> None:
        self._cp.cuda.Device().synchronize()

    def elapsed_ns(self, start: object, end: object) -> float:
        return float(self._cp.cuda.get_elapsed_time(start, end)) * 1e6

    def capture(self, body: Callable[[], object]) -> Callable[[], object]:
        stream = self._cp.cuda.Stream(non_blocking=True)
        try:
            with stream:
                body()
                stream.synchronize()
                stream.begin_capture()
                try:
                    body()
                finally:
                    graph = stream.end_capture()
        except Exception as exc:
            raise CaptureFailed(_describe(exc)) from exc
        self._graphs.append((graph, stream))

        def replay() -> object:
            graph.launch(stream)
            return Replayed(stream)
        return replay

    def kernel_times_ns(self, call: Callable[[], object], before: Callable[[], object] | None,
                        count: int) -> list[float]:
        raise ProfilerUnavailable("CuPy has no per-call device-time profiler here (use "
                                  "PyTorch's torch.profiler, or nsys)")


def cupy_flush(cupy_module: Any) -> Flush | None:
    """A fill of a buffer twice the device's last-level cache: its L2, or on ROCm the Infinity
    Cache known by ``gcnArchName``; None where neither size is known."""
    device = cupy_module.cuda.Device()
    props = cupy_module.cuda.runtime.getDeviceProperties(device.id)
    size = flush_bytes(int(props.get("l2CacheSize", 0) or 0), props.get("gcnArchName"))
    if size <= 0:
        return None
    buffer = cupy_module.empty(size, dtype=cupy_module.uint8)

    def run() -> object:
        buffer.fill(0)
        return None
    return Flush(bytes=size, run=run)


class JaxClock:
    """The host clock, read after ``block_until_ready``."""

    name = "block_until_ready"

    def __init__(self, block: Callable[[object], object],
                 now: Callable[[], int] = time.perf_counter_ns) -> None:
        self._block, self._now = block, now

    def mark(self) -> object:
        return self._now()

    def mark_after(self, result: object) -> object:
        if result is not None:
            self._block(result)
        return self._now()

    def wait(self, result: object) -> None:
        if result is not None:
            self._block(result)

    def synchronize(self) -> None:
        return None  # every mark after a result already waited for it

    def elapsed_ns(self, start: object, end: object) -> float:
        assert isinstance(start, int) and isinstance(end, int)
        return float(end - start)

    def capture(self, body: Callable[[], object]) -> Callable[[], object]:
        raise CaptureFailed("JAX has no CUDA-graph capture here (XLA compiles a jitted "
                            "function into its own graph)")

    def kernel_times_ns(self, call: Callable[[], object], before: Callable[[], object] | None,
                        count: int) -> list[float]:
        raise ProfilerUnavailable("JAX's profiler writes traces, not per-call device times")


def jax_flush(jax_module: Any, jnp: Any) -> Flush:
    """A jitted write of every byte of a donated buffer (no second buffer is ever live)."""
    touch = jax_module.jit(lambda b: b + 1, donate_argnums=0)
    state = {"buffer": jnp.zeros(JAX_FLUSH_BYTES, dtype=jnp.uint8)}

    def run() -> object:
        state["buffer"] = touch(state["buffer"])
        return state["buffer"]
    return Flush(bytes=JAX_FLUSH_BYTES, run=run)
