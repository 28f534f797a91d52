"""Every figure in README.md comes from a script under benchmarks/ and the command that runs it.

A *figure* is a measured quantity: a number with a unit of time, memory, share or speed
(``438 ms``, ``78.3 MB``, ``90.2 %``, ``1.21×``), or a caught/flagged count (``37/41``). The
checks:

* a Markdown table holding figures is preceded, in the text since the previous heading or
  table, by a command line that runs a script under benchmarks/ (or ``make bench``);
* each bold-led paragraph group of "Performance of kernbench itself" that states a figure
  names such a command;
* every benchmarks/ script the README names exists, and every ``--flag`` its commands pass is
  one that script's argument parser defines, so the command can be run as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PERFORMANCE = "## Performance of kernbench itself"

UNIT = r"(?:ns|µs|us|ms|s|min|KB|MB|GB|KiB|MiB|GiB|%|×|x)(?![A-Za-z0-9])"
FIGURE = re.compile(rf"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?{UNIT}|(?<![\w.])\d+/\d+\s\(")
CELL_FIGURE = re.compile(rf"^\**\s*(?:\d[\d,]*(?:\.\d+)?\s?{UNIT}|\d+/\d+\s\()")
COMMAND = re.compile(r"`(?:[A-Z_]+=\S+\s+)?(?:python3?\s+)?(benchmarks/[\w.-]+\.py)([^`]*)`"
                     r"|`make bench(?:-quick)?`")


@dataclass(frozen=True)
class Table:
    line: int  # 1-based line of the header row
    rows: tuple[str, ...]
    before: str  # the text since the previous heading or table


def tables(text: str) -> list[Table]:
    """Markdown tables outside code fences, with the prose that leads to each."""
    found: list[Table] = []
    lines = text.splitlines()
    prose: list[str] = []
    fenced, index = False, 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("|"):
            start = index
            while index < len(lines) and lines[index].startswith("|"):
                index += 1
            found.append(Table(start + 1, tuple(lines[start:index]), "\n".join(prose)))
            prose = []
            continue
        if not fenced and line.startswith("#"):
            prose = []
        elif not fenced:
            prose.append(line)
        index += 1
    return found


def figure_cells(table: Table) -> list[str]:
    cells = [c.strip().strip("`") for row in table.rows[2:] for c in row.strip("|").split("|")]
    return [c for c in cells if CELL_FIGURE.match(c)]


def unsourced_tables(text: str) -> list[str]:
    """Figure tables with no benchmarks/ command (or `make bench`) in the text before them."""
    return [f"README.md:{t.line}: a table of figures ({', '.join(figure_cells(t)[:3])}, ...) "
            "with no `python benchmarks/...` or `make bench` command before it"
            for t in tables(text) if figure_cells(t) and not COMMAND.search(t.before)]


def performance_blocks(text: str) -> list[str]:
    """The paragraph groups of the performance section, each from a bold-led paragraph."""
    section = text.split(PERFORMANCE, 1)[1].split("\n## ", 1)[0]
    blocks = re.split(r"\n\n(?=\*\*)", section)
    return [b for b in blocks if b.startswith("**")]


def unsourced_blocks(text: str) -> list[str]:
    return [f"{block[:60]!r}... states {FIGURE.search(block)[0]!r} "  # type: ignore[index]
            "but names no `python benchmarks/...` or `make bench` command"
            for block in performance_blocks(text)
            if FIGURE.search(block) and not COMMAND.search(block)]


def test_every_figure_table_follows_its_command() -> None:
    text = README.read_text(encoding="utf-8")
    assert sum(1 for t in tables(text) if figure_cells(t)) >= 5  # the check sees them
    assert unsourced_tables(text) == []


def test_every_figure_of_the_performance_section_names_its_command() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(performance_blocks(text)) >= 6
    assert unsourced_blocks(text) == []


def test_the_readme_commands_run_scripts_that_exist_with_flags_they_take() -> None:
    text = " ".join(README.read_text(encoding="utf-8").split())  # commands may wrap lines
    commands = [(m[1], m[2]) for m in COMMAND.finditer(text) if m[1]]
    assert len(commands) >= 6
    for script, arguments in commands:
        path = REPO / script
        assert path.is_file(), f"README runs {script}, which does not exist"
        source = path.read_text(encoding="utf-8")
        for flag in re.findall(r"(?<!\S)(--[\w-]+)", arguments):
            assert f'"{flag}"' in source, f"README runs {script} {flag}, which it does not take"


def test_the_checks_catch_a_table_without_its_command() -> None:
    bare = "## Speed\n\nOur kernels are fast.\n\n| kernel | eager |\n|---|---:|\n| ln | 5.83× |\n"
    assert len(unsourced_tables(bare)) == 1 and "5.83×" in unsourced_tables(bare)[0]
    sourced = bare.replace("fast.", "fast: `python benchmarks/bench_speed.py --rounds 3`.")
    assert unsourced_tables(sourced) == []
    reference = "| flag | default |\n|---|---|\n| `--iters N` | 30 |\n"
    assert unsourced_tables(reference) == []  # a reference table holds no figure
    prose = f"{PERFORMANCE}\n\n**Speed** is 2.5 ms a call.\n\n## Next\n"
    assert len(unsourced_blocks(prose)) == 1
