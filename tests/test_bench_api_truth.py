"""benchmarks/bench_api_truth.py: kernbench.bench and timeit on the same call, in one process."""

from __future__ import annotations

from support.scripts import run_script


def test_each_kernel_gets_its_pairs_in_a_fresh_interpreter_and_a_verdict() -> None:
    done = run_script("bench_api_truth", "--only", "empty", "--pairs", "2", "--iters", "5")
    assert done.returncode in (0, 1), done.stderr  # 1: a goal missed on a noisy machine
    rows = {cells[0]: cells for line in done.stdout.splitlines() if line.startswith("| ")
            and not line.startswith("| kernel") for cells in [line.strip("| ").split(" | ")]}
    assert set(rows) == {"empty"}  # --only: no other kernel ran
    timeit, kernbench, ratio, goal, met = rows["empty"][1:]
    assert timeit.endswith("ns") and kernbench.endswith("ns")
    median, spread = ratio.split(" ")
    low, high = (float(x) for x in spread.strip("()").split("-"))
    assert low <= float(median) <= high  # the median of the two pairs' ratios
    assert goal == "<= 2x" and met == ("yes" if float(median) <= 2 else "NO")
