#!/usr/bin/env python3
"""The cost of isolation: what a suite spends outside its kernels, spawn versus fork server.

Part 1, per-case overhead. For each framework (plain Python, numpy, torch, JAX where
installed) a tree of ``--cases`` trivial kernels (each imports the framework and returns at
once) is run by ``kernbench.api.run_suite`` with the default settings but ``--warmup-time 0``,
once per isolation mode. Overhead per case = (suite wall time - the kernels' own work) / cases,
where the kernels' own work is every timed sample (samples x inner loops) plus the warm-up the
workers measured. It is the price of starting the case's worker processes, importing, setting
up and writing results; the share of it per worker process is shown too (``--processes``
workers per case, 3 by default), and the run's fixed start-up (fork servers, environment,
machine calibration, first reports) apart from what each added case costs, from a one-case
suite run beside it.

Beside them, the same kernels with no isolation at all: one fresh interpreter that imports
the framework once and times every kernel ``--processes`` times with kernbench's protocol in
process (``MetricsCollector``, what the workers run, with the same settings). Its overhead per
case is the floor that any harness running these kernels outside its own process pays at
least once (the interpreter's start and the framework's import, spread over the cases), and
kernbench's figure less it is what isolation, the replicates' own processes and servers, and
the run's records and machine checks add.

And the same kernels under pyperf (where installed; ``--no-pyperf`` leaves it out), the
reference for timing in isolated processes: one pyperf script that registers the kernel as
``--cases`` benchmarks, run with the same ``--processes`` worker processes per benchmark (and
``--values 30 --warmups 1``, kernbench's 30 samples, with ``--min-time 0.0001`` so that the
kernels' own work stays as small as kernbench's). pyperf spawns a fresh interpreter per worker
and one more per benchmark to calibrate its loops, as it does by default. Its overhead is its
wall time less every warm-up and value its JSON records (the calibration's included), per
case. It includes pyperf's own main interpreter and its import of the framework, where
kernbench's parent is this script's process (``run_suite`` is called here): at most one
interpreter start and one framework import spread over the cases, small beside pyperf's four
a case.

Part 2, share of wall time inside kernels. Twenty numpy kernels that each take 1 ms per call
run with the default settings (fork server, 3 processes per case, 30 samples, 0.1 s warm-up):
the share of the suite's wall time spent in timed samples, and in the kernel at all (timed
samples and warm-up calls, the warm-up counted as the longest worker's times the processes,
so an upper bound).

Goals (measurement-truth issue): <= 50 ms overhead per case for every framework with the fork
server; >= 50 % of the wall time inside kernels with the default settings. Processes run in
rounds, as by default; ``--no-interleave`` runs each case's back to back instead.

    python benchmarks/bench_isolation.py [--cases 12] [--rounds 2] [--only numpy,torch]
                                         [--no-interleave] [--no-spawn] [--no-pyperf]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))

from kernbench.api import run_suite  # noqa: E402
from kernbench.execution.runner import RunSettings  # noqa: E402
from kernbench.results.model import CaseResult, ProtocolSettings  # noqa: E402

FRAMEWORKS = {
    "python": ("", "None"),
    "numpy": ("import numpy as np", "np.float64(0.0)"),
    "torch": ("import torch", "torch.zeros(())"),
    "jax": ("import jax.numpy as jnp", "jnp.zeros(())"),
}
ONE_MS_KERNEL = """
import time

import numpy as np


def run_benchmark():
    end = time.perf_counter() + 0.001
    while time.perf_counter() < end:
        pass
    return np.float64(0.0)
"""


def trivial_tree(root: Path, framework: str, cases: int) -> None:
    imports, value = FRAMEWORKS[framework]
    for index in range(cases):
        folder = root / "kernels" / f"{framework}_{index:02d}"
        folder.mkdir(parents=True)
        (folder / f"{framework}_{index:02d}.py").write_text(
            f"{imports}\n\n\ndef run_benchmark():\n    return {value}\n", encoding="utf-8")


IN_PROCESS = """
import importlib.util, json, sys
from pathlib import Path

sys.path.insert(0, sys.argv[3])
from kernbench.measure.metrics import MetricsCollector
from kernbench.results.measurement import ProtocolSettings

collector = MetricsCollector(ProtocolSettings(warmup_time_s=0.0))
work_s = 0.0
for path in sorted(Path(sys.argv[1]).glob("kernels/*/*.py")):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for _ in range(int(sys.argv[2])):
        measured = collector.time_execution(module.run_benchmark).measurement
        work_s += sum(measured.samples_ns) * measured.inner_loops / 1e9 + measured.warmup_s
print(json.dumps({"work_s": work_s}))
"""
"""The reference: every kernel under argv[1] timed argv[2] times in this one interpreter."""


PYPERF_SUITE = """
import pyperf
{imports}


def kernel():
    return {value}


runner = pyperf.Runner()
for index in range({cases}):
    runner.bench_func(f"case_{{index:02d}}", kernel)
"""
"""The reference: the trivial kernel as `cases` pyperf benchmarks in one script."""
PYPERF_FLAGS = ("--quiet", "--values", "30", "--warmups", "1", "--min-time", "0.0001")


def pyperf_overhead_s(framework: str, cases: int, processes: int, scratch: Path) -> float:
    """Seconds pyperf spent outside the kernels' own work running :data:`PYPERF_SUITE` with
    `processes` worker processes per benchmark: its wall time less every warm-up and value."""
    import pyperf

    imports, value = FRAMEWORKS[framework]
    script, out = scratch / f"pyperf-{framework}.py", scratch / f"pyperf-{framework}.json"
    script.write_text(PYPERF_SUITE.format(imports=imports, value=value, cases=cases),
                      encoding="utf-8")
    out.unlink(missing_ok=True)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(script), *PYPERF_FLAGS, "--processes",
                           str(processes), "--output", str(out)],
                          capture_output=True, text=True, check=False)
    wall_s = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"pyperf failed: {done.stderr[-2000:]}")
    suite = pyperf.BenchmarkSuite.load(str(out))
    return wall_s - float(sum(pyperf_work_s(run) for bench in suite.get_benchmarks()
                              for run in bench.get_runs()))


def pyperf_work_s(run: Any) -> float:
    """Seconds of a pyperf run's warm-ups and values: each is a time per loop, of so many
    loops (a warm-up names its own; a value has the run's) times the inner loops."""
    inner = run.get_inner_loops()
    warmups = sum(loops * inner * seconds for loops, seconds in run.warmups or ())
    return warmups + sum(run.values) * run.get_total_loops()


def one_ms_tree(root: Path, cases: int) -> None:
    for index in range(cases):
        folder = root / "kernels" / f"busy_{index:02d}"
        folder.mkdir(parents=True)
        (folder / f"busy_{index:02d}.py").write_text(textwrap.dedent(ONE_MS_KERNEL),
                                                    encoding="utf-8")


def timed_s(result: CaseResult) -> float:
    """Seconds the case's workers spent in timed samples."""
    return sum(result.samples_ms) * max(result.inner_loops, 1) / 1e3


def warmup_s(result: CaseResult, processes: int) -> float:
    """Seconds in warm-up calls: the longest worker's warm-up times the workers (upper bound)."""
    return (result.warmup_s or 0.0) * processes


def run_tree(root: Path, out: Path, settings: RunSettings) -> tuple[float, list[CaseResult]]:
    started = time.perf_counter()
    outcome = run_suite(settings, out)
    wall_s = time.perf_counter() - started
    results = list(outcome.run.results)
    failed = [r for r in results if r.status != "ok"]
    if failed:
        raise SystemExit(f"{failed[0].case_id}: {failed[0].status}: {failed[0].reason}")
    return wall_s, results


def overhead_s(root: Path, scratch: Path, isolation: str, processes: int,
               interleave: bool = True) -> float:
    """Seconds a suite of the trivial kernels under `root` spent outside its kernels."""
    settings = RunSettings(root=root, isolation=isolation, processes=processes,
                           interleave=interleave, protocol=ProtocolSettings(warmup_time_s=0.0))
    wall_s, results = run_tree(root, scratch / f"out-{isolation}", settings)
    return wall_s - sum(timed_s(r) + warmup_s(r, processes) for r in results)


def in_process_overhead_s(root: Path, processes: int) -> float:
    """Seconds a fresh interpreter spent outside the kernels' own work timing every kernel
    under `root` `processes` times in process (:data:`IN_PROCESS`), its start included."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", IN_PROCESS, str(root), str(processes),
                           str(SRC)], capture_output=True, text=True, check=False)
    wall_s = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the in-process reference failed: {done.stderr[-2000:]}")
    return wall_s - float(json.loads(done.stdout)["work_s"])


def part_one(args: argparse.Namespace, tmp: Path) -> bool:
    frameworks = [f for f in (args.only.split(",") if args.only else FRAMEWORKS)
                  if f == "python" or importlib.util.find_spec(f) is not None]
    print(f"\nPer-case overhead: {args.cases} trivial kernels per framework, "
          f"{args.processes} worker processes per case "
          f"{'in rounds' if args.interleave else 'back to back'}, --warmup-time 0, "
          f"median of {args.rounds} rounds. Start-up: a one-case suite's overhead less one "
          f"added case; per added case: (suite - one-case suite) / {args.cases - 1}. In one "
          f"interpreter: the same kernels, each timed {args.processes} times in process, no "
          f"isolation (the floor: interpreter start and one framework import). pyperf: the "
          f"same kernel as {args.cases} benchmarks of one script, --processes "
          f"{args.processes} {' '.join(PYPERF_FLAGS[1:])}, its wall time less every warm-up "
          f"and value it recorded\n")
    print("| framework | spawn, per case | fork server, per case | fork, per worker | "
          "fork, start-up | fork, per added case | spawn / fork | in one interpreter, per case "
          "| fork above it, per case | pyperf, per case | pyperf / fork | goal (fork, per case) "
          "| met |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    with_pyperf = args.pyperf and importlib.util.find_spec("pyperf") is not None
    all_met = True
    for framework in frameworks:
        root, one = tmp / f"tree-{framework}", tmp / f"tree-{framework}-one"
        trivial_tree(root, framework, args.cases)
        trivial_tree(one, framework, 1)
        figures: dict[str, list[float]] = {"spawn": [], "fork": [], "one": [], "inline": [],
                                           "pyperf": []}
        for _ in range(args.rounds):
            figures["inline"].append(in_process_overhead_s(root, args.processes))
            if with_pyperf:
                figures["pyperf"].append(pyperf_overhead_s(framework, args.cases,
                                                           args.processes, tmp))
            figures["one"].append(overhead_s(one, tmp, "fork", args.processes, args.interleave))
            for isolation in ("fork", "spawn") if args.spawn else ("fork",):
                figures[isolation].append(overhead_s(root, tmp, isolation, args.processes,
                                                     args.interleave))
        fork, single, inline = (statistics.median(figures[k]) for k in ("fork", "one", "inline"))
        spawn, pyperf_s = (statistics.median(figures[k]) if figures[k] else None
                           for k in ("spawn", "pyperf"))
        added = (fork - single) / (args.cases - 1)
        per_case = fork / args.cases * 1e3
        met = per_case <= 50.0
        all_met &= met
        spawn_cell, spawn_ratio = beside(spawn, fork, args.cases)
        print(f"| {framework} | {spawn_cell} | {per_case:.0f} ms | "
              f"{per_case / args.processes:.0f} ms | {(single - added) * 1e3:.0f} ms | "
              f"{added * 1e3:.0f} ms | {spawn_ratio} | {inline / args.cases * 1e3:.0f} ms | "
              f"{(fork - inline) / args.cases * 1e3:.0f} ms | "
              f"{' | '.join(beside(pyperf_s, fork, args.cases))} | <= 50 ms | "
              f"{'yes' if met else 'NO'} |", flush=True)
    return all_met


def beside(other_s: float | None, fork_s: float, cases: int) -> tuple[str, str]:
    """The cells of a reference beside the fork server: its overhead per case and its ratio
    to the fork server's ("not run" and "-" where it did not run)."""
    if other_s is None:
        return "not run", "-"
    return f"{other_s / cases * 1e3:.0f} ms", f"{other_s / fork_s:.1f}x"


def part_two(args: argparse.Namespace, tmp: Path) -> bool:
    root = tmp / "tree-busy"
    one_ms_tree(root, 20)
    defaults = RunSettings(root=root, interleave=args.interleave)
    rows = []
    for isolation in ("fork", "spawn") if args.spawn else ("fork",):
        settings = replace(defaults, isolation=isolation)
        wall_s, results = run_tree(root, tmp / f"busy-{isolation}", settings)
        timed = sum(timed_s(r) for r in results)
        inside = timed + sum(warmup_s(r, settings.processes) for r in results)
        rows.append((isolation, wall_s, timed / wall_s, inside / wall_s))
    print(f"\nTwenty 1 ms kernels, default settings ({defaults.processes} processes per case, "
          f"{defaults.protocol.iterations} samples, "
          f"{defaults.protocol.warmup_time_s:g} s warm-up)\n")
    print("| isolation | suite wall | in timed samples | inside kernels (timed + warm-up) "
          "| goal | met |")
    print("|---|---:|---:|---:|---|---|")
    met = True
    for isolation, wall_s, timed_share, inside_share in rows:
        ok = inside_share >= 0.5
        if isolation == "fork":
            met = ok
        print(f"| {isolation} | {wall_s:.1f} s | {timed_share:.0%} | <= {inside_share:.0%} | "
              f"{'>= 50 %' if isolation == 'fork' else '-'} | "
              f"{('yes' if ok else 'NO') if isolation == 'fork' else '-'} |")
    return met


def speed_line() -> str:
    """This machine's speed today, so that tables of different days can be set side by side:
    kernbench's speed probe (a fixed pure-Python loop), the fastest of 50."""
    from kernbench.measure.machine import SPEED_PROBE_LOOPS, speed_probe_us

    return (f"Machine speed: {speed_probe_us(50):.0f} us for {SPEED_PROBE_LOOPS:,} empty loop "
            f"iterations, the fastest of 50 (kernbench's speed probe; lower is faster)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--processes", type=int, default=RunSettings(root=Path()).processes)
    parser.add_argument("--only", default="", help="comma list of frameworks for part 1")
    parser.add_argument("--skip-share", action="store_true", help="leave part 2 out")
    parser.add_argument("--no-spawn", dest="spawn", action="store_false",
                        help="time the fork server only (spawn's columns say 'not run')")
    parser.add_argument("--no-pyperf", dest="pyperf", action="store_false",
                        help="leave the pyperf reference out (its columns say 'not run')")
    parser.add_argument("--no-interleave", dest="interleave", action="store_false",
                        help="run each case's processes back to back (default: in rounds)")
    args = parser.parse_args()
    print(speed_line())
    with tempfile.TemporaryDirectory(prefix="kernbench-isolation-") as tmp:
        met = part_one(args, Path(tmp))
        if not args.skip_share:
            met &= part_two(args, Path(tmp))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
