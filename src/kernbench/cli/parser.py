"""The argparse parser, built from the one option table (:mod:`kernbench.config.options`), and
the resolution of `run`'s defaults: flag > suite file (or resumed run) > kernbench's default."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from kernbench.cli.arguments import value_type
from kernbench.config.options import COMMANDS, DESCRIPTION, Option
from kernbench.errors import KernbenchError


def add_option(parser: argparse.ArgumentParser, option: Option) -> None:
    """One table row as an argparse argument (help as printed: `%` escaped for argparse)."""
    help_text = None if option.full_help is None else option.full_help.replace("%", "%%")
    if option.kind == "switch":
        parser.add_argument(*option.flags, action="store_true", help=help_text)
        return
    extra: dict[str, Any] = {}
    if (parse := value_type(option)) is not None:
        extra["type"] = parse
    if option.kind == "choice":
        extra["choices"] = option.choices
    if option.nargs is not None:
        extra["nargs"] = option.nargs
    if not option.positional:
        extra["default"] = option.default
    parser.add_argument(*option.flags, metavar=option.metavar, help=help_text, **extra)


def build_parser(run_defaults: Mapping[str, Any] | None = None) -> argparse.ArgumentParser:
    """The CLI parser; `run_defaults` (dest -> value, from a suite file) replace the run
    command's defaults, so flags given on the command line still win."""
    parser = argparse.ArgumentParser(prog="kernbench", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=_version())
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        sub = commands.add_parser(command.name, help=command.help)
        for option in command.options:
            add_option(sub, option)
        if command.name == "run" and run_defaults:
            sub.set_defaults(**run_defaults)
    return parser


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
            args = _parse_resumed(args, argv)
    return args


def _parse_resumed(args: argparse.Namespace, argv: Sequence[str] | None) -> argparse.Namespace:
    """`--resume DIR`: the interrupted run's settings (and its suite file) are the defaults, so
    `--resume DIR` alone continues it as it was; a flag that contradicts them is refused when
    the run starts."""
    from kernbench.config.suite import load_suite
    from kernbench.execution.resume import recorded_settings, recorded_suite, resume_defaults

    recorded = recorded_settings(args.resume)
    suite = args.suite
    if suite is None and (path := recorded_suite(recorded)) is not None:
        suite = load_suite(path)
    defaults = {**(suite.parser_defaults() if suite else {}), **resume_defaults(recorded)}
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
