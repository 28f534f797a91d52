#!/usr/bin/env python3
"""kernbench's GPU timing modes beside triton.testing.do_bench, do_bench_cudagraph and
torch.utils.benchmark.Timer, in one process on one CUDA GPU.

Kernels (the validation the timing modes were built against):

* ``add_1k``: a 1,024-element fp32 add (launch-bound: cold, hot, graph and sync differ most);
* ``copy_256m``: a 256 MiB device-to-device copy (bandwidth-bound; on an H100 it cannot take
  less than about 0.160 ms; cold should be within 5% of do_bench, which also flushes the L2);
* ``matmul_4k``: a 4,096 x 4,096 bf16 matmul (within 5% of do_bench);
* ``copy_8m``: an 8 MiB copy, which fits in the L2: graph_cold / graph should be at least 1.2
  (the flush shows). Both replay a CUDA graph, so neither holds a launch; ``cold`` / ``hot``
  does not show it, because ``hot`` of so short a copy is bound by the host's launch rate (on an
  H100: 9.5 us a call for 3.7 us of device time).

Every figure is the median per call in microseconds, measured in this run: each kernel is
timed by every tool in turn, in ``--rounds`` rounds (a GPU's clocks and temperature drift over
seconds, so a tool timed once, later, can read another GPU), and the table holds each
figure's median over the rounds. ``api`` is ``kernbench.bench`` on the same call. Without a CUDA
GPU the script says so and exits with status 2; it never prints a figure it did not measure.

    python benchmarks/bench_gpu.py [--iters 30] [--rounds 3] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from kernbench.measure.backends.torch_gpu import TorchCudaClock, l2_flush
from kernbench.measure.gpu_session import measure_gpu
from kernbench.results.model import ProtocolSettings

MODES = ("cold", "hot", "graph", "graph_cold", "kernel", "sync")
CHECK_TOLERANCE = 0.05
H100_COPY_256M_MIN_MS = 0.160


def no_gpu_reason() -> str | None:
    """Why this machine cannot run the script, or None."""
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False (no CUDA GPU, or a CPU build of PyTorch)"
    if getattr(torch.version, "hip", None):
        return "this is a ROCm build of PyTorch; the comparison tools here are CUDA's"
    return None


def kernels(torch: Any) -> dict[str, Callable[[], object]]:
    """The validation kernels, with their inputs allocated once."""
    x, y = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    big_src = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    big_dst = torch.empty_like(big_src)
    small_src = torch.empty(8 * 2**20, dtype=torch.uint8, device="cuda")
    small_dst = torch.empty_like(small_src)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    return {"add_1k": lambda: torch.add(x, y),
            "copy_256m": lambda: big_dst.copy_(big_src),
            "matmul_4k": lambda: torch.mm(a, b),
            "copy_8m": lambda: small_dst.copy_(small_src)}


def kernbench_us(torch: Any, call: Callable[[], object], iters: int) -> dict[str, Any]:
    """Every kernbench mode's median (us), with the reason where a mode fell back; for
    ``cold`` also the median of its per-call times (``cold_per_call``, in the JSON), which
    tells a few slow calls in every block (the blocks' means rise, the per-call median does
    not) from a slow device (both rise)."""
    settings = ProtocolSettings(warmup=3, iterations=iters, warmup_time_s=0.2)
    run = measure_gpu(call, TorchCudaClock(torch), l2_flush(torch), settings, "all")
    found: dict[str, Any] = {}
    for result in run.outcome.modes:
        if result.requested is not None or not result.samples_ns:  # fell back, or no figure
            found[f"{result.requested or result.mode}_reason"] = result.reason
            continue
        found[result.mode] = statistics.median(result.samples_ns) / 1e3
        if result.mode == "cold":  # a sample is a block's mean; do_bench takes the per-call median
            found["cold_per_call"] = statistics.median(result.figures_ns) / 1e3
    return found


def api_us(call: Callable[[], object], iters: int) -> dict[str, Any]:
    """``kernbench.bench`` on the same call, in this process: the library API in its default
    GPU timing mode (``cold``), its blocks guarded by NVML as a run's worker guards them;
    ``api_discarded`` counts the blocks the guard discarded and retook."""
    import kernbench

    case = kernbench.bench(call, backend="cuda", iterations=iters).case
    cold = ((case.gpu_timing or {}).get("modes") or {}).get("cold") or {}
    return {"api": statistics.median(case.samples_ms) * 1e3,
            "api_discarded": float(cold.get("discarded_blocks", 0))}


def _median_mode(function: Callable[..., Any]) -> dict[str, Any]:
    """``return_mode="median"`` where this Triton takes it (older ones return the median)."""
    return {"return_mode": "median"} \
        if "return_mode" in inspect.signature(function).parameters else {}


def reference_us(torch: Any, call: Callable[[], object]) -> dict[str, Any]:
    """do_bench, do_bench_cudagraph and torch.utils.benchmark.Timer, medians in us."""
    from torch.utils.benchmark import Timer

    found: dict[str, Any] = {}
    timer = Timer(stmt="call()", globals={"call": call})
    found["torch_timer"] = timer.blocked_autorange(min_run_time=1.0).median * 1e6
    try:
        from triton.testing import do_bench, do_bench_cudagraph
    except ImportError as exc:
        found["triton_reason"] = f"triton not importable: {exc}"
        return found
    found["do_bench"] = float(do_bench(call, **_median_mode(do_bench))) * 1e3
    try:
        found["do_bench_cudagraph"] = float(
            do_bench_cudagraph(call, **_median_mode(do_bench_cudagraph))) * 1e3
    except Exception as exc:  # a kernel that cannot be captured
        found["do_bench_cudagraph_reason"] = f"{type(exc).__name__}: {exc}"
    return found


def checks(name: str, figures: dict[str, Any], device: str) -> list[str]:
    """The issue's acceptance checks that apply to kernel `name`, as PASS/FAIL lines."""
    lines = []
    cold, ref = figures.get("cold"), figures.get("do_bench")
    for column in ("cold", "api"):
        figure = figures.get(column)
        if name in ("copy_256m", "matmul_4k") and figure is not None and ref is not None:
            off = abs(figure / ref - 1)
            lines.append(f"{'PASS' if off <= CHECK_TOLERANCE else 'FAIL'} {name}: {column} "
                         f"{figure:.1f} us vs do_bench {ref:.1f} us ({off:.1%} apart, limit 5%)")
    if name == "copy_256m" and cold is not None and "H100" in device:
        ok = cold / 1e3 >= H100_COPY_256M_MIN_MS
        lines.append(f"{'PASS' if ok else 'FAIL'} {name}: cold {cold / 1e3:.3f} ms >= "
                     f"{H100_COPY_256M_MIN_MS} ms (H100 bandwidth limit)")
    flushed, warm = figures.get("graph_cold"), figures.get("graph")
    if name == "copy_8m" and flushed is not None and warm:
        ratio = flushed / warm
        lines.append(f"{'PASS' if ratio >= 1.2 else 'FAIL'} {name}: graph_cold / graph = "
                     f"{ratio:.2f} (>= 1.2: the L2 flush shows)")
    return lines


def table(results: dict[str, dict[str, Any]]) -> str:
    columns = [*MODES, "api", "do_bench", "do_bench_cudagraph", "torch_timer"]
    lines = ["| kernel | " + " | ".join(f"{c} us" for c in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for name, figures in results.items():
        cells = [f"{figures[c]:.2f}" if isinstance(figures.get(c), float) else "n/a"
                 for c in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def over_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's median over the rounds, its min-max as `<key>_range`; reasons kept."""
    merged: dict[str, Any] = {}
    for key in dict.fromkeys(k for r in rounds for k in r):
        values = [r[key] for r in rounds if isinstance(r.get(key), float)]
        if values:
            merged[key] = statistics.median(values)
            merged[f"{key}_range"] = [min(values), max(values)]
        elif key.endswith("_reason"):
            merged[key] = next(r[key] for r in rounds if key in r)
    return merged


def measure_round(torch: Any, calls: dict[str, Callable[[], object]],
                  iters: int) -> dict[str, dict[str, Any]]:
    """One round: every kernel by every tool, one after another, so all see the GPU alike."""
    return {name: {**guarded("kernbench", kernbench_us, torch, call, iters),
                   **guarded("api", api_us, call, iters), **reference_us(torch, call)}
            for name, call in calls.items()}


def guarded(tool: str, measure: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """`measure(*args)`, or the reason it raised as `<tool>_reason`: one tool that cannot
    measure a kernel leaves the others' figures standing."""
    try:
        return measure(*args)
    except Exception as exc:
        return {f"{tool}_reason": f"{type(exc).__name__}: {exc}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=30, help="samples per mode")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of every kernel by every tool; figures are their medians")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    reason = no_gpu_reason()
    if reason is not None:
        print(f"bench_gpu.py needs a CUDA GPU and cannot run here: {reason}.", file=sys.stderr)
        return 2
    import torch

    device = torch.cuda.get_device_name(torch.cuda.current_device())
    calls = kernels(torch)
    rounds = [measure_round(torch, calls, args.iters) for _ in range(args.rounds)]
    results = {name: over_rounds([r[name] for r in rounds]) for name in calls}
    print(f"Device: {device}; torch {torch.__version__}; medians per call, median of "
          f"{args.rounds} rounds")
    print(table(results))
    for name, figures in results.items():
        for key, text in figures.items():
            if key.endswith("_reason"):
                print(f"note {name} {key[:-7]}: {text}")
        for line in checks(name, figures, device):
            print(line)
    if args.json is not None:
        args.json.write_text(json.dumps({"device": device, "rounds": rounds,
                                         "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
