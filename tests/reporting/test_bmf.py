"""bmf.json: the Bencher Metric Format, checked against Bencher's published JSON schema."""

from __future__ import annotations

import json

import jsonschema

from kernbench.reporting.bmf import render_bmf
from kernbench.reporting.views import dig, mappings
from support.reports import load_fixture

BMF_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema",
    "type": "object",
    "patternProperties": {".+": {
        "type": "object",
        "patternProperties": {".+": {
            "type": "object",
            "properties": {"value": {"type": "number"}, "lower_value": {"type": "number"},
                           "upper_value": {"type": "number"}},
            "required": ["value"]}}}},
}
"""Bencher's schema of BMF (bencher.dev/bmf.json), as its reference page gives it."""


def test_bmf_validates_against_bencher_schema() -> None:
    document = json.loads(render_bmf(load_fixture()))
    jsonschema.validate(document, BMF_SCHEMA)
    assert document


def test_bmf_latency_is_the_median_in_nanoseconds_with_its_interval() -> None:
    inputs = load_fixture()
    document = json.loads(render_bmf(inputs))
    ok = [r for r in mappings(inputs.results) if r.get("status") == "ok"]
    assert set(document) == {r["case_id"] for r in ok}
    for record in ok:
        latency = document[record["case_id"]]["latency"]
        assert latency["value"] == record["timing"]["latency_ms_p50"] * 1e6
        low, high = record["timing"]["latency_ms_p50_ci95"]
        assert (latency["lower_value"], latency["upper_value"]) == (low * 1e6, high * 1e6)
        assert latency["lower_value"] <= latency["value"] <= latency["upper_value"]
        throughput = document[record["case_id"]]["throughput"]["value"]
        assert throughput == dig(record, "timing", "throughput_ops_per_sec")


def test_bmf_leaves_out_cases_without_figures() -> None:
    from reporting.test_exports import inputs_of, record

    inputs = inputs_of([record("a"), record("b", status="failed", timing=None),
                        record("c", timing={"latency_ms_p50": 1.0, "samples_ms": [1.0]})])
    document = json.loads(render_bmf(inputs))
    assert set(document) == {"a[cpu,fp32]", "c[cpu,fp32]"}
    assert document["c[cpu,fp32]"] == {"latency": {"value": 1e6}}
