#!/usr/bin/env python3
"""The library API's truth: ``kernbench.bench`` and ``timeit`` on the same call, in one
process, side by side.

``kernbench.bench(fn)`` (in process, no worker) runs the protocol a worker runs, so it must time
``fn`` as ``timeit`` does: nothing but the call inside a sample. For each of
``bench_truth.py``'s kernels (the same sources, arguments and goals), a fresh interpreter
alternates ``--pairs`` pairs of kernbench's median per call (``--iters`` samples) and timeit's
(autorange, then the median of 5 repeats), kernbench first in odd pairs and timeit first in
even ones. The two figures of a pair come from the same call in the same process, taken well
within a second of each other: neither the processes' luck (their layout and hash seed) nor
this VM's drift over minutes falls between them, which is what ``bench_truth.py``'s
cross-process ratios on a busy VM cannot separate from the harness. The figure is the median of
the pairs' ratios, (min-max) beside it. Each kernel gets its own interpreter, so that one
kernel's thread pools and allocator state never tilt another's.

    python benchmarks/bench_api_truth.py [--pairs 5] [--iters 30] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_truth import KERNELS, Kernel, fmt_ns, load, timeit_ns, waiting, write_tree

import kernbench  # bench_truth has put src/ on the path


def pairs_of(kernel: Kernel, root: Path, pairs: int, iters: int) -> dict[str, list[float]]:
    """`pairs` alternating figures of both tools for one kernel, in this process."""
    handed = load(root, kernel, wait=False)  # one module, one setup: the same arrays for both
    waited = waiting(handed, kernel)
    timeit_ns(waited, 1)  # warms the call, its caches and thread pools, as bench_truth does
    kb_ns, ti_ns = [], []
    for index in range(pairs):
        for tool in ("kb", "ti") if index % 2 == 0 else ("ti", "kb"):
            if tool == "kb":
                median_ms = kernbench.bench(handed, iterations=iters).median_ms
                assert median_ms is not None, "kernbench.bench measured nothing"
                kb_ns.append(median_ms * 1e6)
            else:
                ti_ns.append(timeit_ns(waited, 5))
    return {"kb": kb_ns, "ti": ti_ns}


def in_fresh_process(kernel: Kernel, root: Path,
                     args: argparse.Namespace) -> dict[str, list[float]]:
    out = subprocess.run([sys.executable, __file__, "--one", kernel.name, str(root),
                          str(args.pairs), str(args.iters)],
                         check=True, capture_output=True, text=True)
    return dict(json.loads(out.stdout))


def main() -> int:
    if sys.argv[1:2] == ["--one"]:
        name, root, pairs, iters = sys.argv[2:6]
        kernel = next(k for k in KERNELS if k.name == name)
        print(json.dumps(pairs_of(kernel, Path(root), int(pairs), int(iters))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--only", default="", help="comma list of kernel names")
    args = parser.parse_args()
    only = {n for n in args.only.split(",") if n}
    kernels = [k for k in KERNELS if (not only or k.name in only)
               and (k.needs is None or importlib.util.find_spec(k.needs) is not None)]
    print(f"kernbench.bench vs timeit in one process, {args.pairs} alternating pairs a kernel "
          f"(kernbench --iters {args.iters})\n")
    print("| kernel | timeit | kernbench.bench | ratio (min-max) | goal | met |\n"
          "|---|---:|---:|---:|---|---|")
    met_all = True
    with tempfile.TemporaryDirectory() as tmp:
        write_tree(Path(tmp), kernels)
        for kernel in kernels:
            found = in_fresh_process(kernel, Path(tmp), args)
            ratios = [kb / ti for kb, ti in zip(found["kb"], found["ti"], strict=True)]
            ratio = statistics.median(ratios)
            low, high = kernel.goal
            met = low <= ratio <= high
            met_all &= met
            goal = f"<= {high:g}x" if low == 0 else f"{low:g}-{high:g}x"
            print(f"| {kernel.name} | {fmt_ns(statistics.median(found['ti']))} | "
                  f"{fmt_ns(statistics.median(found['kb']))} | {ratio:.2f} "
                  f"({min(ratios):.2f}-{max(ratios):.2f}) | {goal} | "
                  f"{'yes' if met else 'NO'} |", flush=True)
    return 0 if met_all else 1


if __name__ == "__main__":
    sys.exit(main())
