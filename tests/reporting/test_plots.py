"""PNG plots from the fixture run: which files, valid PNGs, byte-for-byte reproducible."""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from kernbench.errors import KernbenchError
from kernbench.reporting.plots import MISSING_MATPLOTLIB, render_plots, speedup_rows
from kernbench.reporting.views import human_label
from support.reports import load_fixture

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def names(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def test_every_plot_is_written_as_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    paths = render_plots(load_fixture(), tmp_path)
    assert names(paths) == ["latency.png", "comparison.png", "history.png", "regressions.png"]
    for path in paths:
        assert path.parent == tmp_path / "plots"
        assert path.read_bytes().startswith(PNG_MAGIC)
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == sorted(names(paths))


def test_history_needs_two_records_and_regressions_a_comparison(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    inputs = load_fixture(comparison=False)
    one = replace(inputs, history=inputs.history[:1])
    assert names(render_plots(one, tmp_path / "one")) == ["latency.png", "comparison.png"]
    assert names(render_plots(inputs, tmp_path / "two")) == [
        "latency.png", "comparison.png", "history.png"]


def test_identical_inputs_give_identical_bytes(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    first = render_plots(load_fixture(), tmp_path / "a")
    second = render_plots(load_fixture(), tmp_path / "b")
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
        assert b"matplotlib" not in a.read_bytes(), "no Software entry in the PNG"


def test_a_run_with_nothing_successful_still_gets_its_plots(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    inputs = load_fixture(comparison=False, history=False)
    failed = [r for r in inputs.results if r["status"] != "ok"]
    empty = replace(inputs, summary={**inputs.summary, "results": failed})
    paths = render_plots(empty, tmp_path)
    assert names(paths) == ["latency.png", "comparison.png"]
    assert all(p.read_bytes().startswith(PNG_MAGIC) for p in paths)


def test_speedups_are_against_the_first_backends_fp32_case() -> None:
    results = load_fixture().results
    p50 = {r["case_id"]: r["timing"]["latency_ms_p50"] for r in results if r["status"] == "ok"}
    rows = speedup_rows(results)
    as_text = {label: (round(speedup, 9), base) for label, speedup, base in rows}
    assert as_text["gemm · cpu · fp32 · n=512"] == (1.0, True)
    assert as_text["gemm · cpu · fp64 · n=512"] == (
        round(p50["gemm[cpu,fp32]"] / p50["gemm[cpu,fp64]"], 9), False)
    assert as_text["rmsnorm · cpu · bf16 · rows=4096, hidden=1024"] == (
        round(p50["rmsnorm[cpu,fp32]"] / p50["rmsnorm[cpu,bf16]"], 9), False)
    assert as_text["softmax · cpu · bf16 · rows=4096, cols=1024"] == (
        round(p50["softmax[cpu,fp32]"] / p50["softmax[cpu,bf16]"], 9), False)
    gemm = [label for label, _, _ in rows if label.startswith("gemm ")]
    order = [f"gemm · cpu · {r['precision']} · n=512" for r in results
             if r["kernel_name"] == "gemm"]
    assert gemm == order  # in summary order


def test_plot_labels_name_cases_for_people_never_as_json() -> None:
    record = {"kernel_name": "softmax", "implementation": "numpy", "backend": "cpu",
              "precision": "fp32", "problem_size": {"n": 4096, "grid": [64, 64]}}
    assert human_label(record) == "softmax · numpy · cpu · fp32 · n=4096, grid=64x64"
    assert human_label({**record, "problem_size": 1024}) == "softmax · numpy · cpu · fp32 · 1024"
    case = {"kernel_name": "mm", "backend": "cpu", "precision": "fp32", "point": "m=64,k=64",
            "label": "mm[cpu,fp32,m=64,k=64]"}
    assert human_label(case) == "mm · cpu · fp32 · m=64,k=64"
    labels = [label for label, _, _ in speedup_rows(load_fixture().results)]
    assert labels and not any(c in label for label in labels for c in '{}"[]')


def test_missing_matplotlib_is_a_kernbench_error(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(KernbenchError) as raised:
        render_plots(load_fixture(), tmp_path)
    command = f"{shlex.quote(sys.executable)} -m pip install 'matplotlib>=3.7'"
    assert raised.value.message == f"{MISSING_MATPLOTLIB}: {command}"
    assert not (tmp_path / "plots").exists()


def test_regressed_cases_are_marked_in_the_history(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    inputs = load_fixture()
    assert inputs.comparison is not None
    cases = [dict(c, verdict="regressed") if c["label"] == "softmax[cpu,fp32]" else c
             for c in inputs.comparison["cases"]]
    marked = replace(inputs, comparison={**inputs.comparison, "cases": cases})
    plain = render_plots(inputs, tmp_path / "plain")
    flagged = render_plots(marked, tmp_path / "marked")
    assert plain[2].name == flagged[2].name == "history.png"
    assert plain[2].read_bytes() != flagged[2].read_bytes()
