"""Interleaved rounds (`kernbench run`'s default; kernbench.execution.rounds): process k of
every case in round k, merged per case as a back-to-back run merges them; a stopped run keeps
its partial cases and a resume completes them."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kernbench.api import run_suite
from kernbench.execution.held import HeldProcesses
from kernbench.execution.resume import split_plan
from kernbench.execution.runner import BenchmarkRunner
from kernbench.execution.settings import RunSettings
from kernbench.results.model import Case, ProtocolSettings
from support.kernel_tree import kernel, load

LOGGED = """
import os

with open({log!r}, "a", encoding="utf-8") as handle:
    handle.write("{name} " + str(os.getpid()) + "\\n")


def run_benchmark():
    return None
"""
BROKEN = """
def run_benchmark():
    raise RuntimeError("broken on purpose")
"""


def tree(root: Path, names: tuple[str, ...] = ("a", "b")) -> Path:
    """Kernels that append `NAME pid` to root/log.txt each time a worker imports them."""
    for name in names:
        kernel(root, name, LOGGED.format(log=str(root / "log.txt"), name=name))
    return root


def settings(root: Path, interleave: bool = True, processes: int = 3) -> RunSettings:
    return RunSettings(root=root, protocol=ProtocolSettings(warmup=1, iterations=5),
                       fake_call_ms=1.0, processes=processes, interleave=interleave)


def logged(root: Path) -> list[str]:
    return [line.split()[0] for line in (root / "log.txt").read_text().splitlines()]


def records(out: Path) -> dict[str, dict[str, Any]]:
    return {r["kernel_name"]: r for r in load(out / "summary.json")["results"]}


def test_round_k_runs_process_k_of_every_case(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo")
    run_suite(settings(root), tmp_path / "out")
    assert logged(root) == ["a", "b", "a", "b", "a", "b"]


def test_without_interleave_processes_run_back_to_back(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo")
    run_suite(settings(root, interleave=False), tmp_path / "out")
    assert logged(root) == ["a", "a", "a", "b", "b", "b"]


def test_process_k_forks_from_slot_k_as_in_a_plain_run(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo")
    runner = BenchmarkRunner(settings(root))
    planned = runner.plan(_specs(root))
    slots: list[tuple[str, int]] = []
    first, other = runner.first_process, runner.other_process

    def first_process(case: Case, slot: int = 0) -> Any:
        slots.append((case.kernel.name, slot))
        return first(case, slot)

    def other_process(case: Case, slot: int) -> Any:
        slots.append((case.kernel.name, slot))
        return other(case, slot)

    runner.first_process = first_process  # type: ignore[method-assign]
    runner.other_process = other_process  # type: ignore[method-assign]
    runner.run(planned)
    assert slots == [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]


def test_interleaved_records_have_the_form_of_sequential_ones(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo")
    run_suite(settings(root, interleave=False), tmp_path / "seq")
    run_suite(settings(root), tmp_path / "ilv")
    sequential, interleaved = records(tmp_path / "seq"), records(tmp_path / "ilv")
    assert sorted(sequential) == sorted(interleaved) == ["a", "b"]
    for name, old in sequential.items():
        new = interleaved[name]
        assert set(new) == set(old)
        assert set(new["timing"]) == set(old["timing"])
        assert set(new["worker"]) - set(old["worker"]) == {"interleaved"}
        assert new["worker"]["processes"] == old["worker"]["processes"] == 3
        assert new["timing"]["process_sample_counts"] == old["timing"]["process_sample_counts"]
        assert new["timing"]["latency_ms_p50"] == old["timing"]["latency_ms_p50"]
        assert new["worker"]["interleaved"] is True and "interleaved" not in old["worker"]
    summary = load(tmp_path / "ilv" / "summary.json")
    assert summary["settings"]["interleave"] is True
    assert load(tmp_path / "seq" / "summary.json")["settings"]["interleave"] is False


def test_a_history_record_says_the_run_was_interleaved(tmp_path: Path) -> None:
    from kernbench.results.history_record import history_record

    root = tree(tmp_path / "repo", ("a",))
    run_suite(settings(root, processes=2), tmp_path / "out")
    record = history_record(load(tmp_path / "out" / "summary.json"),
                            load(tmp_path / "out" / "env.json"))
    assert record["settings"]["interleave"] is True


def test_callbacks_count_processes_and_label_rounds(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo")
    started: list[tuple[str, int, int]] = []
    steps: list[tuple[str, int, int]] = []
    finished: list[tuple[str, int, int]] = []
    run_suite(settings(root), tmp_path / "out",
              on_start=lambda label, i, n: started.append((label, i, n)),
              on_step=lambda line, i, n: steps.append((line, i, n)),
              on_result=lambda r, i, n: finished.append((r.case_id, i, n)))
    assert [s[0] for s in started] == [f"round {k}/3 {n}[cpu,native]" for k in (1, 2, 3)
                                       for n in ("a", "b")]
    assert [s[1:] for s in started] == [(i, 6) for i in range(1, 7)]
    assert steps == [(f"round {k}/3 {n}[cpu,native]: ok", i, 6)
                     for i, (k, n) in enumerate([(1, "a"), (1, "b"), (2, "a"), (2, "b")], 1)]
    assert finished == [("a[cpu,native]", 5, 6), ("b[cpu,native]", 6, 6)]


def test_a_case_whose_first_process_failed_runs_no_more_rounds(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo", ("b",))
    kernel(root, "a", BROKEN)
    finished: list[tuple[str, str, int, int]] = []
    run_suite(settings(root), tmp_path / "out",
              on_result=lambda r, i, n: finished.append((r.kernel_name, r.status, i, n)))
    assert finished == [("a", "failed", 1, 4), ("b", "ok", 4, 4)]
    assert logged(root) == ["b", "b", "b"]
    assert records(tmp_path / "out")["a"]["worker"]["processes"] == 1


def test_one_process_is_a_plain_run(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo")
    run_suite(settings(root, processes=1), tmp_path / "out")
    assert logged(root) == ["a", "b"]
    assert all("interleaved" not in r["worker"] for r in records(tmp_path / "out").values())


def stop_at(label: str) -> Any:
    def on_start(started: str, index: int, total: int) -> None:
        if started == label:
            raise KeyboardInterrupt
    return on_start


@pytest.fixture
def stopped(tmp_path: Path) -> tuple[Path, Path]:
    """A run of a, b, c stopped as round 3 was to start b: a has its 3 processes, b and c 2."""
    root = tree(tmp_path / "repo", ("a", "b", "c"))
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        run_suite(settings(root), out, on_start=stop_at("round 3/3 b[cpu,native]"))
    return root, out


def test_a_stopped_run_keeps_every_finished_process(stopped: tuple[Path, Path]) -> None:
    _, out = stopped
    summary = load(out / "summary.json")
    assert summary["complete"] is False
    found = records(out)
    assert {name: r["worker"]["processes"] for name, r in found.items()} == \
        {"a": 3, "b": 2, "c": 2}
    assert found["b"]["timing"]["process_sample_counts"] == [5, 5]
    assert all(r["status"] == "ok" and r["worker"]["interleaved"] for r in found.values())
    assert load(out / "kernels" / "c.json")["results"][0]["worker"]["processes"] == 2


def test_resume_runs_only_the_processes_partial_cases_lack(stopped: tuple[Path, Path]) -> None:
    root, out = stopped
    before = records(out)
    (root / "log.txt").unlink()
    outcome = run_suite(settings(root), out, resume=True)
    assert outcome.exit_code == 0
    after = records(out)
    assert {name: r["worker"]["processes"] for name, r in after.items()} == \
        {"a": 3, "b": 3, "c": 3}
    assert after["a"] == before["a"]  # kept as it was
    assert after["b"]["worker"]["pid"] == before["b"]["worker"]["pid"]  # its first process's
    assert after["b"]["timing"]["samples_ms"][:10] == before["b"]["timing"]["samples_ms"]
    assert after["b"]["timing"]["process_sample_counts"] == [5, 5, 5]
    assert logged(root) == ["b", "c"]
    summary = load(out / "summary.json")
    assert summary["complete"] is True
    assert summary["settings"]["resumed"][-1]["kept_cases"] == 1


def test_split_plan_keeps_an_ok_record_only_with_every_process(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo", ("a",))
    runner = BenchmarkRunner(settings(root, interleave=False))
    (case,) = runner.plan(_specs(root))
    full = runner.run([case])[0]
    partial = dataclasses.replace(full, worker={**full.worker, "processes": 2})
    assert split_plan([case], [full], processes=3) == ([full], [])
    assert split_plan([case], [partial], processes=3) == ([], [case])
    failed = dataclasses.replace(partial, status="failed")
    assert split_plan([case], [failed], processes=3) == ([failed], [])


def _specs(root: Path) -> Any:
    from kernbench.api import discover

    return discover(root)[0]


def test_records_come_out_in_plan_order_as_in_a_plain_run(tmp_path: Path) -> None:
    """A case whose first process failed is finished in round 1, the others in the last
    round: the records still go out (and into the report) in plan order."""
    root = tree(tmp_path / "repo", ("a", "c"))
    kernel(root, "b", BROKEN)
    orders = {}
    for interleave in (False, True):
        seen: list[str] = []
        out = tmp_path / f"out-{interleave}"
        run_suite(settings(root, interleave=interleave), out,
                  on_result=lambda r, i, n, seen=seen: seen.append(r.kernel_name))
        orders[interleave] = (seen, list(records(out)))
    assert orders[True] == orders[False] == (["a", "b", "c"], ["a", "b", "c"])


def test_a_second_signal_during_a_cases_merge_loses_none_of_its_processes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C twice: the second one lands while b's finished processes are merged; b is
    merged again rather than dropped with them."""
    root = tree(tmp_path / "repo", ("a", "b", "c"))
    finish, landed = BenchmarkRunner.finish_case, []

    def finish_case(self: BenchmarkRunner, case: Case, results: Any) -> Any:
        if case.kernel.name == "b" and not landed:
            landed.append(len(results))
            raise KeyboardInterrupt
        return finish(self, case, results)

    monkeypatch.setattr(BenchmarkRunner, "finish_case", finish_case)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        run_suite(settings(root), out, on_start=stop_at("round 3/3 b[cpu,native]"))
    assert landed == [2]
    assert {name: r["worker"]["processes"] for name, r in records(out).items()} == \
        {"a": 3, "b": 2, "c": 2}


def test_an_error_between_rounds_keeps_what_finished_for_a_resume(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo", ("a", "b"))
    out = tmp_path / "out"

    def fail(label: str, index: int, total: int) -> None:
        if label == "round 2/3 b[cpu,native]":
            raise RuntimeError("a bug between rounds")

    with pytest.raises(RuntimeError, match="a bug between rounds"):
        run_suite(settings(root), out, on_start=fail)
    assert {name: r["worker"]["processes"] for name, r in records(out).items()} == \
        {"a": 2, "b": 1}
    (root / "log.txt").unlink()
    assert run_suite(settings(root), out, resume=True).exit_code == 0
    assert logged(root) == ["b", "a", "b"]
    assert {name: r["worker"]["processes"] for name, r in records(out).items()} == \
        {"a": 3, "b": 3}


BROKEN_LOGGED = LOGGED.replace("return None", "raise RuntimeError('broken on purpose')")


def forget_records(out: Path) -> None:
    """What a kill (SIGKILL) before the report files were written leaves: no record at all,
    only the held processes."""
    summary = load(out / "summary.json")
    summary["results"] = []
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    shutil.rmtree(out / "kernels")


def test_a_kill_after_records_were_built_but_not_written_loses_no_process(
        tmp_path: Path) -> None:
    root = tree(tmp_path / "repo", ("a", "b"))
    kernel(root, "c", BROKEN_LOGGED.format(log=str(root / "log.txt"), name="c"))
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):  # a has all 3 processes, b 2, broken c its one
        run_suite(settings(root), out, on_start=stop_at("round 3/3 b[cpu,native]"))
    forget_records(out)
    (root / "log.txt").unlink()
    assert run_suite(settings(root), out, resume=True).exit_code == 1  # c failed
    assert logged(root) == ["b"]
    found = records(out)
    assert {name: r["worker"]["processes"] for name, r in found.items()} == \
        {"a": 3, "b": 3, "c": 1}
    assert found["c"]["status"] == "failed"


def test_a_kernel_changed_since_the_stop_runs_again_in_full(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo", ("a", "b"))
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):  # a has 2 processes, b 1
        run_suite(settings(root), out, on_start=stop_at("round 2/3 b[cpu,native]"))
    source = root / "kernels" / "b" / "b.py"
    source.write_text(source.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    (root / "log.txt").unlink()
    assert run_suite(settings(root), out, resume=True).exit_code == 0
    assert logged(root) == ["b", "b", "a", "b"]  # b in full: its process 1 in round 1
    assert [r["worker"]["processes"] for r in records(out).values()] == [3, 3]


def test_a_signal_as_a_case_is_released_loses_nothing(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree(tmp_path / "repo", ("a", "b"))
    out = tmp_path / "out"
    release = HeldProcesses.release

    def interrupted(self: HeldProcesses, case_id: str) -> None:
        release(self, case_id)
        if case_id.startswith("a["):
            raise KeyboardInterrupt

    monkeypatch.setattr(HeldProcesses, "release", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_suite(settings(root), out)
    assert {name: r["worker"]["processes"] for name, r in records(out).items()} == \
        {"a": 3, "b": 2}
    monkeypatch.setattr(HeldProcesses, "release", release)
    (root / "log.txt").unlink()
    assert run_suite(settings(root), out, resume=True).exit_code == 0
    assert logged(root) == ["b"]


def test_a_resume_keeps_the_profiles_of_the_processes_it_keeps(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo", ("a", "b"))
    out = tmp_path / "out"
    profiled = dataclasses.replace(settings(root), profile="cprofile",
                                   profile_dir=out.resolve())
    with pytest.raises(KeyboardInterrupt):
        run_suite(profiled, out, on_start=stop_at("round 2/3 b[cpu,native]"))
    assert run_suite(profiled, out, resume=True).exit_code == 0
    for record in records(out).values():
        assert (out / record["profile"]["path"]).is_file(), record["case_id"]
