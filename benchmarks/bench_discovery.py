#!/usr/bin/env python3
"""Discovery speed over a generated tree of 10,000 Python files.

The tree mimics a large repository: 1,000 kernels (a tenth with a bench.yaml folder config)
among 9,000 helper modules of similar size, spread over nested folders. It times
``KernelDiscovery.discover()`` several times and prints the median, alongside a variant that
parses every file with ``ast`` (no byte pre-filter), so the cost of each step is visible.

    python benchmarks/bench_discovery.py [--files 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from kernbench.discovery.scan import KernelDiscovery

KERNEL = '''"""Generated kernel {i}."""
import numpy as np


def setup(n=64, precision="fp32"):
    return {{"a": np.ones((n, n), dtype=np.float32)}}


def run_benchmark(a):
    total = a
    for _ in range(3):
        total = total @ a
    return total
'''
HELPER = '''"""Generated helper module {i}."""
import math
from dataclasses import dataclass


@dataclass
class Shape{i}:
    m: int
    n: int

    def area(self) -> int:
        return self.m * self.n


def helper_{i}(x: float) -> float:
    return math.sqrt(abs(x)) + {i}
'''
BENCH_YAML = "precisions: [fp32, fp16]\nproblem_size: {n: 64}\n"


def generate(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / "kernels" / f"group{i % 50:02d}" / f"sub{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        if i % 10 == 0:
            (folder / f"kernel_{i}.py").write_text(KERNEL.format(i=i))
            if i % 100 == 0:
                (folder / f"kernel_{i}.bench.yaml").write_text(BENCH_YAML)
        else:
            (folder / f"module_{i}.py").write_text(HELPER.format(i=i))


def parse_everything(root: Path) -> int:
    """Baseline: read and ast-parse every .py file (what discovery would do without a filter)."""
    count = 0
    for folder, _, names in os.walk(root / "kernels"):
        for name in names:
            if name.endswith(".py"):
                tree = ast.parse(Path(folder, name).read_bytes())
                count += any(isinstance(n, ast.FunctionDef) and n.name == "run_benchmark"
                             for n in tree.body)
    return count


def timed(fn: object, repeat: int) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return times, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generate(root, args.files)
        disc_times, specs = timed(lambda: KernelDiscovery(root).discover(), args.repeat)
        parse_times, parsed = timed(lambda: parse_everything(root), args.repeat)
    kernels = len(specs)  # type: ignore[arg-type]
    disc, parse = statistics.median(disc_times), statistics.median(parse_times)
    print(f"files: {args.files}  kernels found: {kernels} (parse-all baseline found {parsed})")
    print(f"KernelDiscovery.discover(): median {disc * 1e3:.0f} ms over {args.repeat} runs "
          f"(min {min(disc_times) * 1e3:.0f} ms), {disc / args.files * 1e6:.1f} us/file")
    print(f"parse every file with ast:  median {parse * 1e3:.0f} ms "
          f"(min {min(parse_times) * 1e3:.0f} ms)")
    print(f"ratio parse-all / discovery: {parse / disc:.2f}x")


if __name__ == "__main__":
    main()
