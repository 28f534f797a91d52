#!/usr/bin/env python3
"""What NVML says of one CUDA GPU's clocks under different loads, read from one process.

For ``--seconds`` per phase (idle; 1,024-element adds synchronised one by one; the adds in
bursts of 200; 4,096 x 4,096 bf16 matmuls; idle again right after them), a thread reads
NVML's clocks-event ("throttle") reasons, the SM clock and the board power every 20 ms. It
prints, per phase, how many reads had each reason bitmask, and the median and extremes of
the clock and the power.

This is the evidence behind kernbench's throttle guard (``ThrottleGuard`` in
``kernbench.measure.metrics.gpu_state``): which reasons are a kernel's own steady state (the
power cap of a heavy matmul) and which linger after the load that set them. Without a CUDA
GPU, PyTorch or pynvml it says so and exits with status 2.

    python benchmarks/gpu_clock_reasons.py [--seconds 2]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

READ_EVERY_S = 0.02


def missing() -> str | None:
    """Why this machine cannot run the script, or None."""
    try:
        import pynvml
        import torch
    except ImportError as exc:
        return f"{exc.name} is not installed"
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False"
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return f"NVML cannot start: {exc}"
    return None


def phases(torch: Any) -> dict[str, Callable[[], object]]:
    x, y = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)

    def burst() -> None:
        for _ in range(200):
            torch.add(x, y)
        torch.cuda.synchronize()

    def each() -> None:
        torch.add(x, y)
        torch.cuda.synchronize()

    def matmul() -> None:
        a @ a
        torch.cuda.synchronize()

    return {"idle": lambda: time.sleep(0.0005), "add_each": each, "add_burst": burst,
            "matmul_bf16_4k": matmul, "idle_after": lambda: time.sleep(0.0005)}


def reader(nvml: Any, handle: Any, stop: threading.Event, reads: list[tuple[int, int, float]]
           ) -> None:
    reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) \
        or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    while not stop.is_set():
        reads.append((reasons(handle), nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
                      nvml.nvmlDeviceGetPowerUsage(handle) / 1000))
        time.sleep(READ_EVERY_S)


def run_phase(nvml: Any, handle: Any, work: Callable[[], object], seconds: float
              ) -> list[tuple[int, int, float]]:
    reads: list[tuple[int, int, float]] = []
    stop = threading.Event()
    thread = threading.Thread(target=reader, args=(nvml, handle, stop, reads))
    thread.start()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        work()
    stop.set()
    thread.join()
    return reads


def line(name: str, reads: list[tuple[int, int, float]]) -> str:
    masks = collections.Counter(f"{mask:#x}" for mask, _, _ in reads)
    clocks, power = [c for _, c, _ in reads], [p for _, _, p in reads]
    return (f"| {name} | {len(reads)} | "
            + ", ".join(f"{mask}: {n}" for mask, n in masks.most_common())
            + f" | {statistics.median(clocks):.0f} MHz ({min(clocks)}-{max(clocks)}) | "
            f"{statistics.median(power):.0f} W ({min(power):.0f}-{max(power):.0f}) |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="length of each phase")
    args = parser.parse_args(argv)
    reason = missing()
    if reason is not None:
        print(f"gpu_clock_reasons.py needs a CUDA GPU with NVML: {reason}.", file=sys.stderr)
        return 2
    import pynvml
    import torch

    handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    limit_w = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000
    print(f"{torch.cuda.get_device_name()}; enforced power limit {limit_w:.0f} W; "
          f"NVML read every {READ_EVERY_S * 1e3:.0f} ms; reason bits: 0x4 SwPowerCap, "
          "0x1 GpuIdle, 0x20/0x40 thermal")
    print("| phase | reads | reason bitmask: reads | SM clock, median (range) | "
          "power, median (range) |")
    print("|---|---:|---|---:|---:|")
    for name, work in phases(torch).items():
        print(line(name, run_phase(pynvml, handle, work, args.seconds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
