"""`kernbench run`'s interleaved rounds (the default) end to end through
`kernbench.cli.main.main`: progress lines labelled by round, `--no-interleave`, the setting
recorded and repeated by `--resume`, which runs only the processes a stopped case lacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernbench.api import run_suite
from kernbench.cli.main import main
from kernbench.execution.held import FOLDER_NAME
from kernbench.execution.rounds import _Rounds
from kernbench.execution.runner import BenchmarkRunner
from kernbench.execution.settings import RunSettings
from kernbench.results.model import Case, CaseResult, ProtocolSettings
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


def test_a_run_interleaves_by_default_and_reports_rounds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, out = tree(tmp_path / "repo"), tmp_path / "out"
    code = main(["run", "--root", str(root), "--output-dir", str(out), *FLAGS,
                 "--processes", "3"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert logged(root) == ["a", "b", "a", "b", "a", "b"]
    assert "[1/6] round 1/3 a[cpu,native]: ok" in err
    assert "[4/6] round 2/3 b[cpu,native]: ok" in err
    assert "[6/6] b[cpu,native]: p50 1 ms (15 samples x 1)" in err
    summary = load(out / "summary.json")
    assert summary["settings"]["interleave"] is True
    assert [r["worker"]["processes"] for r in summary["results"]] == [3, 3]
    assert not (out / FOLDER_NAME).exists()  # a finished run holds no processes


def test_no_interleave_runs_each_case_back_to_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, out = tree(tmp_path / "repo"), tmp_path / "out"
    code = main(["run", "--root", str(root), "--output-dir", str(out), *FLAGS, "-q",
                 "--processes", "3", "--no-interleave"])
    assert code == 0, capsys.readouterr().err
    assert logged(root) == ["a", "a", "a", "b", "b", "b"]
    summary = load(out / "summary.json")
    assert summary["settings"]["interleave"] is False
    assert "interleaved" not in summary["results"][0]["worker"]


def test_an_interrupt_back_to_back_keeps_the_case_processes_that_finished(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root, out = tree(tmp_path / "repo"), tmp_path / "out"
    settings = RunSettings(root=root.resolve(), protocol=ProtocolSettings(warmup=1,
                                                                         iterations=5),
                           fake_call_ms=1.0, processes=3, interleave=False)
    original = BenchmarkRunner.other_process

    def third_of_b(self: BenchmarkRunner, case: Case, slot: int) -> CaseResult:
        if case.kernel.name == "b" and logged(root).count("b") == 2:
            raise KeyboardInterrupt  # Ctrl-C as b's third process starts
        return original(self, case, slot)

    monkeypatch.setattr(BenchmarkRunner, "other_process", third_of_b)
    with pytest.raises(KeyboardInterrupt):
        run_suite(settings, out, extra_settings={"formats": ["json"]})
    monkeypatch.undo()
    assert logged(root) == ["a", "a", "a", "b", "b"]
    (root / "log.txt").unlink()
    code = main(["run", "--resume", str(out), "-q"])
    assert code == 0, capsys.readouterr().err
    assert logged(root) == ["b"]  # b's two finished processes were kept, not run again
    summary = load(out / "summary.json")
    assert summary["complete"] is True
    assert [r["worker"]["processes"] for r in summary["results"]] == [3, 3]
    assert not (out / FOLDER_NAME).exists()


def test_the_suite_file_key_turns_interleaving_off(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    root, out = tree(tmp_path / "repo"), tmp_path / "out"
    suite = write(tmp_path / "suite.yml", "processes: 2\ninterleave: false\n")
    code = main(["run", "--root", str(root), "--output-dir", str(out), *FLAGS, "-q",
                 "--config", str(suite)])
    assert code == 0, capsys.readouterr().err
    assert logged(root) == ["a", "a", "b", "b"]
    assert load(out / "summary.json")["settings"]["interleave"] is False


def stopped_run(tmp_path: Path) -> tuple[Path, Path]:
    """Three cases of three processes, stopped as round 2 reaches b: a has two processes,
    b and c one each."""
    root, out = tree(tmp_path / "repo", ("a", "b", "c")), tmp_path / "out"
    settings = RunSettings(root=root.resolve(), protocol=ProtocolSettings(warmup=1,
                                                                         iterations=5),
                           fake_call_ms=1.0, processes=3)

    def stop(label: str, index: int, total: int) -> None:
        if label == "round 2/3 b[cpu,native]":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_suite(settings, out, on_start=stop, extra_settings={"formats": ["json"]})
    (root / "log.txt").unlink()
    return root, out


def check_resumed(root: Path, out: Path, code: int) -> None:
    """The resume ran only the processes each case lacked, in rounds, and completed."""
    assert code == 0
    assert logged(root) == ["b", "c", "a", "b", "c"]
    summary = load(out / "summary.json")
    assert summary["complete"] is True
    assert summary["settings"]["interleave"] is True
    for record in summary["results"]:
        assert record["worker"]["processes"] == 3
        assert record["timing"]["process_sample_counts"] == [5, 5, 5]
    assert not (out / FOLDER_NAME).exists()


def test_resume_runs_only_the_processes_a_stopped_case_lacks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, out = stopped_run(tmp_path)
    partial = {r["kernel_name"]: r["worker"]["processes"]
               for r in load(out / "summary.json")["results"]}
    assert partial == {"a": 2, "b": 1, "c": 1}
    assert len(list((out / FOLDER_NAME).glob("*.jsonl"))) == 3
    code = main(["run", "--resume", str(out), "-q"])
    check_resumed(root, out, code if code else 0)
    assert code == 0, capsys.readouterr().err


def test_a_run_killed_before_it_saved_its_cases_still_resumes_their_processes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """SIGKILL leaves no record of the unfinished cases, only their held processes."""
    monkeypatch.setattr(_Rounds, "save_partial", lambda self: None)
    root, out = stopped_run(tmp_path)
    assert load(out / "summary.json")["results"] == []
    code = main(["run", "--resume", str(out), "-q"])
    assert code == 0, capsys.readouterr().err
    check_resumed(root, out, code)


def test_a_new_run_ignores_processes_an_earlier_run_left(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root, out = stopped_run(tmp_path)
    code = main(["run", "--root", str(root), "--output-dir", str(out), *FLAGS, "-q",
                 "--processes", "3"])
    assert code == 0, capsys.readouterr().err
    assert logged(root) == ["a", "b", "c"] * 3


def test_resume_repeats_trace_memory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A record must not merge processes traced by tracemalloc with untraced ones."""
    root, out = tree(tmp_path / "repo"), tmp_path / "out"
    settings = RunSettings(root=root.resolve(), protocol=ProtocolSettings(warmup=1,
                                                                         iterations=5),
                           fake_call_ms=1.0, processes=3, trace_python=True)

    def stop(label: str, index: int, total: int) -> None:
        if label == "round 2/3 b[cpu,native]":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_suite(settings, out, on_start=stop, extra_settings={"formats": ["json"]})
    assert load(out / "summary.json")["settings"]["trace_memory"] is True
    code = main(["run", "--resume", str(out), "-q"])
    assert code == 0, capsys.readouterr().err
    summary = load(out / "summary.json")
    assert summary["settings"]["trace_memory"] is True
    assert all(any(w["code"] == "tracemalloc" for w in r["warnings"])
               for r in summary["results"])
