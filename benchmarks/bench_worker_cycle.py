#!/usr/bin/env python3
"""The steady-state cost of a forked worker: how often a round hands out the next one.

A suite of ``--cases`` trivial kernels per framework runs with the default settings but
``--warmup-time 0`` (fork servers, 3 processes in rounds). In round k every case's k-th worker
forks from server k, one after another, so the interval between the starts of two consecutive
workers of a round is everything one worker costs the run: its fork, job, set-up, timed
samples, reply, exit and reaping, and the parent's reading of its reply. The script prints
the median interval over the run's workers, and beside it the median of their timed work
(samples times inner loops), which is the kernel's and not the harness's. It also prints the
run's start-up: from the call of ``run_suite`` to the start of the first worker (discovery,
the machine's calibration, the environment, the first fork servers' imports).

With ``--baseline-src PATH`` (the ``src`` folder of another checkout, e.g. a worktree of the
commit before a change), the same suite also runs on that code, in alternating order round
after round, each run in a fresh interpreter, and the ratio of the medians is printed:

    python benchmarks/bench_worker_cycle.py [--frameworks python,numpy,torch] [--cases 24]
                                            [--rounds 3] [--baseline-src /tmp/base/src]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(HERE))


def one_run(src: Path, framework: str, cases: int) -> dict[str, float]:
    """In this interpreter, with kernbench from `src`: the medians of one suite's run."""
    sys.path.insert(0, str(src))
    from kernbench.execution import forkserver
    from kernbench.execution.runner import RunSettings
    from kernbench.results.model import ProtocolSettings

    # After kernbench: bench_isolation puts this checkout's src first on the path, and the
    # package already imported from `src` is the one it then finds.
    isolation = importlib.import_module("bench_isolation")

    starts: list[float] = []
    run = forkserver.ForkServer.run

    def timed_run(self: forkserver.ForkServer, *args: object, **kwargs: object) -> object:
        starts.append(time.perf_counter())
        return run(self, *args, **kwargs)  # type: ignore[arg-type]

    forkserver.ForkServer.run = timed_run  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "tree"
        isolation.trivial_tree(root, framework, cases)
        settings = RunSettings(root=root, isolation="fork", processes=3, interleave=True,
                               protocol=ProtocolSettings(warmup_time_s=0.0))
        called = time.perf_counter()
        _, results = isolation.run_tree(root, Path(folder) / "out", settings)
    per_round = [starts[k * cases:(k + 1) * cases] for k in range(3)]
    intervals = [b - a for group in per_round for a, b in itertools.pairwise(group)]
    assert forkserver.__file__.startswith(str(src)), forkserver.__file__
    return {"interval_ms": statistics.median(intervals) * 1e3,
            "timed_ms": statistics.median(isolation.timed_s(r) / 3 for r in results) * 1e3,
            "startup_ms": (starts[0] - called) * 1e3}


def measured(src: Path, framework: str, cases: int) -> dict[str, float]:
    """`one_run` in a fresh interpreter."""
    done = subprocess.run([sys.executable, __file__, "--one", str(src), "--frameworks",
                           framework, "--cases", str(cases)],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def spread(runs: list[dict[str, float]], key: str, digits: int = 1) -> str:
    """The median of `key` over the runs, (min-max) beside it, in ms."""
    values = [run[key] for run in runs]
    return (f"{statistics.median(values):.{digits}f} ms ({min(values):.{digits}f}-"
            f"{max(values):.{digits}f})")


def ratio(figures: dict[str, list[dict[str, float]]], key: str) -> str:
    """This tree's `key` over the baseline's, run by run (they alternate): median (min-max)."""
    ratios = [a[key] / b[key] for a, b in zip(figures["this"], figures["baseline"], strict=True)]
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frameworks", default="python,numpy,torch,jax")
    parser.add_argument("--cases", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-src", type=Path)
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one_run(args.one, args.frameworks, args.cases)))
        return 0
    trees = {"this": SRC} | ({"baseline": args.baseline_src} if args.baseline_src else {})
    frameworks = [f for f in args.frameworks.split(",")
                  if f == "python" or importlib.util.find_spec(f) is not None]
    print(importlib.import_module("bench_isolation").speed_line())
    print(f"\nA forked worker's interval in its round: {args.cases} trivial kernels, 3 processes "
          f"in rounds, --warmup-time 0; medians over the workers, then over {args.rounds} "
          f"rounds (min-max); trees alternate in order round after round\n")
    header = "| framework | this tree | timed work | start-up |"
    if args.baseline_src:
        header += (" baseline | timed work | start-up | this / baseline | start-up, this / "
                   "baseline |")
    print(header + "\n|---|" + "---:|" * (header.count("|") - 2))
    for framework in frameworks:
        figures: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for index in range(args.rounds):
            for name in (list(trees) if index % 2 == 0 else list(trees)[::-1]):
                figures[name].append(measured(trees[name], framework, args.cases))
        cells = [f"{spread(figures[name], 'interval_ms')} | "
                 f"{statistics.median(f['timed_ms'] for f in figures[name]):.1f} ms | "
                 f"{spread(figures[name], 'startup_ms', 0)}" for name in trees]
        row = f"| {framework} | " + " | ".join(cells)
        if args.baseline_src:
            row += "".join(f" | {ratio(figures, key)}" for key in ("interval_ms", "startup_ms"))
        print(row + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
