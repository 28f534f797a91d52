"""Shards as one Slurm job array, through submitit (the optional extra ``kernbench[slurm]``).

One task per shard (``executor.map_array``); ``--partition``, ``--gpus-per-task``, ``--time``
and ``--exclusive`` become submitit's Slurm parameters; each ``--slurm-arg KEY=VALUE`` is
submitit's own parameter where it has one of that name (``mem``, ``qos``, ``account``, ...)
and otherwise a raw ``#SBATCH --KEY=VALUE`` line. The array is polled until every task ends,
logging each task's state as it changes. Without Slurm (no ``sbatch`` on the PATH) it refuses
before anything runs: submitit would otherwise fall back to its local executor and drop every
Slurm option. submitit's ``local`` and ``debug`` clusters run the same array on this machine
only when asked for by name (``ExecutorSettings.slurm_cluster``, ``--debug-slurm-cluster``):
the tests use them.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernbench.config.extras import install_command
from kernbench.config.options import SLURM_TEST_CLUSTERS
from kernbench.errors import KernbenchError
from kernbench.execution.executors import Attempt, ExecutorSettings, Log, TaskFn

__all__ = ["SlurmShards", "slurm_parameters"]

POLL_S = 1.0
_OWN_FLAGS = {"partition": "--partition", "gpus_per_task": "--gpus-per-task",
              "time": "--time", "timeout_min": "--time", "exclusive": "--exclusive"}


def _submitit() -> Any:
    try:
        import submitit
    except ImportError:
        raise KernbenchError("--executor slurm needs submitit, which is not installed: "
                             f"{install_command('submitit', 'slurm')}") from None
    return submitit


def slurm_parameters(settings: ExecutorSettings, valid: set[str]) -> dict[str, Any]:
    """submitit AutoExecutor parameters for `settings`; `valid` are the SlurmExecutor's own
    parameter names. A --slurm-arg that restates a dedicated flag is a KernbenchError."""
    params: dict[str, Any] = {"name": "kernbench"}
    if settings.time_min is not None:
        params["timeout_min"] = settings.time_min
    if settings.partition is not None:
        params["slurm_partition"] = settings.partition
    if settings.gpus_per_task is not None:
        params["slurm_gpus_per_task"] = settings.gpus_per_task
    if settings.exclusive:
        params["slurm_exclusive"] = True
    raw: dict[str, str] = {}
    for key, value in settings.slurm_args:
        name = key.replace("-", "_")
        if name in _OWN_FLAGS:
            raise KernbenchError(f"--slurm-arg {key}={value}: use {_OWN_FLAGS[name]} for this")
        if name in valid:
            params[f"slurm_{name}"] = value
        else:
            raw[key] = value
    if raw:
        params["slurm_additional_parameters"] = raw
    return params


TEST_CLUSTERS = SLURM_TEST_CLUSTERS
"""submitit's executors that run a job array on this machine (``--debug-slurm-cluster``)."""


def _cluster(settings: ExecutorSettings) -> str:
    """submitit's cluster for `settings`: Slurm itself unless a test cluster is named; a
    KernbenchError, before anything is submitted, when Slurm is asked for and absent."""
    if settings.slurm_cluster is None:
        if shutil.which("sbatch") is None:
            raise KernbenchError(
                "--executor slurm: no sbatch on the PATH, so this machine cannot submit Slurm "
                "jobs; run kernbench on a Slurm login node. To try the job array on this "
                "machine instead, add --debug-slurm-cluster local (submitit's local executor; "
                "the Slurm options are then ignored)")
        return "slurm"
    if settings.slurm_cluster not in (*TEST_CLUSTERS, "slurm"):
        raise KernbenchError(f"slurm cluster {settings.slurm_cluster!r}: expected one of "
                             f"{', '.join(TEST_CLUSTERS)} (or none for Slurm itself)")
    return settings.slurm_cluster


@dataclass
class SlurmShards:
    """Runs the shards' tasks as one job array of submitit's executor."""

    executor: Any
    poll_s: float = POLL_S
    states: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: ExecutorSettings, folder: Path | None = None
                      ) -> SlurmShards:
        submitit = _submitit()
        params = slurm_parameters(settings, set(submitit.SlurmExecutor._valid_parameters()))
        cluster = _cluster(settings)  # before any executor exists: no Slurm, no run
        executor = submitit.AutoExecutor(folder=str(folder or Path("slurm-logs")),
                                         cluster=cluster)
        try:
            executor.update_parameters(**params)
        except (AssertionError, TypeError, ValueError, NameError) as exc:
            raise KernbenchError(f"--slurm-arg: submitit refused the parameters: {exc}") from exc
        return cls(executor)

    def run(self, fn: TaskFn, tasks: Sequence[Any], labels: Sequence[str],
            log: Log | None) -> list[Attempt]:
        jobs = self.executor.map_array(fn, list(tasks))
        pending = dict(enumerate(jobs))
        try:
            while pending:
                for index, job in list(pending.items()):
                    self._progress(labels[index], job, log)
                    if job.done():
                        del pending[index]
                if pending:
                    time.sleep(self.poll_s)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the jobs stop too (scancel: SIGTERM,
            for job in pending.values():  # which each shard answers by saving what finished)
                job.cancel(check=False)
            raise
        return [_attempt(label, job) for label, job in zip(labels, jobs, strict=True)]

    def _progress(self, label: str, job: Any, log: Log | None) -> None:
        state = str(job.state)
        if log is not None and self.states.get(label) != state:
            log(f"{label} (job {job.job_id}): {state}")
        self.states[label] = state


def _attempt(label: str, job: Any) -> Attempt:
    """How the job ended: its result (the shard's exit code), or its error, pre-emption and
    node failure included."""
    try:
        code = job.result()
    except Exception as exc:
        return Attempt(label, None, f"job {job.job_id} did not finish: {_short(exc)}",
                       str(job.job_id))
    return Attempt(label, int(code), None, str(job.job_id))


def _short(exc: BaseException) -> str:
    """The line that says why: submitit's own (a job that left no result names its state in
    its first line, before the job's log) or else the last (a job's traceback ends in it)."""
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    stated = [line for line in lines if "(state:" in line]
    return stated[0] if stated else lines[-1] if lines else type(exc).__name__
