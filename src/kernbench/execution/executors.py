"""Where the shards of a suite run: on this machine, on a Slurm cluster, on a Ray cluster.

kernbench writes no scheduler of its own. An executor takes one picklable task per shard and a
function to call on it (``run(task) -> exit code``) and reports how each attempt ended
(:class:`Attempt`); what a shard is and how the shards are retried and merged is
:mod:`kernbench.api.scale`. ``local`` runs each shard in a fresh (spawned) process on this
machine, ``jobs`` at a time; ``slurm`` (:mod:`kernbench.execution.slurm`) submits one submitit
job array; ``ray`` (:mod:`kernbench.execution.ray_shards`) one Ray task per shard.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kernbench.config.options import EXECUTORS
from kernbench.errors import KernbenchError

__all__ = ["EXECUTORS", "Attempt", "ExecutorSettings", "LocalShards", "ShardRunner",
           "executor_for", "parse_key_values"]

Log = Callable[[str], None]
TaskFn = Callable[[Any], int]

_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_.:-]*")


@dataclass(frozen=True)
class ExecutorSettings:
    """How the shards of a run are started (``--executor`` and its options)."""

    kind: str = "local"
    jobs: int = 1
    """local: shards running at once."""
    partition: str | None = None
    gpus_per_task: int | None = None
    time_min: int | None = None
    """slurm: the time limit of each task, in minutes."""
    exclusive: bool = False
    slurm_args: tuple[tuple[str, str], ...] = ()
    slurm_cluster: str | None = None
    """submitit's cluster: None is Slurm itself (refused where ``sbatch`` is missing, never a
    silent fallback); "local" and "debug" run the same job array on this machine, Slurm
    options ignored (the tests, ``--debug-slurm-cluster``)."""
    ray_address: str | None = None
    gpus_per_shard: float = 0.0
    ray_resources: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Attempt:
    """How one shard's run ended: its exit code, or why it did not finish."""

    label: str
    exit_code: int | None
    error: str | None = None
    job_id: str | None = None

    @property
    def finished(self) -> bool:
        """The shard's run returned (its cases may still have failed: that is in its report)."""
        return self.exit_code is not None and self.error is None


class ShardRunner(Protocol):
    def run(self, fn: TaskFn, tasks: Sequence[Any], labels: Sequence[str],
            log: Log | None) -> list[Attempt]: ...


def parse_key_values(items: Sequence[str], flag: str) -> tuple[tuple[str, str], ...]:
    """``("mem=64G", "qos=high")`` -> pairs; a KernbenchError naming `flag` for anything but
    KEY=VALUE with a non-empty value."""
    pairs: list[tuple[str, str]] = []
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not _KEY.fullmatch(key) or not value:
            raise KernbenchError(f"{flag} {item!r}: expected KEY=VALUE, the key a letter then "
                                 "letters, digits, _ . : -, the value not empty "
                                 f"(e.g. {flag} {'sku:H100=1' if 'ray' in flag else 'mem=64G'})")
        pairs.append((key, value))
    return tuple(pairs)


def _run_in_process(fn: TaskFn, task: Any, label: str, live: set[Any] | None = None) -> Attempt:
    """`fn(task)` in a fresh spawned interpreter: a crash or kill is this shard's alone. The
    process is in `live` while it runs, for the parent to stop it."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    process = context.Process(target=_exit_with, args=(fn, task, os.getpid()),
                              name=f"kernbench {label}")
    process.start()
    if live is not None:
        live.add(process)
    try:
        process.join()
    finally:
        if live is not None:
            live.discard(process)
    code = process.exitcode
    if code is None or code < 0:
        return Attempt(label, None, f"the shard's process ended by signal {-(code or 0)}")
    if code in (130, 143):  # 128 + SIGINT or SIGTERM
        return Attempt(label, None, f"the shard's run was interrupted (exit {code})")
    if code >= 100:
        return Attempt(label, None, f"the shard's run raised an error (exit {code}); see above")
    return Attempt(label, code)


def _exit_with(fn: TaskFn, task: Any, parent: int | None = None) -> None:
    """The child's body: the task's exit code, or 100 + 2 when it raised. With the `parent`'s
    pid it asks for SIGTERM when the parent dies (Linux), even by SIGKILL: the shard then
    saves what finished and stops, instead of running on with nobody to merge it."""
    import signal
    import sys
    import traceback

    from kernbench.errors import KernbenchError
    from kernbench.execution.interrupts import exit_code_for_interrupt
    from kernbench.execution.reaping import prctl

    function = prctl() if parent is not None else None
    if function is not None:
        function(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the line above
            sys.exit(128 + signal.SIGTERM)
    try:
        code = fn(task)
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the parent says it, once
        sys.exit(exit_code_for_interrupt(exc))
    except KernbenchError as exc:  # a usage error: its message, not a traceback
        print(f"kernbench: error: {exc.message}", file=sys.stderr)
        sys.exit(102)
    except BaseException:  # the parent reports the shard as not finished
        traceback.print_exc()
        sys.exit(102)
    sys.exit(code)


@dataclass(frozen=True)
class LocalShards:
    """Shards in fresh processes on this machine, `jobs` at a time."""

    jobs: int = 1

    def run(self, fn: TaskFn, tasks: Sequence[Any], labels: Sequence[str],
            log: Log | None) -> list[Attempt]:
        live: set[Any] = set()

        def one(pair: tuple[Any, str]) -> Attempt:
            if log is not None:
                log(f"{pair[1]}: running on this machine")
            attempt = _run_in_process(fn, *pair, live=live)
            if log is not None:
                log(f"{pair[1]}: {_ended(attempt)}")
            return attempt

        pool = ThreadPoolExecutor(max_workers=max(1, self.jobs))
        try:
            return list(pool.map(one, zip(tasks, labels, strict=True)))
        except BaseException:  # SIGTERM or Ctrl-C: stop the shards, which save what finished
            pool.shutdown(wait=False, cancel_futures=True)
            for process in list(live):
                process.terminate()
            raise
        finally:
            pool.shutdown(wait=True)


def _ended(attempt: Attempt) -> str:
    return f"finished (exit {attempt.exit_code})" if attempt.finished else str(attempt.error)


def executor_for(settings: ExecutorSettings, folder: Path) -> ShardRunner:
    """The runner of `settings.kind` (Slurm keeps its job logs in `folder`); a KernbenchError
    for another name or a missing extra."""
    if settings.kind == "local":
        return LocalShards(settings.jobs)
    if settings.kind == "slurm":
        from kernbench.execution.slurm import SlurmShards

        return SlurmShards.from_settings(settings, folder)
    if settings.kind == "ray":
        from kernbench.execution.ray_shards import RayShards

        return RayShards.from_settings(settings)
    raise KernbenchError(f"--executor {settings.kind!r}: expected one of {', '.join(EXECUTORS)}")
