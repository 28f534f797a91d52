"""The one option table (`kernbench.config.options`): argparse, the suite file, the vocabularies
of the rooms above config and the README's CLI reference all agree with it."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest

from kernbench.cli.parser import build_parser
from kernbench.config.options import (
    COMMANDS,
    DEFAULT_FORMATS,
    REPORT_FORMATS,
    Command,
    Option,
    command,
)
from kernbench.config.suite import SUITE_KEYS

REPO = Path(__file__).resolve().parents[2]
RUN = command("run")
FLAG = re.compile(r"(?<![\w./-])(--[a-z][a-z0-9-]*|-[vq])\b")


def readme_reference() -> str:
    """The README's CLI reference: from its heading to the suite files' section."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    return readme[readme.index("## CLI reference\n"):readme.index("### Suite files\n")]


def cells(line: str) -> list[str]:
    """A Markdown table row's cells, `\\|` read as a literal bar, code quotes removed."""
    parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [p.strip().replace("\\|", "|").replace("`", "") for p in parts]


def table_rows(section: str, header: str) -> list[list[str]]:
    """The body rows of the table whose header row is `header`."""
    rows = []
    for line in section[section.index(header):].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append(cells(line))
    return rows


def flags_only(options: tuple[Option, ...]) -> list[Option]:
    return [o for o in options if not o.positional]


def own_options(cmd: Command) -> list[Option]:
    """The options of `cmd` that `run` does not share (the same table entry)."""
    return [o for o in flags_only(cmd.options) if o not in RUN.options]


def check_default(option: Option, cell: str, where: str) -> None:
    """The README states the default --help states, or the plain default, or nothing."""
    if option.shown_default is not None:
        assert cell == option.shown_default, where
        return
    plain = option.default if option.default not in (None, False, ()) else None
    assert cell in ("", str(plain) if plain is not None else ""), where


# -- the README agrees with the table ---------------------------------------------------------


def test_readme_run_table_has_every_run_flag_with_its_value_name_and_default() -> None:
    rows = table_rows(readme_reference(), "| flag | default | meaning |")
    readme = {row[0]: row[1] for row in rows}
    table = {o.usage: o for o in flags_only(RUN.options)}
    assert sorted(set(table) - set(readme)) == [], "flags the README's run table lacks"
    assert sorted(set(readme) - set(table)) == [], "README rows the table does not define"
    assert len(rows) == len(readme), "a flag documented twice"
    for usage, option in table.items():
        check_default(option, readme[usage], usage)


def test_readme_other_commands_table_has_their_own_flags() -> None:
    rows = table_rows(readme_reference(), "| command | flag | default | meaning |")
    readme = {(row[0], row[1]): row[2] for row in rows}
    table = {(c.name, o.usage): o for c in COMMANDS if c.name != "run" for o in own_options(c)}
    assert sorted(set(table) - set(readme)) == [], "flags the README lacks"
    assert sorted(set(readme) - set(table)) == [], "README rows the table does not define"
    for key, option in table.items():
        check_default(option, readme[key], " ".join(key))


def test_readme_names_no_flag_the_table_lacks() -> None:
    section = readme_reference()
    known = ({f for c in COMMANDS for o in c.options for f in (*o.flags, o.negation) if f}
             | {"--help", "--version"})
    misspelt = {"--iter"}  # the README's example of a flag kernbench refuses
    assert sorted(set(FLAG.findall(section)) - known - misspelt) == []
    synopses = re.findall(r"^- `kernbench (\w+)([^`]*)`", section, re.M)
    assert {name for name, _ in synopses} == {c.name for c in COMMANDS} - {"run"}
    for name, text in synopses:  # each command's synopsis names only its own flags
        own = {f for o in command(name).options for f in o.flags}
        assert sorted(set(FLAG.findall(text)) - own) == [], name


# -- the table is consistent, and argparse is built from it -----------------------------------


def stated(option: Option) -> Any:
    """The default value the help states, read back as the option's kind would read it."""
    text = (option.shown_default or "").split(";")[0]
    if isinstance(option.default, bool) or option.default is None:
        return option.default
    if isinstance(option.default, tuple):
        return tuple(text.split(","))
    return type(option.default)(text)


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.name)
def test_stated_defaults_are_the_defaults(cmd: Command) -> None:
    for option in cmd.options:
        if option.shown_default is not None and option.default is not None:
            assert stated(option) == option.default, option.name
        if option.kind == "switch":
            assert option.default is False and option.shown_default in (None, "warn only")


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.name)
def test_each_command_parses_its_table(cmd: Command) -> None:
    sub = next(a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction)).choices[cmd.name]
    actions = [a for a in sub._actions if not isinstance(a, argparse._HelpAction)]
    assert [tuple(a.option_strings) or (a.dest,) for a in actions] == [
        (*o.flags, *filter(None, [o.negation])) for o in cmd.options]
    for action, option in zip(actions, cmd.options, strict=True):
        assert action.dest == option.dest
        assert action.help == (None if option.full_help is None
                               else option.full_help.replace("%", "%%"))
        if not option.positional:
            assert action.default == option.default, option.name
    dests = [o.dest for o in cmd.options]
    assert len(dests) == len(set(dests))


def test_suite_keys_come_from_the_table_and_match_the_schema() -> None:
    from kernbench.config.schema import suite_schema

    keyed = [o for o in RUN.options if o.suite_key is not None]
    assert len({o.suite_key for o in keyed}) == len(keyed)
    assert {k: v for k, v in SUITE_KEYS.items() if k != "sweeps"} == {
        o.suite_key: (o.dest, o.name) for o in keyed}
    assert set(suite_schema(())["properties"]) == set(SUITE_KEYS)


def test_a_bounded_flag_and_its_suite_key_share_the_bound() -> None:
    """`--iters` and `--timeout` have upper bounds; the suite file's keys must not be looser."""
    from kernbench.config.schema import suite_schema

    properties = suite_schema(())["properties"]
    bounded = {o.suite_key: o.maximum for o in RUN.options
               if o.maximum is not None and o.suite_key is not None}
    assert set(bounded) == {"iterations", "processes", "timeout_s", "seed"}
    assert {key: properties[key]["maximum"] for key in bounded} == bounded



    from kernbench.reporting import formats
    from kernbench.results.vocabulary import COMPILE_MODE_NAMES as COMPILE_MODES

    assert formats.ALL_FORMATS == REPORT_FORMATS
    assert formats.DEFAULT_FORMATS == DEFAULT_FORMATS
    assert dict((o.name, o.choices) for o in RUN.options)["--compile-mode"] == COMPILE_MODES
