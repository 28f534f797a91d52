"""benchmarks/bench_isolation.py: per-case overhead of a suite of trivial kernels."""

from __future__ import annotations

import pytest

from kernbench.execution.forkserver import fork_supported
from support.scripts import load_script, run_script

pytestmark = pytest.mark.skipif(fork_supported() is not None,
                                reason=f"fork servers unsupported here: {fork_supported()}")


def test_no_spawn_times_the_fork_server_alone_and_says_spawn_was_not_run() -> None:
    cells = python_row("--no-spawn", "--no-pyperf")
    assert cells[1] == "not run" and cells[6] == "-"
    assert cells[9] == "not run" and cells[10] == "-"
    assert cells[2].endswith(" ms") and float(cells[2].split()[0]) > 0
    # the reference beside it: one interpreter timing the same kernels in process, its start
    # and imports included (never free), and kernbench's figure less it
    assert cells[7].endswith(" ms") and float(cells[7].split()[0]) > 0
    per_case, inline, above = (float(cells[i].split()[0]) for i in (2, 7, 8))
    assert abs(per_case - inline - above) <= 1.0  # each rounded to the millisecond


def python_row(*flags: str) -> list[str]:
    """The plain-Python row's cells of a two-case, one-round, one-process run of part 1."""
    done = run_script("bench_isolation", "--only", "python", "--cases", "2", "--rounds", "1",
                      "--processes", "1", "--skip-share", *flags)
    assert done.returncode in (0, 1), done.stderr  # 1: the 50 ms goal missed on a slow machine
    assert "Twenty 1 ms kernels" not in done.stdout
    row = next(line for line in done.stdout.splitlines() if line.startswith("| python |"))
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_pyperf_runs_the_same_kernels_beside_the_fork_server() -> None:
    pytest.importorskip("pyperf")
    cells = python_row("--no-spawn")
    fork, pyperf = (float(cells[i].split()[0]) for i in (2, 9))
    assert cells[9].endswith(" ms") and pyperf > 0  # two interpreters a case at least
    assert cells[10].endswith("x")
    assert float(cells[10][:-1]) == pytest.approx(pyperf / fork, rel=0.1, abs=0.1)


def test_pyperf_work_counts_every_warm_up_and_value_with_its_loops() -> None:
    pyperf = pytest.importorskip("pyperf")
    script = load_script("bench_isolation")
    run = pyperf.Run([2e-6, 4e-6], warmups=[(1, 8e-6), (2, 5e-6)],
                     metadata={"loops": 10, "inner_loops": 3}, collect_metadata=False)
    # warm-ups: 1 loop x 3 inner x 8 us + 2 x 3 x 5 us; values: (2 + 4) us x 10 x 3
    assert script.pyperf_work_s(run) == pytest.approx(24e-6 + 30e-6 + 180e-6)
    calibration = pyperf.Run([], warmups=[(1, 1e-6), (2, 1e-6)],
                             metadata={"calibrate_loops": 2}, collect_metadata=False)
    assert script.pyperf_work_s(calibration) == pytest.approx(1e-6 + 2e-6)
