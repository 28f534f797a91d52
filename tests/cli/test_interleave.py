"""`kernbench run --interleave` end to end through `kernbench.cli.main.main`: progress lines
labelled by round, the setting recorded and repeated by `--resume`, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernbench.api import run_suite
from kernbench.cli.main import main
from kernbench.execution.settings import RunSettings
from kernbench.results.model import ProtocolSettings
from support.kernel_tree import FAST, kernel, load, write

LOGGED = """
import os

with open({log!r}, "a", encoding="utf-8") as handle:
    handle.write("{name} " + str(os.getpid()) + "\\n")


def run_benchmark():
    return None
"""
FLAGS = (*FAST, "--debug-fake-timer", "1", "--no-cpu-peak", "--format", "json")


def tree(root: Path, names: tuple[str, ...] = ("a", "b")) -> Path:
    for name in names:
        kernel(root, name, LOGGED.format(log=str(root / "log.txt"), name=name))
    return root


def logged(root: Path) -> list[str]:
    return [line.split()[0] for line in (root / "log.txt").read_text().splitlines()]


def test_interleaved_run_reports_rounds_and_records_the_setting(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, out = tree(tmp_path / "repo"), tmp_path / "out"
    code = main(["run", "--root", str(root), "--output-dir", str(out), *FLAGS,
                 "--processes", "3", "--interleave"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert logged(root) == ["a", "b", "a", "b", "a", "b"]
    assert "[1/6] round 1/3 a[cpu,native]: ok" in err
    assert "[4/6] round 2/3 b[cpu,native]: ok" in err
    assert "[6/6] b[cpu,native]: p50 1 ms (15 samples x 1)" in err
    summary = load(out / "summary.json")
    assert summary["settings"]["interleave"] is True
    assert [r["worker"]["processes"] for r in summary["results"]] == [3, 3]


def test_the_suite_file_key_interleaves(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    root, out = tree(tmp_path / "repo"), tmp_path / "out"
    suite = write(tmp_path / "suite.yml", "processes: 2\ninterleave: true\n")
    code = main(["run", "--root", str(root), "--output-dir", str(out), *FLAGS, "-q",
                 "--config", str(suite)])
    assert code == 0, capsys.readouterr().err
    assert logged(root) == ["a", "b", "a", "b"]
    assert load(out / "summary.json")["settings"]["interleave"] is True


def test_resume_repeats_interleave_and_completes_partial_cases(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, out = tree(tmp_path / "repo", ("a", "b", "c")), tmp_path / "out"
    settings = RunSettings(root=root.resolve(), protocol=ProtocolSettings(warmup=1,
                                                                         iterations=5),
                           fake_call_ms=1.0, processes=3, interleave=True)

    def stop(label: str, index: int, total: int) -> None:
        if label == "round 2/3 b[cpu,native]":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_suite(settings, out, on_start=stop, extra_settings={"formats": ["json"]})
    partial = {r["kernel_name"]: r["worker"]["processes"]
               for r in load(out / "summary.json")["results"]}
    assert partial == {"a": 2, "b": 1, "c": 1}
    (root / "log.txt").unlink()
    code = main(["run", "--resume", str(out), "-q"])
    assert code == 0, capsys.readouterr().err
    assert logged(root) == ["a", "b", "c"] * 3  # every case again, still in rounds
    summary = load(out / "summary.json")
    assert summary["complete"] is True
    assert summary["settings"]["interleave"] is True
    assert [r["worker"]["processes"] for r in summary["results"]] == [3, 3, 3]


def test_interleave_with_ab_is_refused(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    root = tree(tmp_path / "repo")
    code = main(["run", "--root", str(root), "--output-dir", str(tmp_path / "out"), *FLAGS,
                 "--ab", "HEAD", "--interleave"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--interleave cannot be combined with --ab" in err
    assert not (tmp_path / "out").exists()
