"""The committed report fixture (tests/fixtures/report_run/) and golden-file comparison.

Golden files live in tests/golden/. A mismatch fails with a diff; to accept a deliberate change
of output, rerun with ``KERNBENCH_UPDATE_GOLDEN=1`` and review the diff of the golden files.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
from pathlib import Path
from typing import Any

from kernbench.reporting.bundle import ReportInputs

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "report_run"
GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def load_fixture(*, comparison: bool = True, history: bool = True) -> ReportInputs:
    """The fixture run as report inputs; leave out the comparison or history on request."""
    def read(name: str) -> object:
        return json.loads((FIXTURE / name).read_text(encoding="utf-8"))

    summary = read("summary.json")
    environment = read("env.json")
    assert isinstance(summary, dict) and isinstance(environment, dict)
    found_comparison = read("comparison.json") if comparison else None
    assert found_comparison is None or isinstance(found_comparison, dict)
    records = read("history.json") if history else []
    assert isinstance(records, list)
    return ReportInputs(summary, environment, found_comparison, tuple(records))


def large_summary(cases: int) -> dict[str, Any]:
    """The fixture as a run of `cases` cases of one kernel each (its rmsnorm[cpu,fp32] renamed
    k0000, k0001, ..., slower as they go; every tenth fails its accuracy check), its counts
    made anew."""
    summary = copy.deepcopy(dict(load_fixture().summary))
    model = next(r for r in summary["results"] if r["case_id"] == "rmsnorm[cpu,fp32]")
    summary["results"] = []
    for index in range(cases):
        record = copy.deepcopy(model)
        record["kernel_name"] = f"k{index:04d}"
        record["case_id"] = f"k{index:04d}[cpu,fp32]"
        record["timing"]["latency_ms_p50"] = 1.0 + index / 1000
        record["accuracy"] = {**(model["accuracy"] or {}), "passed": index % 10 != 0,
                              "exceeded": [], "mismatch": None}
        summary["results"].append(record)
    summary["counts"] = {"total": cases, "ok": cases, "failed": 0, "timeout": 0,
                         "skipped": 0, "invalid": 0}
    return summary


def assert_golden(name: str, actual: str) -> None:
    """`actual` must equal tests/golden/`name` (or becomes it under KERNBENCH_UPDATE_GOLDEN=1)."""
    path = GOLDEN / name
    if os.environ.get("KERNBENCH_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"{path} is missing; create it with KERNBENCH_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(keepends=True),
                                            actual.splitlines(keepends=True),
                                            f"golden/{name}", "rendered"))
        raise AssertionError(f"{name} differs from its golden file "
                             f"(KERNBENCH_UPDATE_GOLDEN=1 accepts):\n{diff[:6000]}")
