"""Tests for kernbench.analysis.process_modes: processes that ran in the VM's slow mode are
left out of a comparison on both sides or neither, which says so; the speed check then compares
the probes of the processes kept; a kernel that really got slower is still caught."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from kernbench.analysis.compare import compare_results
from kernbench.analysis.machine_caveats import machine_caveats
from kernbench.analysis.process_modes import (
    kept_machines,
    left_out_note,
    probe_kind,
    process_probes,
    steady_note,
    steady_sides,
    typical_probe_us,
)
from kernbench.analysis.stats_compare import Comparison
from kernbench.analysis.verdicts import moved_by_few
from kernbench.results.model import CaseResult

NORMAL_PROBES = [140.0, 134.9, 137.7, 135.2, 129.9, 151.5, 143.2, 134.0, 144.0, 133.2]


def record(medians_us: list[float], probes: list[Any] | None, kernel: str = "loop",
           status: str = "ok") -> CaseResult:
    """Ten samples per process around each median (µs), with the processes' speed probes
    (None: a record stored before each process's probe was kept)."""
    samples = [m / 1e3 * (1 + d) for m in medians_us for d in np.linspace(-0.01, 0.01, 10)]
    machine = None if probes is None else {"speed_probe_us": float(np.median(
        [p for p in probes if p])), "process_speed_probes_us": probes}
    return CaseResult(kernel_name=kernel, kernel_path=f"kernels/{kernel}.py",
                      framework="numpy", backend="cpu", precision="fp32", problem_size=None,
                      status=status, samples_ms=tuple(samples),  # type: ignore[arg-type]
                      process_sample_counts=(10,) * len(medians_us), machine=machine)


def medians(centre: float, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return [centre * float(x) for x in np.exp(rng.normal(0.0, 0.03, 10))]


def slowed(values: list[float], probes: list[float], which: tuple[int, ...],
           ) -> tuple[list[float], list[float]]:
    """Processes `which` in the slow mode: 1.5x the median, 1.45x the probe (as measured)."""
    values, probes = list(values), list(probes)
    for index in which:
        values[index] *= 1.5
        probes[index] *= 1.45
    return values, probes


def forked(result: CaseResult, session: str | None) -> CaseResult:
    return dataclasses.replace(result, worker={"isolation": "fork", "forked_from": session})


def test_processes_forked_from_one_session_are_pooled_against_another_side() -> None:
    base = record(medians(100.0, 1), NORMAL_PROBES)
    cand = record(medians(100.0, 2), NORMAL_PROBES)
    # The same session on both sides (kernbench.bench twice in one script): as a run.
    same = steady_sides(forked(base, "s1"), forked(cand, "s1"), 134.0)
    assert (len(same.baseline), len(same.candidate), same.pooled) == (10, 10, None)
    assert steady_sides(base, cand, 134.0).pooled is None  # two runs' fork servers
    # Against another session, or a run: each side's samples pooled, and the note says why.
    for other, whose in ((forked(cand, "s2"), "each side's processes were forked from one "
                          "Python session of its own"),
                         (cand, "the baseline's processes were forked from one Python "
                          "session, which the candidate did not share")):
        pooled = steady_sides(forked(base, "s1"), other, 134.0)
        assert [len(g) for g in (*pooled.baseline, *pooled.candidate)] == [100, 100]
        assert pooled.pooled is not None and pooled.pooled.startswith(whose)
        assert "share its address-space layout and hash seed" in pooled.pooled
        assert steady_note(pooled, (1, 1)) == pooled.pooled
    case = compare_results([forked(base, "s1")], [forked(cand, "s2")])[0]
    assert case.method == "mann-whitney-samples" and case.processes == (1, 1)
    assert case.note is not None and "forked from one Python session" in case.note
    assert "optimistic" in case.note  # one group a side: Mann-Whitney's note as well


def after_probes(result: CaseResult) -> CaseResult:
    """The record as kernbench writes it now: the probe after the samples, the one before
    beside it."""
    return dataclasses.replace(result, machine={**(result.machine or {}),
                                                "speed_probe_before_us": 130.0})


def test_probes_of_another_kind_are_neither_left_out_nor_compared() -> None:
    """A baseline stored before the probe after the samples became the process's speed kept
    the faster of two probes; the new one is never the faster, so the two are not mixed."""
    values, probes = slowed(medians(100.0, 3), NORMAL_PROBES, (1, 4))
    old, new = record(values, probes), after_probes(record(values, probes))
    assert (probe_kind(old), probe_kind(new), probe_kind(record([1.0], None))) == (
        "faster", "after", None)
    assert typical_probe_us([old], [new]) is None
    assert typical_probe_us([new], [new]) == typical_probe_us([old], [old]) is not None
    machines = (old.machine, new.machine)
    base, cand = kept_machines(machines, old, new, None)
    assert "speed_probe_us" not in (base or {}) and "speed_probe_us" not in (cand or {})
    assert kept_machines(machines, new, new, None) == machines


def test_probes_per_process_or_the_case_s_one() -> None:
    assert process_probes(record([1.0, 1.0], [140.0, None])) == [140.0, None]
    one = CaseResult(kernel_name="k", kernel_path="k.py", framework="numpy", backend="cpu",
                     precision="fp32", problem_size=None, status="ok",
                     machine={"speed_probe_us": 150.0})
    assert process_probes(one) == [150.0]
    assert process_probes(record([1.0], None)) == []


def test_the_typical_probe_is_the_lower_quartile_of_measured_processes() -> None:
    probes = [100.0, 110.0, 120.0, 130.0, 200.0, 210.0, 220.0, 230.0, 240.0]
    assert typical_probe_us([record([1.0] * 9, probes)]) == 120.0
    # Half the processes slow: the lower quartile stays in the normal mode, a median would not.
    half = [140.0] * 5 + [203.0] * 5
    assert typical_probe_us([record([1.0] * 10, half)]) == 140.0
    failed = record([1.0], [999.0], status="failed")
    assert typical_probe_us([record([1.0] * 3, [100.0, 100.0, 100.0]), failed]) == 100.0
    assert typical_probe_us([record([1.0], None)]) is None


def test_both_sides_are_filtered_and_the_kept_probes_reported() -> None:
    base_v, base_p = slowed([1.0] * 5, [140.0] * 5, (1,))
    cand_v, cand_p = slowed([1.0] * 5, [141.0] * 5, (0, 4))
    steady = steady_sides(record(base_v, base_p), record(cand_v, cand_p), 140.0)
    assert steady.left_out == (1, 2)
    assert len(steady.baseline) == 4 and len(steady.candidate) == 3
    assert steady.probes_us == (140.0, 141.0)


@pytest.mark.parametrize("base_probes", [None, [140.0, None, 140.0, 140.0, 140.0]])
def test_a_side_that_cannot_be_filtered_keeps_the_other_side_whole(
        base_probes: list[Any] | None) -> None:
    cand_v, cand_p = slowed([1.0] * 5, [140.0] * 5, (0,))
    steady = steady_sides(record([1.0] * 5, base_probes), record(cand_v, cand_p), 140.0)
    assert steady.left_out == (0, 0)
    assert (len(steady.baseline), len(steady.candidate)) == (5, 5)
    assert steady.probes_us == (None, None)


def test_a_side_that_ran_mostly_slow_is_left_to_the_speed_check() -> None:
    cand_v, cand_p = slowed([1.0] * 5, [140.0] * 5, (0, 1, 2))
    steady = steady_sides(record([1.0] * 5, [140.0] * 5), record(cand_v, cand_p), 140.0)
    assert steady.left_out == (0, 0)  # two would remain: fewer than three


def test_left_out_note_names_each_side() -> None:
    assert left_out_note((0, 0), (10, 10)) is None
    text = left_out_note((1, 3), (9, 7))
    assert text is not None
    assert "1 of 10 baseline processes and 3 of 10 candidate processes" in text


def test_processes_in_the_slow_mode_do_not_make_a_regression() -> None:
    base = record(medians(860.0, 1), NORMAL_PROBES)
    values, probes = slowed(medians(860.0, 2), NORMAL_PROBES, (0, 2, 3, 8, 9))
    case = compare_results([base], [record(values, probes)])[0]
    assert case.verdict != "regressed"
    assert case.processes == (10, 5)
    assert case.ratio == pytest.approx(1.0, abs=0.06)
    assert case.note is not None and "5 of 10 candidate processes" in case.note
    # Without the probes on either side the same figures are a regression.
    blind = compare_results([record(medians(860.0, 1), None)], [record(values, None)])[0]
    assert blind.verdict == "regressed"


def test_a_real_slowdown_is_caught_through_slow_processes_on_both_sides() -> None:
    base_v, base_p = slowed(medians(860.0, 3), NORMAL_PROBES, (1, 4, 7, 8))
    cand_v, cand_p = slowed(medians(860.0 * 1.3, 4), NORMAL_PROBES, (0, 2, 5, 9))
    case = compare_results([record(base_v, base_p)], [record(cand_v, cand_p)])[0]
    assert case.verdict == "regressed"
    assert case.processes == (6, 6)
    assert case.ratio == pytest.approx(1.3, rel=0.05)


def test_the_speed_check_compares_the_kept_processes_probes() -> None:
    """Half the candidate's processes in the slow mode and a real 1.3x: the slow ones are left
    out, and the case's median probe (half of it slow) must not explain the 1.3x away."""
    base = record(medians(860.0, 5), NORMAL_PROBES)
    values, probes = slowed(medians(860.0 * 1.3, 6), NORMAL_PROBES, (0, 2, 4, 6, 8))
    cand = record(values, probes)
    cases = compare_results([base], [cand])
    assert cases[0].verdict == "regressed"
    judged = machine_caveats(cases, [base], [cand], changed=None)
    assert judged[0].verdict == "regressed", judged[0].note
    before, after = kept_machines((base.machine, cand.machine), base, cand,
                                  typical_probe_us([base, cand]))
    assert after is not None and after["speed_probe_us"] == pytest.approx(
        np.median([NORMAL_PROBES[i] for i in (1, 3, 5, 7, 9)]))
    assert before == base.machine  # nothing left out on the baseline side: its own median


def test_a_machine_check_keeps_the_note_of_what_was_left_out() -> None:
    base = record(medians(860.0, 7), NORMAL_PROBES)
    values, probes = slowed(medians(860.0 * 1.3, 8), NORMAL_PROBES, (0, 3))
    cand = record(values, probes)
    cases = compare_results([base], [cand])
    judged = machine_caveats(cases, [base], [cand], changed="calibration 1.80x slower")
    assert judged[0].verdict == "inconclusive" and judged[0].claimed == "regressed"
    assert judged[0].note is not None
    assert "the machine changed" in judged[0].note
    assert "2 of 10 candidate processes" in judged[0].note


def test_moved_by_few_looks_at_the_direction() -> None:
    def comparison(ratio: float, typical: float) -> Comparison:
        return Comparison(ratio, ratio, ratio, 0.01, "welch-log-process-medians", 10, 10,
                          typical_ratio=typical)

    assert moved_by_few(comparison(1.2, 1.05), 0.1)
    assert moved_by_few(comparison(1.2, 0.85), 0.1)  # the typical process got faster
    assert not moved_by_few(comparison(1.2, 1.15), 0.1)
    assert moved_by_few(comparison(0.8, 0.95), 0.1)
    assert moved_by_few(comparison(0.8, 1.2), 0.1)
    assert not moved_by_few(comparison(0.8, 0.85), 0.1)
    assert not moved_by_few(comparison(1.05, 1.5), 0.1)  # the mean is inside the band


def test_the_advice_names_the_knobs_of_the_entry_point_that_measured() -> None:
    from kernbench.analysis.compare import ADVICE, inconclusive_advice
    from kernbench.analysis.machine_caveats import comparison_warnings

    base = record(medians(860.0, 7), NORMAL_PROBES)
    cand = record(medians(860.0 * 1.3, 8), NORMAL_PROBES)
    cases = compare_results([base], [cand], entry_point="pytest")
    judged = machine_caveats(cases, [base], [cand], "calibration 1.80x slower", "pytest")
    note = str(judged[0].note)
    assert note.endswith("; for a trustworthy answer measure both sessions again on a quiet "
                         "machine with the marker's processes=3 (with isolation='fork') or more")
    assert "--ab" not in note and "--processes" not in note
    assert inconclusive_advice("kernbench.bench") == (
        "for a trustworthy answer measure both functions again on a quiet machine with "
        "processes=3 (with isolation='fork') or more")
    assert inconclusive_advice(None) == inconclusive_advice("cli") == ADVICE
    (warning,) = comparison_warnings({}, {}, "calibration 1.80x slower", "pytest")
    assert warning.endswith(inconclusive_advice("pytest"))
