"""The commands besides `run` (:mod:`kernbench.cli.run`): each reads its parsed arguments,
calls :mod:`kernbench.api` or the room that does the work, prints through
:mod:`kernbench.cli.console` and returns its exit code."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from kernbench.cli.console import (
    count,
    history_listing,
    log,
    render_manifest,
    report_comparison,
    result,
    status,
    status_tally,
    text_block,
    warnings,
)
from kernbench.cli.run import cmd_run, render, unmatched_warning
from kernbench.errors import EXIT_FAILURES, EXIT_USAGE, KernbenchError


def dispatch(args: argparse.Namespace) -> int:
    """Run the command `args` names; its exit code."""
    if args.command == "compare":
        return cmd_compare(args)
    if args.command == "history":
        return cmd_history(args)
    if args.command == "merge":
        return cmd_merge(args)
    if args.command == "report":
        return cmd_report(args)
    if args.command == "comment":
        return cmd_comment(args)
    if args.command == "list" or getattr(args, "list", False):
        if args.command == "run":  # refused here as the run would refuse it
            from kernbench.cli.run import checked_run

            checked_run(args)
        return cmd_list(args)
    return cmd_run(args)


def cmd_list(args: argparse.Namespace) -> int:
    from kernbench.api import discover

    specs, manifest = discover(args.root, args.paths, log())
    from kernbench.execution.planning import select_kernels, unmatched_filters
    from kernbench.results.serialize import manifest_dict

    unmatched = unmatched_filters(specs, args.filter)
    specs = select_kernels(specs, args.filter)
    if getattr(args, "shard", None) is not None:  # run --list --shard K/N: that shard's
        from kernbench.api.run import shard_kernels
        from kernbench.cli.run import run_settings

        mine = shard_kernels(run_settings(args), args.paths)
        specs = [s for s in specs if s.name in mine]
    if getattr(args, "resume", None) is not None:  # run --resume DIR --list: what is left
        specs = _left_to_resume(args, specs)
    if specs:  # else the run's own error says no kernel matched
        unmatched_warning(unmatched)
    picked = _selections(args, specs)
    if args.json:
        document = manifest_dict(manifest["root"], manifest["paths"], specs)
        if picked is not None:  # run --list --backends/--precision: what would run
            document["not_selected"] = {k: v for k, v in picked.items() if isinstance(v, str)}
        result(document, None, True)
    else:
        result(None, render_manifest(specs, manifest["root"], manifest["paths"], picked), False)
    return EXIT_USAGE if any(s.status == "invalid" for s in specs) else 0


def _left_to_resume(args: argparse.Namespace, specs: Any) -> Any:
    """The kernels with cases ``run --resume DIR`` would still run, after a line saying how
    many cases it keeps and runs."""
    from kernbench.api.run import resume_split
    from kernbench.cli.run import run_settings
    from kernbench.execution.held import FOLDER_NAME, held_count
    from kernbench.execution.planning import plan_key

    kept, todo = resume_split(run_settings(args), args.resume, args.paths)
    left = {plan_key(item) for item in todo}
    held = held_count(args.resume / FOLDER_NAME)
    status(f"--resume {args.resume}: {count(len(kept), 'finished case')} kept, "
           f"{count(len(todo), 'case')} to run"
           + (f" ({held} worker process{'es' * (held != 1)} of them finished and kept: "
              "reused where the kernel is unchanged)" if held and todo else "")
           + (f", in the {count(len(left), 'kernel')} below" if todo else ": nothing to run"))
    return [s for s in specs if s.name in left]


def _selections(args: argparse.Namespace, specs: Any) -> dict[str, Any] | None:
    """`run --list` with --backends or --precision: each valid kernel's (backends,
    precisions) under them, or why it has none; None without those flags."""
    if not (getattr(args, "backends", None) or getattr(args, "precision", None)):
        return None
    from kernbench.execution.planning import selection
    from kernbench.execution.settings import RunSettings

    settings = RunSettings(root=args.root, backends=args.backends, precisions=args.precision)
    return {s.name: selection(s, settings) for s in specs if s.status != "invalid"}


def cmd_compare(args: argparse.Namespace) -> int:
    from kernbench.api import compare_files

    document = compare_files(args.baseline, args.candidate, args.output_dir, args.threshold,
                             args.accuracy_drift, args.alpha)
    result(document, None, args.json)
    return report_comparison(document, args.output_dir, args.fail_on_regression)


ISO_PREFIX = re.compile(r"\d{4}(-\d{2}(-\d{2}([T ]\d{2}(:\d{2}(:\d{2}(\.\d+)?)?)?)?)?)?Z?")
"""What --since takes: an ISO date or time, or a prefix of one (2026, 2026-11, 2026-11-26T12)."""


def _iso_prefix(text: str) -> bool:
    """An ISO date or time, or a prefix of one, whose every part is in range (not 2026-13)."""
    import datetime

    if not ISO_PREFIX.fullmatch(text):
        return False
    shown = text.rstrip("Z").replace(" ", "T")[:19]
    try:  # the parts not given are the earliest
        datetime.datetime.fromisoformat(shown + "2000-01-01T00:00:00"[len(shown):])
    except ValueError:
        return False
    return True


def cmd_history(args: argparse.Namespace) -> int:
    if not args.root.is_dir():
        raise KernbenchError(f"--root {args.root}: no such folder (expected the repository "
                             "whose benchmarks/history to use)")
    if args.since is not None and not _iso_prefix(args.since):
        raise KernbenchError(f"--since {args.since!r}: expected an ISO date or time, or a "
                             "prefix of one (2026-11, 2026-11-26, 2026-11-26T12:00)")
    if args.add is not None:
        from kernbench.api.baselines import save_history_of_dir

        paths = save_history_of_dir(args.root.resolve(), args.add, added=True)
        for path in paths:
            status(f"History record: {path}")
        result({"history_records": [str(path) for path in paths]}, None, args.json)
        return 0

    from kernbench.results.history import load_records_with_errors

    records, errors = load_records_with_errors(
        args.root.resolve(), kernel=args.kernel, fingerprint=args.machine, branch=args.branch,
        since=args.since, limit=args.limit)
    warnings(errors)
    result(records, history_listing(records, args.root), args.json)
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from kernbench.api import merge_shards
    from kernbench.api.run import exit_code_for_counts

    if args.compare_to:
        from kernbench.analysis.gitref import check_ref

        check_ref(args.root.resolve(), args.compare_to)
    from kernbench.cli.run import merge_html, merge_writes_html, merge_writes_md

    merged_md = merge_writes_md(args)
    given = {key: value for key in ("threshold", "accuracy_drift", "alpha")
             if (value := getattr(args, key)) is not None}
    document, shard_comparison = merge_shards(args.shards, args.output_dir, args.allow_mixed,
                                              markdown=merged_md, html=merge_writes_html(args),
                                              history_root=args.root.resolve(), compare=given)
    code = max(exit_code_for_counts(document["counts"]), _merge_status(args, document))
    if args.save_history:
        from kernbench.api.baselines import save_history_of_dir

        for path in save_history_of_dir(args.root.resolve(), args.output_dir):
            status(f"History record: {path}")
    if args.compare_to:  # a mixed merge: each machine with its own record
        from kernbench.analysis.compare import (
            DEFAULT_ACCURACY_DRIFT,
            DEFAULT_ALPHA,
            DEFAULT_THRESHOLD,
            Thresholds,
        )
        from kernbench.api.baselines import compare_dir_to_ref

        thresholds = Thresholds(given.get("threshold", DEFAULT_THRESHOLD),
                                given.get("accuracy_drift", DEFAULT_ACCURACY_DRIFT),
                                document.get("regression_thresholds") or {})
        comparison = compare_dir_to_ref(args.root.resolve(), args.compare_to, args.output_dir,
                                        thresholds, given.get("alpha", DEFAULT_ALPHA))
        code = max(code, report_comparison(comparison, args.output_dir,
                                           args.fail_on_regression))
    elif shard_comparison is not None:  # shards of an --ab run
        code = max(code, report_comparison(shard_comparison, args.output_dir,
                                           args.fail_on_regression))
    written = render(args, args.output_dir, merged_md=merged_md,
                     merged_html=merge_html(args, args.output_dir, document, shard_comparison))
    result({"output_dir": str(args.output_dir), "counts": document["counts"],
            "written": written, "exit_code": code}, None, args.json)
    return code


def _merge_status(args: argparse.Namespace, document: dict[str, Any]) -> int:
    """Says what was merged and what of the suite is missing; 1 under --strict if anything."""
    from kernbench.execution.completeness import problems
    from kernbench.reporting.machines import incomplete_text
    from kernbench.results.machines import machine_names, machines_of

    machines = machines_of(document)
    kept = (f", {len(machines)} machines kept apart: "
            f"{', '.join(machine_names(machines))}") if machines else ""
    counts = document["counts"]
    status(f"Merged {count(len(args.shards), 'shard')}: {count(counts['total'], 'case')} "
           f"({status_tally(counts)}) into {args.output_dir}/{kept}")
    found = document.get("completeness") or {}
    lines = problems(found)
    if found.get("unchecked"):
        lines.append("unchecked (no plan recorded: an older kernbench or a merged set): "
                     + ", ".join(found["unchecked"]))
    warnings(lines)
    unfinished = document.get("complete") is False  # an interrupted shard, every case back
    if unfinished and found.get("complete", True):
        warnings([f"the merge is incomplete: {incomplete_text(document)[1]}"])
    return EXIT_FAILURES if args.strict and (unfinished or not found.get("complete", True)) \
        else 0


def cmd_report(args: argparse.Namespace) -> int:
    from kernbench.api import render_reports
    from kernbench.results.files import read_json_object

    output_dir = args.output_dir or args.run_dir
    root = args.root
    if root is None:
        summary = read_json_object(args.run_dir / "summary.json") or {}
        recorded = (summary.get("settings") or {}).get("root")
        root = Path(recorded) if isinstance(recorded, str) and Path(recorded).is_dir() else None
    paths = render_reports(output_dir, args.format, history_root=root, source_dir=args.run_dir)
    written = [str(p.relative_to(output_dir)) for p in paths]
    status(f"Rendered {', '.join(written) or 'nothing'} in {output_dir}/")
    result({"output_dir": str(output_dir), "written": written}, None, args.json)
    return 0


def cmd_comment(args: argparse.Namespace) -> int:
    from kernbench.reporting.bundle import load_report_inputs
    from kernbench.reporting.comment import render_comment

    if args.validate:
        from kernbench.reporting.validate import validate_report_dir

        validate_report_dir(args.run_dir)
    body = render_comment(load_report_inputs(args.run_dir), max_chars=args.max_chars,
                          run_url=args.run_url, fork=args.from_fork)
    if args.json:
        result({"body": body, "chars": len(body)}, None, True)
    else:
        text_block(body)
    return 0
