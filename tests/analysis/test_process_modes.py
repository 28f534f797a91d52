"""Tests for kernbench.analysis.process_modes: processes that ran in the VM's slow mode are
left out of a comparison, which says so; a kernel that really got slower is still caught."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kernbench.analysis.compare import compare_results
from kernbench.analysis.process_modes import (
    left_out_note,
    process_probes,
    steady_groups,
    typical_probe_us,
)
from kernbench.results.model import CaseResult

rng = np.random.default_rng(7)
NORMAL_PROBES = [140.0, 134.9, 137.7, 135.2, 129.9, 151.5, 143.2, 134.0, 144.0, 133.2]


def record(medians_us: list[float], probes: list[Any] | None, kernel: str = "loop") -> CaseResult:
    """Ten samples per process around each median (µs), with the processes' speed probes."""
    samples = [m / 1e3 * (1 + d) for m in medians_us for d in np.linspace(-0.01, 0.01, 10)]
    machine = None if probes is None else {"speed_probe_us": float(np.median(
        [p for p in probes if p])), "process_speed_probes_us": probes}
    return CaseResult(kernel_name=kernel, kernel_path=f"kernels/{kernel}.py",
                      framework="numpy", backend="cpu", precision="fp32", problem_size=None,
                      status="ok", samples_ms=tuple(samples),
                      process_sample_counts=(10,) * len(medians_us), machine=machine)


def medians(centre: float) -> list[float]:
    return [centre * float(x) for x in np.exp(rng.normal(0.0, 0.03, 10))]


def test_probes_per_process_or_the_case_s_one() -> None:
    assert process_probes(record([1.0, 1.0], [140.0, None])) == [140.0, None]
    one = CaseResult(kernel_name="k", kernel_path="k.py", framework="numpy", backend="cpu",
                     precision="fp32", problem_size=None, status="ok",
                     machine={"speed_probe_us": 150.0})
    assert process_probes(one) == [150.0]
    assert process_probes(record([1.0], None)) == []
    assert typical_probe_us([record([1.0] * 3, [100.0, 300.0, 120.0]), one]) == 135.0
    assert typical_probe_us([record([1.0], None)]) is None


def test_steady_groups_leave_out_slow_processes_only_when_enough_remain() -> None:
    groups = [[1.0], [2.0], [3.0], [4.0]]
    slow = record([1.0] * 4, [140.0, 202.0, 138.0, 141.0])
    assert steady_groups(groups, slow, 140.0) == ([[1.0], [3.0], [4.0]], 1)
    assert steady_groups(groups, slow, 140.0, min_groups=4) == (groups, 0)
    assert steady_groups(groups, slow, None) == (groups, 0)
    missing = record([1.0] * 4, [140.0, None, 138.0, 141.0])
    assert steady_groups(groups, missing, 140.0) == (groups, 0)
    # 1.24x is within the tolerance, 1.26x is not.
    edge = record([1.0] * 4, [140.0, 140.0 * 1.24, 140.0 * 1.26, 141.0])
    assert steady_groups(groups, edge, 140.0, min_groups=2)[1] == 1


def test_left_out_note_names_each_side() -> None:
    assert left_out_note((0, 0), (10, 10)) is None
    text = left_out_note((1, 3), (9, 7))
    assert text is not None
    assert "1 of 10 baseline processes and 3 of 10 candidate processes" in text


def test_processes_in_the_slow_mode_do_not_make_a_regression() -> None:
    # Measured here: processes whose probe took ~1.45x as long had ~1.5x the median.
    base = record(medians(860.0), NORMAL_PROBES)
    slowed = medians(860.0)
    probes = list(NORMAL_PROBES)
    for index in (0, 2, 3, 8, 9):
        slowed[index] *= 1.5
        probes[index] *= 1.45
    case = compare_results([base], [record(slowed, probes)])[0]
    assert case.verdict != "regressed"
    assert case.processes == (10, 5)
    assert case.ratio == pytest.approx(1.0, abs=0.06)
    assert case.note is not None and "5 of 10 candidate processes" in case.note
    # Without the probes the same figures are a regression: the probes decide it.
    blind = compare_results([base], [record(slowed, None)])[0]
    assert blind.verdict == "regressed"


def test_a_real_slowdown_with_steady_probes_is_still_caught() -> None:
    base = record(medians(860.0), NORMAL_PROBES)
    cand = record(medians(860.0 * 1.3), list(reversed(NORMAL_PROBES)))
    case = compare_results([base], [cand])[0]
    assert case.verdict == "regressed"
    assert case.processes == (10, 10)
    assert case.note is None
