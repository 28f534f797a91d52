"""kernbench.execution.held: an interleaved run's unfinished cases keep their finished
processes in memory or in the output directory, and read back exactly as they were."""

from __future__ import annotations

from pathlib import Path

from kernbench.analysis.summary import record_dict
from kernbench.api import discover
from kernbench.execution.held import HeldProcesses
from kernbench.execution.runner import BenchmarkRunner
from kernbench.execution.settings import RunSettings
from kernbench.results.model import Case, CaseResult, ProtocolSettings
from support.kernel_tree import kernel

KERNEL = """
import numpy as np

X = np.ones(1000, dtype=np.float32)


def run_benchmark():
    return X * 2.0
"""


def measured(tmp_path: Path) -> tuple[BenchmarkRunner, Case, list[CaseResult]]:
    """Three real worker processes of one numpy case (no fake clock: every field is filled)."""
    kernel(tmp_path, "double", KERNEL)
    runner = BenchmarkRunner(RunSettings(root=tmp_path, protocol=ProtocolSettings(
        warmup=1, iterations=5, warmup_time_s=0.0), processes=3, cache_dir=None))
    (case,) = runner.plan(discover(tmp_path)[0])
    assert isinstance(case, Case)
    with runner.session():
        results = [runner.first_process(case), runner.other_process(case, 1),
                   runner.other_process(case, 2)]
    assert all(r.status == "ok" for r in results), [r.reason for r in results]
    return runner, case, results


def test_processes_read_back_from_a_folder_merge_into_the_same_record(tmp_path: Path) -> None:
    runner, case, results = measured(tmp_path / "repo")
    held = HeldProcesses(tmp_path / "held")
    for result in results:
        held.add(case.case_id, result)
    read = held.get(case.case_id)
    assert [r.samples_ms for r in read] == [r.samples_ms for r in results]
    assert record_dict(runner.finish_case(case, read)) == \
        record_dict(runner.finish_case(case, results))
    assert [record_dict(r) for r in read] == [record_dict(r) for r in results]


def test_a_line_cut_short_by_a_kill_is_ignored(tmp_path: Path) -> None:
    _, case, results = measured(tmp_path / "repo")
    held = HeldProcesses(tmp_path / "held")
    held.add(case.case_id, results[0])
    held.add(case.case_id, results[1])
    (path,) = (tmp_path / "held").glob("*.jsonl")
    text = path.read_text(encoding="utf-8")
    path.write_text(text + text.splitlines()[0][:200], encoding="utf-8")
    assert [r.samples_ms for r in held.get(case.case_id)] == \
        [results[0].samples_ms, results[1].samples_ms]


def test_cases_are_kept_apart_discarded_and_cleared(tmp_path: Path) -> None:
    _, case, results = measured(tmp_path / "repo")
    for held in (HeldProcesses(), HeldProcesses(tmp_path / "held")):
        held.add(case.case_id, results[0])
        held.add("other[cpu,fp32]", results[1])
        assert held.get("nothing[cpu,fp32]") == []
        assert [r.samples_ms for r in held.get("other[cpu,fp32]")] == [results[1].samples_ms]
        held.discard("other[cpu,fp32]")
        assert held.get("other[cpu,fp32]") == []
        assert len(held.get(case.case_id)) == 1
        held.clear()
        assert held.get(case.case_id) == []
    assert not (tmp_path / "held").exists()
