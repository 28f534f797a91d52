"""Serialization: records and summaries to JSON and back; schema versions."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from kernbench.analysis.summary import record_dict, summary_dict
from kernbench.errors import KernbenchError
from kernbench.results.model import CaseResult, KernelSpec, RunResult
from kernbench.results.schema import SCHEMA_VERSION
from kernbench.results.serialize import (
    counts,
    manifest_dict,
    result_from_dict,
    results_from_summary,
    spec_dict,
)

SAMPLES = (1.0, 2.0, 3.0, 4.0)


def ok_result(**changes: Any) -> CaseResult:
    values: dict[str, Any] = dict(
        kernel_name="gemm", kernel_path="kernels/gemm/gemm.py", framework="numpy",
        backend="cpu", precision="fp32", problem_size={"n": 64}, status="ok",
        samples_ms=SAMPLES, inner_loops=10, warmup_iterations=3, timer="perf_counter_ns",
        timer_overhead_ns=40.0,
        memory={"peak_mb": 50.5, "allocated_mb": 1.25, "source": "VmHWM"},
        energy={"energy_j": None, "power_w": None, "reason": "not measured"},
        accuracy={"rmse": None, "max_error": None, "reason": "not measured"},
        output={"type": "ndarray", "precision": "fp32"}, device="cpu",
        started_at="2024-01-01T00:00:00Z", duration_s=0.5,
        worker={"pid": 7, "exit_code": 0, "signal": None, "stdout_tail": "",
                "stderr_tail": ""})
    values.update(changes)
    return CaseResult(**values)


def json_round_trip(data: Any) -> Any:
    return json.loads(json.dumps(data))


def run_of(*results: CaseResult, complete: bool = True) -> RunResult:
    return RunResult(started_at="2024-01-01T00:00:00Z", finished_at="2024-01-01T00:01:00Z",
                     complete=complete, settings={"iterations": 4, "warmup": 3, "seed": 1},
                     environment={"fingerprint": "abc", "hostname": "h", "git": None,
                                  "python": {"version": "3"}, "cpu": {}, "gpus": [],
                                  "not_in_summary": 1},
                     kernels=(), results=tuple(results))


def test_record_dict_timing_is_derived_from_the_samples() -> None:
    record = record_dict(ok_result())
    timing = record["timing"]
    assert timing["latency_ms_p50"] == 2.5
    assert timing["latency_ms_mean"] == 2.5
    assert timing["latency_ms_min"] == 1.0
    assert timing["latency_ms_max"] == 4.0
    assert timing["latency_ms_std"] == pytest.approx(1.2909944487)
    assert timing["throughput_ops_per_sec"] == pytest.approx(400.0)
    assert timing["iterations"] == 4
    assert timing["inner_loops"] == 10
    assert timing["samples_ms"] == list(SAMPLES)
    assert record["success"] is True
    assert record["case_id"] == "gemm[cpu,fp32]"


def test_record_round_trip_preserves_the_result() -> None:
    original = ok_result()
    rebuilt = result_from_dict(json_round_trip(record_dict(original)))
    assert rebuilt == original
    assert rebuilt.samples_ms == SAMPLES


def test_a_gpu_record_says_its_mode_and_round_trips() -> None:
    raw = {"requested": "hot", "primary": "hot", "modes": {"hot": {
        "mode": "hot", "requested_mode": None, "reason": None,
        "flush": {"bytes": None, "per": "none"}, "calls_per_sample": 10,
        "samples_us": [s * 1e3 for s in SAMPLES], "discarded_blocks": 0,
        "discard_reasons": {}}}}
    original = ok_result(framework="pytorch", backend="cuda", device="cuda", gpu_timing=raw)
    record = record_dict(original)
    timing = record["timing"]
    assert timing["mode"] == "hot"
    assert timing["flush"] == {"bytes": None, "per": "none"}
    assert timing["n"] == 40
    assert timing["median_us"] == 2500.0
    assert timing["p10_us"] == pytest.approx(1300.0)
    assert result_from_dict(json_round_trip(record)) == original
    assert "mode" not in record_dict(ok_result())["timing"]  # CPU records are unchanged


def test_a_sweep_points_case_id_names_it_and_round_trips() -> None:
    original = ok_result(problem_size={"m": 8, "k": 8, "n": 8}, point="m=8,k=8,n=8")
    record = record_dict(original)
    assert record["case_id"] == "gemm[cpu,fp32,m=8,k=8,n=8]"
    assert "point" not in record  # the case id carries it; records keep their keys
    assert result_from_dict(json_round_trip(record)) == original
    assert result_from_dict(json_round_trip(record_dict(ok_result()))).point is None


def test_sweep_in_the_manifest_is_the_spec_and_its_size() -> None:
    from kernbench.config.loading import bench_config_from_data

    sweep = {"matrix_shapes": [{"name": "pow2", "min_power": 2, "max_power": 4}]}
    config = bench_config_from_data({"sweep": sweep}, "bench.yaml")
    entry = json_round_trip(spec_dict(KernelSpec(name="mm", path="mm.py", config=config)))
    assert entry["config"]["sweep"] == sweep
    assert entry["config"]["sweep_points"] == 3
    plain = spec_dict(KernelSpec(name="g", path="g.py",
                                 config=bench_config_from_data({}, "bench.yaml")))
    assert "sweep" not in plain["config"] and "sweep_points" not in plain["config"]


def test_reader_recomputes_timing_instead_of_trusting_the_summary() -> None:
    data = json_round_trip(record_dict(ok_result()))
    data["timing"]["latency_ms_p50"] = 999.0
    data["timing"]["latency_ms_mean"] = -1.0
    data["timing"]["iterations"] = 1
    again = record_dict(result_from_dict(data))
    assert again["timing"]["latency_ms_p50"] == 2.5
    assert again["timing"]["latency_ms_mean"] == 2.5
    assert again["timing"]["iterations"] == 4


def test_record_without_samples_has_null_figures() -> None:
    failed = ok_result(status="failed", reason="ValueError: x", samples_ms=(), inner_loops=0,
                       memory={})
    record = record_dict(failed)
    assert record["success"] is False
    assert record["timing"]["latency_ms_p50"] is None
    assert record["timing"]["throughput_ops_per_sec"] is None
    assert record["timing"]["iterations"] == 0
    assert record["memory"]["peak_mb"] is None
    assert record["warnings"] == []
    assert result_from_dict(json_round_trip(record)).status == "failed"


def test_counts_tally_every_status() -> None:
    results = [ok_result(), ok_result(status="failed"), ok_result(status="skipped"),
               ok_result(status="skipped"), ok_result(status="invalid")]
    assert counts(results) == {"total": 5, "ok": 1, "failed": 1, "skipped": 2, "timeout": 0,
                               "invalid": 1}


def test_summary_dict_shape() -> None:
    document = summary_dict(run_of(ok_result(), ok_result(status="timeout"), complete=False))
    assert document["schema_version"] == SCHEMA_VERSION
    assert document["complete"] is False
    assert document["counts"]["total"] == 2
    assert document["counts"]["timeout"] == 1
    assert [r["status"] for r in document["results"]] == ["ok", "timeout"]
    assert "not_in_summary" not in document["environment"]
    assert document["environment"]["fingerprint"] == "abc"
    json.dumps(document)  # serializable as is


def test_results_from_summary_round_trip() -> None:
    document = json_round_trip(summary_dict(run_of(ok_result(), ok_result(precision="fp16"))))
    results = results_from_summary(document, "summary.json")
    assert [r.precision for r in results] == ["fp32", "fp16"]
    # read back, a record names the machine of the run (its environment has no testbed here)
    assert results[0] == dataclasses.replace(ok_result(), fingerprint="abc", testbed=None)


def test_newer_schema_version_is_refused() -> None:
    document = json_round_trip(summary_dict(run_of(ok_result())))
    newer = copy.deepcopy(document)
    newer["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(KernbenchError) as exc:
        results_from_summary(newer, "old/summary.json")
    assert "old/summary.json" in exc.value.message
    assert "newer" in exc.value.message


@pytest.mark.parametrize("version", [None, "1", 0, -3])
def test_missing_or_bad_schema_version_is_refused(version: object) -> None:
    document = json_round_trip(summary_dict(run_of(ok_result())))
    document["schema_version"] = version
    with pytest.raises(KernbenchError, match="schema_version"):
        results_from_summary(document, "x.json")


def test_manifest_counts_invalid_kernels() -> None:
    specs = [KernelSpec(name="a", path="kernels/a.py"),
             KernelSpec(name="b", path="kernels/b.py", status="invalid", error="boom")]
    manifest = manifest_dict("/root", ["kernels"], specs)
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert manifest["count"] == 2
    assert manifest["invalid"] == 1
    assert [k["name"] for k in manifest["kernels"]] == ["a", "b"]
    assert manifest["kernels"][1]["error"] == "boom"
    json.dumps(manifest)


def test_spec_dict_is_json_ready() -> None:
    entry = spec_dict(KernelSpec(name="a", path="kernels/a.py", parameters=("n", "precision"),
                                 backends=("cpu", "cuda")))
    assert json_round_trip(entry) == entry
    assert entry["parameters"] == ["n", "precision"]
    assert entry["backends"] == ["cpu", "cuda"]
    assert entry["config"] is None
