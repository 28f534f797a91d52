"""The Slurm executor through submitit: its parameters, and a job array run on submitit's
local and debug clusters (this machine) giving the same cases as an unsharded run."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernbench.api.run import run_suite
from kernbench.api.scale import run_sharded
from kernbench.errors import KernbenchError
from kernbench.execution.executors import ExecutorSettings, parse_key_values
from support.kernel_tree import load
from support.sharded import settings, statuses, tree

submitit = pytest.importorskip("submitit")

from kernbench.execution.slurm import slurm_parameters  # noqa: E402

VALID = set(submitit.SlurmExecutor._valid_parameters())


def test_the_dedicated_flags_become_submitit_slurm_parameters() -> None:
    chosen = ExecutorSettings("slurm", partition="gpu", gpus_per_task=1, time_min=30,
                              exclusive=True,
                              slurm_args=parse_key_values(["mem=64G", "reservation=bench"],
                                                          "--slurm-arg"))
    assert slurm_parameters(chosen, VALID) == {
        "name": "kernbench", "timeout_min": 30, "slurm_partition": "gpu",
        "slurm_gpus_per_task": 1, "slurm_exclusive": True, "slurm_mem": "64G",
        "slurm_additional_parameters": {"reservation": "bench"}}


def test_a_slurm_arg_restating_a_flag_names_the_flag() -> None:
    chosen = ExecutorSettings("slurm", slurm_args=(("partition", "gpu"),))
    with pytest.raises(KernbenchError, match=r"--slurm-arg partition=gpu: use --partition"):
        slurm_parameters(chosen, VALID)


@pytest.mark.parametrize("item", ["mem", "=64G", "mem=", "1mem=4", "m em=4"])
def test_a_malformed_slurm_arg_names_the_flag(item: str) -> None:
    with pytest.raises(KernbenchError, match=r"--slurm-arg .*expected KEY=VALUE"):
        parse_key_values([item], "--slurm-arg")


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tree(tmp_path_factory.mktemp("slurm") / "tree")
    run_suite(settings(root), root.parent / "whole")
    return root, statuses(root.parent / "whole")


@pytest.mark.parametrize("cluster", ["local", "debug"])
def test_a_job_array_of_two_shards_gives_the_unsharded_cases_and_statuses(
        cluster: str, whole: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    root, expected = whole
    logged: list[str] = []
    outcome = run_sharded(settings(root), tmp_path / "out",
                          ExecutorSettings("slurm", slurm_cluster=cluster, time_min=5),
                          shards=2, log=logged.append)
    assert statuses(tmp_path / "out") == expected
    assert outcome.missing == () and len(outcome.attempts) == 2
    assert all(a.job_id for a in outcome.attempts)
    assert load(tmp_path / "out" / "summary.json")["completeness"]["complete"] is True
    # progress per shard, named by shard and job
    for label in ("shard 1/2", "shard 2/2"):
        assert any(line.startswith(f"{label} (job ") for line in logged), logged
    if cluster == "local":
        assert list((tmp_path / "out" / "slurm-logs").glob("*_log.out"))



def test_a_job_that_left_no_result_is_told_by_its_state_not_its_last_log_line() -> None:
    from kernbench.execution.slurm import _short

    text = ("Job 31939 (task: 0) with path /x/31939_0_result.pkl\n"
            "has not produced any output (state: NO PROCESS AND NO RESULT)\n"
            "Error stream produced:\n----------------------------------------\n"
            "submitit INFO (2026-11-26 13:00:00,000) - Loading pickle: /x/31939_submitted.pkl\n")
    assert _short(RuntimeError(text)) == ("has not produced any output (state: NO PROCESS AND "
                                          "NO RESULT)")
    assert _short(RuntimeError("Traceback ...\nValueError: boom\n")) == "ValueError: boom"


def test_an_interrupted_run_cancels_the_jobs_still_running() -> None:
    # Ctrl-C ended kernbench while the job array ran on: a --resume as the message advised
    # would then write into folders the jobs were still writing
    from types import SimpleNamespace

    from kernbench.execution.slurm import SlurmShards

    class Job:
        def __init__(self, job_id: int, finished: bool) -> None:
            self.job_id, self.finished, self.cancelled = job_id, finished, False
            self.state = "COMPLETED" if finished else "RUNNING"

        def done(self) -> bool:
            return self.finished

        def cancel(self, check: bool = True) -> None:
            self.cancelled = True

    jobs = [Job(1, True), Job(2, False)]
    shards = SlurmShards(SimpleNamespace(map_array=lambda fn, tasks: jobs))
    shards.poll_s = 0.0

    def interrupted(message: str) -> None:
        if "RUNNING" in message:
            raise KeyboardInterrupt("SIGINT")

    with pytest.raises(KeyboardInterrupt):
        shards.run(lambda task: 0, [1, 2], ["shard 1/2", "shard 2/2"], interrupted)
    assert [job.cancelled for job in jobs] == [False, True]
