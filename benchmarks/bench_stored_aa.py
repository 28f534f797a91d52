#!/usr/bin/env python3
"""False claims and detection when two *stored* runs are compared (`kernbench compare`,
`--baseline`, `--compare-to`), under four rules applied to the same runs.

Three ~0.85 ms pure-Python kernels (the A/A test's) are run ``--reps`` times as a baseline
and, right after each, as a candidate with ``loop_b`` made 1.3x slower
(``--debug-inject-slowdown``, a busy wait after each call); loop_a and loop_c are unchanged.
Each pair is independent: one baseline shared by every candidate would make the rates depend
on that one run's luck. Each candidate is compared with its baseline under four rules, on
the same samples:

* ``welch``: Welch's test on the log process medians, every process, the mean's ratio (the rule
  before the process-mode checks);
* ``+typical``: a change is claimed only when the typical process moved too (Hodges-Lehmann
  ratio of the process medians, :func:`kernbench.analysis.verdicts.moved_by_few`);
* ``+slow mode``: also leaving out the processes whose own speed probe ran more than 1.25x as
  long as the typical process's (:mod:`kernbench.analysis.process_modes`);
* ``+trimmed``: also trimming a tenth of each side's process medians from each end from ten
  processes on (Yuen's test, :data:`kernbench.analysis.stats_compare.TRIM`): the current rule.

It prints, per rule, how many comparisons claimed a change of an unchanged kernel (false
claims) and how many called loop_b regressed, both before the machine caveats
(`machine_caveats`, which make claims inconclusive on a busy or changed machine) and after.

    python benchmarks/bench_stored_aa.py [--reps 40] [--processes 10] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import textwrap
from collections import Counter
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from kernbench.analysis import process_modes, stats_compare, verdicts
from kernbench.analysis.compare import Thresholds
from kernbench.api.compare import run_comparison
from kernbench.cli.main import main
from kernbench.results.inputs import load_run

KERNEL = """
import numpy as np


def work():
    total = 0
    for i in range(30000):
        total += i
    return total


def run_benchmark():
    return np.float64(work())
"""
UNCHANGED = ("loop_a", "loop_c")


def kernbench(*args: object) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main([str(a) for a in args])


@contextlib.contextmanager
def rule(name: str):  # type: ignore[no-untyped-def]
    """The comparison rule `name`, by switching the current rule's checks off."""
    with contextlib.ExitStack() as stack:
        if name == "welch":
            stack.enter_context(mock.patch.object(verdicts, "moved_by_few",
                                                  lambda *_: False))
        if name in ("welch", "+typical"):  # no typical probe: no process is left out
            stack.enter_context(mock.patch.object(process_modes, "typical_probe_us",
                                                  lambda *_: None))
        if name != "+trimmed":
            stack.enter_context(mock.patch.object(stats_compare, "TRIM", 0.0))
        yield


def tally(document: dict, counts: Counter, rule_name: str) -> None:  # type: ignore[type-arg]
    for case in document["cases"]:
        claimed = case.get("claimed") or case["verdict"]
        final = case["verdict"]
        if case["kernel_name"] in UNCHANGED:
            counts[rule_name, "false claims"] += claimed in ("regressed", "improved")
            counts[rule_name, "false, final"] += final in ("regressed", "improved")
        else:
            counts[rule_name, "caught"] += claimed == "regressed"
            counts[rule_name, "caught, final"] += final == "regressed"


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--processes", type=int, default=10)
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep every run's report directory here, to look into later")
    args = parser.parse_args()
    rules = ("welch", "+typical", "+slow mode", "+trimmed")
    counts: Counter = Counter()  # type: ignore[type-arg]
    settings = ("--iters", "15", "--warmup", "1", "--no-cpu-peak", "-q", "--processes",
                args.processes, "--warmup-time", "0.02")
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or Path(scratch)
        root = Path(tmp) / "tree"
        for name in ("loop_a", "loop_b", "loop_c"):
            path = root / "kernels" / f"{name}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(KERNEL).lstrip(), encoding="utf-8")
        for rep in range(args.reps):
            kernbench("run", "--root", root, "--output-dir", Path(tmp) / f"base{rep}", *settings)
            base = load_run(Path(tmp) / f"base{rep}" / "summary.json")
            out = Path(tmp) / f"cand{rep}"
            kernbench("run", "--root", root, "--output-dir", out, *settings,
                      "--debug-inject-slowdown", "loop_b=1.3")
            cand = load_run(out / "summary.json")
            for name in rules:
                with rule(name):
                    tally(run_comparison(base, cand, Thresholds()), counts, name)
            print(f"rep {rep + 1}/{args.reps}: "
                  + ", ".join(f"{n}: {counts[n, 'false claims']} false, "
                              f"{counts[n, 'caught']} caught" for n in rules), flush=True)
    comparisons = args.reps * len(UNCHANGED)
    print(f"\n{args.reps} baseline and candidate runs of {args.processes} processes per case; "
          f"{comparisons} comparisons of unchanged kernels, {args.reps} of the 1.3x slower one")
    print("| rule | false claims | false, after the machine checks | 1.3x caught | "
          "caught, after the machine checks |")
    print("|---|---:|---:|---:|---:|")
    for name in rules:
        print(f"| {name} | {counts[name, 'false claims']} / {comparisons} | "
              f"{counts[name, 'false, final']} / {comparisons} | "
              f"{counts[name, 'caught']} / {args.reps} | "
              f"{counts[name, 'caught, final']} / {args.reps} |")


if __name__ == "__main__":
    main_()
