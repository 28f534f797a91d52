"""The README's CLI reference tables, generated from the option table
(:mod:`kernbench.config.options`), the same source ``kernbench COMMAND --help`` is built from.

``python -m kernbench.cli.reference`` prints them; ``tests/cli/test_reference.py`` fails when
the README holds anything else, so help and README cannot disagree.
"""

from __future__ import annotations

from kernbench.config.options import COMMANDS, Command, Option, command


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _default(option: Option) -> str:
    """The default as the help states it (code-quoted when it is one word), or empty."""
    shown = option.shown_default
    if shown is None:
        return ""
    plain = " " in shown or shown.replace(".", "", 1).isdigit()
    return _cell(shown) if plain else f"`{_cell(shown)}`"


def _flags(cmd: Command) -> list[Option]:
    return [o for o in cmd.options if not o.positional]


def run_table() -> str:
    """Every flag of `kernbench run`: usage, default, help."""
    rows = ["| flag | default | meaning |", "|---|---|---|"]
    rows += [f"| `{_cell(o.usage)}` | {_default(o)} | {_cell(o.help or '')} |"
             for o in _flags(command("run"))]
    return "\n".join(rows)


def other_table() -> str:
    """The flags of the other commands that `run` does not share."""
    shared = set(command("run").options)
    rows = ["| command | flag | default | meaning |", "|---|---|---|---|"]
    rows += [f"| `{c.name}` | `{_cell(o.usage)}` | {_default(o)} | {_cell(o.help or '')} |"
             for c in COMMANDS if c.name != "run" for o in _flags(c) if o not in shared]
    return "\n".join(rows)


if __name__ == "__main__":
    print(run_table(), other_table(), sep="\n\n")
