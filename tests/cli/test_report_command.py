"""Report formats end to end: `kernbench run --format`, `kernbench report DIR`, stale files."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kernbench.cli.main import main

FAST = ("--iters", "5", "--warmup", "1", "--no-cpu-peak", "-q")

GOOD = """
import numpy as np

def run_benchmark(precision="fp32"):
    return np.ones(4, dtype=np.float32 if precision == "fp32" else np.float64) * 2
"""
GOOD_YAML = "precisions: [fp32, fp64]\n"
BROKEN = """
def run_benchmark():
    raise ValueError("bad <input> & shape")
"""

EVERY_FILE = ("summary.json", "env.json", "summary.md", "index.html", "results.csv",
              "pytorch_v3.json", "github_benchmark.json", "junit.xml", "bmf.json",
              "pytest_benchmark.json")


def tree(root: Path) -> Path:
    for rel, text in {"kernels/good/good.py": GOOD, "kernels/good/bench.yaml": GOOD_YAML,
                      "kernels/broken.py": BROKEN}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


def run(root: Path, out: Path, *extra: str) -> int:
    return main(["run", "--root", str(root), "--output-dir", str(out), *FAST,
                 "--debug-fake-timer", "2", *extra])


def test_format_all_writes_every_file(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    assert run(tree(tmp_path / "repo"), out, "--format", "all") == 1  # broken.py failed
    for name in EVERY_FILE:
        assert (out / name).is_file(), name
    assert (out / "plots" / "latency.png").read_bytes().startswith(b"\x89PNG")
    rows = (out / "results.csv").read_text().splitlines()
    assert len(rows) == 1 + 3  # header + good fp32, good fp64, broken
    suite = ET.parse(out / "junit.xml").getroot()
    assert "bad <input> & shape" in ET.tostring(suite, encoding="unicode").replace(
        "&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    github = json.loads((out / "github_benchmark.json").read_text())
    assert {e["value"] for e in github} == {2.0}  # the fake clock's 2 ms per call


def test_default_formats_are_json_md_html(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(tree(tmp_path / "repo"), out)
    assert (out / "index.html").is_file() and (out / "summary.md").is_file()
    assert not (out / "results.csv").exists() and not (out / "junit.xml").exists()


def test_report_rerenders_from_json_without_running(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    repo, out = tree(tmp_path / "repo"), tmp_path / "out"
    run(repo, out)
    (repo / "kernels" / "good" / "good.py").unlink()  # nothing can run any more
    original = (out / "summary.md").read_text()
    capsys.readouterr()
    other = tmp_path / "other"
    assert main(["report", str(out), "--output-dir", str(other),
                 "--format", "md,csv,junit,json"]) == 0
    assert "Rendered" in capsys.readouterr().err
    assert (other / "summary.md").read_text() == original
    assert sorted(p.name for p in other.iterdir()) == [
        "env.json", "junit.xml", "kernel_manifest.json", "kernels", "results.csv",
        "summary.json", "summary.md"]
    assert json.loads((other / "summary.json").read_text()) == json.loads(
        (out / "summary.json").read_text())
    # summary.md's advice names kernels/broken.json for the traceback: it came along
    assert "kernels/broken.json" in original
    assert (other / "kernels" / "broken.json").read_bytes() == (
        out / "kernels" / "broken.json").read_bytes()


def test_report_in_place_is_idempotent(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(tree(tmp_path / "repo"), out)
    html = (out / "index.html").read_text()
    assert main(["report", str(out)]) == 0
    assert (out / "index.html").read_text() == html


def test_report_of_a_directory_without_a_run_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "summary.json") in err and "no such file" in err


def test_report_of_a_killed_run_renders_the_cases_it_finished(tmp_path: Path) -> None:
    # A run killed outright (SIGKILL) leaves summary.json as written at its start (no results,
    # complete: false) and kernels/*.json of its finished cases, which --resume trusts.
    out = tmp_path / "out"
    run(tree(tmp_path / "repo"), out)
    summary = json.loads((out / "summary.json").read_text())
    (out / "summary.json").write_text(json.dumps({**summary, "complete": False,
                                                  "results": []}))
    assert main(["report", str(out), "--output-dir", str(tmp_path / "again"),
                 "--format", "md,junit", "-q"]) == 0
    markdown = (tmp_path / "again" / "summary.md").read_text()
    assert r"good\[cpu,fp32\]" in markdown and r"broken\[cpu,native\]" in markdown
    suite = ET.parse(tmp_path / "again" / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "4"  # 3 cases + "run finished"


def test_report_of_a_truncated_summary_says_so(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    run(tree(tmp_path / "repo"), out)
    text = (out / "summary.json").read_text()
    (out / "summary.json").write_text(text[: len(text) // 2])
    assert main(["report", str(out), "--output-dir", str(tmp_path / "again")]) == 2
    assert "not valid JSON (truncated or corrupt?)" in capsys.readouterr().err


def test_unknown_format_names_the_choices(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "--root", str(tmp_path), "--format", "md,pdf"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown format 'pdf'" in err and "pytorch_v3" in err and "all" in err


def test_a_new_run_removes_an_earlier_runs_comparison(tmp_path: Path) -> None:
    repo, out = tree(tmp_path / "repo"), tmp_path / "out"
    run(repo, out)
    stale = {"schema_version": 1, "kind": "kernbench-comparison", "verdict": "Regression: stale",
             "cases": []}
    (out / "comparison.json").write_text(json.dumps(stale))
    (out / "regressions.md").write_text("stale")
    run(repo, out)
    assert not (out / "comparison.json").exists() and not (out / "regressions.md").exists()
    assert "stale" not in (out / "index.html").read_text()


def test_comment_prints_the_marked_comment_of_a_run(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    run(tree(tmp_path / "repo"), out)
    capsys.readouterr()
    assert main(["comment", str(out), "--validate",
                 "--run-url", "https://github.com/o/r/actions/runs/7"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("<!-- kernbench-comment -->\n")
    assert "No comparison" in text and "actions/runs/7" in text
    assert len(text) < 60_000


def test_comment_validate_refuses_a_malformed_artifact(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "summary.json").write_text('{"schema_version": 1, "results": [{"status": 3}]}')
    assert main(["comment", str(tmp_path), "--validate"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "summary.json" in captured.err and "$.results[0]" in captured.err


def test_standard_exports_by_their_consumers_names(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run(tree(tmp_path / "repo"), out, "--format", "json") == 1
    assert main(["report", str(out), "--format", "bmf,pytorch-oss,pytest-benchmark"]) == 0
    bmf = json.loads((out / "bmf.json").read_text())
    assert {m["latency"]["value"] for m in bmf.values()} == {2e6}  # 2 ms per call, in ns
    v3 = json.loads((out / "pytorch_v3.json").read_text())
    assert {r["metric"]["name"] for r in v3} >= {"latency_ms", "latency_ms_p50"}
    pytest_json = json.loads((out / "pytest_benchmark.json").read_text())
    assert {b["stats"]["median"] for b in pytest_json["benchmarks"]} == {0.002}  # seconds
