"""The report formats a run can write, chosen with ``--format`` (a comma list, or ``all``).

Every format renders from :class:`~kernbench.reporting.bundle.ReportInputs` (the run's JSON
documents), so ``kernbench report DIR`` re-renders exactly what the run wrote.

========== ============================================ ==========================================
format     files                                        for
========== ============================================ ==========================================
json       summary.json, env.json, comparison.json      machines; the source of every other format
md         summary.md, regressions.md (with a baseline) people, PR comments
html       index.html (self-contained); with several    people, in a browser
           machines also machines/*/index.html
csv        results.csv                                  spreadsheets, pandas
pytorch_v3 pytorch_v3.json (also named pytorch-oss)    the PyTorch OSS benchmark database (v3)
github     github_benchmark.json                        github-action-benchmark (customSmallerIs…)
junit      junit.xml                                    CI test views
png        plots/*.png (needs matplotlib: [plots])      docs and PR comments
bmf        bmf.json                                     Bencher (Bencher Metric Format)
pytest-    pytest_benchmark.json                        pytest-benchmark's compare, and the tools
benchmark                                               that read its JSON
========== ============================================ ==========================================

A report of several machines (``kernbench merge --allow-mixed``) writes every format but json,
md and html once per machine, under ``machines/<testbed>-<fingerprint>/``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from kernbench.config.extras import install_command
from kernbench.config.options import DEFAULT_FORMATS, FORMAT_ALIASES
from kernbench.errors import KernbenchError
from kernbench.reporting.bundle import ReportInputs
from kernbench.results.files import write_json_atomic, write_text_atomic

__all__ = ["ALL_FORMATS", "DEFAULT_FORMATS", "check_libraries", "parse_formats",
           "write_formats"]

Writer = Callable[[ReportInputs, Path], list[Path]]



def _json(inputs: ReportInputs, out: Path) -> list[Path]:
    paths = [write_json_atomic(out / "summary.json", dict(inputs.summary), one_line_items=True),
             write_json_atomic(out / "env.json", dict(inputs.environment))]
    if inputs.comparison is not None:
        paths.append(write_json_atomic(out / "comparison.json", dict(inputs.comparison)))
    return paths


def _markdown(inputs: ReportInputs, out: Path) -> list[Path]:
    from kernbench.reporting.markdown import render_summary_inputs

    paths = [write_text_atomic(out / "summary.md", render_summary_inputs(inputs))]
    if inputs.comparison is not None:
        from kernbench.reporting.regressions import render_regressions

        paths.append(write_text_atomic(out / "regressions.md",
                                       render_regressions(inputs.comparison)))
    return paths


def _html(inputs: ReportInputs, out: Path) -> list[Path]:
    from kernbench.reporting.html_machines import html_pages

    return [write_text_atomic(out / name, text) for name, text in html_pages(inputs).items()]


def _export(name: str) -> Writer:
    def write(inputs: ReportInputs, out: Path) -> list[Path]:
        from kernbench.reporting.exports import FILES

        filename, render = FILES[name]
        return [write_text_atomic(out / filename, render(inputs))]
    return write


def _png(inputs: ReportInputs, out: Path) -> list[Path]:
    from kernbench.reporting.plots import render_plots

    return render_plots(inputs, out)


WRITERS: dict[str, Writer] = {
    "json": _json, "md": _markdown, "html": _html, "csv": _export("csv"),
    "pytorch_v3": _export("pytorch_v3"), "github": _export("github"),
    "junit": _export("junit"), "png": _png, "bmf": _export("bmf"),
    "pytest-benchmark": _export("pytest-benchmark"),
}
ALL_FORMATS = tuple(WRITERS)


def parse_formats(text: str) -> tuple[str, ...]:
    """`json,md` -> ("json", "md"); `all` -> every format; an alias (`pytorch-oss`) -> the
    format's name; unknown names are an error."""
    names = [FORMAT_ALIASES.get(n.strip(), n.strip()) for n in text.split(",") if n.strip()]
    if not names:
        raise KernbenchError(f"--format: expected a comma list of {', '.join(ALL_FORMATS)} "
                             "or all")
    if "all" in names:
        return ALL_FORMATS
    unknown = [n for n in names if n not in WRITERS]
    if unknown:
        raise KernbenchError(f"--format: unknown format {unknown[0]!r}; expected a comma list of "
                             f"{', '.join(ALL_FORMATS)} or all")
    return tuple(dict.fromkeys(names))


LIBRARIES = {"png": ("matplotlib", "plots")}
"""Format -> (the module it imports, kernbench's extra that requires it)."""


def check_libraries(formats: Sequence[str]) -> None:
    """Refuse, before anything runs, a format whose library is not installed (exit 2), with
    the command that installs it into this interpreter."""
    import importlib.util

    for name in formats:
        if name in LIBRARIES and importlib.util.find_spec(LIBRARIES[name][0]) is None:
            module, extra = LIBRARIES[name]
            raise KernbenchError(f"--format {name} needs {module}, which is not installed: "
                                 f"{install_command(module, extra)} (or leave out {name})")


COMBINED = ("json", "md", "html")
"""Formats that lay out a report of several machines themselves, machine by machine; every
other format is written once per machine, under ``machines/<testbed>-<fingerprint>/``."""


def write_formats(inputs: ReportInputs, out: Path, formats: Sequence[str]) -> list[Path]:
    """Write each format's files under `out`; the paths written, in format order. A report
    of several machines (a merge with ``--allow-mixed``) gets each machine's export files
    (CSV, JUnit, plots, ...) apart, from that machine's documents alone: no file mixes them."""
    from kernbench.reporting.machines import machine_dir, machine_inputs

    parts = machine_inputs(inputs)
    written: list[Path] = []
    for name in formats:
        if name in COMBINED or not parts:
            written.extend(WRITERS[name](inputs, out))
            continue
        for machine, part in parts:
            written.extend(WRITERS[name](part, out / machine_dir(machine)))
    return written
