"""Machine state (kernbench.measure.machine) and the verdicts it makes inconclusive
(kernbench.analysis.compare).

The arithmetic runs on fixed /proc/stat texts and fixed calibrations, so the figures are exact;
one test reads the real /proc/stat with a CPU hog running.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kernbench.analysis.compare import compare_results, regressions_found
from kernbench.analysis.machine_caveats import (
    busy,
    calibration_change,
    machine_caveats,
    speed_change,
)
from kernbench.measure import machine
from kernbench.results.model import CaseResult

HZ = os.sysconf("SC_CLK_TCK")


def stat_file(tmp_path: Path, name: str, user: int, system: int, idle: int,
              steal: int = 0) -> str:
    path = tmp_path / name
    path.write_text(f"cpu  {user} 0 {system} {idle} 0 0 0 {steal} 0 0\ncpu0 1 2 3 4\n",
                    encoding="ascii")
    return str(path)


def test_cpu_times_read_the_first_line_of_proc_stat(tmp_path: Path) -> None:
    times = machine.read_cpu_times(stat_file(tmp_path, "s", 3 * HZ, 1 * HZ, 10 * HZ, HZ))
    assert times == machine.CpuTimes(busy_s=4.0, steal_s=1.0, total_s=15.0)


def test_cpu_times_are_none_without_proc_stat(tmp_path: Path) -> None:
    assert machine.read_cpu_times(str(tmp_path / "missing")) is None
    (tmp_path / "odd").write_text("intr 1 2 3\n", encoding="ascii")
    assert machine.read_cpu_times(str(tmp_path / "odd")) is None


def test_activity_subtracts_the_workers_own_cpu_time() -> None:
    before = machine.CpuTimes(busy_s=100.0, steal_s=1.0, total_s=400.0)
    after = machine.CpuTimes(busy_s=103.0, steal_s=1.2, total_s=404.0)
    # 2 s of wall time on 2 CPUs: 3 s busy, 1 s of it this worker's -> 1 other core
    assert machine.activity(before, after, own_cpu_s=1.0, wall_s=2.0) == {
        "other_cpu_cores": 1.0, "steal_share": 0.05, "window_s": 2.0, "other_cpu_s": 2.0,
        "steal_cpu_s": 0.2, "all_cpu_s": 4.0}
    assert machine.activity(before, after, own_cpu_s=5.0, wall_s=2.0)["other_cpu_cores"] == 0.0
    # A window that saw no /proc/stat tick read nothing busy; it is a reading (of zero),
    # not a missing one, so that summed windows stay unbiased.
    assert machine.activity(before, before, own_cpu_s=0.001, wall_s=0.002) == {
        "other_cpu_cores": 0.0, "steal_share": 0.0, "window_s": 0.002, "other_cpu_s": -0.001,
        "steal_cpu_s": 0.0, "all_cpu_s": 0.0}
    assert machine.activity(before, after, own_cpu_s=0.0, wall_s=0.0) is None


def _other_cores(work: str, seconds: float) -> float:
    """`other_cpu_cores` over `seconds` while this process sleeps, spins, or a hog spins."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if work == "hog" else None
    try:
        if hog is not None:
            time.sleep(0.2)
        probe = machine.ActivityProbe()
        end = time.perf_counter() + seconds
        while work == "spin" and time.perf_counter() < end:  # this process's own work
            pass
        time.sleep(max(0.0, end - time.perf_counter()))
        seen = probe.stop()
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    assert seen is not None and seen["cpus"] == os.cpu_count()
    return float(seen["other_cpu_cores"])


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="needs Linux /proc/stat")
def test_the_probe_sees_a_cpu_hog_and_not_its_own_work() -> None:
    # Relative to what the (shared) machine does anyway, read while sleeping just before: the
    # probe's own spinning adds nothing, a hog adds most of a core. A busy moment can hide the
    # hog on two cores, so up to three tries.
    tries = []
    for _ in range(3):
        quiet = _other_cores("sleep", 0.4)
        own, hog = _other_cores("spin", 0.4), _other_cores("hog", 0.5)
        tries.append((quiet, own, hog))
        if own < quiet + 0.5 and hog >= quiet + 0.6:
            return
    pytest.fail(f"(quiet, own spin, hog) other_cpu_cores per try: {tries}")


def test_calibration_and_run_state_record_what_they_measured() -> None:
    figures = machine.calibrate(repeats=1)
    assert list(figures) == ["all_cores_hash_ms"] and figures["all_cores_hash_ms"] > 0
    state = machine.RunState(measure=False)
    finished = state.finish()
    assert finished["before"]["calibration"] is None and "fake clock" in finished["reason"]
    assert len(finished["after"]["loadavg"]) == 3


def test_windows_are_summed_before_dividing_so_ticks_average_out() -> None:
    # Three 40 ms windows of an idle machine whose 10 ms ticks fell unevenly: each alone
    # reads 0 or 0.25 cores busy; together, 0.
    windows = [{"window_s": 0.04, "other_cpu_s": d, "steal_cpu_s": 0.0, "all_cpu_s": 0.08,
                "other_cpu_cores": max(0.0, d) / 0.04, "steal_share": 0.0}
               for d in (0.01, -0.005, -0.005)]
    assert [w["other_cpu_cores"] for w in windows] == [0.25, 0.0, 0.0]
    summed = machine.summed_activity(windows)
    assert summed is not None and summed["other_cpu_cores"] == 0.0
    assert summed["window_s"] == pytest.approx(0.12)
    # A hog that held a core through every window still shows.
    hogged = [{**w, "other_cpu_s": 0.04} for w in windows]
    assert machine.summed_activity(hogged)["other_cpu_cores"] == 1.0  # type: ignore[index]
    # A window without its raw seconds (an older worker's) cannot be summed.
    assert machine.summed_activity([*windows, {"other_cpu_cores": 0.1}]) is None


def scripted(times_ms: list[float]) -> tuple[Any, list[int]]:
    """A calibration kernel that returns `times_ms` in turn, and the calls it received."""
    calls: list[int] = []

    def kernel(cores: int) -> float:
        calls.append(cores)
        return times_ms[len(calls) - 1]

    return kernel, calls


def test_calibration_waits_out_a_slow_start_until_three_repeats_agree() -> None:
    # A process that has just started gets less than its cores for a moment: the first
    # repeats are slow, then the machine's own speed shows and three repeats agree.
    kernel, calls = scripted([9.8, 8.1, 9.4, 4.9, 4.95, 5.0, 7.0])
    assert machine.calibrate(kernel=kernel, clock=lambda: 0.0) == {"all_cores_hash_ms": 4.9}
    assert len(calls) == 6


def test_calibration_of_a_busy_machine_stops_at_three_agreeing_slow_repeats() -> None:
    kernel, calls = scripted([9.5, 9.6, 9.4, 4.9])
    assert machine.calibrate(kernel=kernel, clock=lambda: 0.0) == {"all_cores_hash_ms": 9.4}
    assert len(calls) == 3
    # A budget spent on the first repeat still takes three.
    kernel, calls = scripted([60.0, 9.0, 5.0, 4.9])
    clock = iter(range(100)).__next__
    assert machine.calibrate(kernel=kernel, budget_s=0.5, clock=clock) == {
        "all_cores_hash_ms": 5.0}
    assert len(calls) == 3


def test_calibration_that_never_settles_stops_at_its_budget_with_the_fastest() -> None:
    kernel, calls = scripted([9.0, 5.0, 7.0, 8.0, 6.0, 9.0, 9.0])
    clock = iter(range(100)).__next__  # one second per reading: at the start, then after
    # every repeat from the third (the budget cannot stop fewer than three)
    assert machine.calibrate(kernel=kernel, budget_s=4, clock=clock) == {
        "all_cores_hash_ms": 5.0}
    assert len(calls) == 6


def state(before: float, after: float) -> dict[str, Any]:
    return {moment: {"calibration": {"all_cores_hash_ms": value}}
            for moment, value in (("before", before), ("after", after))}


def test_calibration_change_between_runs_is_named_with_its_factor() -> None:
    assert calibration_change(state(6.4, 6.6), state(6.5, 6.3)) is None  # noise
    changed = calibration_change(state(6.4, 6.4), state(11.5, 11.5))
    assert changed == ("calibration 1.80x slower in the candidate run than in the "
                       "baseline's (all-cores hash)")
    faster = calibration_change(state(6.4, 6.4), state(3.2, 3.2))
    assert faster is not None and "2.00x faster in the candidate run" in faster


def test_calibration_change_during_one_run_counts_too() -> None:
    changed = calibration_change(state(6.4, 6.4), state(6.4, 12.8))
    assert changed is not None
    assert "2.00x slower at the end of the candidate run than at its start" in changed


def test_calibration_change_is_none_when_not_measured() -> None:
    assert calibration_change(None, state(1, 1)) is None
    assert calibration_change({"before": {"calibration": None}}, {}) is None


def test_busy_names_other_cores_or_steal() -> None:
    assert busy(None) is None
    assert busy({"other_cpu_cores": 0.2, "steal_share": 0.0}) is None
    assert busy({"other_cpu_cores": 1.04, "steal_share": 0.0, "cpus": 2}) == (
        "other processes kept 1.0 of 2 CPUs busy")
    assert busy({"other_cpu_cores": 0.0, "steal_share": 0.12}) == (
        "the hypervisor stole 12% of the CPU time")


def result(name: str, p50_ms: float, machine_state: dict[str, Any] | None = None) -> CaseResult:
    """Five processes of ten samples each around `p50_ms`, with a little spread."""
    samples = tuple(p50_ms * (1 + 0.001 * ((i * 7) % 11 - 5)) for i in range(50))
    return CaseResult(kernel_name=name, kernel_path=f"{name}.py", framework="numpy",
                      backend="cpu", precision="fp32", problem_size=None, status="ok",
                      samples_ms=samples, process_sample_counts=(10,) * 5,
                      machine=machine_state)


HOG = {"other_cpu_cores": 1.9, "steal_share": 0.0, "cpus": 2}
QUIET = {"other_cpu_cores": 0.01, "steal_share": 0.0, "cpus": 2}


def test_a_regression_measured_on_a_busy_machine_is_inconclusive() -> None:
    base = [result("a", 1.0, QUIET), result("b", 1.0, QUIET)]
    cand = [result("a", 1.5, HOG), result("b", 1.5, QUIET)]
    raw = compare_results(base, cand)
    assert [c.verdict for c in raw] == ["regressed", "regressed"]
    judged = machine_caveats(raw, base, cand, calibration_change(None, None))
    a, b = judged
    assert (a.verdict, a.claimed) == ("inconclusive", "regressed")
    assert a.note is not None and "busy during the candidate's samples" in a.note
    assert "(1.50x)" in a.note and "--ab REF" in a.note
    assert b.verdict == "regressed" and b.claimed is None, "a quiet case keeps its verdict"
    assert regressions_found(judged)


def test_a_changed_calibration_makes_every_claimed_change_inconclusive() -> None:
    base = [result("a", 1.0), result("b", 1.0), result("c", 1.0)]
    cand = [result("a", 1.5), result("b", 0.5), result("c", 1.0)]
    judged = machine_caveats(compare_results(base, cand), base, cand,
                             calibration_change(state(6.4, 6.4), state(11.5, 11.5)))
    assert [(c.verdict, c.claimed) for c in judged] == [
        ("inconclusive", "regressed"), ("inconclusive", "improved"), ("unchanged", None)]
    assert "the machine changed (calibration 1.80x slower" in (judged[0].note or "")
    assert not regressions_found(judged)


def test_a_quiet_machine_leaves_the_verdicts_alone() -> None:
    base = [result("a", 1.0, QUIET)]
    cand = [result("a", 1.3, QUIET)]
    raw = compare_results(base, cand)
    assert machine_caveats(raw, base, cand, calibration_change(state(6.4, 6.5),
                                                               state(6.5, 6.4))) == raw


def speed(us: float, other: float = 0.01) -> dict[str, Any]:
    return {"other_cpu_cores": other, "steal_share": 0.0, "cpus": 2, "speed_probe_us": us}


def test_speed_probe_times_a_fixed_loop_and_the_process_speed_is_the_probe_after(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert 0 < machine.speed_probe_us(repeats=3) < 1e6
    # Fast before the warm-up, slow right after the samples: a slow spell that covered the
    # samples. The probe after is the process's speed, not the faster of the two.
    readings = iter([130.0, 200.0])
    monkeypatch.setattr(machine, "speed_probe_us", lambda: next(readings))
    probe = machine.ActivityProbe()
    state = probe.stop()
    assert (state["speed_probe_us"], state["speed_probe_before_us"]) == (200.0, 130.0)


@pytest.mark.parametrize("stat", ["no_tick", "no_proc_stat"])
def test_the_speed_probes_are_kept_whatever_proc_stat_read(
        monkeypatch: pytest.MonkeyPatch, stat: str) -> None:
    """A window of a few milliseconds often sees no /proc/stat tick, and macOS has no
    /proc/stat: the process's speed probes are kept either way, since a comparison leaves out
    slow processes only where every process has its probe."""
    frozen = machine.CpuTimes(busy_s=100.0, steal_s=0.0, total_s=1000.0)
    monkeypatch.setattr(machine, "read_cpu_times",
                        lambda path=machine.PROC_STAT: frozen if stat == "no_tick" else None)
    readings = iter([130.0, 200.0])
    monkeypatch.setattr(machine, "speed_probe_us", lambda: next(readings))
    state = machine.ActivityProbe().stop()
    assert (state["speed_probe_us"], state["speed_probe_before_us"]) == (200.0, 130.0)
    if stat == "no_tick":
        assert (state["other_cpu_cores"], state["all_cpu_s"]) == (0.0, 0.0)
    else:
        assert "other_cpu_cores" not in state and "window_s" not in state


def test_speed_change_is_none_within_the_tolerance_or_when_not_measured() -> None:
    assert speed_change(speed(200), speed(215)) is None  # 1.075x: probe noise
    assert speed_change(speed(200), speed(300)) == pytest.approx(1.5)
    assert speed_change(speed(300), speed(200)) == pytest.approx(2 / 3)
    assert speed_change(QUIET, speed(300)) is None and speed_change(None, speed(300)) is None


def test_a_change_the_workers_slower_speed_accounts_for_is_inconclusive() -> None:
    """The CI case: every process of the candidate ran Python 1.4x slower (no other process
    busy, calibration unchanged). An unchanged kernel measured 1.38x slower is not blamed; a
    kernel that really got 1.3x slower on top is still a regression (1.9 / 1.4 = 1.36)."""
    base = [result("a", 1.0, speed(200)), result("b", 1.0, speed(200))]
    cand = [result("a", 1.38, speed(280)), result("b", 1.9, speed(280))]
    raw = compare_results(base, cand)
    assert [c.verdict for c in raw] == ["regressed", "regressed"]
    a, b = machine_caveats(raw, base, cand, calibration_change(None, None))
    assert (a.verdict, a.claimed) == ("inconclusive", "regressed")
    assert a.note is not None and "fixed Python loop 1.40x as long" in a.note
    assert b.verdict == "regressed" and b.claimed is None


def test_a_speed_change_against_the_claim_does_not_excuse_it() -> None:
    base = [result("a", 1.0, speed(280))]
    cand = [result("a", 1.5, speed(200))]  # the candidate's processes ran faster, yet slower
    raw = compare_results(base, cand)
    assert machine_caveats(raw, base, cand, calibration_change(None, None)) == raw


def test_the_merged_case_keeps_the_median_speed_of_its_processes() -> None:
    from kernbench.execution.replicates import _merged_machine

    merged = _merged_machine([speed(200, 0.1), speed(260, 0.9), speed(210, 0.2)])
    assert merged is not None
    assert merged["other_cpu_cores"] == 0.9 and merged["speed_probe_us"] == 210


def test_a_pytest_sessions_comparison_advises_the_plugins_knobs() -> None:
    """run_comparison reads the candidate's runner (a saved set's ``settings.runner``)."""
    from kernbench.analysis.compare import Thresholds
    from kernbench.api.compare import run_comparison
    from kernbench.results.inputs import LoadedRun, run_from_document

    assert run_from_document({"results": [], "settings": {"runner": "pytest"}},
                             "x").meta["runner"] == "pytest"
    base, cand = [result("a", 1.0)], [result("a", 1.5)]
    document = run_comparison(
        LoadedRun(base, {"machine_state": state(6.4, 6.4)}),
        LoadedRun(cand, {"machine_state": state(11.5, 11.5), "runner": "pytest"}),
        Thresholds())
    texts = [document["cases"][0]["note"], *document["warnings"]]
    assert all("the marker's processes=3" in text for text in texts), texts
    assert not any("--ab" in text for text in texts)
