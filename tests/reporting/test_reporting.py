"""Reporting: file names, atomic writes, Markdown helpers and the rendered summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernbench.analysis.summary import record_dict, summary_dict
from kernbench.reporting import (
    ReportGenerator,
    safe_filename,
    write_json_atomic,
    write_text_atomic,
)
from kernbench.reporting.markdown import fmt_num, leaderboard, md_escape, render_summary
from kernbench.results.model import CaseResult, RunResult
from kernbench.results.schema import SCHEMA_VERSION

ENVIRONMENT: dict[str, Any] = {
    "git": {"commit": "0123456789abcdef", "short_commit": "0123456", "branch": "main",
            "dirty": True, "reason": None},
    "os": {"system": "Linux", "release": "6.1", "machine": "x86_64"},
    "cpu": {"model": "Test CPU", "logical_cores": 8},
    "python": {"version": "3.11.7", "implementation": "CPython"},
    "libraries": {"numpy": "2.0.0", "torch": None},
    "gpus": [],
    "gpus_reason": "no nvidia-smi",
    "fingerprint": "feedbeef",
    "hostname": "box",
}


def case(name: str, status: str = "ok", samples: tuple[float, ...] = (1.0,) * 12,
         reason: str | None = None, backend: str = "cpu") -> CaseResult:
    ran = status == "ok"
    return CaseResult(
        kernel_name=name, kernel_path=f"kernels/{name}.py", framework="numpy", backend=backend,
        precision="fp32", problem_size=None, status=status,  # type: ignore[arg-type]
        reason=reason, samples_ms=samples if ran else (), inner_loops=1 if ran else 0,
        timer="perf_counter_ns", timer_overhead_ns=0.0,
        memory={"peak_mb": 40.0, "allocated_mb": 2.0, "source": "VmHWM test"} if ran else {},
        energy={"energy_j": None, "power_w": None, "reason": "no energy counter"},
        accuracy={"rmse": None, "max_error": None, "reason": "no reference"})


def document_for(*results: CaseResult, complete: bool = True) -> dict[str, Any]:
    run = RunResult(started_at="2024-05-01T10:00:00Z", finished_at="2024-05-01T10:01:00Z",
                    complete=complete, settings={"iterations": 12, "warmup": 3, "seed": 7},
                    environment=ENVIRONMENT, kernels=(), results=tuple(results))
    return summary_dict(run)


def section(md: str, title: str) -> str:
    body = md.split(f"## {title}\n", 1)[1]
    return body.split("\n## ", 1)[0]


# -- file names and atomic writes -----------------------------------------------------------


@pytest.mark.parametrize("name", ["../etc/passwd", "/abs/path", "..", ".hidden", "a\\b",
                                  "", "名前", "x y|z"])
def test_safe_filename_is_a_plain_file_name(name: str) -> None:
    cleaned = safe_filename(name)
    assert cleaned
    assert "/" not in cleaned and "\\" not in cleaned
    assert not cleaned.startswith(".")
    assert all(c.isascii() and (c.isalnum() or c in "._-") for c in cleaned)


def test_safe_filename_keeps_ordinary_names() -> None:
    assert safe_filename("gemm") == "gemm"
    assert safe_filename("linalg.norm") == "linalg.norm"
    assert safe_filename("conv2d-fp16_v2") == "conv2d-fp16_v2"


def test_kernel_file_stays_inside_the_output_dir(tmp_path: Path) -> None:
    reports = ReportGenerator(tmp_path / "out")
    path = reports.write_kernel("../../escape", None, [case("../../escape")])
    assert path.parent == tmp_path / "out" / "kernels"
    assert json.loads(path.read_text())["kernel_name"] == "../../escape"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_distinct_kernel_names_get_distinct_files(tmp_path: Path) -> None:
    reports = ReportGenerator(tmp_path)
    first = reports.write_kernel("a b", None, [case("a b")])
    second = reports.write_kernel("a_b", None, [case("a_b")])
    assert first != second, "two kernels share one kernels/<name>.json: one overwrites the other"
    assert json.loads(first.read_text())["kernel_name"] == "a b"
    assert json.loads(second.read_text())["kernel_name"] == "a_b"


def test_write_json_atomic_creates_parents_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "doc.json"
    write_json_atomic(target, {"a": [1, 2.5, None]})
    assert json.loads(target.read_text()) == {"a": [1, 2.5, None]}
    write_json_atomic(target, {"a": "replaced"})
    assert json.loads(target.read_text()) == {"a": "replaced"}
    assert [p.name for p in target.parent.iterdir()] == ["doc.json"]


def test_failed_json_write_keeps_the_previous_file(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    write_json_atomic(target, {"version": 1})
    with pytest.raises(TypeError):
        write_json_atomic(target, {"version": object()})
    assert json.loads(target.read_text()) == {"version": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["doc.json"]


def test_write_text_atomic_round_trips_unicode(tmp_path: Path) -> None:
    target = write_text_atomic(tmp_path / "s.md", "µs ± σ\n")
    assert target.read_text(encoding="utf-8") == "µs ± σ\n"


def test_report_generator_writes_the_report_set(tmp_path: Path) -> None:
    reports = ReportGenerator(tmp_path / "out")
    reports.write_environment(ENVIRONMENT)
    reports.write_manifest({"schema_version": 1, "kernels": []})
    reports.write_kernel("gemm", {"name": "gemm"}, [case("gemm")])
    run = RunResult(started_at="s", finished_at="f", complete=True,
                    settings={"iterations": 12, "warmup": 3, "seed": 7},
                    environment=ENVIRONMENT, kernels=(), results=(case("gemm"),))
    reports.write_summary(run)
    out = tmp_path / "out"
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert names == ["env.json", "kernel_manifest.json", "kernels/gemm.json", "summary.json",
                     "summary.md"]
    env = json.loads((out / "env.json").read_text())
    assert env["schema_version"] == SCHEMA_VERSION and env["cpu"]["model"] == "Test CPU"
    per_kernel = json.loads((out / "kernels" / "gemm.json").read_text())
    assert per_kernel["kernel"] == {"name": "gemm"}
    # every record names the machine its environment describes
    machine = {"fingerprint": ENVIRONMENT.get("fingerprint"), "testbed": None}
    assert per_kernel["results"] == [{**record_dict(case("gemm")), **machine}]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["results"] == per_kernel["results"]


# -- Markdown helpers ---------------------------------------------------------------------------


def test_md_escape_protects_table_cells() -> None:
    assert md_escape("a|b") == "a\\|b"
    assert md_escape("line one\nline two\r\n  three") == "line one line two three"
    assert md_escape(None) == ""
    assert md_escape("x_y *z* `c` <d> [e]") == "x\\_y \\*z\\* \\`c\\` \\<d\\> \\[e\\]"
    assert md_escape("back\\slash") == "back\\\\slash"


@pytest.mark.parametrize(("value", "text"), [
    (None, "n/a"),
    (0, "0"),
    (0.0, "0"),
    (2.5, "2.5"),
    (1234.5678, "1235"),
    (123456.7, "123,457"),
    (0.000123456, "0.0001235"),
    (-12345.6, "-12,346"),
    (True, "True"),
    ("text", "text"),
])
def test_fmt_num(value: object, text: str) -> None:
    assert fmt_num(value) == text


def test_fmt_num_digits() -> None:
    assert fmt_num(3.14159, 2) == "3.1"
    assert fmt_num(3.14159) == "3.142"


@pytest.mark.parametrize("value", [9999.5, 9999.96])
def test_fmt_num_never_switches_to_exponent_near_the_threshold(value: float) -> None:
    assert "e" not in fmt_num(value), fmt_num(value)


def test_leaderboard_ranks_successful_records_by_median() -> None:
    records = [record_dict(r) for r in (
        case("slow", samples=(5.0,) * 12), case("broken", status="failed", reason="x"),
        case("fast", samples=(0.5,) * 12), case("middle", samples=(1.0, 2.0, 3.0)),
        case("skipped", status="skipped", reason="y"))]
    assert [r["kernel_name"] for r in leaderboard(records)] == ["fast", "middle", "slow"]


# -- rendered summary ----------------------------------------------------------------------------


def test_render_summary_lists_ranks_and_problems() -> None:
    document = document_for(
        case("slow", samples=(5.0,) * 12),
        case("fast", samples=(0.5,) * 12),
        case("crashy", status="failed", reason="boom | bad\nsecond line"),
        case("gpu_only", status="skipped", backend="cuda", reason="needs <cuda> [here]"))
    md = render_summary(document, ENVIRONMENT)

    assert "**4 cases**: 2 ok, 1 failed, 0 timed out, 1 skipped, 0 invalid." in md
    assert "Incomplete run" not in md
    env = section(md, "Environment")
    assert "`0123456` on main (uncommitted changes)" in env
    assert "Test CPU, 8 logical cores" in env
    assert "numpy 2.0.0" in env and "torch" not in env
    assert "none (no nvidia-smi)" in env

    board = section(md, "Performance Leaderboard")
    rows = [line for line in board.splitlines() if line.startswith("| ") and
            line.split("|")[1].strip().isdigit()]
    assert [r.split("|")[2].strip() for r in rows] == ["fast", "slow"]
    assert [c.strip() for c in rows[0].split("|")[1:6]] == ["1", "fast", "cpu", "fp32", "0.5"]
    assert "crashy" not in board

    usage = section(md, "Resource Usage")
    assert "| fast | cpu | fp32 | 40 | 2 | n/a | n/a |" in usage
    assert "VmHWM test" in usage

    problems = section(md, "Failures and Skips")
    assert "| **failed** | crashy\\[cpu,fp32\\] | boom \\| bad second line |" in problems
    # the machine lists no GPU: its CUDA cases are one line, with their reason, not a row each
    assert ("- skipped: CUDA not available on this machine (1 case of gpu\\_only): needs "
            "\\<cuda\\> \\[here\\]." in problems)
    assert "| skipped |" not in problems
    assert "second line" not in problems.split("boom", 1)[0]


def test_an_interrupted_run_names_the_cases_short_of_their_processes() -> None:
    from kernbench.reporting.machines import incomplete_text

    document = {"complete": False, "settings": {"processes": 3},
                "unfinished_cases": ["gemm[cpu,fp32]", "fft[cpu,fp32]"]}
    assert incomplete_text(document) == (
        "Incomplete run", "interrupted before every case finished; 2 of the cases shown ran "
        "fewer worker processes than the 3 asked for (e.g. gemm[cpu,fp32])")
    assert incomplete_text({"complete": False, "unfinished_cases": []})[1] == \
        "interrupted before every case finished"
    planned = {"complete": False, "counts": {"total": 3},
               "settings": {"plan": {"case_ids": ["a", "b", "c", "d", "e", "f"]}}}
    assert incomplete_text(planned)[1] == ("interrupted before every case finished; 3 of its "
                                           "6 planned cases never ran")
    from dataclasses import replace

    short = replace(case("gemm"), process_sample_counts=(6, 6))
    whole = replace(case("fft"), process_sample_counts=(4, 4, 4))
    one = case("conv")  # one process keeps no per-process counts
    run = RunResult(started_at="s", finished_at=None, complete=False,
                    settings={"processes": 3}, environment=ENVIRONMENT, kernels=(),
                    results=(short, whole, one))
    assert summary_dict(run)["unfinished_cases"] == ["gemm[cpu,fp32]", "conv[cpu,fp32]"]
    assert "unfinished_cases" not in summary_dict(replace(run, complete=True))


def test_render_summary_with_nothing_successful_and_incomplete() -> None:
    document = document_for(case("crashy", status="timeout", reason="timed out after 3 s"),
                            complete=False)
    md = render_summary(document, {**ENVIRONMENT, "git": {"commit": None,
                                                          "reason": "not a git work tree"}})
    assert "Incomplete run" in md
    assert "every case ran" not in md  # some never did
    assert section(md, "Performance Leaderboard").count("No case finished successfully.") == 1
    assert section(md, "Resource Usage").count("No case finished successfully.") == 1
    assert "n/a (not a git work tree)" in section(md, "Environment")
    assert "| **timeout** | crashy\\[cpu,fp32\\] | timed out after 3 s |" in md


def test_render_summary_every_case_ran() -> None:
    md = render_summary(document_for(case("fast")), ENVIRONMENT)
    assert "None: every case ran." in section(md, "Failures and Skips")


def test_render_summary_lists_measurement_warnings() -> None:
    noisy = case("noisy", samples=(1.0, 1.0, 5.0, 9.0))
    md = render_summary(document_for(noisy), ENVIRONMENT)
    warnings = section(md, "Measurement Warnings")
    assert "noisy\\[cpu,fp32\\]" in warnings
    assert "only 4 samples" in warnings
