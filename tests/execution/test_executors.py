"""The local executor (each shard in a fresh spawned process), KEY=VALUE options, and the
executor chosen by name."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from kernbench.errors import KernbenchError
from kernbench.execution.executors import (
    ExecutorSettings,
    LocalShards,
    executor_for,
    parse_key_values,
)


def returns(task: int) -> int:
    return task


def raises(task: int) -> int:
    raise RuntimeError(f"shard {task} broke")


def killed(task: int) -> int:
    os.kill(os.getpid(), signal.SIGKILL)
    return task


def test_local_shards_run_each_task_and_keep_the_order() -> None:
    logged: list[str] = []
    attempts = LocalShards(jobs=2).run(returns, [0, 1, 2], ["a", "b", "c"], logged.append)
    assert [(a.label, a.exit_code, a.finished) for a in attempts] == [
        ("a", 0, True), ("b", 1, True), ("c", 2, True)]
    assert sorted(logged) == sorted([f"{x}: running on this machine" for x in "abc"]
                                    + ["a: finished (exit 0)", "b: finished (exit 1)",
                                       "c: finished (exit 2)"])


def test_a_shard_that_raises_or_is_killed_did_not_finish() -> None:
    (raised,) = LocalShards().run(raises, [3], ["s"], None)
    assert not raised.finished and raised.exit_code is None
    assert raised.error is not None and "raised an error" in raised.error
    (gone,) = LocalShards().run(killed, [3], ["s"], None)
    assert not gone.finished
    assert gone.error == f"the shard's process ended by signal {int(signal.SIGKILL)}"


def test_key_values_are_split_at_the_first_equals_sign() -> None:
    assert parse_key_values(["mem=64G", " qos = high ", "constraint=a=b"], "--slurm-arg") == (
        ("mem", "64G"), ("qos", "high"), ("constraint", "a=b"))


def test_an_unknown_executor_is_named(tmp_path: Path) -> None:
    with pytest.raises(KernbenchError, match="--executor 'k8s': expected one of local, slurm"):
        executor_for(ExecutorSettings("k8s"), tmp_path)
    assert isinstance(executor_for(ExecutorSettings("local", jobs=3), tmp_path), LocalShards)
