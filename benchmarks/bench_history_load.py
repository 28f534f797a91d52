#!/usr/bin/env python3
"""Speed of reading the benchmark history: ``load_records`` over 1,000 stored runs.

Generates realistic records (20 cases x 30 samples each, from a summary built with kernbench's
own model and serialize code, samples jittered per run) for 3 machines over 100 days into a
temporary ``benchmarks/history``, then times ``load_records`` (everything, one kernel by name,
one kernel by glob, one machine, the newest 10) and prints the median of several runs as a
Markdown table that can be quoted in a README.

    python benchmarks/bench_history_load.py [--records 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from kernbench.analysis.summary import summary_dict
from kernbench.measure.environment import collect_environment
from kernbench.results.history import append_record, load_records
from kernbench.results.history_record import history_record
from kernbench.results.model import CaseResult, RunResult

KERNELS = ("gemm", "conv2d", "fft", "layernorm", "matvec", "reduction", "rmsnorm", "softmax",
           "nbody", "pressure_poisson")
PRECISIONS = ("fp32", "fp16")
SAMPLES = 30
MACHINES = ("3f9a0c1d2e4b5a6c", "7b1e2d3c4a5f6e7d", "c0ffee00deadbeef")
BRANCHES = ("main", "main", "main", "feature/tiling")


def base_summary() -> dict[str, Any]:
    """A 20-case summary.json document, made the way a real run makes it."""
    rng = random.Random(0)
    results = []
    for i, (kernel, precision) in enumerate((k, p) for k in KERNELS for p in PRECISIONS):
        base = 0.0137 * (i + 1) * (1.7 if precision == "fp32" else 1.0)
        samples = tuple(base * rng.lognormvariate(0.0, 0.03) for _ in range(SAMPLES))
        results.append(CaseResult(
            kernel_name=kernel, kernel_path=f"kernels/{kernel}/{kernel}.py", framework="numpy",
            backend="cpu", precision=precision, problem_size={"n": 256 * (i % 4 + 1)},
            status="ok", samples_ms=samples, inner_loops=64, warmup_iterations=3,
            timer="perf_counter_ns", timer_overhead_ns=41.0,
            accuracy={"rmse": 3.1e-7 * (i + 1), "max_error": 9.7e-7, "relative_error": 2.2e-7,
                      "passed": True}))
    run = RunResult(started_at="2024-01-01T00:00:00Z", finished_at="2024-01-01T00:05:00Z",
                    complete=True, settings={"iterations": SAMPLES, "warmup": 3, "seed": 1337,
                                             "processes": 1},
                    environment={}, kernels=(), results=tuple(results))
    return summary_dict(run)


def jittered(record: dict[str, Any], rng: random.Random) -> None:
    """Give each stored run its own samples (and so its own 6-digit numbers)."""
    for result in record["results"]:
        factor = rng.lognormvariate(0.0, 0.02)
        result["samples_ms"] = [float(f"{s * factor * rng.lognormvariate(0.0, 0.01):.6g}")
                                for s in result["samples_ms"]]
        result["latency_ms_p50"] = float(f"{statistics.median(result['samples_ms']):.6g}")


def generate(root: Path, count: int) -> None:
    summary, env = base_summary(), collect_environment(root, run_git=False)
    rng = random.Random(1)
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    for i in range(count):
        when = start + timedelta(days=100 * i / count, seconds=rng.randint(0, 3600))
        record = history_record(summary, env, created_at=when)
        record["fingerprint"] = MACHINES[i % len(MACHINES)]
        record["git"] = {"commit": f"{i:040x}", "short_commit": f"{i:012x}",
                         "branch": BRANCHES[i % len(BRANCHES)], "dirty": False}
        jittered(record, rng)
        append_record(root, record, fsync=False)


def timed(fn: Callable[[], list[dict[str, Any]]], repeat: int) -> tuple[list[float], int]:
    times, found = [], 0
    for _ in range(repeat):
        begin = time.perf_counter()
        found = len(fn())
        times.append(time.perf_counter() - begin)
    return times, found


def bound(query: Callable[[Path], list[dict[str, Any]]],
          root: Path) -> Callable[[], list[dict[str, Any]]]:
    return lambda: query(root)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    queries: list[tuple[str, Callable[[Path], list[dict[str, Any]]]]] = [
        ("load_records(root)", lambda r: load_records(r)),
        ('load_records(root, kernel="gemm")', lambda r: load_records(r, kernel="gemm")),
        ('load_records(root, kernel="*norm")', lambda r: load_records(r, kernel="*norm")),
        ("load_records(root, fingerprint=one machine)",
         lambda r: load_records(r, fingerprint=MACHINES[0])),
        ("load_records(root, limit=10)", lambda r: load_records(r, limit=10)),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generate(root, args.records)
        files = list((root / "benchmarks" / "history").rglob("*.jsonl.gz"))
        size = sum(f.stat().st_size for f in files)
        rows = [(label, *timed(bound(query, root), args.repeat)) for label, query in queries]
    print(f"history load: {args.records} records ({len(KERNELS) * len(PRECISIONS)} cases x "
          f"{SAMPLES} samples each), {len(MACHINES)} machines, 100 days; "
          f"{len(files)} files, {size / 1024:.0f} KiB on disk ({size / len(files):.0f} B/record)")
    print(f"Python {platform.python_version()} on {platform.machine()}, "
          f"median of {args.repeat} runs\n")
    print("| query | records returned | median ms | min ms | stored records scanned/s |")
    print("|---|---:|---:|---:|---:|")
    for label, times, found in rows:
        median = statistics.median(times)
        print(f"| `{label}` | {found} | {median * 1e3:.1f} | {min(times) * 1e3:.1f} | "
              f"{args.records / median:,.0f} |")


if __name__ == "__main__":
    main()
