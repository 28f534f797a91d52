"""The testbed name: given, kept per host in the cache folder, else the host name; and the
scheduler ids a shard records."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernbench.errors import KernbenchError
from kernbench.measure.identity import (
    kept_testbed_file,
    resolve_testbed,
    scheduler_ids,
    shard_identity,
)


def test_without_a_name_the_testbed_is_the_host_name(tmp_path: Path) -> None:
    assert resolve_testbed(None, tmp_path, "node-3") == "node-3"
    assert resolve_testbed(None, tmp_path, None) == "unknown-host"
    assert not list(tmp_path.iterdir())     # nothing kept without --testbed


def test_a_given_name_is_kept_for_this_host_only(tmp_path: Path) -> None:
    assert resolve_testbed("h100-pool", tmp_path, "node-3") == "h100-pool"
    assert kept_testbed_file(tmp_path, "node-3").is_file()
    assert resolve_testbed(None, tmp_path, "node-3") == "h100-pool"   # later runs keep it
    assert resolve_testbed(None, tmp_path, "node-4") == "node-4"      # other hosts do not
    assert resolve_testbed("a100", tmp_path, "node-3") == "a100"      # a new name replaces it
    assert resolve_testbed(None, tmp_path, "node-3") == "a100"


@pytest.mark.parametrize("name", ["", "-x", "a b", "x" * 65, "a/b", "ü"])
def test_a_bad_name_is_refused_naming_the_flag(tmp_path: Path, name: str) -> None:
    with pytest.raises(KernbenchError, match="--testbed"):
        resolve_testbed(name, tmp_path, "node")


def test_a_corrupt_kept_name_falls_back_to_the_host(tmp_path: Path) -> None:
    kept_testbed_file(tmp_path, "node").write_text('{"testbed": "bad name"}')
    assert resolve_testbed(None, tmp_path, "node") == "node"


def test_scheduler_ids_are_those_set() -> None:
    environ = {"SLURM_JOB_ID": "77", "SLURM_ARRAY_TASK_ID": "3", "SLURMD_NODENAME": "gpu12",
               "JOB_COMPLETION_INDEX": "", "GITHUB_RUN_ID": "9", "HOME": "/root"}
    assert scheduler_ids(environ) == {"SLURM_JOB_ID": "77", "SLURM_ARRAY_TASK_ID": "3",
                                      "SLURMD_NODENAME": "gpu12", "GITHUB_RUN_ID": "9"}


def test_shard_identity() -> None:
    env = {"hostname": "gpu12", "testbed": "h100", "fingerprint": "ab12"}
    assert shard_identity(env, (2, 4), {"RUNNER_NAME": "r1"}) == {
        "shard": "2/4", "host": "gpu12", "testbed": "h100", "fingerprint": "ab12",
        "scheduler": {"RUNNER_NAME": "r1"}}
    assert shard_identity(env, None, {})["shard"] is None
