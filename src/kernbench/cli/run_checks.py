"""The checks ``kernbench run`` makes of its flags before any kernel runs, which ``run --list``
makes too: what it lists must be what the run would do, not a run that is then refused."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kernbench.errors import KernbenchError

if TYPE_CHECKING:
    from kernbench.execution.settings import RunSettings

__all__ = ["check_run_flags"]


def check_run_flags(args: argparse.Namespace) -> RunSettings:
    """The run's settings, once its flags are checked as a run checks them before any kernel
    runs (``run --list`` too: what it lists must be what the run would do, not a run that is
    then refused): combinations, executor flags, the --ab and --compare-to refs (the commit
    the latter names is kept as `args.compare_to_commit`)."""
    from kernbench.analysis.gitref import check_ref
    from kernbench.cli.run import run_settings
    from kernbench.cli.scale import check_sharded

    settings = run_settings(args)
    refuse_combinations(args)
    check_sharded(args)
    if args.ab:
        check_ref(args.root.resolve(), args.ab, "--ab")
    args.compare_to_commit = (check_ref(args.root.resolve(), args.compare_to)
                              if args.compare_to else None)
    return settings


def refuse_combinations(args: argparse.Namespace) -> None:
    """Flags that would do nothing, or record something untrue, together: exit 2."""
    chosen = [flag for flag, value in (("--compare-to", args.compare_to), ("--ab", args.ab),
                                       ("--baseline", args.baseline)) if value]
    if len(chosen) > 1:
        raise KernbenchError(f"{' and '.join(chosen)} cannot be combined: pick one baseline")
    if args.ab and getattr(args, "profile", None):
        raise KernbenchError("--profile cannot be combined with --ab (every round would "
                             "profile again); profile a plain run")
    from kernbench.config.options import DEFAULT_PROCESSES

    if args.ab and args.processes != DEFAULT_PROCESSES:
        raise KernbenchError(f"--processes {args.processes} has no effect with --ab: its rounds "
                             "are its processes (--rounds N runs N per case and side); give "
                             "--rounds instead")
    if args.ab and args.save_history:
        raise KernbenchError("--save-history cannot be combined with --ab (its rounds are "
                             "no run of one commit to keep); save the history of a plain run")
    if args.debug_inject_slowdown and args.save_history:
        raise KernbenchError("--debug-inject-slowdown cannot be combined with --save-history: "
                             "a testing aid's slowdown must not become a baseline")
    if args.debug_inject_slowdown and args.debug_fake_timer is not None:
        raise KernbenchError("--debug-inject-slowdown has no effect on --debug-fake-timer's "
                             "clock (every call takes exactly MS); use one or the other")
