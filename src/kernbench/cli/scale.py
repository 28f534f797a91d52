"""`kernbench run --shards N [--executor local|slurm|ray]`: every shard on the executor, then
the merge, reported as `kernbench merge` reports it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kernbench.cli.console import report_comparison, status, status_tally, warnings
from kernbench.errors import EXIT_FAILURES, KernbenchError

if TYPE_CHECKING:
    from kernbench.execution.executors import ExecutorSettings
    from kernbench.execution.settings import RunSettings

_REFUSED = (("ab", "--ab"), ("resume", "--resume"), ("shard", "--shard"),
            ("profile", "--profile"), ("baseline", "--baseline"))


def executor_settings(args: argparse.Namespace) -> ExecutorSettings:
    """The executor that `run`'s flags (and suite file) ask for; a KernbenchError naming the
    flag for a malformed --slurm-arg or --ray-resource."""
    from kernbench.execution.executors import ExecutorSettings, parse_key_values
    from kernbench.execution.ray_shards import parse_resources

    return ExecutorSettings(
        kind=args.executor, jobs=args.jobs, partition=args.partition,
        gpus_per_task=args.gpus_per_task, time_min=args.time, exclusive=args.exclusive,
        slurm_args=parse_key_values(args.slurm_arg, "--slurm-arg"),
        slurm_cluster=getattr(args, "debug_slurm_cluster", None),
        ray_address=args.ray_address, gpus_per_shard=args.gpus_per_shard,
        ray_resources=parse_resources(parse_key_values(args.ray_resource, "--ray-resource")))


EXECUTOR_FLAGS = {"--jobs": "local", "--partition": "slurm", "--gpus-per-task": "slurm",
                  "--time": "slurm", "--exclusive": "slurm", "--slurm-arg": "slurm",
                  "--ray-address": "ray", "--gpus-per-shard": "ray", "--ray-resource": "ray"}
"""Each executor's own flags: unused by a run without --shards, or by another executor."""


def _given_executor_flags(args: argparse.Namespace) -> list[str]:
    """The executor flags set to anything but their default."""
    from kernbench.config.options import command

    options = {o.name: o for o in command("run").options if o.name in EXECUTOR_FLAGS}
    return [flag for flag, o in options.items()
            if getattr(args, o.dest, o.default) not in (None, o.default)]


def check_sharded(args: argparse.Namespace) -> None:
    """Executor options need --shards; --shards does not go with a run of one side or shard."""
    if getattr(args, "debug_slurm_cluster", None) and args.executor != "slurm":
        raise KernbenchError("--debug-slurm-cluster goes with --executor slurm")
    given = _given_executor_flags(args)
    if args.shards is None:
        if args.executor != "local":
            raise KernbenchError(f"--executor {args.executor} needs --shards N")
        if given:
            raise KernbenchError(f"{given[0]} is an option of --shards N (an executor's); "
                                 "without --shards it would do nothing")
        return
    foreign = [flag for flag in given if EXECUTOR_FLAGS[flag] != args.executor]
    if foreign:
        raise KernbenchError(f"{foreign[0]} is an option of another executor than "
                             f"--executor {args.executor}; it would do nothing")
    for dest, flag in _REFUSED:
        if getattr(args, dest, None):
            raise KernbenchError(f"--shards cannot be combined with {flag}")


def cmd_run_sharded(args: argparse.Namespace, settings: RunSettings,
                    extra: dict[str, Any]) -> int:
    """Run the shards, merge them into --output-dir, keep history and compare as asked."""
    from kernbench.api.scale import run_sharded
    from kernbench.cli.run import merge_html, merge_writes_html, merge_writes_md, render
    from kernbench.execution.completeness import problems

    outcome = run_sharded(settings, args.output_dir, executor_settings(args), args.shards,
                          args.paths, log=None if args.quiet else status,
                          extra_settings=extra, allow_mixed=args.allow_mixed,
                          markdown=merge_writes_md(args), html=merge_writes_html(args),
                          history_root=args.root.resolve())
    found = outcome.summary.get("completeness") or {}
    if not args.quiet:
        cluster = getattr(args, "debug_slurm_cluster", None)
        where = f"{args.executor} on submitit's {cluster} executor" if cluster else args.executor
        counts = outcome.summary["counts"]
        status(f"Merged {len(outcome.shard_dirs)} of {args.shards} shards "
               f"({where}): {counts['total']} cases ({status_tally(counts)}) into "
               f"{args.output_dir}/")
    warnings([f"missing: shard {line}" for line in outcome.missing] + problems(found))
    strict = EXIT_FAILURES if args.strict and not found.get("complete", True) else 0
    code = max(outcome.exit_code, strict, _after_merge(args, outcome.summary))
    render(args, args.output_dir, merged_md=merge_writes_md(args),
           merged_html=merge_html(args, args.output_dir, outcome.summary, None))
    return code


def _after_merge(args: argparse.Namespace, summary: dict[str, Any]) -> int:
    """--save-history and --compare-to of the merged run, as `kernbench merge` makes them (a
    merge of several machines: one record each, each compared with its own)."""
    from kernbench.api.baselines import compare_dir_to_ref, save_history_of_dir

    root = args.root.resolve()
    if args.save_history:
        for path in save_history_of_dir(root, args.output_dir):
            status(f"History record: {path}")
    if not args.compare_to:
        return 0
    from kernbench.analysis.compare import Thresholds

    comparison = compare_dir_to_ref(root, args.compare_to, args.output_dir,
                                    Thresholds(args.threshold, args.accuracy_drift,
                                               summary.get("regression_thresholds") or {}),
                                    args.alpha, commit=args.compare_to_commit)
    return report_comparison(comparison, args.output_dir, args.fail_on_regression)
