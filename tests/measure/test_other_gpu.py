"""Tests for kernbench.measure.backends.other_gpu: CuPy and JAX in the same timing modes as
PyTorch, on the FIFO stream simulator (kernel 3 us, launch 5 us, sync 8 us)."""

from __future__ import annotations

from kernbench.measure.backends.other_gpu import CupyClock, JaxClock, cupy_flush
from kernbench.measure.gpu_record import gpu_timing_raw
from kernbench.measure.gpu_session import time_gpu
from kernbench.measure.gpu_timing import Flush, Session
from support.fake_cuda import FakeArray, FakeDevice, fake_cupy, jax_kernel

KERNEL_NS = 3_000.0


def figures(raw: dict[str, object]) -> dict[str, tuple[str, set[float]]]:
    modes = raw["modes"]
    assert isinstance(modes, dict)
    return {name: (m["mode"], set(m["samples_us"])) for name, m in modes.items()}


def test_cupy_gives_the_same_figures_as_pytorch() -> None:
    device = FakeDevice(launch_ns=5_000.0, sync_ns=8_000.0)
    cupy = fake_cupy(device)
    run = Session(device.kernel(KERNEL_NS), CupyClock(cupy), cupy_flush(cupy), 3, 100)
    raw = gpu_timing_raw(time_gpu(run, "all", (), 0.0), "all")
    assert figures(raw) == {"cold": ("cold", {3.0}), "hot": ("hot", {5.0}),
                            "graph": ("graph", {3.0}), "graph_cold": ("graph_cold", {3.0}),
                            "kernel": ("kernel", set()), "sync": ("sync", {16.0}),
                            "kernel_sync_flush": ("kernel_sync_flush", set())}
    modes = raw["modes"]
    assert isinstance(modes, dict)
    assert modes["kernel"]["reason"].startswith("CuPy has no per-call device-time profiler")
    assert modes["kernel"]["reason"].endswith("; no figure")  # cold is measured on its own


def test_cupy_graph_marks_are_on_the_stream_the_replays_run_on() -> None:
    """Replays run on the non-blocking capture stream, which is not ordered with the default
    stream: a mark there would not wait for them (the simulator then shows 0.05 us)."""
    device = FakeDevice(launch_ns=5_000.0, sync_ns=8_000.0)
    cupy = fake_cupy(device)
    clock = CupyClock(cupy)
    run = Session(device.kernel(KERNEL_NS), clock, None, 3, 100)
    raw = gpu_timing_raw(time_gpu(run, "graph", (), 0.0), "graph")
    assert figures(raw) == {"graph": ("graph", {3.0})}
    ((_, stream),) = clock._graphs  # the replay stream
    pairs = [e for e in cupy.events if e.stream is not None]
    assert len(pairs) == 2 * 3 and all(e.stream is stream for e in pairs)
    assert {e.stream for e in cupy.events} == {None, stream}  # the mark-overhead probe


def test_jax_hot_is_n_dispatches_then_one_block_until_ready() -> None:
    device = FakeDevice(launch_ns=5_000.0, sync_ns=8_000.0)

    def flush_run() -> object:
        device.launch(20_000.0, name="flush")
        return FakeArray(device)

    clock = JaxClock(lambda array: array.block_until_ready(),  # type: ignore[attr-defined]
                     now=lambda: int(device.host_ns))
    run = Session(jax_kernel(device, KERNEL_NS), clock, Flush(512, flush_run), 3, 100)
    raw = gpu_timing_raw(time_gpu(run, "all", (), 0.0), "all")
    found = figures(raw)
    # hot: 100 dispatches (5 us each), the last kernel (3 us), one wait (8 us): 511 us / 100.
    assert found["hot"] == ("hot", {5.11})
    # cold and sync wait for each call on the host: dispatch + kernel + wait.
    assert found["cold"] == ("cold", {16.0})
    assert found["sync"] == ("sync", {16.0})
    # No CUDA-graph capture and no per-call device time in JAX: null, with the reason.
    assert found["graph"] == ("graph", set())
    assert found["graph_cold"] == ("graph_cold", set())
    assert found["kernel"] == ("kernel", set())
    assert found["kernel_sync_flush"] == ("kernel_sync_flush", set())
    modes = raw["modes"]
    assert isinstance(modes, dict)
    assert modes["graph"]["reason"].startswith("graph capture failed: JAX has no CUDA-graph")


def test_jax_graph_alone_falls_back_to_hot_and_says_so() -> None:
    device = FakeDevice(launch_ns=5_000.0, sync_ns=8_000.0)
    clock = JaxClock(lambda array: array.block_until_ready(),  # type: ignore[attr-defined]
                     now=lambda: int(device.host_ns))
    run = Session(jax_kernel(device, KERNEL_NS), clock, None, 3, 100)
    raw = gpu_timing_raw(time_gpu(run, "graph", (), 0.0), "graph")
    assert figures(raw) == {"graph": ("hot", {5.11})}
