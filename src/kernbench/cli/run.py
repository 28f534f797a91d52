"""`kernbench run`: turn the parsed flags into RunSettings, call :mod:`kernbench.api`, then
render, keep history and compare as the flags ask."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernbench.cli.console import (
    count,
    error,
    log,
    report_comparison,
    result,
    run_tally,
    status,
    warnings,
)
from kernbench.config.options import DEFAULT_PROFILE_ITERS
from kernbench.errors import KernbenchError
from kernbench.results.files import default_cache_dir

if TYPE_CHECKING:
    from kernbench.execution.resume import PreviousRun
    from kernbench.execution.settings import RunSettings


def run_settings(args: argparse.Namespace) -> RunSettings:
    """The RunSettings that `run`'s arguments (flags and suite file, resolved) stand for."""
    from kernbench.execution.settings import RunSettings
    from kernbench.results.model import ProtocolSettings

    return RunSettings(
        root=args.root.resolve(),
        protocol=ProtocolSettings(warmup=args.warmup, iterations=args.iters, seed=args.seed,
                                  warmup_time_s=args.warmup_time),
        backends=args.backends, precisions=args.precision, filters=args.filter,
        timeout_s=args.timeout, processes=args.processes, shard=args.shard, sku=args.sku,
        interleave=getattr(args, "interleave", True),
        trace_python=args.trace_memory,
        flush_l2=not args.no_l2_flush, gpu_timing=getattr(args, "gpu_timing", None),
        cache_dir=None if args.no_cpu_peak else (args.cache_dir or default_cache_dir()),
        inject_slowdown=args.debug_inject_slowdown, fake_call_ms=args.debug_fake_timer,
        max_memory_bytes=getattr(args, "max_memory", None),
        isolation=getattr(args, "isolation", "fork"),
        profile=getattr(args, "profile", None),
        profile_iters=getattr(args, "profile_iters", DEFAULT_PROFILE_ITERS),
        profile_dir=args.output_dir.resolve() if getattr(args, "profile", None) else None,
        sweeps=_suite_sweeps(args), sweeps_source=str(getattr(args, "config", None)),
        compile_mode=getattr(args, "compile_mode", None),
        testbed=getattr(args, "testbed", None), testbed_dir=args.cache_dir)


def _suite_sweeps(args: argparse.Namespace) -> tuple[Any, ...]:
    """The suite file's `sweeps`, expanded (a suite file is the only way to give them)."""
    sweeps = getattr(args, "sweeps", None)
    if not sweeps:
        return ()
    from kernbench.config.suite import sweep_overrides

    return sweep_overrides(sweeps, str(args.config))


def cmd_run(args: argparse.Namespace) -> int:
    from kernbench.api import run_suite
    from kernbench.cli.scale import cmd_run_sharded

    settings = checked_run(args)
    if args.shards is not None:
        return cmd_run_sharded(args, settings, _suite_settings(args))
    if args.ab:
        return _run_ab(args, settings)
    if args.resume is not None:
        from kernbench.api.run import finished_run

        previous = finished_run(settings, args.resume, args.paths)
        if previous is not None:
            return _rerender_complete(args, previous)
    from kernbench.cli.progress import make_progress, result_line

    progress = make_progress(args.quiet)
    try:
        outcome = run_suite(
            settings, args.output_dir, args.paths, log=log(),
            on_result=None if progress is None else (
                lambda result, i, n: progress.case_finished(result_line(result), i, n)),
            on_start=None if progress is None else progress.case_started,
            on_step=None if progress is None else progress.case_finished,
            extra_settings=_suite_settings(args), resume=args.resume is not None)
    except KeyboardInterrupt:
        _render_partial(args)
        raise
    finally:
        if progress is not None:
            progress.close()
    balance = (outcome.run.settings.get("plan") or {}).get("balance")
    if settings.shard is not None and balance and not args.quiet:
        from kernbench.execution.balancing import describe_balance

        status(describe_balance(settings.shard, balance))
    compared, comparison = _after_run(args, outcome.run)
    code = max(outcome.exit_code, compared)
    _quiet_errors(args, outcome.run.results)
    written = render(args, args.output_dir)
    status(run_tally(outcome.run.results, outcome.output_dir, written))
    _not_selected(outcome.not_selected)
    unmatched_warning(outcome.unmatched_filters)
    _precision_warning(outcome.run.results)
    _unread_precision_warning(outcome.unread_precision, args.precision)
    _busy_warning(outcome.run.results)
    _orphans_warning(outcome.orphans_killed)
    result(run_outcome(args.output_dir, outcome.run.results, written, code, comparison), None,
           args.json)
    return code


def unmatched_warning(globs: Sequence[str]) -> None:
    """--filter globs that matched no kernel, while others did: `gemm*,sofmax` says so."""
    if globs:
        warnings([f"--filter {', '.join(repr(g) for g in globs)} matched no kernel (a typo?)"])


def _not_selected(left_out: Mapping[str, str]) -> None:
    """Kernels that --backends or --precision left without a case, as pytest says
    `3 deselected`: a typo in a precision must not look like a suite that ran whole."""
    if not left_out:
        return
    shown = [f"{name} ({reason})" for name, reason in list(left_out.items())[:5]]
    more = f"; and {len(left_out) - 5} more" if len(left_out) > 5 else ""
    status(f"kernbench: {len(left_out)} kernel{'s' * (len(left_out) != 1)} ran no case: "
           f"{'; '.join(shown)}{more}")


def _quiet_errors(args: argparse.Namespace, results: Any) -> None:
    """With -q no case's line is shown as it finishes, but a failed, timed-out or invalid case
    is an error (it sets the exit code): its line goes to stderr all the same."""
    if not args.quiet:
        return
    from kernbench.cli.progress import result_line
    from kernbench.reporting.views import PROBLEM_STATUSES

    for record in results:
        if record.status in PROBLEM_STATUSES:
            error(result_line(record))


def _precision_warning(results: Any) -> None:
    """Cases whose output is in another precision than they were timed under say so at the
    run's end too: the label on their figures may not be what they computed in."""
    from kernbench.results.vocabulary import other_output_precision

    hit = [f"{r.case_id} (output {(r.output or {}).get('precision')})" for r in results
           if r.status == "ok" and other_output_precision(r.precision,
                                                          (r.output or {}).get("precision"))]
    if hit:
        more = f" and {len(hit) - 3} more" if len(hit) > 3 else ""
        warnings([f"{len(hit)} case{'s' * (len(hit) != 1)} returned another precision than "
                  f"they were timed under: {', '.join(hit[:3])}{more} (summary.md, Key "
                  "Findings, Caveats): check that each kernel computes in its case's precision"])


def _unread_precision_warning(kernels: Sequence[str], asked: Sequence[str] | None) -> None:
    """Kernels that declare `precision` and never read it ran once, at their own precision:
    said at the run's end, since --precision did not apply to them."""
    if not kernels:
        return
    names = ", ".join(kernels[:5]) + (f" and {len(kernels) - 5} more" if len(kernels) > 5
                                      else "")
    whatever = f", not at --precision {','.join(asked)}" if asked else ""
    one = len(kernels) == 1
    warnings([f"{count(len(kernels), 'kernel')} declare{'s' * one} a `precision` parameter "
              f"but never read{'s' * one} it: {names}; {'it' if one else 'each'} ran once at "
              f"its own precision (its output's, as labelled){whatever}. Read the parameter "
              "(or current_precision()) to run at each precision"])


def _busy_warning(results: Any) -> None:
    """A run measured on a busy machine says so at its end, not only in summary.md."""
    from kernbench.analysis.machine_caveats import busy

    ok = [r for r in results if r.status == "ok"]
    hit = [r for r in ok if busy(r.machine)]
    if hit:
        warnings([f"{len(hit)} of {len(ok)} cases were measured while other processes kept "
                  "CPUs busy or the hypervisor stole CPU time (summary.md, Key Findings, "
                  "Caveats): their figures may be slow; run again on a quiet machine"])


def _orphans_warning(killed: Sequence[int]) -> None:
    """What the run killed at its start, said at its end beside the other warnings."""
    if killed:
        from kernbench.api.run import orphans_line

        warnings([orphans_line(killed)])


def _render_partial(args: argparse.Namespace) -> None:
    """After Ctrl-C or SIGTERM: render the requested formats from the cases that finished
    (summary.json then says ``complete: false``, and the reports say they are partial). A run
    stopped before it wrote anything leaves nothing to render."""
    if not (args.output_dir / "summary.json").is_file():
        return
    try:
        render(args, args.output_dir)
    except KernbenchError as exc:
        status(f"kernbench: the partial reports could not be rendered: {exc.message}")
    except KeyboardInterrupt:  # Ctrl-C again while rendering: leave, but say what is missing
        error(f"kernbench: interrupted again while rendering the partial reports; "
              f"kernbench report {args.output_dir} renders them")


def run_outcome(output_dir: Path, results: Any, written: list[str], code: int,
                comparison: Any = None) -> dict[str, Any]:
    """What `run --json` prints: where the reports are, the counts per status, the exit code
    (and the comparison's verdict when the run made one)."""
    from kernbench.results.serialize import counts as status_counts

    document: dict[str, Any] = {"output_dir": str(output_dir), "cases": len(results),
                                "counts": status_counts(list(results)), "written": written,
                                "exit_code": code}
    if comparison is not None:
        document["comparison"] = {"verdict": comparison["verdict"],
                                  "counts": comparison["counts"]}
    return document


def checked_run(args: argparse.Namespace) -> RunSettings:
    """The run's settings, once all it checks before any kernel runs is checked (``run
    --list`` makes the same checks): its flags (:func:`kernbench.cli.run_checks.
    check_run_flags`), then its baseline, loaded into `args.baseline_run` and
    `args.baseline_note`."""
    from kernbench.cli.run_checks import check_run_flags

    settings = check_run_flags(args)
    args.baseline_run, args.baseline_note = _check_baseline_first(args)
    return settings


def _check_baseline_first(args: argparse.Namespace) -> tuple[Any, str | None]:
    """Load what the run will be compared with before any kernel runs: this machine's
    record at the --compare-to ref (with the note saying why there is none), or the
    --baseline file (the refs and the choice of one baseline are checked already:
    :func:`kernbench.cli.run_checks.check_run_flags`). A bad one is exit 2."""
    from kernbench.api.compare import check_same_clock

    baseline, note = None, None
    if args.compare_to:
        from kernbench.api.baselines import ref_baseline

        # args.compare_to_commit: the commit the ref names now (check_run_flags); a sharded
        # run's shards, whose machines this one does not know, are compared with their
        # records there once merged (cli.scale).
        baseline, note = ref_baseline(args.root.resolve(), args.compare_to,
                                      args.compare_to_commit,
                                      fake_clock=args.debug_fake_timer is not None)
        if note is not None:
            status(f"kernbench: --compare-to {args.compare_to}: nothing to compare with "
                   f"({note}); the run goes on, and its comparison will say so")
    if args.baseline is not None:
        from kernbench.results.inputs import load_run

        baseline = load_run(args.baseline)
    if baseline is not None and note is None:  # a note: none found at the ref, no clock
        check_same_clock(baseline.meta, {"fake_call_ms": args.debug_fake_timer})
    return baseline, note


def _rerender_complete(args: argparse.Namespace, previous: PreviousRun) -> int:
    """--resume of a run that already finished: say so, render its reports again, and exit
    as the run itself did (1 if a case failed), without running anything."""
    from kernbench.api import exit_code_for

    written = render(args, args.output_dir)
    status(f"{args.resume}: the run is already complete (finished "
           f"{previous.summary.get('finished_at')}); nothing to resume. Rendered "
           f"{', '.join(written)}")
    code = exit_code_for(previous.records)
    result({"output_dir": str(args.output_dir), "already_complete": True, "written": written,
            "exit_code": code}, None, args.json)
    return code


def _suite_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Settings summary.json keeps besides the RunSettings: the report formats, and with
    --config the suite file and its resolved values (`settings.config`, so the history record
    and a resume have them)."""
    suite = getattr(args, "suite", None)
    extra: dict[str, Any] = {"formats": list(args.format)}
    if suite is not None:
        extra["config"] = suite.record(args)
    return extra


def render(args: argparse.Namespace, output_dir: Path, merged_md: bool = False,
           merged_html: list[str] | None = None) -> list[str]:
    """Render the chosen formats from the run's JSON; the names written (summary.json first).
    `merged_md`: a merge wrote summary.md already (shard by shard, see merge_shards);
    `merged_html`: the HTML files a merge wrote from the same views (see merge_html)."""
    from kernbench.api import render_reports

    formats = [f for f in args.format if not (merged_md and f == "md")
               and not (merged_html and f == "html")]
    paths = render_reports(output_dir, formats, history_root=args.root.resolve())
    names = ["summary.json", *(["summary.md"] if merged_md and "md" in args.format else []),
             *(merged_html or []), *(str(p.relative_to(output_dir)) for p in paths)]
    return list(dict.fromkeys(names))


def merge_writes_md(args: argparse.Namespace) -> bool:
    """Whether the merge itself writes summary.md: unless a comparison with --compare-to is
    to be in it, which is made after the merge (summary.md is then rendered after it)."""
    return "md" not in args.format or not args.compare_to


def merge_writes_html(args: argparse.Namespace) -> bool:
    """Whether a large merge may write its bounded index.html itself: when html is asked for
    and no --compare-to comparison, made after the merge, is to be in it."""
    return "html" in args.format and not args.compare_to


def merge_html(args: argparse.Namespace, output_dir: Path, document: dict[str, Any],
               shard_comparison: dict[str, Any] | None) -> list[str]:
    """The HTML files the merge of `document` wrote itself (none: render() writes them)."""
    from kernbench.api.merge import html_written

    if shard_comparison is not None or not html_written(document, merge_writes_html(args)):
        return []
    pages = sorted(output_dir.glob("machines/*/index.html"))  # a merge of several machines
    return [*(str(p.relative_to(output_dir)) for p in pages), "index.html"]


def _run_ab(args: argparse.Namespace, settings: Any) -> int:
    from kernbench.analysis.compare import Thresholds
    from kernbench.api import run_ab
    from kernbench.cli.progress import make_progress

    thresholds = Thresholds(args.threshold, args.accuracy_drift)
    progress = make_progress(args.quiet)
    try:
        outcome, document = run_ab(settings, args.ab, args.output_dir, args.rounds, thresholds,
                                   args.alpha, args.paths,
                                   log(), progress,
                                   extra_settings=_suite_settings(args))
    except KeyboardInterrupt:
        _render_partial(args)
        raise
    finally:
        if progress is not None:
            progress.close()
    _quiet_errors(args, outcome.run.results)
    written = render(args, args.output_dir)
    code = max(outcome.exit_code, report_comparison(document, args.output_dir,
                                                    args.fail_on_regression))
    status(run_tally(outcome.run.results, args.output_dir, written))
    _orphans_warning(outcome.orphans_killed)
    result(run_outcome(args.output_dir, outcome.run.results, written, code, document), None,
           args.json)
    return code


def _after_run(args: argparse.Namespace, run: Any) -> tuple[int, dict[str, Any] | None]:
    """--save-history, then --compare-to or --baseline; the comparison's exit code and
    document (None without one)."""
    from kernbench.analysis.compare import Thresholds
    from kernbench.api.baselines import compare_to_stored, save_history

    if args.save_history:
        path = save_history(args.root.resolve(), run)
        status(f"History record: {path}")
    thresholds = Thresholds(args.threshold, args.accuracy_drift,
                            _per_kernel_thresholds(run))
    if args.baseline_run is None:
        return 0, None
    document = compare_to_stored(args.baseline_run, run, args.output_dir, thresholds,
                                 args.alpha, note=args.baseline_note)
    return report_comparison(document, args.output_dir, args.fail_on_regression), document


def _per_kernel_thresholds(run: Any) -> dict[str, dict[str, float]]:
    return {k.name: dict(k.config.regression) for k in run.kernels
            if k.config is not None and k.config.regression}
