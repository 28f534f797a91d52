"""Tests for kernbench.execution.replicates: one record from a case's worker processes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kernbench.execution.replicates import merge_replicates
from kernbench.results.model import CaseResult


def _result(samples: tuple[float, ...], status: str = "ok", peak: float = 10.0,
             energy: dict[str, float | None] | None = None, reason: str | None = None,
             accuracy: dict[str, object] | None = None) -> CaseResult:
    return CaseResult(kernel_name="k", kernel_path="kernels/k.py", framework="numpy",
                      backend="cpu", precision="fp32", problem_size=None,
                      status=status, reason=reason, samples_ms=samples,  # type: ignore[arg-type]
                      memory={"peak_mb": peak}, energy=energy or {}, duration_s=1.0,
                      accuracy=accuracy or {}, worker={"pid": 1})


def test_samples_keep_their_process_groups() -> None:
    merged = merge_replicates([_result((1.0, 2.0)), _result((3.0,)), _result((4.0, 5.0, 6.0))])
    assert merged.samples_ms == (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    assert merged.process_sample_counts == (2, 1, 3)
    assert merged.duration_s == 3.0
    assert merged.worker["processes"] == 3


def test_highest_memory_peak_and_first_accuracy_win() -> None:
    first = _result((1.0,), peak=5.0, accuracy={"passed": True})
    merged = merge_replicates([first, _result((1.0,), peak=50.0), _result((1.0,), peak=7.0)])
    assert merged.memory["peak_mb"] == 50.0
    assert merged.accuracy == {"passed": True}


def test_energy_is_summed_over_every_timed_region() -> None:
    a = {"region_energy_j": 2.0, "region_s": 1.0, "calls": 10, "energy_j": 0.2, "power_w": 2.0}
    b = {"region_energy_j": 6.0, "region_s": 1.0, "calls": 30, "energy_j": 0.2, "power_w": 6.0}
    merged = merge_replicates([_result((1.0,), energy=a), _result((1.0,), energy=b)])
    assert merged.energy["energy_j"] == pytest.approx(8.0 / 40)
    assert merged.energy["power_w"] == pytest.approx(4.0)
    assert merged.energy["calls"] == 40


def test_unmeasured_energy_is_not_summed_into_a_number() -> None:
    a = {"region_energy_j": None, "region_s": 1.0, "calls": 10, "energy_j": None,
         "reason": "no RAPL"}
    merged = merge_replicates([_result((1.0,), energy=a), _result((1.0,), energy=dict(a))])
    assert merged.energy["energy_j"] is None
    assert merged.energy["reason"] == "no RAPL"


def test_a_failing_process_fails_the_case_and_says_which() -> None:
    merged = merge_replicates([_result((1.0,)), _result((), status="failed",
                                                        reason="worker killed by SIGSEGV")])
    assert merged.status == "failed"
    assert merged.reason == "process 2 of 2: worker killed by SIGSEGV"


@pytest.mark.parametrize("later", [
    {"rmse": None, "max_error": None, "passed": None, "reason": "the worker left no reply"},
    {"rmse": None, "passed": None, "reason": "checked in the case's first process"},
    {}])
def test_a_later_failing_process_keeps_the_first_process_accuracy_check(
        later: dict[str, object]) -> None:
    # Only the first process checks accuracy; a later crash does not erase its check.
    checked = {"passed": True, "relative_error": 1e-7}
    merged = merge_replicates([_result((1.0,), accuracy=checked),
                               _result((), status="failed", reason="SIGSEGV", accuracy=later)])
    assert merged.status == "failed" and merged.accuracy == checked


def test_nothing_to_merge_is_an_error() -> None:
    with pytest.raises(ValueError):
        merge_replicates([])


def test_machine_activity_sums_every_process_window() -> None:
    def window(other_cpu_s: float, probe: float) -> dict[str, float]:
        return {"other_cpu_cores": round(max(0.0, other_cpu_s) / 0.04, 3), "steal_share": 0.0,
                "window_s": 0.04, "other_cpu_s": other_cpu_s, "steal_cpu_s": 0.0,
                "all_cpu_s": 0.08, "speed_probe_us": probe}

    # An idle machine read through 10 ms ticks: one process's window reads 0.5 cores busy,
    # which the busiest-process rule called busy; the four windows together read 0.
    states = [window(0.02, 140.0), window(-0.01, 150.0), window(-0.005, 138.0),
              window(-0.005, 141.0)]
    for state, before in zip(states, (500.0, 139.0, 137.0, 142.0), strict=True):
        state["speed_probe_before_us"] = before
    merged = merge_replicates([replace(_result((1.0,)), machine=s) for s in states])
    assert merged.machine is not None
    assert merged.machine["other_cpu_cores"] == 0.0
    assert merged.machine["window_s"] == pytest.approx(0.16)
    assert merged.machine["process_speed_probes_us"] == [140.0, 150.0, 138.0, 141.0]
    assert merged.machine["speed_probe_us"] == 140.5
    assert merged.machine["speed_probe_before_us"] == 140.5  # the median, not the busiest's


def test_machine_of_older_workers_keeps_the_busiest_activity_and_every_probe() -> None:
    states = [{"other_cpu_cores": 0.1, "steal_share": 0.0, "speed_probe_us": 140.0},
              {"other_cpu_cores": 0.7, "steal_share": 0.0, "speed_probe_us": 202.0},
              None,
              {"other_cpu_cores": 0.2, "steal_share": 0.0, "speed_probe_us": 138.0}]
    merged = merge_replicates([replace(_result((1.0,)), machine=s) for s in states])
    assert merged.machine == {"other_cpu_cores": 0.7, "steal_share": 0.0,
                              "speed_probe_us": 140.0,
                              "process_speed_probes_us": [140.0, 202.0, None, 138.0]}
