"""benchmarks/bench_worker_cycle.py: a worker's interval in its round, this tree beside another."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernbench.execution.forkserver import fork_supported
from support.scripts import BENCHMARKS, run_script

pytestmark = pytest.mark.skipif(fork_supported() is not None,
                                reason=f"fork servers unsupported here: {fork_supported()}")


def test_it_prints_the_interval_the_start_up_and_their_ratios_to_a_baseline() -> None:
    src = str(Path(BENCHMARKS).parent / "src")
    done = run_script("bench_worker_cycle", "--frameworks", "python", "--cases", "3",
                      "--rounds", "1", "--baseline-src", src)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("| python |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    interval, start, baseline, baseline_start = (
        float(re.match(r"[\d.]+", cells[i])[0]) for i in (1, 3, 4, 6))  # type: ignore[index]
    assert min(interval, start, baseline, baseline_start) > 0
    assert float(cells[7].split()[0]) == pytest.approx(interval / baseline, abs=0.01)
    assert float(cells[8].split()[0]) == pytest.approx(start / baseline_start, abs=0.02)
