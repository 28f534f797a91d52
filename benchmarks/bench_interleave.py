#!/usr/bin/env python3
"""False `regressed` verdicts from a burst of load, with and without ``run --interleave``.

Six identical kernels are run ``--reps`` times as a baseline and, right after, as a
candidate with nothing changed, in each of two modes: processes back to back (a plain run)
and in rounds (``--interleave``). During each candidate run, a hog runs for ``--window`` of
the baseline run's wall time, starting at a random point of its middle. Each candidate is
compared with its baseline (:func:`kernbench.api.compare.run_comparison`, as ``kernbench
compare`` does); every claim of a change is false. It prints, per mode, the false
`regressed` claims before the machine caveats (which can turn a claim on a busy machine
inconclusive) and after them.

Two disturbances (``--hog``): ``cpu``, one busy process per core, which the workers' own
speed probe sees (a fixed Python loop runs slower); and ``memory``, one process per core but
one streaming 64 MB copies, which slows memory-bound kernels (``--kernel copy``, a 32 MB
copy) while the speed probe runs as fast as ever (on a 2-core VM, in a one-off check: the
copy 2.0 -> 4.1 ms, a loop like the probe's 8.4 -> 8.4 ms).

    python benchmarks/bench_interleave.py [--reps 10] [--processes 6] [--window 0.15]
        [--hog cpu|memory] [--kernel loop|copy]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from kernbench.analysis.compare import Thresholds
from kernbench.api.compare import run_comparison
from kernbench.cli.main import main
from kernbench.results.inputs import load_run

KERNEL = """
def run_benchmark():
    total = 0
    for i in range(30000):
        total += i
    return total
"""
COPY_KERNEL = """
import numpy as np

SOURCE = np.ones(4 * 2**20)  # 32 MB: a memory-bound copy
TARGET = np.empty_like(SOURCE)


def run_benchmark():
    np.copyto(TARGET, SOURCE)
"""
KERNELS = {"loop": KERNEL, "copy": COPY_KERNEL}
NAMES = tuple(f"kernel_{c}" for c in "abcdef")
MODES = {"back to back": ("--no-interleave",), "--interleave": ("--interleave",)}


def kernbench(*args: object) -> float:
    """Run `kernbench ARGS` quietly; its wall time in seconds."""
    start = time.monotonic()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main([str(a) for a in args])
    return time.monotonic() - start


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _stream(seconds: float) -> None:
    import numpy as np

    source = np.ones(8 * 2**20)  # 64 MB
    target = np.empty_like(source)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        np.copyto(target, source)


def hog_later(delay_s: float, length_s: float, kind: str) -> threading.Thread:
    """A thread that, after `delay_s`, runs the `kind` hog for `length_s`: `cpu` keeps every
    core busy; `memory` streams copies on every core but one (the workers' core stays free,
    so only memory bandwidth is taken)."""
    target, count = (_spin, os.cpu_count() or 1) if kind == "cpu" else (
        _stream, max(1, (os.cpu_count() or 1) - 1))

    def run() -> None:
        time.sleep(delay_s)
        workers = [multiprocessing.Process(target=target, args=(length_s,))
                   for _ in range(count)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def one_rep(root: Path, tmp: Path, tag: str, flags: tuple[object, ...], window: float,
            counts: Counter, mode: str, kind: str) -> None:  # type: ignore[type-arg]
    wall = kernbench("run", "--root", root, "--output-dir", tmp / f"base-{tag}", *flags)
    length = window * wall
    hog = hog_later(random.uniform(0.2 * wall, 0.8 * wall - length), length, kind)
    kernbench("run", "--root", root, "--output-dir", tmp / f"cand-{tag}", *flags)
    hog.join()
    document = run_comparison(load_run(tmp / f"base-{tag}" / "summary.json"),
                              load_run(tmp / f"cand-{tag}" / "summary.json"), Thresholds())
    for case in document["cases"]:
        counts[mode, "claimed"] += (case.get("claimed") or case["verdict"]) == "regressed"
        counts[mode, "final"] += case["verdict"] == "regressed"


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--window", type=float, default=0.15,
                        help="the hog's share of a run's wall time")
    parser.add_argument("--hog", choices=("cpu", "memory"), default="cpu")
    parser.add_argument("--kernel", choices=tuple(KERNELS), default="loop")
    args = parser.parse_args()
    counts: Counter = Counter()  # type: ignore[type-arg]
    base = ("--iters", "15", "--warmup", "1", "--no-cpu-peak", "-q", "--format", "json",
            "--processes", args.processes, "--warmup-time", "0.02")
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        root = tmp / "tree"
        for name in NAMES:
            path = root / "kernels" / f"{name}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(KERNELS[args.kernel].lstrip(), encoding="utf-8")
        for rep in range(args.reps):
            for mode, extra in MODES.items():  # the modes alternate, so drift hits both
                one_rep(root, tmp, f"{rep}-{len(extra)}", (*base, *extra), args.window,
                        counts, mode, args.hog)
            print(f"rep {rep + 1}/{args.reps}: " + ", ".join(
                f"{m}: {counts[m, 'claimed']} claimed" for m in MODES), flush=True)
    comparisons = args.reps * len(NAMES)
    print(f"\n{args.reps} baseline and candidate runs per mode, {args.processes} processes per "
          f"case, {args.kernel} kernels, a {args.hog} hog for {args.window:.0%} of each "
          f"candidate run; {comparisons} comparisons of unchanged kernels per mode")
    print("| mode | false `regressed` claims | after the machine checks |")
    print("|---|---:|---:|")
    for mode in MODES:
        print(f"| {mode} | {counts[mode, 'claimed']} / {comparisons} | "
              f"{counts[mode, 'final']} / {comparisons} |")


if __name__ == "__main__":
    main_()
