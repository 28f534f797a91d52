"""kernbench.execution.held: an interleaved run's unfinished cases keep their finished
processes in memory or in the output directory, and read back exactly as they were."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from kernbench.analysis.summary import record_dict
from kernbench.api import discover
from kernbench.execution.held import HeldProcesses, held_count
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
        held.add(case.case_id, "k", result)
    read = held.get(case.case_id, "k")
    assert [r.samples_ms for r in read] == [r.samples_ms for r in results]
    assert record_dict(runner.finish_case(case, read)) == \
        record_dict(runner.finish_case(case, results))
    assert [record_dict(r) for r in read] == [record_dict(r) for r in results]


def test_held_count_counts_every_process_of_every_case(tmp_path: Path) -> None:
    _, case, results = measured(tmp_path / "repo")
    held = HeldProcesses(tmp_path / "held")
    assert held_count(tmp_path / "held") == 0  # no folder yet
    for result in results[:2]:
        held.add(case.case_id, "k", result)
    held.add("other[cpu,fp32]", "k", results[2])
    assert held_count(tmp_path / "held") == 3
    held.clear()
    assert held_count(tmp_path / "held") == 0


def test_a_line_cut_short_by_a_kill_is_ignored_and_cut_off_by_the_next_add(
        tmp_path: Path) -> None:
    _, case, results = measured(tmp_path / "repo")
    held = HeldProcesses(tmp_path / "held")
    held.add(case.case_id, "k", results[0])
    (path,) = (tmp_path / "held").glob("*.jsonl")
    text = path.read_text(encoding="utf-8")
    path.write_text(text + text[:200], encoding="utf-8")  # the next line, cut short
    assert [r.samples_ms for r in held.get(case.case_id, "k")] == [results[0].samples_ms]
    held.add(case.case_id, "k", results[1])
    held.add(case.case_id, "k", results[2])
    assert [r.samples_ms for r in held.get(case.case_id, "k")] == \
        [r.samples_ms for r in results]


def test_processes_measured_otherwise_are_not_read_and_are_replaced(tmp_path: Path) -> None:
    _, case, results = measured(tmp_path / "repo")
    for held in (HeldProcesses(), HeldProcesses(tmp_path / "held")):
        held.add(case.case_id, "before", results[0])
        held.add(case.case_id, "before", results[1])
        assert held.get(case.case_id, "after") == []
        held.add(case.case_id, "after", results[2])
        assert [r.samples_ms for r in held.get(case.case_id, "after")] == \
            [results[2].samples_ms]
        assert held.get(case.case_id, "before") == []


def test_cases_are_kept_apart_released_and_cleared(tmp_path: Path) -> None:
    _, case, results = measured(tmp_path / "repo")
    for held in (HeldProcesses(), HeldProcesses(tmp_path / "held")):
        held.add(case.case_id, "k", results[0])
        held.add("other[cpu,fp32]", "k", results[1])
        assert held.get("nothing[cpu,fp32]", "k") == []
        assert [r.samples_ms for r in held.get("other[cpu,fp32]", "k")] == \
            [results[1].samples_ms]
        held.release("other[cpu,fp32]")  # in memory: gone; on disk: kept until clear()
        assert len(held.get("other[cpu,fp32]", "k")) == (0 if held.folder is None else 1)
        assert len(held.get(case.case_id, "k")) == 1
        held.clear()
        assert held.get(case.case_id, "k") == []
    assert not (tmp_path / "held").exists()


def test_the_key_names_the_job_and_the_kernel_files_bytes(tmp_path: Path) -> None:
    runner, case, _ = measured(tmp_path / "repo")
    before = runner.measured_key(case)
    assert runner.measured_key(case) == before
    path = Path(case.kernel.path)
    path = path if path.is_absolute() else tmp_path / "repo" / path
    path.write_text(path.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    assert runner.measured_key(case) != before
    tracing = BenchmarkRunner(dataclasses.replace(runner.settings, trace_python=True))
    assert tracing.measured_key(case) not in (before, runner.measured_key(case))
