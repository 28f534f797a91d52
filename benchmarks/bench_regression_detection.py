#!/usr/bin/env python3
"""How often does kernbench cry wolf, and how often does it catch a real slowdown?

Each repetition runs the bundled suite in ``--ab HEAD`` mode (the same code on both sides,
interleaved rounds) with real slowdowns injected into some kernels on the candidate side only
(``--debug-inject-slowdown``: a busy wait that makes every call FACTOR times as long). The
kernels are split into three groups that rotate between repetitions: one gets +10%, one +5%,
one nothing. Per case and repetition it records:

* kernbench's verdict (sign test over paired rounds, BH across all cases, practical threshold);
* the seed's rule: candidate p50 > baseline p50 x 1.10, on the first round only (one run each
  side, as the seed's tool compares one run with a stored one);
* a pytest-benchmark style ``--benchmark-compare-fail=median:10%``: the median of all samples of
  all rounds grew by more than 10%.

It prints the A/A false-positive rate (cases with nothing injected that were flagged either way)
and the detection rates of the +10% and +5% slowdowns, for each rule, over the same samples.

    python benchmarks/bench_regression_detection.py --reps 20 --rounds 30 --iters 10 \
        --threshold 0.03 --filter gemm,fft,matvec,pressure_poisson
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GROUPS = (1.10, 1.05, 1.0)


def kernel_names(python: str, filters: str | None) -> list[str]:
    command = [python, "-m", "kernbench.cli", "list", "--root", str(ROOT), "--json"]
    command += ["--filter", filters] if filters else []
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return sorted(k["name"] for k in json.loads(out)["kernels"] if k["status"] == "ok")


def assignment(names: list[str], rep: int) -> dict[str, float]:
    """Rotate the three groups so every kernel sees every factor across repetitions."""
    return {name: GROUPS[(i + rep) % len(GROUPS)] for i, name in enumerate(names)}


def run_rep(python: str, factors: dict[str, float], args: argparse.Namespace,
            out: Path) -> dict[str, object]:
    inject = ",".join(f"{n}={f}" for n, f in factors.items() if f > 1.0)
    command = [python, "-m", "kernbench.cli", "run", "--root", str(ROOT), "--ab", "HEAD",
               "--backends", "cpu", "--rounds", str(args.rounds), "--iters", str(args.iters),
               "--warmup", str(args.warmup), "--threshold", str(args.threshold),
               "--output-dir", str(out), "--no-cpu-peak", "-q"]
    if inject:
        command += ["--debug-inject-slowdown", inject]
    if args.filter:
        command += ["--filter", args.filter]
    subprocess.run(command, check=False, cwd=ROOT)
    return json.loads((out / "comparison.json").read_text())


def samples_by_case(summary: Path) -> dict[str, tuple[list[float], list[int]]]:
    document = json.loads(summary.read_text())
    found = {}
    for record in document["results"]:
        timing = record["timing"]
        if record["status"] == "ok":
            found[record["case_id"]] = (timing["samples_ms"], timing["process_sample_counts"])
    return found


def first_round_p50(samples: list[float], counts: list[int]) -> float:
    return statistics.median(samples[:counts[0]] if counts else samples)


def tally(rule_hits: dict[tuple[str, float], list[bool]]) -> dict[str, dict[float, str]]:
    table: dict[str, dict[float, str]] = defaultdict(dict)
    for (rule, factor), hits in sorted(rule_hits.items()):
        rate = 100.0 * sum(hits) / len(hits) if hits else float("nan")
        table[rule][factor] = f"{rate:.1f}% ({sum(hits)}/{len(hits)})"
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threshold", type=float, default=0.03)
    parser.add_argument("--filter", default=None, help="kernel globs (default: the whole suite)")
    parser.add_argument("--json", type=Path, default=None, help="also write raw outcomes here")
    args = parser.parse_args()
    python = sys.executable
    names = kernel_names(python, args.filter)
    hits: dict[tuple[str, float], list[bool]] = defaultdict(list)
    raw = []
    started = time.monotonic()
    for rep in range(args.reps):
        factors = assignment(names, rep)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            comparison = run_rep(python, factors, args, out)
            cand, base = samples_by_case(out / "summary.json"), \
                samples_by_case(out / "baseline" / "summary.json")
        for case in comparison["cases"]:
            label, factor = case["label"], factors.get(case["kernel_name"], 1.0)
            if label not in cand or label not in base:
                continue
            flagged = case["verdict"] in ("regressed", "improved")
            hits[("kernbench, any change", factor)].append(flagged)
            hits[("kernbench, regressed", factor)].append(case["verdict"] == "regressed")
            b_first, c_first = first_round_p50(*base[label]), first_round_p50(*cand[label])
            hits[("seed rule p50 > +10%", factor)].append(c_first > 1.10 * b_first)
            b_all, c_all = statistics.median(base[label][0]), statistics.median(cand[label][0])
            hits[("pytest-benchmark median:10%", factor)].append(c_all > 1.10 * b_all)
            raw.append({"rep": rep, "case": label, "factor": factor, "verdict": case["verdict"],
                        "ratio": case["ratio"], "q": case["q_value"]})
        print(f"rep {rep + 1}/{args.reps} done ({time.monotonic() - started:.0f} s)",
              file=sys.stderr, flush=True)
    table = tally(hits)
    print(f"\n{args.reps} repetitions x {len(names)} kernels (CPU cases; filter "
          f"{args.filter or 'none'}), --ab HEAD, "
          f"{args.rounds} rounds, {args.iters} samples, threshold {args.threshold:g}, "
          f"{time.monotonic() - started:.0f} s in all")
    print(f"{'rule':<32} {'A/A flagged (1.00)':>22} {'+5% caught':>22} {'+10% caught':>22}")
    for rule, rates in table.items():
        print(f"{rule:<32} {rates.get(1.0, '-'):>22} {rates.get(1.05, '-'):>22} "
              f"{rates.get(1.10, '-'):>22}")
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
