"""Run a suite as N shards on an executor (this machine, Slurm, Ray), then merge them.

:func:`run_sharded` gives each shard ``--shard k/N`` and its own report directory
(``OUTPUT_DIR/shards/k-of-N``), has the executor (:mod:`kernbench.execution.executors`) run
them, runs a shard that did not finish (an error, a lost node, a pre-empted job, a summary left
incomplete) once more, and merges what came back into OUTPUT_DIR with ``kernbench merge``'s own
code. A shard that failed twice is named in ``missing``, and the cases it finished before it
stopped (its kernels/*.json) are merged with the rest; the merged ``completeness`` names the
cases it lacks (or the whole shard, where it left nothing). It is never silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kernbench.errors import EXIT_FAILURES, KernbenchError
from kernbench.execution.executors import Attempt, ExecutorSettings, ShardRunner, executor_for
from kernbench.execution.settings import RunSettings

__all__ = ["ShardTask", "ShardedOutcome", "run_shard_task", "run_sharded", "shard_dir"]

Log = Callable[[str], None]


@dataclass(frozen=True)
class ShardTask:
    """One shard's run, as an executor carries it to where it runs (picklable)."""

    settings: RunSettings
    output_dir: Path
    paths: tuple[str, ...] | None = None
    extra_settings: Mapping[str, Any] | None = None
    resume: bool = False
    """Finish the run its folder holds (a retry of a shard that stopped part-way)."""


def run_shard_task(task: ShardTask) -> int:
    """Run one shard into its own report directory; its exit code (0, 1 failed cases, 2)."""
    from kernbench.api.run import run_suite

    outcome = run_suite(task.settings, task.output_dir, task.paths,
                        extra_settings=task.extra_settings, resume=task.resume)
    return outcome.exit_code


def _retry(task: ShardTask) -> ShardTask:
    """The task run again: as a --resume of what its first attempt left (an interrupted
    report set keeps the cases that finished), or from the start where it left none."""
    left = task.output_dir / "summary.json"
    return replace(task, resume=left.is_file())


@dataclass(frozen=True)
class ShardedOutcome:
    """A sharded run, merged: the merged summary, the shards' directories, every attempt."""

    summary: dict[str, Any]
    output_dir: Path
    shard_dirs: tuple[Path, ...]
    attempts: tuple[Attempt, ...]
    missing: tuple[str, ...]
    """Shards (``k/N``) that did not finish after their retry, with why."""
    exit_code: int


def shard_dir(output_dir: Path, index: int, total: int) -> Path:
    """Where ``--shards N`` writes shard K's report set: OUTPUT_DIR/shards/K-of-N."""
    return output_dir / "shards" / f"{index}-of-{total}"


def shard_label(index: int, total: int) -> str:
    return f"shard {index}/{total}"


def _finished(attempt: Attempt, directory: Path) -> bool:
    """The shard returned and its summary.json says it ran to the end."""
    from kernbench.results.files import read_json_object

    summary = read_json_object(directory / "summary.json") if attempt.finished else None
    return bool(summary) and summary.get("complete") is True  # type: ignore[union-attr]


def _run_round(runner: ShardRunner, tasks: Mapping[int, ShardTask], total: int,
               log: Log | None) -> dict[int, Attempt]:
    indices = sorted(tasks)
    attempts = runner.run(run_shard_task, [tasks[k] for k in indices],
                          [shard_label(k, total) for k in indices], log)
    return dict(zip(indices, attempts, strict=True))


def _why(attempt: Attempt) -> str:
    return attempt.error or f"its summary is missing or incomplete (exit {attempt.exit_code})"


def _runner(executor: str | ExecutorSettings | ShardRunner, output_dir: Path) -> ShardRunner:
    if isinstance(executor, str):
        executor = ExecutorSettings(executor)
    if isinstance(executor, ExecutorSettings):
        return executor_for(executor, output_dir / "slurm-logs")
    return executor


def run_sharded(settings: RunSettings, output_dir: Path,
                executor: str | ExecutorSettings | ShardRunner = "local",
                shards: int = 2, paths: Sequence[str] | None = None, log: Log | None = None,
                extra_settings: Mapping[str, Any] | None = None,
                allow_mixed: bool = False, markdown: bool = True, html: bool = False,
                history_root: Path | None = None) -> ShardedOutcome:
    """Run `settings`' suite as `shards` shards on `executor` ("local", "slurm", "ray", an
    :class:`ExecutorSettings`, or any :class:`ShardRunner`) and merge them into
    `output_dir`. Each shard that did not finish is run once more; one that fails again is
    reported in ``missing`` (and the merged summary's ``completeness``), and the exit code is
    then at least 1. Without `markdown` the caller renders summary.md; with `html` a large
    merge writes index.html (see merge_shards)."""
    if shards < 1:
        raise KernbenchError(f"--shards {shards}: expected at least 1")
    if settings.shard is not None:
        raise KernbenchError("--shards and --shard cannot be combined: --shards N runs every "
                             "shard, --shard K/N runs one")
    from kernbench.results.files import check_output_dir, output_lock

    runner = _runner(executor, output_dir)  # a missing sbatch or extra: before any folder
    check_output_dir(output_dir)
    with output_lock(output_dir):  # a run or merge writing the folder at once is refused
        return _run_sharded(settings, output_dir, runner, shards, paths, log, extra_settings,
                            (allow_mixed, markdown, html, history_root))


def _run_sharded(settings: RunSettings, output_dir: Path, runner: ShardRunner, shards: int,
                 paths: Sequence[str] | None, log: Log | None,
                 extra_settings: Mapping[str, Any] | None,
                 merging: tuple[bool, bool, bool, Path | None]) -> ShardedOutcome:
    """run_sharded in its held folder; `merging`: allow_mixed, markdown, html, history_root."""
    allow_mixed, markdown, html, history_root = merging
    from kernbench.api.run import shard_split

    split = shard_split(settings, shards, paths)
    if not split["suite_cases"]:  # every shard would fail alike: say it once, before any
        raise KernbenchError(f"no cases to run under {settings.root} (see --paths, --filter, "
                             "--backends and --precision): no shard was started")
    if log is not None:
        from kernbench.execution.balancing import describe_split

        log(describe_split(shards, split))
    tasks = {k: ShardTask(replace(settings, shard=(k, shards)), shard_dir(output_dir, k, shards),
                          tuple(paths) if paths is not None else None, extra_settings)
             for k in range(1, shards + 1)}
    attempts = _run_round(runner, tasks, shards, log)
    history = list(attempts.values())
    again = {k: _retry(tasks[k]) for k, a in attempts.items()
             if not _finished(a, tasks[k].output_dir)}
    if again:
        if log is not None:
            log(f"retrying {len(again)} shards once: "
                + "; ".join(f"{shard_label(k, shards)}: {_why(attempts[k])}" for k in again))
        retried = _run_round(runner, again, shards, log)
        attempts.update(retried)
        history.extend(retried.values())
    done = [k for k in sorted(tasks) if _finished(attempts[k], tasks[k].output_dir)]
    missing = tuple(f"{k}/{shards}: {_why(attempts[k])}" for k in sorted(tasks) if k not in done)
    # A shard that failed twice keeps the cases it finished: its folder goes into the merge,
    # which reads them from its kernels/*.json and names the cases it lacks (completeness).
    merged = [k for k in sorted(tasks)
              if k in done or (tasks[k].output_dir / "summary.json").is_file()]
    if not merged:
        raise KernbenchError(f"no shard of {shards} finished, even retried: "
                             + "; ".join(missing))
    if log is not None and len(merged) > len(done):
        log("merging what the unfinished shards saved: "
            + ", ".join(shard_label(k, shards) for k in merged if k not in done)
            + " (the cases they lack are named under completeness)")
    return _merge(output_dir, [tasks[k].output_dir for k in merged], attempts, history, missing,
                  allow_mixed, (markdown, html, history_root))


def _merge(output_dir: Path, dirs: list[Path], attempts: Mapping[int, Attempt],
           history: list[Attempt], missing: tuple[str, ...], allow_mixed: bool,
           reports: tuple[bool, bool, Path | None]) -> ShardedOutcome:
    """`reports`: merge_shards' markdown, html and history_root."""
    from kernbench.api.reports import merge_shards

    markdown, html, history_root = reports
    summary, _ = merge_shards(dirs, output_dir, allow_mixed, markdown, html, history_root)
    codes = [a.exit_code or 0 for a in attempts.values() if a.finished]
    code = max([*codes, EXIT_FAILURES if missing else 0])
    return ShardedOutcome(summary, output_dir, tuple(dirs), tuple(history), missing, code)
