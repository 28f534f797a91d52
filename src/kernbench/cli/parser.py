"""The argparse parser, built from the one option table (:mod:`kernbench.config.options`), and
the resolution of `run`'s defaults: flag > suite file (or resumed run) > kernbench's default."""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from kernbench.cli.arguments import value_type
from kernbench.config.options import COMMANDS, DESCRIPTION, Option
from kernbench.errors import KernbenchError


def add_option(parser: argparse.ArgumentParser, option: Option) -> None:
    """One table row as an argparse argument (help as printed: `%` escaped for argparse)."""
    help_text = None if option.full_help is None else option.full_help.replace("%", "%%")
    if option.kind == "switch":
        parser.add_argument(*option.flags, action="store_true", help=help_text)
        return
    if option.kind == "toggle":
        parser.add_argument(*option.flags, str(option.negation), dest=option.dest,
                            action=Toggle, default=option.default, help=help_text)
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


class Toggle(argparse.Action):
    """`--x` turns the option on, `--no-x` off (argparse's BooleanOptionalAction, without the
    default it appends to the help in some Python versions and not in others)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, not (option_string or "").startswith("--no-"))

    def format_usage(self) -> str:
        return " | ".join(self.option_strings)


class Parser(argparse.ArgumentParser):
    """argparse without its surprises: no prefix abbreviations (`--iter` is an error, not
    `--iters`), and an unknown flag or command gets the nearest known one as a suggestion."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(allow_abbrev=False, **kwargs)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and self._subparsers is not None:  # the top level: blame the command's parser
            sub = self._command_parser(getattr(parsed, "command", None))
            sub.error(unknown_arguments(extras, sub))
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        if (choice := _INVALID_COMMAND.search(message)) is not None:
            message += did_you_mean(choice.group(1), [c.name for c in COMMANDS])
        super().error(message)

    def _command_parser(self, name: str | None) -> argparse.ArgumentParser:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and name in action.choices:
                return action.choices[name]  # type: ignore[no-any-return]
        return self


_INVALID_COMMAND = re.compile(r"argument COMMAND: invalid choice: '([^']*)'")


def did_you_mean(word: str, known: Sequence[str]) -> str:
    """` (did you mean 'x'?)` for the nearest of `known`, or nothing."""
    hint = difflib.get_close_matches(word, known, n=1)
    return f" (did you mean '{hint[0]}'?)" if hint else ""


def unknown_arguments(extras: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """argparse's "unrecognized arguments" message, with the nearest flag of each."""
    flags = [f for f in parser._option_string_actions if f.startswith("--")]
    words = [f"{e}{did_you_mean(e.split('=')[0], flags) if e.startswith('-') else ''}"
             for e in extras]
    return f"unrecognized arguments: {' '.join(words)}"


def build_parser(run_defaults: Mapping[str, Any] | None = None) -> argparse.ArgumentParser:
    """The CLI parser; `run_defaults` (dest -> value, from a suite file) replace the run
    command's defaults, so flags given on the command line still win."""
    parser = Parser(prog="kernbench", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=_version())
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        sub = commands.add_parser(command.name, help=command.help, description=command.help)
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
    given = getattr(args, "paths", None)  # by the flag or a suite file, not a --resume's record
    if args.command == "run" and args.resume is not None:
        args = _parse_resumed(args, argv)
    if given is not None:  # against the root the run uses (a resumed run's recorded one)
        from kernbench.config.loading import check_discovery_paths

        check_discovery_paths(args.root, given, _paths_named(args, argv))
    if getattr(args, "format", None) and not getattr(args, "list", False):
        from kernbench.reporting.formats import check_libraries

        check_libraries(args.format)  # before the run, not after it
    if getattr(args, "output_dir", None) is not None and not getattr(args, "list", False):
        from kernbench.results.files import check_output_dir

        flag = ("output_dir" if args.command == "merge"
                else "--resume" if getattr(args, "resume", None) else "--output-dir")
        check_output_dir(args.output_dir, flag)
    return args


def _paths_named(args: argparse.Namespace, argv: Sequence[str] | None) -> str:
    """How an error names the discovery paths: the flag, or the suite file that set them."""
    words = sys.argv[1:] if argv is None else argv
    if getattr(args, "suite", None) is None or any(
            w == "--paths" or w.startswith("--paths=") for w in words):
        return "--paths"
    return f"{args.suite.path}: key 'paths':"


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
