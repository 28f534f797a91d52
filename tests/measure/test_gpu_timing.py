"""Tests for kernbench.measure.gpu_timing on the FIFO stream simulator (tests/support/fake_cuda):
every mode's figure is asserted exactly from the simulator's fixed costs."""

from __future__ import annotations

import pytest

from kernbench.analysis.gpu_summary import gpu_timing_summary
from kernbench.measure.backends.torch_gpu import TorchCudaClock, l2_flush
from kernbench.measure.gpu_record import gpu_timing_raw, missing_figure
from kernbench.measure.gpu_session import loops_for, time_gpu, warm_up_gpu
from kernbench.measure.gpu_timing import COLD_BLOCK_CALLS, Session
from kernbench.results.model import ProtocolSettings
from support.fake_cuda import FakeDevice, fake_torch
from support.gpus import torch_has_cuda

KERNEL_NS, LAUNCH_NS, SYNC_NS = 3_000.0, 5_000.0, 8_000.0
SETTINGS = ProtocolSettings(warmup=2, iterations=4, warmup_time_s=0.0)


def session(device: FakeDevice, loops: int = 100, profiler: bool = True,
            flush: bool = True, **kwargs: object) -> Session:
    torch = fake_torch(device, profiler=profiler)
    return Session(device.kernel(KERNEL_NS), TorchCudaClock(torch),
                   l2_flush(torch) if flush else None, SETTINGS.iterations, loops,
                   **kwargs)  # type: ignore[arg-type]


def medians_us(mode: str, device: FakeDevice | None = None, **kwargs: object) -> dict[str, float]:
    device = device or FakeDevice(LAUNCH_NS, SYNC_NS)
    outcome = time_gpu(session(device, **kwargs), mode, (), 0.0)  # type: ignore[arg-type]
    raw = gpu_timing_raw(outcome, mode)
    return {name: sorted(m["samples_us"])[len(m["samples_us"]) // 2]
            for name, m in raw["modes"].items()}


def test_the_issue_figures_kernel_3_launch_5_sync_8() -> None:
    """sync shows launch + kernel + sync, hot the launch rate, the rest the kernel alone."""
    assert medians_us("all") == {"cold": 3.0, "hot": 5.0, "graph": 3.0, "graph_cold": 3.0,
                                 "kernel": 3.0, "sync": 16.0, "kernel_sync_flush": 3.0}


def test_launch_overhead_compares_sync_with_the_kernels_under_its_own_flush() -> None:
    """A kernel 2 us slower right after a flush: `kernel` (flushed before every call) shows
    5 us, `sync` (flushed once per sample of 100 calls) 16.02; the launch overhead subtracts
    the kernels' time under sync's flush (3.02), which leaves launch + sync, 13 us exactly."""
    device = FakeDevice(LAUNCH_NS, SYNC_NS, cold_ns=2_000.0)
    raw = gpu_timing_raw(time_gpu(session(device), "all", (), 0.0), "all")
    medians = {name: m["samples_us"][0] for name, m in raw["modes"].items()}
    assert medians["kernel"] == 5.0 and medians["sync"] == 16.02
    assert medians["kernel_sync_flush"] == 3.02
    assert raw["modes"]["kernel_sync_flush"]["flush"]["per"] == "sample"
    assert raw["modes"]["sync"]["flush"]["per"] == "sample"
    summary = gpu_timing_summary(raw)
    assert summary["launch_overhead_us"] == pytest.approx(LAUNCH_NS / 1e3 + SYNC_NS / 1e3)
    assert summary["launch_overhead_reason"] is None


@pytest.mark.parametrize("mode", ["cold", "hot", "graph", "kernel", "sync"])
def test_each_mode_alone_gives_the_same_figure_as_in_all(mode: str) -> None:
    expected = {"cold": 3.0, "hot": 5.0, "graph": 3.0, "kernel": 3.0, "sync": 16.0}[mode]
    assert medians_us(mode)[mode] == expected


def test_a_kernel_longer_than_its_launch_is_kernel_bound_when_hot() -> None:
    device = FakeDevice(launch_ns=2_000.0, sync_ns=SYNC_NS)
    outcome = time_gpu(session(device), "hot", (), 0.0)
    assert set(outcome.primary.samples_ns) == {KERNEL_NS}


def test_cold_synchronises_once_per_block_never_per_call() -> None:
    device = FakeDevice(LAUNCH_NS, SYNC_NS)
    run = session(device, loops=1000)
    outcome = time_gpu(run, "cold", (), 0.0)
    assert outcome.primary.calls_per_sample == COLD_BLOCK_CALLS
    # One per block; then one for the last result and one reading the marks' own overhead.
    assert device.log.count("sync") == SETTINGS.iterations + 2
    assert device.log.count("flush") == SETTINGS.iterations * COLD_BLOCK_CALLS + 11  # + probes
    assert outcome.measurement.timer_overhead_ns == 0.0  # an event pair costs nothing queued
    assert outcome.primary.flush_per == "call"
    assert outcome.flush_bytes == 2 * device.l2_bytes


def test_cold_without_a_flush_says_so() -> None:
    outcome = time_gpu(session(FakeDevice(LAUNCH_NS, SYNC_NS), flush=False), "cold", (), 0.0)
    raw = gpu_timing_raw(outcome, "cold")["modes"]["cold"]
    assert raw["flush"] == {"bytes": None, "per": "none"}


def test_a_failed_capture_falls_back_to_hot_and_says_why() -> None:
    device = FakeDevice(LAUNCH_NS, SYNC_NS)
    torch = fake_torch(device)
    kernel = device.kernel(KERNEL_NS)

    def syncs_inside() -> object:
        kernel()
        torch.cuda.synchronize()  # a host sync in the kernel: not capturable
        return None

    run = Session(syncs_inside, TorchCudaClock(torch), l2_flush(torch), 3, 10)
    raw = gpu_timing_raw(time_gpu(run, "graph", (), 0.0), "graph")
    graph = raw["modes"]["graph"]
    assert graph["mode"] == "hot" and graph["requested_mode"] == "graph"
    assert graph["reason"] == ("graph capture failed: RuntimeError: operation not permitted "
                               "when stream is capturing; measured in hot mode instead")
    assert raw["modes"]["graph_cold"]["mode"] == "cold"
    assert raw["primary"] == "graph"


def test_in_all_a_mode_that_cannot_be_measured_is_null_with_the_reason() -> None:
    raw = gpu_timing_raw(time_gpu(session(FakeDevice(LAUNCH_NS, SYNC_NS), profiler=False),
                                  "all", (), 0.0), "all")
    kernel = raw["modes"]["kernel"]
    assert kernel["samples_us"] == [] and kernel["requested_mode"] is None
    assert kernel["reason"].startswith("torch.profiler failed: AttributeError")
    assert kernel["reason"].endswith("; no figure")
    assert raw["modes"]["cold"]["samples_us"] == [3.0] * SETTINGS.iterations


def test_kernel_mode_alone_without_a_profiler_is_null_with_the_reason() -> None:
    """As under ``all``: the kernels' device time is never stood in for by another mode."""
    raw = gpu_timing_raw(time_gpu(session(FakeDevice(LAUNCH_NS, SYNC_NS), profiler=False),
                                  "kernel", (), 0.0), "kernel")
    kernel = raw["modes"]["kernel"]
    assert kernel["mode"] == "kernel" and kernel["requested_mode"] is None
    assert kernel["reason"].startswith("torch.profiler failed: AttributeError")
    assert kernel["reason"].endswith("; no figure")
    assert kernel["samples_us"] == [] and kernel["flush"] == {"bytes": None, "per": "none"}
    assert missing_figure(raw) == f"not timed: kernel mode: {kernel['reason']}"
    assert missing_figure(gpu_timing_raw(time_gpu(session(FakeDevice(LAUNCH_NS, SYNC_NS)),
                                                  "kernel", (), 0.0), "kernel")) is None


class EverySecondBlock:
    """A throttle guard that finds every second block throttled (by `reason`)."""

    def __init__(self, reason: str = "SwPowerCap") -> None:
        self.blocks = 0
        self.reason = reason

    def begin(self) -> None:
        self.blocks += 1

    def end(self) -> str | None:
        return f"throttled: {self.reason}" if self.blocks % 2 == 0 else None


def test_throttled_blocks_are_discarded_counted_and_retaken() -> None:
    run = session(FakeDevice(LAUNCH_NS, SYNC_NS), guard=EverySecondBlock())
    raw = gpu_timing_raw(time_gpu(run, "hot", (), 0.0), "hot")["modes"]["hot"]
    assert len(raw["samples_us"]) == SETTINGS.iterations
    assert raw["discarded_blocks"] == SETTINGS.iterations - 1
    assert raw["discard_reasons"] == {"throttled: SwPowerCap": SETTINGS.iterations - 1}


def test_warmup_estimate_sets_the_calls_per_sample() -> None:
    device = FakeDevice(LAUNCH_NS, SYNC_NS)
    run = session(device)
    times, fastest = warm_up_gpu(run.call, run.clock, SETTINGS)
    assert times == [LAUNCH_NS + KERNEL_NS] * SETTINGS.warmup  # the device waited on the launch
    assert loops_for(fastest, SETTINGS) == 125  # 1 ms / 8 us


def test_the_last_result_is_waited_for() -> None:
    device = FakeDevice(LAUNCH_NS, SYNC_NS)
    time_gpu(session(device), "hot", (), 0.0)
    assert device.log[-1] == "sync" and device.host_ns >= device.free_ns


# --- a kernel with an untimed per-call reset (4 us of device work, one more 5 us launch) -----

RESET_NS = 4_000.0
BACK_TO_BACK = ("cannot be timed in {mode} mode: one {held} holds N calls back to back, with "
                "no untimed place for the reset between them; no figure")


def with_reset(mode: str, device: FakeDevice) -> dict[str, dict[str, object]]:
    run = session(device, reset=device.kernel(RESET_NS, name="reset"))
    return gpu_timing_raw(time_gpu(run, mode, (), 0.0), mode)["modes"]


def test_a_reset_is_in_no_figure_and_back_to_back_modes_are_null_with_the_reason() -> None:
    """cold and kernel show the kernel alone, sync launch + kernel + sync as without a reset;
    hot, graph and graph_cold cannot put the reset between their calls: null, and why."""
    modes = with_reset("all", FakeDevice(LAUNCH_NS, SYNC_NS))
    assert {name: m["samples_us"] for name, m in modes.items()} == {
        "cold": [3.0] * 4, "kernel": [3.0] * 4, "sync": [16.0] * 4,
        "kernel_sync_flush": [3.0] * 4, "hot": [], "graph": [], "graph_cold": []}
    for mode, held in (("hot", "event pair"), ("graph", "graph replay"),
                       ("graph_cold", "graph replay")):
        assert modes[mode]["mode"] == mode and modes[mode]["requested_mode"] is None
        assert modes[mode]["reason"] == "a kernel with a `reset` " + BACK_TO_BACK.format(
            mode=mode, held=held)
    summary = gpu_timing_summary({"requested": "all", "primary": "cold", "modes": modes})
    assert summary["launch_overhead_us"] == pytest.approx(13.0)


def test_the_flush_follows_the_reset_so_the_call_meets_a_cold_l2() -> None:
    """A kernel 2 us slower after a flush: with a reset, every figure is the one without
    (cold and kernel 5, sync 16.02, kernel_sync_flush 3.02): the reset never takes the cold
    L2 in the call's place."""
    modes = with_reset("all", FakeDevice(LAUNCH_NS, SYNC_NS, cold_ns=2_000.0))
    assert {name: m["samples_us"][0] for name, m in modes.items() if m["samples_us"]} == {
        "cold": 5.0, "kernel": 5.0, "sync": 16.02, "kernel_sync_flush": 3.02}


@pytest.mark.parametrize("mode", ["cold", "kernel", "sync"])
def test_each_mode_alone_with_a_reset_resets_before_every_call(mode: str) -> None:
    device = FakeDevice(LAUNCH_NS, SYNC_NS)
    modes = with_reset(mode, device)
    assert set(modes[mode]["samples_us"]) == {{"sync": 16.0}.get(mode, 3.0)}  # type: ignore[arg-type]
    launched = [e for e in device.log if e in ("reset", "kernel")]
    assert launched == ["reset", "kernel"] * (len(launched) // 2)
    last = len(device.log) - 1 - device.log[::-1].index("kernel")  # the call checked after:
    assert device.log[last - 1:last + 2] == ["reset", "kernel", "sync"]  # on a restored input


def test_cold_with_a_reset_still_synchronises_once_per_block() -> None:
    device = FakeDevice(LAUNCH_NS, SYNC_NS)
    run = session(device, loops=1000, reset=device.kernel(RESET_NS, name="reset"))
    outcome = time_gpu(run, "cold", (), 0.0)
    assert device.log.count("sync") == SETTINGS.iterations + 2  # as without a reset
    assert device.log[:3] == ["reset", "flush", "kernel"]
    assert device.log.count("reset") == SETTINGS.iterations * COLD_BLOCK_CALLS + 1
    assert set(outcome.primary.samples_ns) == {KERNEL_NS}


@pytest.mark.parametrize(("mode", "held"), [("hot", "event pair"), ("graph", "graph replay")])
def test_a_back_to_back_mode_alone_with_a_reset_is_not_timed_with_the_reason(
        mode: str, held: str) -> None:
    """As ``kernel`` without a profiler: no other mode stands in (graph does not fall back)."""
    device = FakeDevice(LAUNCH_NS, SYNC_NS)
    run = session(device, reset=device.kernel(RESET_NS, name="reset"))
    raw = gpu_timing_raw(time_gpu(run, mode, (), 0.0), mode)
    assert {name: m["samples_us"] for name, m in raw["modes"].items()} == \
        ({"hot": []} if mode == "hot" else {"graph": [], "graph_cold": []})
    reason = "a kernel with a `reset` " + BACK_TO_BACK.format(mode=mode, held=held)
    assert missing_figure(raw) == f"not timed: {mode} mode: {reason}"
    assert "replay" not in device.log and device.log.count("kernel") == 1  # the checked call


def test_throttled_blocks_with_a_reset_are_discarded_and_retaken() -> None:
    device = FakeDevice(LAUNCH_NS, SYNC_NS)
    run = session(device, reset=device.kernel(RESET_NS, name="reset"),
                  guard=EverySecondBlock("HwSlowdown"))
    raw = gpu_timing_raw(time_gpu(run, "cold", (), 0.0), "cold")["modes"]["cold"]
    assert raw["samples_us"] == [3.0] * SETTINGS.iterations
    assert raw["discard_reasons"] == {"throttled: HwSlowdown": SETTINGS.iterations - 1}


def test_warmup_waits_for_the_reset_outside_each_timed_call() -> None:
    device = FakeDevice(LAUNCH_NS, SYNC_NS)
    run = session(device)
    times, fastest = warm_up_gpu(run.call, run.clock, SETTINGS,
                                 device.kernel(RESET_NS, name="reset"))
    assert times == [LAUNCH_NS + KERNEL_NS] * SETTINGS.warmup  # as without a reset
    assert loops_for(fastest, SETTINGS) == 125
    assert device.log == ["reset", "sync", "kernel", "sync"] * SETTINGS.warmup


@pytest.mark.gpu
@pytest.mark.skipif(not torch_has_cuda(), reason="needs a CUDA device")
def test_real_cuda_modes_keep_their_order() -> None:
    """On a real GPU, a 1,024-element add: the host sync per call shows in `sync`, and the
    device time in `cold` and `graph` is below the launch-bound `hot` rate."""
    import statistics

    import torch

    from kernbench.measure.gpu_session import measure_gpu

    x, y = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    run = measure_gpu(lambda: torch.add(x, y), TorchCudaClock(torch), l2_flush(torch),
                      ProtocolSettings(warmup=3, iterations=5, warmup_time_s=0.05), "all")
    medians = {r.mode: statistics.median(r.samples_ns) for r in run.outcome.modes
               if r.samples_ns and r.requested is None}
    assert medians["sync"] > medians["hot"] > 0
    assert medians["cold"] < medians["sync"]
    assert medians["graph"] < medians["sync"]
