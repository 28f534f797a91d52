"""Standard exports: results.csv, pytorch_v3.json, github_benchmark.json and junit.xml."""

from __future__ import annotations

import csv
import io
import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.exports import (
    CSV_COLUMNS,
    FILES,
    render_csv,
    render_github_benchmark,
    render_junit,
    render_pytorch_v3,
)
from support.reports import GOLDEN, assert_golden, load_fixture

RENDERERS = [render_csv, render_pytorch_v3, render_github_benchmark, render_junit]


def record(kernel: str = "k", status: str = "ok", **changes: Any) -> dict[str, Any]:
    """A small, complete-enough result record; `changes` replace its top-level keys."""
    base: dict[str, Any] = {
        "kernel_name": kernel, "case_id": f"{kernel}[cpu,fp32]", "backend": "cpu",
        "precision": "fp32", "problem_size": {"n": 8}, "status": status, "reason": None,
        "timing": {"latency_ms_p50": 2.0, "latency_ms_p50_ci95": [1.5, 2.5],
                   "samples_ms": [1.0, 2.0, 3.0], "iterations": 3, "inner_loops": 1},
        "worker": {"stderr_tail": ""}, "duration_s": 0.5, "golden": None,
    }
    base.update(changes)
    return base


def inputs_of(records: list[Any], cases: list[Any] | None = None) -> ReportInputs:
    summary = {"started_at": "2026-01-01T00:00:00Z", "results": records}
    environment = {"hostname": "box", "git": {"commit": "abc", "short_commit": "abc"}}
    comparison = None if cases is None else {"cases": cases}
    return ReportInputs(summary, environment, comparison)


def junit_cases(text: str) -> dict[str, ET.Element]:
    root = ET.fromstring(text)
    return {str(case.get("name")): case for case in root.iter("testcase")}


# --------------------------------------------------------------------------- golden files


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_golden_file(fmt: str) -> None:
    name, render = FILES[fmt]
    actual = render(load_fixture())
    if fmt == "pytest-benchmark" and sys.version_info < (3, 11):
        actual = with_golden_stddevs(actual, name)
    assert_golden(name, actual)


def with_golden_stddevs(actual: str, name: str) -> str:
    """`actual` with the golden file's stddevs where the two agree to 1e-12: Python 3.11 made
    statistics.stdev (which pytest-benchmark uses too) exact, so 3.10's can differ from the
    golden file (made on 3.11) in its last digit."""
    golden = json.loads((GOLDEN / name).read_text(encoding="utf-8"))["benchmarks"]
    for mine, theirs in zip(json.loads(actual)["benchmarks"], golden, strict=True):
        ours, expected = mine["stats"]["stddev"], theirs["stats"]["stddev"]
        assert ours == pytest.approx(expected, rel=1e-12, abs=0.0)
        actual = actual.replace(f'"stddev": {json.dumps(ours)}',
                                f'"stddev": {json.dumps(expected)}')
    return actual


def test_renderers_are_deterministic() -> None:
    fixture = load_fixture()
    for render in RENDERERS:
        assert render(fixture) == render(load_fixture())


# --------------------------------------------------------------------------- results.csv


def test_csv_parses_back_with_one_row_per_result() -> None:
    fixture = load_fixture()
    reader = csv.DictReader(io.StringIO(render_csv(fixture)))
    rows = list(reader)
    assert tuple(reader.fieldnames or ()) == CSV_COLUMNS
    assert [row["case_id"] for row in rows] == [r["case_id"] for r in fixture.results]
    assert [row["status"] for row in rows] == [r["status"] for r in fixture.results]
    for row, result in zip(rows, fixture.results, strict=True):
        p50 = result["timing"]["latency_ms_p50"]
        assert row["latency_ms_p50"] == ("" if p50 is None else repr(p50))
        if p50 is not None:
            assert float(row["latency_ms_p50"]) == p50


def test_csv_keeps_full_float_precision_and_empty_cells() -> None:
    value = 0.1 + 0.2
    timing = {"latency_ms_p50": value, "latency_ms_p50_ci95": None}
    row = next(csv.DictReader(io.StringIO(render_csv(inputs_of([record(timing=timing)])))))
    assert row["latency_ms_p50"] == "0.30000000000000004"
    assert row["latency_ms_p50_ci95_low"] == row["comparison_verdict"] == ""
    assert row["problem_size"] == '{"n":8}'


@pytest.mark.parametrize("name", ["=1+1", "+cmd", "-2+3", "@SUM(A1)", "=HYPERLINK(\"x\")"])
def test_csv_text_cells_never_start_a_formula(name: str) -> None:
    hostile = record(kernel=name, reason=f"{name} failed", status="failed")
    row = next(csv.DictReader(io.StringIO(render_csv(inputs_of([hostile])))))
    assert row["kernel_name"] == f"'{name}" and row["case_id"] == f"'{name}[cpu,fp32]"
    assert row["reason"] == f"'{name} failed"
    plain = next(csv.DictReader(io.StringIO(render_csv(inputs_of([record(kernel="gemm")])))))
    assert plain["kernel_name"] == "gemm" and plain["latency_ms_p50"] == "2.0"


def test_csv_matches_comparison_by_key_when_labels_repeat() -> None:
    small = record("gemm", problem_size={"n": 1})
    large = record("gemm", problem_size={"n": 2})
    cases = [{"key": 'gemm[cpu,fp32]{"n": 2}', "label": "gemm[cpu,fp32]", "verdict": "improved"},
             {"key": 'gemm[cpu,fp32]{"n": 1}', "label": "gemm[cpu,fp32]", "verdict": "regressed",
              "ratio": 1.5}]
    rows = list(csv.DictReader(io.StringIO(render_csv(inputs_of([small, large], cases)))))
    assert [row["comparison_verdict"] for row in rows] == ["regressed", "improved"]
    assert rows[0]["comparison_ratio"] == "1.5"


# --------------------------------------------------------------------------- pytorch_v3.json


def extra_infos(node: Any) -> Iterator[Mapping[str, Any]]:
    """Every ``extra_info`` mapping anywhere under `node`."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "extra_info":
                yield value
            yield from extra_infos(value)
    elif isinstance(node, list):
        for item in node:
            yield from extra_infos(item)


def test_v3_every_extra_info_value_is_a_string() -> None:
    records = json.loads(render_pytorch_v3(load_fixture()))
    infos = list(extra_infos(records))
    assert records and len(infos) >= 4 * len(records)
    for info in infos:
        assert isinstance(info, dict)
        assert all(isinstance(value, str) for value in info.values()), info


def test_v3_has_the_schema_fields_and_only_ok_cases() -> None:
    fixture = load_fixture()
    records = json.loads(render_pytorch_v3(fixture))
    ok = {r["case_id"]: r for r in fixture.results if r["status"] == "ok"}
    assert {r["model"]["extra_info"]["case_id"] for r in records} == set(ok)
    for entry in records:
        assert set(entry) == {"benchmark", "model", "metric", "runners", "dependencies"}
        assert entry["benchmark"]["name"] == "kernbench"
        assert entry["model"]["origins"] == ["kernbench"]
        assert entry["runners"][0]["name"] == "benchhost"
        result = ok[entry["model"]["extra_info"]["case_id"]]
        metric = entry["metric"]
        if metric["name"] == "latency_ms":
            assert metric["benchmark_values"] == result["timing"]["samples_ms"]
        if metric["name"] == "latency_ms_p50":
            assert metric["benchmark_values"] == [result["timing"]["latency_ms_p50"]]


def test_v3_golden_time_is_the_target_of_the_median() -> None:
    golden = {"passed": True, "golden_time_ms": 2.5, "limit_ms": 2.75}
    records = json.loads(render_pytorch_v3(inputs_of([record(golden=golden)])))
    targets = {r["metric"]["name"]: r["metric"]["target_value"] for r in records}
    assert targets == {"latency_ms": None, "latency_ms_p50": 2.5}


# --------------------------------------------------------------------------- github_benchmark.json


def test_github_lists_only_ok_cases_with_their_median() -> None:
    fixture = load_fixture()
    entries = json.loads(render_github_benchmark(fixture))
    ok = [r for r in fixture.results if r["status"] == "ok"]
    assert [e["name"] for e in entries] == [r["case_id"] for r in ok]
    for entry, result in zip(entries, ok, strict=True):
        assert entry["unit"] == "ms"
        assert entry["value"] == result["timing"]["latency_ms_p50"]
        assert entry["range"].startswith("± ")
        assert isinstance(entry["extra"], str) and "precision: " in entry["extra"]


def test_github_range_is_the_half_width_of_the_interval() -> None:
    entry = json.loads(render_github_benchmark(inputs_of([record()])))[0]
    assert entry == {"name": "k[cpu,fp32]", "unit": "ms", "value": 2.0, "range": "± 0.5",
                     "extra": entry["extra"]}
    assert "samples: 3 x 1" in entry["extra"] and "commit: abc" in entry["extra"]


def test_github_disambiguates_repeated_case_ids() -> None:
    records = [record("gemm", problem_size={"n": 1}), record("gemm", problem_size={"n": 2})]
    names = [e["name"] for e in json.loads(render_github_benchmark(inputs_of(records)))]
    assert names == ['gemm[cpu,fp32]{"n":1}', 'gemm[cpu,fp32]{"n":2}']


# --------------------------------------------------------------------------- junit.xml


def test_junit_counts_match_the_fixture_statuses() -> None:
    fixture = load_fixture()
    root = ET.fromstring(render_junit(fixture))
    suite = root.find("testsuite")
    assert root.tag == "testsuites" and suite is not None
    statuses = Counter(r["status"] for r in fixture.results)
    regressed = {c["label"] for c in (fixture.comparison or {}).get("cases", [])
                 if c["verdict"] == "regressed"}
    assert regressed, "the fixture is meant to hold a regression"
    assert suite.get("tests") == str(len(fixture.results))
    assert suite.get("failures") == str(statuses["failed"] + statuses["timeout"] + len(regressed))
    assert suite.get("skipped") == str(statuses["skipped"])
    assert suite.get("errors") == str(statuses["invalid"])
    cases = suite.findall("testcase")
    assert len(cases) == len(fixture.results)
    failing = [c for c in cases if c.find("failure") is not None]
    assert len(failing) == statuses["failed"] + statuses["timeout"] + len(regressed)
    assert len([c for c in cases if c.find("skipped") is not None]) == statuses["skipped"]
    for case, result in zip(cases, fixture.results, strict=True):
        assert case.get("classname") == f"kernbench.{result['kernel_name']}"
        failure = case.find("failure")
        if result["status"] in ("failed", "timeout"):
            assert failure is not None and failure.get("type") == result["status"]
            assert failure.get("message") == result["reason"]
        elif result["case_id"] in regressed:
            assert failure is not None and failure.get("type") == "regression"


def test_junit_regressed_verdict_is_a_failure() -> None:
    cases = [{"key": "other", "label": "k[cpu,fp32]", "verdict": "regressed", "ratio": 1.31,
              "ci_low": 1.2, "ci_high": 1.4, "q_value": 0.002}]
    case = junit_cases(render_junit(inputs_of([record()], cases)))["k[cpu,fp32]"]
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "regression"
    message = failure.get("message") or ""
    assert "1.31" in message and "[1.2, 1.4]" in message and "0.002" in message
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["comparison_verdict"] == "regressed"
    assert properties["latency_ms_p50"] == "2.0"


def test_junit_unchanged_ok_case_passes() -> None:
    cases = [{"key": 'k[cpu,fp32]{"n": 8}', "verdict": "unchanged"}]
    case = junit_cases(render_junit(inputs_of([record()], cases)))["k[cpu,fp32]"]
    assert [child.tag for child in case] == ["properties", "system-out"]


def test_junit_of_a_run_that_did_not_finish_is_not_a_clean_pass() -> None:
    unfinished = inputs_of([record("a"), record("b")])
    unfinished.summary["complete"] = False
    root = ET.fromstring(render_junit(unfinished))
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures")) == ("3", "1", "0")
    error = junit_cases(render_junit(unfinished))["run finished"].find("error")
    assert error is not None and error.get("type") == "incomplete"
    assert "only the 2 cases above ran" in (error.get("message") or "")
    finished = inputs_of([record("a"), record("b")])
    finished.summary["complete"] = True
    assert "run finished" not in junit_cases(render_junit(finished))


def test_junit_golden_failure() -> None:
    golden = {"passed": False, "golden_time_ms": 1.0, "limit_ms": 1.1, "measured_ms": 2.0,
              "reason": "median 2 ms is over the limit 1.1 ms"}
    failed = record(status="failed", golden=golden, reason="golden check failed: median 2 ms")
    case = junit_cases(render_junit(inputs_of([failed])))["k[cpu,fp32]"]
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "golden"
    assert "limit_ms: 1.1" in (failure.text or "")


def test_junit_escapes_reasons_and_keeps_stderr() -> None:
    reason = 'bad <input> & "quotes" \x1b[31mred'
    broken = record(status="failed", reason=reason, timing=None,
                    worker={"stderr_tail": "boom </failure> &\n"})
    invalid = record("v", status="invalid", reason="no run_benchmark")
    skipped = record("s", status="skipped", reason="CUDA <absent>")
    text = render_junit(inputs_of([broken, invalid, skipped]))
    cases = junit_cases(text)
    failure = cases["k[cpu,fp32]"].find("failure")
    assert failure is not None
    assert failure.get("message") == 'bad <input> & "quotes" \\x1b[31mred'
    assert "boom </failure> &" in (failure.text or "")
    error = cases["v[cpu,fp32]"].find("error")
    assert error is not None and error.get("type") == "invalid"
    skip = cases["s[cpu,fp32]"].find("skipped")
    assert skip is not None and skip.get("message") == "CUDA <absent>"


# --------------------------------------------------------------------------- odd records


@pytest.mark.parametrize("render", RENDERERS)
def test_renderers_survive_odd_records(render: Any) -> None:
    odd = [
        {"kernel_name": "a", "status": "ok", "timing": None},
        {"status": "failed"},
        record("b", timing={"latency_ms_p50": None, "latency_ms_p50_ci95": [None]},
               memory=None, worker=None, accuracy="?", work=[]),
        record("c", status="mystery", duration_s="slow"),
        "not a record",
    ]
    text = render(inputs_of(odd, cases=[{"key": None}, "junk"]))
    assert text.endswith("\n")
    no_cases = inputs_of([record()])
    no_cases = ReportInputs(no_cases.summary, {}, {"cases": 5})
    assert render(no_cases).endswith("\n")


def test_odd_records_render_with_empty_values() -> None:
    inputs = inputs_of([{"kernel_name": "a", "status": "ok", "timing": None}])
    row = next(csv.DictReader(io.StringIO(render_csv(inputs))))
    assert row["case_id"] == "a[None,None]" and row["latency_ms_p50"] == ""
    assert json.loads(render_pytorch_v3(inputs)) == []
    assert json.loads(render_github_benchmark(inputs)) == []
    case = next(ET.fromstring(render_junit(inputs)).iter("testcase"))
    assert case.get("time") == "0.000000" and case.find("failure") is None


# --------------------------------------------------------------------------- the v3 schema

_TEXT_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
V3_RECORD = {
    "type": "object", "required": ["benchmark", "model", "metric", "runners"],
    "properties": {
        "benchmark": {"type": "object", "required": ["name", "mode", "dtype", "extra_info"],
                      "properties": {"name": {"type": "string"}, "mode": {"type": "string"},
                                     "dtype": {"type": "string"}, "extra_info": _TEXT_MAP}},
        "model": {"type": "object", "required": ["name", "type", "origins"],
                  "properties": {"name": {"type": "string"}, "type": {"type": "string"},
                                 "backend": {"type": "string"},
                                 "origins": {"type": "array", "items": {"type": "string"}},
                                 "extra_info": _TEXT_MAP}},
        "metric": {"type": "object",
                   "required": ["name", "benchmark_values", "target_value", "extra_info"],
                   "properties": {"name": {"type": "string"},
                                  "benchmark_values": {"type": "array", "minItems": 1,
                                                       "items": {"type": "number"}},
                                  "target_value": {"type": ["number", "null"]},
                                  "extra_info": _TEXT_MAP}},
        "runners": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["name", "type"],
            "properties": {**{k: {"type": "string"} for k in
                              ("name", "type", "cpu_info", "mem_info", "gpu_info",
                               "gpu_mem_info")},
                           **{k: {"type": "integer", "minimum": 0} for k in
                              ("cpu_count", "avail_mem_in_gb", "gpu_count",
                               "avail_gpu_mem_in_gb")},
                           "extra_info": _TEXT_MAP}}},
        "dependencies": {"type": "object", "additionalProperties": {
            "type": "object", "properties": {k: {"type": "string"} for k in
                                             ("repo", "branch", "sha", "version")}}},
    },
}
"""One record of the PyTorch OSS benchmark database, schema v3: the column types of its
oss_ci_benchmark_v3 table (Tuple/Map/Array of String, UInt32 and Float32 fields)."""


def test_v3_records_fit_the_database_columns() -> None:
    import jsonschema

    records = json.loads(render_pytorch_v3(load_fixture()))
    assert records
    for entry in records:
        jsonschema.validate(entry, V3_RECORD)


def test_pytorch_oss_is_the_v3_export() -> None:
    from kernbench.reporting.formats import parse_formats

    assert parse_formats("pytorch-oss,bmf,pytest-benchmark") == (
        "pytorch_v3", "bmf", "pytest-benchmark")
    assert parse_formats("pytorch_v3,pytorch-oss") == ("pytorch_v3",)


def test_every_export_counts_one_process_for_samples_of_one_process() -> None:
    """A record without process_sample_counts holds one process's samples: the csv said
    nothing and github '?', where pytest_benchmark.json said 1."""
    from kernbench.reporting.pytestbench import render_pytest_benchmark

    single = inputs_of([record()])
    (row,) = csv.DictReader(io.StringIO(render_csv(single)))
    assert row["processes"] == "1"
    (entry,) = json.loads(render_github_benchmark(single))
    assert "processes: 1" in entry["extra"]
    bench = json.loads(render_pytest_benchmark(single))["benchmarks"][0]
    assert bench["extra_info"]["processes"] == 1
