"""Command line: argument parsing and printing only; the work happens in :mod:`kernbench.api`.

Exit codes: 0 everything ran, 1 a case failed or timed out, 2 usage or configuration error,
130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernbench.errors import EXIT_USAGE, KernbenchError

if TYPE_CHECKING:
    from kernbench.execution.runner import RunSettings

DEFAULT_PROCESSES = 3
"""Worker processes per case: the fewest with which a comparison of two stored runs can
estimate between-process noise (Welch's test on process medians needs 3 a side)."""
PRECISION_CHOICES = ("fp64", "fp32", "fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8")
BACKEND_CHOICES = ("cpu", "cuda", "rocm")


def comma_list(choices: Sequence[str] | None = None) -> Any:
    """argparse type for `a,b,c`, checked against `choices` when given."""
    def parse(text: str) -> tuple[str, ...]:
        items = tuple(dict.fromkeys(i.strip() for i in text.split(",") if i.strip()))
        if not items:
            raise argparse.ArgumentTypeError("expected a comma-separated list")
        bad = [i for i in items if choices is not None and i not in choices]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown value {bad[0]!r}; expected a comma list of {', '.join(choices or ())}")
        return items
    return parse


def positive_int(minimum: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        return value
    return parse


def _slowdowns(text: str) -> tuple[tuple[str, float], ...]:
    rules = []
    for item in text.split(","):
        pattern, _, factor = item.partition("=")
        try:
            value = float(factor)
        except ValueError:
            value = 0.0
        if not pattern or value < 1.0:
            raise argparse.ArgumentTypeError(f"expected GLOB=FACTOR with FACTOR >= 1, got {item!r}")
        rules.append((pattern.strip(), value))
    return tuple(rules)


def _shard(text: str) -> tuple[int, int]:
    from kernbench.execution.sharding import parse_shard

    try:
        return parse_shard(text)
    except KernbenchError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _formats(text: str) -> tuple[str, ...]:
    from kernbench.reporting.formats import parse_formats

    try:
        return parse_formats(text)
    except KernbenchError as exc:
        raise argparse.ArgumentTypeError(exc.message.removeprefix("--format: ")) from None


def _memory_size(text: str) -> int:
    from kernbench.execution.limits import parse_size

    try:
        return parse_size(text)
    except KernbenchError as exc:
        raise argparse.ArgumentTypeError(exc.message.removeprefix("--max-memory: ")) from None


def _add_format_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", type=_formats, default=("json", "md", "html"),
                        metavar="F[,F]", help="report formats: json, md, html, csv, pytorch_v3, "
                        "github, junit, png (matplotlib), or all (default: json,md,html)")


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return value


def _add_discovery_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, default=Path("."),
                        help="repository whose discovery paths are scanned (default: .)")
    parser.add_argument("--paths", type=comma_list(), default=None, metavar="DIR[,DIR]",
                        help="replace the discovery paths (relative to --root)")
    parser.add_argument("--filter", type=comma_list(), default=(), metavar="GLOB[,GLOB]",
                        help="only kernels whose name matches one of these globs")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="explain discovery decisions and print more per case")
    parser.add_argument("--json", action="store_true", help="(list) print the manifest as JSON")


def _add_run_args(parser: argparse.ArgumentParser) -> None:
    from kernbench.measure.profiling import DEFAULT_PROFILE_ITERS, PROFILERS
    from kernbench.results.model import COMPILE_MODES

    parser.add_argument("--config", type=Path, default=None, metavar="SUITE.yml",
                        help="suite file of run options (see README, Suite files); flags "
                        "given here win over it")
    parser.add_argument("--iters", type=positive_int(1), default=30, metavar="N",
                        help="timed samples per case (default: 30)")
    parser.add_argument("--warmup", type=positive_int(0), default=3, metavar="N",
                        help="untimed calls before calibration (default: 3)")
    parser.add_argument("--warmup-time", type=non_negative_float, default=0.1,
                        metavar="SECONDS", help="least time the kernel runs before its first "
                        "sample: warmup calls, calibration, then untimed blocks (default: 0.1)")
    parser.add_argument("--precision", type=comma_list(PRECISION_CHOICES), default=None,
                        metavar="P[,P]", help="precisions to run, e.g. fp32,fp16 "
                        "(default: each kernel's bench.yaml precisions, else fp32)")
    parser.add_argument("--backends", type=comma_list(BACKEND_CHOICES), default=None,
                        metavar="B[,B]", help="device kinds, e.g. cpu,cuda "
                        "(default: each kernel's declared backends)")
    parser.add_argument("--processes", type=positive_int(1), default=DEFAULT_PROCESSES,
                        metavar="N", help="worker processes per case, each taking --iters "
                        "samples; the process is the unit of replication, and comparisons "
                        "need 3 a side to measure the noise between processes (default: 3)")
    parser.add_argument("--output-dir", type=Path, default=Path("reports"), metavar="DIR",
                        help="where reports are written (default: reports)")
    parser.add_argument("--seed", type=int, default=1337, help="seed passed to kernels "
                        "that take `seed` and used for global RNGs (default: 1337)")
    parser.add_argument("--timeout", type=positive_float, default=300.0, metavar="SECONDS",
                        help="per-case limit; the worker and its children are killed after it "
                        "(default: 300; bench.yaml timeout_s overrides per kernel)")
    parser.add_argument("--max-memory", type=_memory_size, default=None, metavar="SIZE",
                        help="address-space limit of each worker (RLIMIT_AS), e.g. 512M or 2G; "
                        "an allocation past it fails the case, naming the limit (torch needs "
                        "about 1G, jax 2G; see README)")
    parser.add_argument("--resume", type=Path, default=None, metavar="DIR",
                        help="finish the interrupted run in DIR (its report set), running only "
                        "the cases it did not finish; repeat the run's flags")
    parser.add_argument("--isolation", choices=("fork", "spawn"), default="fork",
                        help="how each case's worker process starts: fork (from a server that "
                        "preloaded the framework once; spawned where fork is unsafe) or spawn "
                        "(a fresh interpreter per worker) (default: fork)")
    parser.add_argument("--trace-memory", action="store_true",
                        help="also record Python allocations with tracemalloc (slows Python code)")
    parser.add_argument("--no-l2-flush", action="store_true",
                        help="GPU cases: do not evict the L2 cache before each sample")
    parser.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                        help="machine-level cache, e.g. the CPU peak probe "
                        "(default: $XDG_CACHE_HOME/kernbench or ~/.cache/kernbench)")
    parser.add_argument("--no-cpu-peak", action="store_true",
                        help="do not probe (or read) this CPU's peak; %% of peak stays empty")
    parser.add_argument("--list", action="store_true",
                        help="discover and print the manifest; run nothing")
    parser.add_argument("--sku", default=None,
                        help="SKU for bench.yaml golden values (default: detected from the GPU)")
    parser.add_argument("--shard", type=_shard, default=None, metavar="K/N",
                        help="run only shard K of N (stable by kernel); join with `kernbench "
                        "merge`")
    parser.add_argument("--save-history", action="store_true",
                        help="append this run's record under ROOT/benchmarks/history/")
    parser.add_argument("--compare-to", default=None, metavar="REF",
                        help="compare with the newest history record at git ref REF for this "
                        "machine; writes regressions.md")
    parser.add_argument("--baseline", type=Path, default=None, metavar="FILE",
                        help="compare with a stored run (summary.json, report directory or "
                        "history record), read before anything runs; writes regressions.md")
    parser.add_argument("--ab", default=None, metavar="REF",
                        help="interleaved A/B on this machine: REF (in a temporary worktree) "
                        "against this tree, in alternating rounds; writes regressions.md")
    parser.add_argument("--rounds", type=positive_int(2), default=30, metavar="N",
                        help="--ab rounds: worker processes per case and side (default: 30; the "
                        "sign test over rounds cannot reach p < 0.05 with fewer than 6)")
    parser.add_argument("--debug-inject-slowdown", type=_slowdowns, default=(),
                        metavar="GLOB=FACTOR[,...]",
                        help="testing aid: matching kernels' calls take FACTOR times as long "
                        "(with --ab: on this tree's side only)")
    parser.add_argument("--profile", choices=PROFILERS, default=None,
                        help="after each case's timed samples, call the kernel again under "
                        "this profiler and write OUTPUT_DIR/profiles/ (the samples are not "
                        "profiled)")
    parser.add_argument("--profile-iters", type=positive_int(1), default=DEFAULT_PROFILE_ITERS,
                        metavar="N", help="kernel calls made under --profile (default: 5)")
    parser.add_argument("--compile-mode", choices=COMPILE_MODES, default=None,
                        help="torch.compile mode for every implementation whose bench.yaml has "
                        "`compile:`, instead of the mode it names")
    _add_comparison_args(parser)
    _add_format_arg(parser)
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print nothing but errors (no progress)")
    parser.add_argument("--debug-fake-timer", type=positive_float, default=None, metavar="MS",
                        help="testing aid: every kernel call takes exactly MS on a fake clock, "
                        "so reports hold known numbers")


def build_parser(run_defaults: Mapping[str, Any] | None = None) -> argparse.ArgumentParser:
    """The CLI parser; `run_defaults` (dest -> value, from a suite file) replace the run
    command's defaults, so flags given on the command line still win."""
    parser = argparse.ArgumentParser(
        prog="kernbench", description="Discover compute kernels, measure them under one "
        "protocol, and write JSON and Markdown reports.")
    parser.add_argument("--version", action="version", version=_version())
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser("run", help="discover and benchmark kernels, write reports")
    _add_discovery_args(run)
    _add_run_args(run)
    if run_defaults:
        run.set_defaults(**run_defaults)
    listing = commands.add_parser("list", help="discover kernels and print the manifest")
    _add_discovery_args(listing)
    history = commands.add_parser("history", help="list benchmark history records")
    history.add_argument("--root", type=Path, default=Path("."))
    history.add_argument("--kernel", default=None, metavar="GLOB", help="kernel name glob")
    history.add_argument("--machine", default=None, metavar="FINGERPRINT")
    history.add_argument("--branch", default=None)
    history.add_argument("--since", default=None, metavar="DATE", help="ISO date prefix")
    history.add_argument("--limit", type=positive_int(1), default=None, metavar="N")
    history.add_argument("--json", action="store_true", help="print the records as JSON")
    history.add_argument("--add", type=Path, default=None, metavar="RUN_DIR",
                         help="append the record of the run in RUN_DIR (e.g. merged shards "
                         "downloaded by CI) instead of listing")
    merge = commands.add_parser("merge", help="join shard outputs into one report set")
    merge.add_argument("output_dir", type=Path, help="where the merged report set goes")
    merge.add_argument("shards", type=Path, nargs="+", help="shard output directories")
    merge.add_argument("--root", type=Path, default=Path("."),
                       help="repository whose benchmarks/history feeds the trends")
    merge.add_argument("--save-history", action="store_true",
                       help="append the merged run's record under ROOT/benchmarks/history/")
    merge.add_argument("--compare-to", default=None, metavar="REF",
                       help="compare the merged run with the newest history record at git ref "
                       "REF for this machine")
    _add_comparison_args(merge)
    _add_format_arg(merge)
    comment = commands.add_parser(
        "comment", help="print the pull-request comment for a report directory")
    comment.add_argument("run_dir", type=Path, metavar="DIR",
                         help="report directory (summary.json, comparison.json, env.json)")
    comment.add_argument("--validate", action="store_true",
                         help="first check DIR against the report schema and size limits "
                         "(for artifacts of untrusted runs); exit 2 if it fails")
    comment.add_argument("--run-url", default=None, metavar="URL",
                         help="link to the CI run, shown at the end")
    comment.add_argument("--max-chars", type=positive_int(3000), default=60_000, metavar="N",
                         help="hard size limit (default: 60000; GitHub allows 65536)")
    comment.add_argument("--from-fork", default=None, metavar="OWNER/NAME",
                         help="the pull request comes from this fork: the comment warns that "
                         "its figures were measured by the fork's own, untrusted code")
    report = commands.add_parser(
        "report", help="re-render the reports of an earlier run from its JSON; runs nothing")
    report.add_argument("run_dir", type=Path, metavar="DIR",
                        help="output directory of an earlier run (holds summary.json)")
    report.add_argument("--output-dir", type=Path, default=None, metavar="DIR",
                        help="write the reports here instead of into DIR")
    report.add_argument("--root", type=Path, default=None,
                        help="repository whose benchmarks/history feeds the trends (default: "
                        "the run's own --root, when it still exists)")
    _add_format_arg(report)
    compare = commands.add_parser(
        "compare", help="compare two result files; write regressions.md and comparison.json")
    compare.add_argument("baseline", type=Path, help="summary.json, report dir or history record")
    compare.add_argument("candidate", type=Path, help="summary.json, report dir or history record")
    compare.add_argument("--output-dir", type=Path, default=Path("reports"), metavar="DIR")
    _add_comparison_args(compare)
    return parser


def _add_comparison_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit 1 when a regression is found (default: warn only)")
    parser.add_argument("--threshold", type=positive_float, default=0.10, metavar="FRACTION",
                        help="practical threshold for latency changes, e.g. 0.05 for 5%% "
                        "(default: 0.10; bench.yaml regression.latency overrides per kernel)")
    parser.add_argument("--accuracy-drift", type=positive_float, default=1e-3, metavar="X",
                        help="flag a change of relative error larger than this (default: 1e-3)")
    parser.add_argument("--alpha", type=positive_float, default=0.05,
                        help="false discovery rate across all cases (default: 0.05)")


def _version() -> str:
    from kernbench import __version__

    return f"kernbench {__version__}"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line; for `run --config FILE`, parse again with the file's values as
    defaults (flag > file > default). `args.suite` is the SuiteConfig, or None."""
    args = build_parser().parse_args(argv)
    if args.command == "run":
        args.suite = None
        if args.config is not None:
            from kernbench.config.suite import load_suite

            suite = load_suite(args.config)
            args = build_parser(suite.parser_defaults()).parse_args(argv)
            args.suite = suite
        if args.resume is not None:
            from kernbench.config.suite import load_suite
            from kernbench.execution.resume import (
                recorded_settings,
                recorded_suite,
                resume_defaults,
            )

            # The interrupted run's settings (and its suite file) are the defaults: `--resume
            # DIR` alone continues it as it was; a flag that contradicts them is refused when
            # the run starts.
            recorded = recorded_settings(args.resume)
            suite = args.suite
            if suite is None and (path := recorded_suite(recorded)) is not None:
                suite = load_suite(path)
            defaults = {**(suite.parser_defaults() if suite else {}),
                        **resume_defaults(recorded)}
            args = build_parser(defaults).parse_args(argv)
            args.suite = suite
            if suite is not None and args.config is None:
                args.config = suite.path
            _resume_output_dir(args, sys.argv[1:] if argv is None else argv)
    return args


def _resume_output_dir(args: argparse.Namespace, argv: Sequence[str]) -> None:
    """--resume DIR writes into DIR: an --output-dir naming another folder is an error."""
    given = any(a == "--output-dir" or a.startswith("--output-dir=") for a in argv)
    if given and args.output_dir.resolve() != args.resume.resolve():
        raise KernbenchError(f"--resume {args.resume} writes into {args.resume}; leave out "
                             f"--output-dir {args.output_dir}")
    if args.ab:
        raise KernbenchError("--resume cannot be combined with --ab (an A/B run is not "
                             "resumable); run it again")
    args.output_dir = args.resume


def main(argv: Sequence[str] | None = None) -> int:
    from kernbench.execution.interrupts import signals_handled

    args: argparse.Namespace | None = None
    try:
        with signals_handled():  # SIGTERM ends any command as Ctrl-C does: cleanly
            args = parse_args(argv)
            return dispatch(args)
    except KernbenchError as exc:
        print(f"kernbench: error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        from kernbench.execution.interrupts import exit_code_for_interrupt

        what = exc.args[0] if exc.args else "SIGINT"
        resumable = args is not None and args.command == "run" and not args.ab
        saved = ("; finished cases are saved: continue with --resume "
                 f"{args.output_dir}" if resumable and args is not None else "")
        print(f"kernbench: interrupted ({what}){saved}", file=sys.stderr)
        return exit_code_for_interrupt(exc)


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
        return cmd_list(args)
    return cmd_run(args)


def _log(enabled: bool) -> Any:
    return (lambda message: print(message, file=sys.stderr)) if enabled else None


def cmd_list(args: argparse.Namespace) -> int:
    import json

    from kernbench.api import discover

    specs, manifest = discover(args.root, args.paths, _log(args.verbose))
    from kernbench.execution.runner import select_kernels
    from kernbench.results.serialize import manifest_dict

    specs = select_kernels(specs, args.filter)
    if args.json:
        print(json.dumps(manifest_dict(manifest["root"], manifest["paths"], specs), indent=2))
    else:
        print(render_manifest(specs, manifest["root"], manifest["paths"]))
    return EXIT_USAGE if any(s.status == "invalid" for s in specs) else 0


def render_manifest(specs: Sequence[Any], root: str, paths: Sequence[str]) -> str:
    lines = [f"{len(specs)} kernels under {root} (paths: {', '.join(paths)})"]
    width = max((len(s.name) for s in specs), default=4)
    for spec in specs:
        if spec.status == "invalid":
            lines.append(f"  {spec.name:<{width}}  INVALID  {spec.error}")
            continue
        precisions = (",".join(spec.config.precisions) if spec.config and spec.config.precisions
                      else ("fp32" if spec.takes_precision else "native"))
        lines.append(f"  {spec.name:<{width}}  {spec.framework:<8} {','.join(spec.backends):<14} "
                     f"{precisions:<20} {spec.path}{_variants_note(spec)}")
    return "\n".join(lines)


def _variants_note(spec: Any) -> str:
    """`  (3 points)`, `  (4 implementations: numpy*, eager, compiled, jax; 3 points)`: what a
    kernel expands to besides backends and precisions (* marks the reference)."""
    config = spec.config
    points = len(config.sweep) if config else 0
    parts = [f"{points} point{'s' * (points != 1)}"] if points else []
    if config is not None and config.implementations:
        names = [i.name + ("*" if i.name == config.reference_implementation else "")
                 for i in config.implementations]
        parts.insert(0, f"{len(names)} implementations: {', '.join(names)}")
    return f"  ({'; '.join(parts)})" if parts else ""


def cmd_compare(args: argparse.Namespace) -> int:
    from kernbench.api import compare_files

    document = compare_files(args.baseline, args.candidate, args.output_dir, args.threshold,
                             args.accuracy_drift, args.alpha)
    return report_comparison(document, args.output_dir, args.fail_on_regression)


def report_comparison(document: dict[str, Any], output_dir: Path, fail: bool) -> int:
    """Print the verdict and counts; the exit code the comparison asks for."""
    counts = ", ".join(f"{n} {v}" for v, n in document["counts"].items() if n)
    detail = "" if document.get("baseline_note") else f" ({counts or 'no cases'})"
    print(f"{document['verdict']}{detail}. See {output_dir}/regressions.md", file=sys.stderr)
    return 1 if fail and document["regression"] else 0


def run_settings(args: argparse.Namespace) -> RunSettings:
    """The RunSettings that `run`'s arguments (flags and suite file, resolved) stand for."""
    from kernbench.execution.runner import RunSettings
    from kernbench.measure.profiling import DEFAULT_PROFILE_ITERS
    from kernbench.results.model import ProtocolSettings

    return RunSettings(
        root=args.root.resolve(),
        protocol=ProtocolSettings(warmup=args.warmup, iterations=args.iters, seed=args.seed,
                                  warmup_time_s=args.warmup_time),
        backends=args.backends, precisions=args.precision, filters=args.filter,
        timeout_s=args.timeout, processes=args.processes, shard=args.shard, sku=args.sku,
        trace_python=args.trace_memory,
        flush_l2=not args.no_l2_flush,
        cache_dir=None if args.no_cpu_peak else (args.cache_dir or default_cache_dir()),
        inject_slowdown=args.debug_inject_slowdown, fake_call_ms=args.debug_fake_timer,
        max_memory_bytes=getattr(args, "max_memory", None),
        isolation=getattr(args, "isolation", "fork"),
        profile=getattr(args, "profile", None),
        profile_iters=getattr(args, "profile_iters", DEFAULT_PROFILE_ITERS),
        profile_dir=args.output_dir.resolve() if getattr(args, "profile", None) else None,
        sweeps=_suite_sweeps(args), sweeps_source=str(getattr(args, "config", None)),
        compile_mode=getattr(args, "compile_mode", None))


def _suite_sweeps(args: argparse.Namespace) -> tuple[Any, ...]:
    """The suite file's `sweeps`, expanded (a suite file is the only way to give them)."""
    sweeps = getattr(args, "sweeps", None)
    if not sweeps:
        return ()
    from kernbench.config.suite import sweep_overrides

    return sweep_overrides(sweeps, str(args.config))


def cmd_run(args: argparse.Namespace) -> int:
    from kernbench.api import run_suite

    settings = run_settings(args)
    if args.ab and getattr(args, "profile", None):
        raise KernbenchError("--profile cannot be combined with --ab (every round would "
                             "profile again); profile a plain run")
    args.baseline_run = _check_baseline_first(args)
    if args.ab:
        return _run_ab(args, settings)
    if args.resume is not None and _already_complete(args.resume):
        return _rerender_complete(args)
    from kernbench.cli.progress import make_progress, result_line

    progress = make_progress(args.quiet)
    try:
        outcome = run_suite(
            settings, args.output_dir, args.paths, log=_log(args.verbose and not args.quiet),
            on_result=None if progress is None else (
                lambda result, i, n: progress.case_finished(result_line(result), i, n)),
            on_start=None if progress is None else progress.case_started,
            extra_settings=_suite_settings(args), resume=args.resume is not None)
    finally:
        if progress is not None:
            progress.close()
    code = max(outcome.exit_code, _after_run(args, outcome.run))
    written = _render(args, args.output_dir)
    if not args.quiet:
        counts = {s: sum(1 for r in outcome.run.results if r.status == s)
                  for s in ("ok", "failed", "timeout", "skipped", "invalid")}
        tally = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        print(f"{len(outcome.run.results)} cases: {tally}. Reports in {outcome.output_dir}/ "
              f"({', '.join(written)})", file=sys.stderr)
    return code


def _check_baseline_first(args: argparse.Namespace) -> Any:
    """Validate what the run will be compared with before any kernel runs: the --compare-to
    ref, the --ab ref, or the --baseline file (loaded here and returned). A bad one is exit 2."""
    chosen = [flag for flag, value in (("--compare-to", args.compare_to), ("--ab", args.ab),
                                       ("--baseline", args.baseline)) if value]
    if len(chosen) > 1:
        raise KernbenchError(f"{' and '.join(chosen)} cannot be combined: pick one baseline")
    if args.compare_to:
        from kernbench.analysis.gitref import check_ref

        check_ref(args.root.resolve(), args.compare_to)
    if args.ab:
        from kernbench.analysis.gitref import check_ref

        check_ref(args.root.resolve(), args.ab, "--ab")
    if args.baseline is None:
        return None
    from kernbench.results.inputs import load_run

    return load_run(args.baseline)


def _already_complete(directory: Path) -> bool:
    from kernbench.execution.resume import load_previous

    return load_previous(directory).complete


def _rerender_complete(args: argparse.Namespace) -> int:
    """--resume of a run that already finished: say so, render its reports again, and exit
    as the run itself did (1 if a case failed), without running anything."""
    from kernbench.api import exit_code_for
    from kernbench.execution.resume import load_previous

    previous = load_previous(args.resume)
    written = _render(args, args.output_dir)
    print(f"{args.resume}: the run is already complete (finished "
          f"{previous.summary.get('finished_at')}); nothing to resume. Rendered "
          f"{', '.join(written)}", file=sys.stderr)
    return exit_code_for(previous.records)


def _suite_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Settings summary.json keeps besides the RunSettings: the report formats, and with
    --config the suite file and its resolved values (`settings.config`, so the history record
    and a resume have them)."""
    suite = getattr(args, "suite", None)
    extra: dict[str, Any] = {"formats": list(args.format)}
    if suite is not None:
        extra["config"] = suite.record(args)
    return extra


def _render(args: argparse.Namespace, output_dir: Path) -> list[str]:
    """Render the chosen formats from the run's JSON; the names written (summary.json first)."""
    from kernbench.api import render_reports

    paths = render_reports(output_dir, args.format, history_root=args.root.resolve())
    names = ["summary.json"] + [str(p.relative_to(output_dir)) for p in paths]
    return list(dict.fromkeys(names))


def _run_ab(args: argparse.Namespace, settings: Any) -> int:
    from kernbench.analysis.compare import Thresholds
    from kernbench.api import run_ab
    from kernbench.cli.progress import make_progress

    thresholds = Thresholds(args.threshold, args.accuracy_drift)
    progress = make_progress(args.quiet)
    try:
        outcome, document = run_ab(settings, args.ab, args.output_dir, args.rounds, thresholds,
                                   args.alpha, args.paths,
                                   _log(args.verbose and not args.quiet), progress,
                                   extra_settings=_suite_settings(args))
    finally:
        if progress is not None:
            progress.close()
    _render(args, args.output_dir)
    return max(outcome.exit_code, report_comparison(document, args.output_dir,
                                                    args.fail_on_regression))


def _after_run(args: argparse.Namespace, run: Any) -> int:
    """--save-history, then --compare-to or --baseline; returns the comparison's exit code."""
    from kernbench.analysis.baselines import compare_to_ref, save_history
    from kernbench.analysis.compare import Thresholds

    if args.save_history:
        path = save_history(args.root.resolve(), run)
        print(f"History record: {path}", file=sys.stderr)
    thresholds = Thresholds(args.threshold, args.accuracy_drift,
                            _per_kernel_thresholds(run))
    if getattr(args, "baseline_run", None) is not None:
        from kernbench.analysis.baselines import compare_to_stored

        document = compare_to_stored(args.baseline_run, run, args.output_dir, thresholds,
                                     args.alpha)
        return report_comparison(document, args.output_dir, args.fail_on_regression)
    if not args.compare_to:
        return 0
    document = compare_to_ref(args.root.resolve(), args.compare_to, run, args.output_dir,
                              thresholds, args.alpha)
    return report_comparison(document, args.output_dir, args.fail_on_regression)


def _per_kernel_thresholds(run: Any) -> dict[str, dict[str, float]]:
    return {k.name: dict(k.config.regression) for k in run.kernels
            if k.config is not None and k.config.regression}


def cmd_history(args: argparse.Namespace) -> int:
    import json

    if args.add is not None:
        from kernbench.analysis.baselines import save_history_of_dir

        path = save_history_of_dir(args.root.resolve(), args.add)
        print(f"History record: {path}", file=sys.stderr)
        return 0

    from kernbench.results.history import load_records_with_errors

    records, errors = load_records_with_errors(
        args.root.resolve(), kernel=args.kernel, fingerprint=args.machine, branch=args.branch,
        since=args.since, limit=args.limit)
    for error in errors:
        print(f"kernbench: warning: {error}", file=sys.stderr)
    if args.json:
        print(json.dumps(records, indent=2))
        return 0
    print(f"{len(records)} history records under {args.root}/benchmarks/history")
    for record in records:
        git = record.get("git") or {}
        print(f"  {record.get('created_at')}  {git.get('short_commit') or 'nogit':<12} "
              f"{(git.get('branch') or '-'):<16} {record.get('fingerprint')}  "
              f"{len(record.get('results', []))} cases")
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from kernbench.api import merge_shards

    if args.compare_to:
        from kernbench.analysis.gitref import check_ref

        check_ref(args.root.resolve(), args.compare_to)
    document, shard_comparison = merge_shards(args.shards, args.output_dir)
    counts = document["counts"]
    print(f"Merged {len(args.shards)} shards: {counts['total']} cases into "
          f"{args.output_dir}/", file=sys.stderr)
    code = 0
    if args.save_history:
        from kernbench.analysis.baselines import save_history_of_dir

        path = save_history_of_dir(args.root.resolve(), args.output_dir)
        print(f"History record: {path}", file=sys.stderr)
    if args.compare_to:
        from kernbench.analysis.baselines import compare_dir_to_ref
        from kernbench.analysis.compare import Thresholds

        comparison = compare_dir_to_ref(args.root.resolve(), args.compare_to, args.output_dir,
                                        Thresholds(args.threshold, args.accuracy_drift,
                                                   document.get("regression_thresholds") or {}),
                                        args.alpha)
        code = report_comparison(comparison, args.output_dir, args.fail_on_regression)
    elif shard_comparison is not None:  # shards of an --ab run
        code = report_comparison(shard_comparison, args.output_dir, args.fail_on_regression)
    _render(args, args.output_dir)
    return code


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
    names = ", ".join(str(p.relative_to(output_dir)) for p in paths) or "nothing"
    print(f"Rendered {names} in {output_dir}/", file=sys.stderr)
    return 0


def cmd_comment(args: argparse.Namespace) -> int:
    from kernbench.reporting.bundle import load_report_inputs
    from kernbench.reporting.comment import render_comment

    if args.validate:
        from kernbench.reporting.validate import validate_report_dir

        validate_report_dir(args.run_dir)
    text = render_comment(load_report_inputs(args.run_dir), max_chars=args.max_chars,
                          run_url=args.run_url, fork=args.from_fork)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def default_cache_dir() -> Path:
    import os

    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernbench"

