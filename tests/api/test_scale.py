"""run_sharded: every shard in its own directory, retried once, merged; the local executor."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kernbench.api.run import run_suite
from kernbench.api.scale import ShardTask, run_shard_task, run_sharded
from kernbench.errors import KernbenchError
from kernbench.execution.executors import Attempt, ExecutorSettings
from support.kernel_tree import load
from support.sharded import settings, statuses, tree


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The tree, and the statuses of one unsharded run of it."""
    root = tree(tmp_path_factory.mktemp("scale") / "tree")
    out = root.parent / "whole"
    run_suite(settings(root), out)
    return root, statuses(out)


def test_local_shards_in_parallel_give_the_unsharded_cases_and_statuses(
        whole: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, expected = whole
    outcome = run_sharded(settings(root), tmp_path / "out", ExecutorSettings("local", jobs=2),
                          shards=2)
    assert statuses(tmp_path / "out") == expected
    assert outcome.missing == () and outcome.exit_code == 1  # the broken kernel failed
    assert [d.name for d in outcome.shard_dirs] == ["1-of-2", "2-of-2"]
    merged = load(tmp_path / "out" / "summary.json")
    assert merged["completeness"]["complete"] is True
    assert [s["shard"] for s in merged["settings"]["shards"]] == ["1/2", "2/2"]


@dataclass
class Flaky:
    """A ShardRunner that runs tasks in this process, but fails the shards in `fail` for
    their first `times` attempts (a pre-empted or lost job)."""

    fail: set[int]
    times: int
    seen: dict[int, int] = field(default_factory=dict)

    def run(self, fn: Any, tasks: Sequence[ShardTask], labels: Sequence[str],
            log: Any) -> list[Attempt]:
        attempts = []
        for task, label in zip(tasks, labels, strict=True):
            assert task.settings.shard is not None
            index = task.settings.shard[0]
            self.seen[index] = self.seen.get(index, 0) + 1
            if index in self.fail and self.seen[index] <= self.times:
                attempts.append(Attempt(label, None, "job 7_1 was pre-empted"))
            else:
                attempts.append(Attempt(label, fn(task)))
        return attempts


def test_a_failed_shard_is_retried_once(whole: tuple[Path, dict[str, str]],
                                        tmp_path: Path) -> None:
    root, expected = whole
    runner = Flaky({2}, times=1)
    outcome = run_sharded(settings(root), tmp_path / "out", runner, shards=3)
    assert runner.seen == {1: 1, 2: 2, 3: 1}
    assert outcome.missing == ()
    assert statuses(tmp_path / "out") == expected
    assert [a.finished for a in outcome.attempts] == [True, False, True, True]


def test_a_shard_failing_twice_is_named_missing_never_dropped(
        whole: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, _ = whole
    logged: list[str] = []
    outcome = run_sharded(settings(root), tmp_path / "out", Flaky({2}, times=2), shards=2,
                          log=logged.append)
    assert outcome.missing == ("2/2: job 7_1 was pre-empted",)
    assert outcome.exit_code == 1
    assert any(line.startswith("retrying 1 shards once: shard 2/2") for line in logged)
    found = outcome.summary["completeness"]
    assert found["complete"] is False
    assert [m["shard"] for m in found["missing_shards"]] == ["2/2"]


def test_a_retried_shard_resumes_what_its_first_attempt_left(
        whole: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """A shard lost part-way (its report set complete: false) ran every case again: the
    retry now finishes what the first attempt left, as --resume does."""
    root, expected = whole
    resumed: list[bool] = []

    @dataclass
    class LostAfterWriting(Flaky):
        def run(self, fn: Any, tasks: Sequence[ShardTask], labels: Sequence[str],
                log: Any) -> list[Attempt]:
            attempts = []
            for task, label in zip(tasks, labels, strict=True):
                resumed.append(task.resume)
                fn(task)
                if not task.resume and task.settings.shard == (2, 2):  # lost at the end
                    summary = json.loads((task.output_dir / "summary.json").read_text())
                    (task.output_dir / "summary.json").write_text(
                        json.dumps({**summary, "complete": False}))
                    attempts.append(Attempt(label, None, "the node was lost"))
                else:
                    attempts.append(Attempt(label, 0))
            return attempts

    outcome = run_sharded(settings(root), tmp_path / "out", LostAfterWriting(set(), 0),
                          shards=2)
    assert resumed == [False, False, True]
    assert outcome.missing == () and statuses(tmp_path / "out") == expected
    shard = load(tmp_path / "out" / "shards" / "2-of-2" / "summary.json")
    assert shard["complete"] is True and shard["settings"]["resumed"]


@dataclass
class KilledAfterSome(Flaky):
    """Shard 2 runs, then dies as SIGKILL leaves it, on both attempts: its summary.json as
    the run wrote it at the start (no result, complete: false), its last kernel's file never
    written (that kernel's name goes into `lost`)."""

    lost: list[str] = field(default_factory=list)

    def run(self, fn: Any, tasks: Sequence[ShardTask], labels: Sequence[str],
            log: Any) -> list[Attempt]:
        attempts = []
        for task, label in zip(tasks, labels, strict=True):
            code = fn(task)
            if task.settings.shard != (2, 2):
                attempts.append(Attempt(label, code))
                continue
            path = task.output_dir / "summary.json"
            path.write_text(json.dumps({**load(path), "results": [], "complete": False}))
            last = sorted((task.output_dir / "kernels").glob("*.json"))[-1]
            self.lost.append(last.stem)
            last.unlink()
            attempts.append(Attempt(label, None, "the node was lost"))
        return attempts


def test_a_shard_failing_twice_keeps_the_cases_it_finished(
        whole: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """Its kernels/*.json go into the merge; completeness names only the cases it lacks."""
    root, expected = whole
    logged: list[str] = []
    runner = KilledAfterSome(set(), 0)
    outcome = run_sharded(settings(root), tmp_path / "out", runner, shards=2,
                          log=logged.append)
    assert outcome.missing == ("2/2: the node was lost",) and outcome.exit_code == 1
    assert [d.name for d in outcome.shard_dirs] == ["1-of-2", "2-of-2"]
    shard_two = set(expected) - set(statuses(tmp_path / "out" / "shards" / "1-of-2"))
    lost = {c for c in shard_two if c.startswith(f"{runner.lost[-1]}[")}
    assert shard_two - lost and lost  # shard 2 held two kernels, one of them lost
    assert statuses(tmp_path / "out") == {c: s for c, s in expected.items() if c not in lost}
    found = outcome.summary["completeness"]
    assert found["complete"] is False and found["missing_shards"] == []
    assert [c["case_id"] for c in found["missing_cases"]] == [f"{runner.lost[-1]}[cpu,*]"]
    assert any(line.startswith("merging what the unfinished shards saved: shard 2/2")
               for line in logged)


def test_every_shard_failing_is_an_error(whole: tuple[Path, dict[str, str]],
                                         tmp_path: Path) -> None:
    root, _ = whole
    with pytest.raises(KernbenchError, match="no shard of 2 finished"):
        run_sharded(settings(root), tmp_path / "out", Flaky({1, 2}, times=2), shards=2)


def test_shards_and_shard_together_are_refused(tmp_path: Path) -> None:
    from dataclasses import replace

    with pytest.raises(KernbenchError, match="--shards and --shard cannot be combined"):
        run_sharded(replace(settings(tmp_path), shard=(1, 2)), tmp_path / "out", shards=2)


def test_a_shard_task_writes_its_own_report_set(whole: tuple[Path, dict[str, str]],
                                                tmp_path: Path) -> None:
    from dataclasses import replace

    root, expected = whole
    code = run_shard_task(ShardTask(replace(settings(root), shard=(1, 1)), tmp_path / "s"))
    assert code == 1 and statuses(tmp_path / "s") == expected


def test_a_suite_with_no_case_starts_no_shard(tmp_path: Path) -> None:
    # every shard failed alike ("exit 102") and was retried before the run said so
    runner = Flaky(set(), 0)
    (tmp_path / "kernels").mkdir()
    with pytest.raises(KernbenchError, match=r"no cases to run under .*: no shard was started"):
        run_sharded(settings(tmp_path), tmp_path / "out", runner, shards=2)
    assert runner.seen == {}


def test_shards_into_a_folder_another_run_is_writing_are_refused(tmp_path: Path) -> None:
    import fcntl
    import os

    from kernbench.results.files import LOCK_NAME

    out = tmp_path / "live"
    out.mkdir()
    runner = Flaky(set(), 0)
    fd = os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(KernbenchError, match="another kernbench run"):
            run_sharded(settings(tree(tmp_path / "tree")), out, runner, shards=2)
    finally:
        os.close(fd)
    assert runner.seen == {}
