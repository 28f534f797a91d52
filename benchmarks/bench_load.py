#!/usr/bin/env python3
"""Load: a generated suite of 500 small kernels through ``kernbench.api.run_suite``.

Measures what the parent process costs at scale: its peak RSS (``ru_maxrss``), its RSS and
its Python heap (tracemalloc) when the 50th case's record and when the last case's record
came back (constant memory means the two are about equal), total wall time, and the overhead
of isolation per case: the suite's wall time minus the time spent inside the kernels' timed
samples and warm-up, divided by the cases, next to the cost of starting a bare
``python -c pass`` and of importing kernbench's worker. The warm-up (0.1 s a process by
default) is the kernel's time, not overhead; it is counted as the longest process's times the
processes, an upper bound. Processes run in rounds, as by default (the records then all come
back in the last round, every case's other processes having waited on disk);
``--no-interleave`` runs each case's back to back.

    python benchmarks/bench_load.py [--kernels 500] [--iters 3] [--no-tracemalloc]
                                    [--no-interleave]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from kernbench.api import run_suite
from kernbench.execution.settings import RunSettings
from kernbench.results.model import CaseResult, ProtocolSettings

KERNEL = '''import numpy as np


def setup(n={n}):
    return {{"x": np.arange(n, dtype=np.float32)}}


def run_benchmark(x):
    return x * 2.0
'''
EARLY_CASE = 50


def rss_mb() -> float:
    """The parent's resident set size now (Linux /proc), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def make_suite(root: Path, count: int) -> None:
    for index in range(count):
        folder = root / "kernels" / f"k{index:04d}"
        folder.mkdir(parents=True)
        (folder / f"k{index:04d}.py").write_text(KERNEL.format(n=64 + index % 7),
                                                 encoding="utf-8")


def spawn_ms(code: str, repeat: int = 15) -> float:
    """Median wall time of `python -c code`, in ms."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True,
                       env={"PYTHONPATH": str(Path(__file__).resolve().parent.parent / "src")})
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


class Probe:
    """on_result callback: the kernels' timed work, and memory at chosen records."""

    def __init__(self, trace: bool, cases: int) -> None:
        self.trace, self.cases = trace, cases
        self.records = 0
        self.kernel_s = 0.0
        self.warmup_s = 0.0
        self.marks: dict[int, tuple[float, float]] = {}

    def on_result(self, result: CaseResult, index: int, total: int) -> None:
        self.records += 1
        self.kernel_s += sum(result.samples_ms) * max(result.inner_loops, 1) / 1000
        processes = len(result.process_sample_counts) or 1  # warm-up: the longest process's
        self.warmup_s += (result.warmup_s or 0.0) * processes
        if self.records in (EARLY_CASE, self.cases):
            heap = tracemalloc.get_traced_memory()[0] / 2**20 if self.trace else float("nan")
            self.marks[self.records] = (rss_mb(), heap)


def run(count: int, iters: int, trace: bool, interleave: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kernbench-load-") as tmp:
        root = Path(tmp) / "repo"
        make_suite(root, count)
        settings = RunSettings(root=root, protocol=ProtocolSettings(warmup=1, iterations=iters),
                               cache_dir=None, interleave=interleave)
        probe = Probe(trace, count)
        if trace:
            tracemalloc.start()
        started = time.perf_counter()
        outcome = run_suite(settings, Path(tmp) / "out", on_result=probe.on_result)
        wall_s = time.perf_counter() - started
        heap_peak = tracemalloc.get_traced_memory()[1] / 2**20 if trace else float("nan")
        tracemalloc.stop()
        assert outcome.exit_code == 0, outcome.run.results[-1].reason
        return {"cases": len(outcome.run.results), "wall_s": wall_s, "probe": probe,
                "heap_peak_mb": heap_peak, "peak_rss_mb": peak_rss_mb(),
                "order": "in rounds" if interleave else "back to back"}


def report(figures: dict[str, Any], bare_ms: float, worker_ms: float) -> str:
    probe: Probe = figures["probe"]
    total = figures["cases"]
    early, last = probe.marks[EARLY_CASE], probe.marks[total]
    rows = [
        ("cases", f"{total}, {settings_processes()} processes each, {figures['order']}"),
        ("total wall time", f"{figures['wall_s']:.1f} s ({figures['wall_s'] / total * 1000:.0f}"
                            " ms per case)"),
        ("parent peak RSS (ru_maxrss)", f"{figures['peak_rss_mb']:.1f} MB"),
        (f"parent RSS at record {EARLY_CASE} / {total}",
         f"{early[0]:.1f} MB / {last[0]:.1f} MB ({last[0] - early[0]:+.1f} MB)"),
        (f"parent Python heap at record {EARLY_CASE} / {total} (tracemalloc)",
         f"{early[1]:.2f} MB / {last[1]:.2f} MB ({last[1] - early[1]:+.2f} MB); "
         f"peak {figures['heap_peak_mb']:.2f} MB"),
        ("kernels' timed samples and warm-up, per case",
         f"{(probe.kernel_s + probe.warmup_s) / total * 1000:.0f} ms"),
        ("overhead per case ((wall − samples − warm-up) / cases)",
         f"{(figures['wall_s'] - probe.kernel_s - probe.warmup_s) / total * 1000:.0f} ms"),
        ("`python -c pass`, median of 15", f"{bare_ms:.0f} ms"),
        ("`python -c 'import kernbench.execution.worker'`, median of 15", f"{worker_ms:.0f} ms"),
    ]
    lines = ["| | |", "|---|---:|", *(f"| {name} | {value} |" for name, value in rows)]
    return "\n".join(lines)


def settings_processes() -> int:
    return RunSettings(root=Path()).processes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=500)
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--no-tracemalloc", action="store_true")
    parser.add_argument("--no-interleave", dest="interleave", action="store_false",
                        help="run each case's processes back to back (default: in rounds)")
    args = parser.parse_args()
    bare_ms = spawn_ms("pass")
    worker_ms = spawn_ms("import kernbench.execution.worker")
    figures = run(args.kernels, args.iters, not args.no_tracemalloc, args.interleave)
    print(report(figures, bare_ms, worker_ms))


if __name__ == "__main__":
    main()
