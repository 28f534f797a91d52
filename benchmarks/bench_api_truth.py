#!/usr/bin/env python3
"""The library API's truth: ``kernbench.bench`` and ``timeit`` on the same function, in one
process, side by side.

``kernbench.bench(fn, *args)`` (in-process, no worker) must time ``fn`` as ``timeit`` does:
nothing but the call inside a sample. For each function, ``--pairs`` alternating pairs of
kernbench's median per call and timeit's (autorange, median of 5 repeats); the figure is the
median of the pairs' ratios, (min-max) beside it.

    python benchmarks/bench_api_truth.py [--pairs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import numpy as np

import kernbench


def empty() -> None:
    return None


def add(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    return np.add(a, b, out=out)


def timeit_ns(call: partial[object] | object) -> float:
    timer = timeit.Timer(call)  # type: ignore[arg-type]
    number, _ = timer.autorange()
    return statistics.median(timer.repeat(5, number)) / number * 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    a, b = np.ones(1000), np.ones(1000)
    cases = {"empty function": (empty, (), {}),
             "numpy add, 1,000 floats (arguments)": (add, (a, b), {"out": np.empty_like(a)})}
    print("| function | timeit | kernbench.bench | ratio (min-max) |\n|---|---:|---:|---:|")
    for name, (fn, fn_args, fn_kwargs) in cases.items():
        ratios, kb_all, ti_all = [], [], []
        for _ in range(args.pairs):
            kb = kernbench.bench(fn, *fn_args, iterations=30, **fn_kwargs).median_ms * 1e6
            ti = timeit_ns(partial(fn, *fn_args, **fn_kwargs) if fn_args else fn)
            ratios.append(kb / ti)
            kb_all.append(kb)
            ti_all.append(ti)
        print(f"| {name} | {statistics.median(ti_all):.3g} ns | "
              f"{statistics.median(kb_all):.3g} ns | {statistics.median(ratios):.2f} "
              f"({min(ratios):.2f}-{max(ratios):.2f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
