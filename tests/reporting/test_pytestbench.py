"""pytest_benchmark.json: the shape pytest-benchmark writes, its statistics recomputed by
pytest-benchmark itself, and its ``compare`` command reading the file (these two skip when
pytest-benchmark is not installed; it is not a kernbench dependency)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from kernbench.reporting.pytestbench import render_pytest_benchmark, round_stats
from kernbench.reporting.views import mappings
from support.reports import load_fixture

_NUMBER = {"type": "number"}
STATS_FIELDS = ("min", "max", "mean", "stddev", "rounds", "median", "iqr", "q1", "q3",
                "iqr_outliers", "stddev_outliers", "outliers", "ld15iqr", "hd15iqr", "ops",
                "total", "iterations")
SCHEMA = {
    "type": "object",
    "required": ["machine_info", "commit_info", "benchmarks", "datetime", "version"],
    "properties": {
        "machine_info": {"type": "object"}, "commit_info": {"type": "object"},
        "datetime": {"type": "string"}, "version": {"type": "string"},
        "benchmarks": {"type": "array", "items": {
            "type": "object",
            "required": ["group", "name", "fullname", "params", "stats", "options"],
            "properties": {
                "name": {"type": "string"}, "fullname": {"type": "string"},
                "params": {"type": ["object", "null"]}, "options": {"type": "object"},
                "stats": {"type": "object", "required": list(STATS_FIELDS),
                          "properties": {"rounds": {"type": "integer"},
                                         "iterations": {"type": "integer"},
                                         "outliers": {"type": "string"},
                                         "data": {"type": "array", "items": _NUMBER},
                                         **{k: _NUMBER for k in ("min", "max", "mean",
                                                                 "median", "ops", "total")}}},
            }}},
    },
}
"""What pytest-benchmark's own JSON holds (plugin.pytest_benchmark_generate_json and
stats.Stats.as_dict of pytest-benchmark 5)."""


def _document() -> dict:
    return json.loads(render_pytest_benchmark(load_fixture()))


def test_the_document_has_pytest_benchmarks_shape() -> None:
    document = _document()
    jsonschema.validate(document, SCHEMA)
    ok = [r for r in mappings(load_fixture().results) if r.get("status") == "ok"]
    assert [b["name"] for b in document["benchmarks"]] == [r["case_id"] for r in ok]


def test_data_are_the_samples_in_seconds_and_iterations_the_inner_loop() -> None:
    ok = [r for r in mappings(load_fixture().results) if r.get("status") == "ok"]
    for record, bench in zip(ok, _document()["benchmarks"], strict=True):
        stats = bench["stats"]
        assert stats["data"] == [v / 1000.0 for v in record["timing"]["samples_ms"]]
        assert stats["iterations"] == record["timing"]["inner_loops"]
        assert stats["rounds"] == len(record["timing"]["samples_ms"])
        assert stats["median"] == pytest.approx(record["timing"]["latency_ms_p50"] / 1000.0)


def test_round_stats_by_hand() -> None:
    stats = round_stats([4.0, 1.0, 3.0, 2.0, 100.0])
    assert (stats["min"], stats["max"], stats["median"], stats["rounds"]) == (1.0, 100.0, 3.0, 5)
    assert (stats["q1"], stats["q3"]) == (1.75, 28.0)  # odd count, n % 4 == 1: method 3
    # iqr 26.25: the fences are 1.75 - 39.375 and 28 + 39.375 = 67.375; 100 lies beyond
    assert (stats["iqr_outliers"], stats["ld15iqr"], stats["hd15iqr"]) == (1, 1.0, 4.0)
    assert stats["outliers"] == f"{stats['stddev_outliers']};{stats['iqr_outliers']}"
    assert stats["ops"] == pytest.approx(1 / 22.0)


@pytest.mark.parametrize("data", [[1.0], [2.0, 1.0], [5.0, 1.0, 2.0, 9.0, 3.0, 4.0, 8.0],
                                  [float(i % 7) + 1 for i in range(41)]])
def test_round_stats_equal_pytest_benchmarks_own(data: list[float]) -> None:
    stats_module = pytest.importorskip("pytest_benchmark.stats")
    theirs = stats_module.Stats()
    for value in data:
        theirs.update(value)
    expected = theirs.as_dict()
    ours = round_stats(data)
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value), key


def test_pytest_benchmark_compare_reads_the_file(tmp_path: Path) -> None:
    pytest.importorskip("pytest_benchmark")
    path = tmp_path / "pytest_benchmark.json"
    path.write_text(render_pytest_benchmark(load_fixture()), encoding="utf-8")
    script = "from pytest_benchmark.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", script, "compare", str(path)],
                          capture_output=True, text=True, timeout=120, check=False,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Failed to load" not in done.stdout + done.stderr
    for bench in _document()["benchmarks"]:
        assert bench["name"] in done.stdout
