"""PNG plots of a run, drawn with matplotlib (the optional ``plots`` extra).

:func:`render_plots` writes, under ``<out_dir>/plots/``:

* ``latency.png``: the median (p50) of each successful case with its 95% CI, fastest on top;
* ``comparison.png``: per kernel and problem size, the speedup of every backend x precision
  case over a baseline case, ``baseline p50 / case p50`` (above 1 is faster). The baseline is
  the fp32 case of the first backend of that kernel and size in the summary, else the first
  successful case of that kernel and size (:func:`views.speedup_baseline`);
* ``history.png`` (only with two or more history records): the p50 of each case over the
  runs, oldest on the left; cases that regressed in the comparison are drawn thick and named so;
* ``regressions.png`` (only with a comparison): each case's candidate / baseline ratio with
  its interval, on the shaded band of changes within its threshold.

Everything drawn comes from the documents. A fixed figure width, dpi and the default style,
and PNGs saved without the "Software" entry (they carry no timestamps), make identical inputs
give identical bytes. matplotlib is imported only here, inside :func:`render_plots`, and only
its Agg canvas is used: no pyplot, no global backend switch.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernbench.errors import KernbenchError
from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.implementations import ImplementationTable, implementation_tables
from kernbench.reporting.svg_layout import CHAR_PX, clipped
from kernbench.reporting.views import (
    Record,
    case_key,
    ci95_ms,
    dig,
    human_label,
    kernel_groups,
    mappings,
    number,
    p50_ms,
    size_json,
    speedup_baseline,
)
from kernbench.results.files import safe_filename, write_bytes_atomic

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["MISSING_MATPLOTLIB", "render_plots", "speedup_rows"]

MISSING_MATPLOTLIB = "PNG plots need matplotlib, which is not installed"
WIDTH_IN = 10.0
"""Figure width in inches; heights grow with the number of rows, up to `MAX_HEIGHT_IN`."""
DPI = 100
ROW_IN = 0.3
MAX_HEIGHT_IN = 60.0
PNG_METADATA: dict[str, str | None] = {"Software": None}
"""Leaves matplotlib's version out of the PNG, so bytes depend on the inputs alone."""
VERDICT_COLORS = {"regressed": "#c0392b", "improved": "#27ae60", "unchanged": "#7f8c8d",
                  "inconclusive": "#e67e22"}
OTHER_COLOR = "#34495e"

NewFigure = Callable[[float], "Figure"]


def render_plots(inputs: ReportInputs, out_dir: Path) -> list[Path]:
    """Write the PNG plots of `inputs` under `out_dir`/plots; return the paths written.

    KernbenchError when matplotlib is not installed.
    """
    new_figure, style = _matplotlib()
    target = out_dir / "plots"
    target.mkdir(parents=True, exist_ok=True)
    with style():
        figures = {"latency.png": _latency(new_figure, inputs.results),
                   "comparison.png": _speedups(new_figure, inputs.results)}
        if len(inputs.history) >= 2:
            figures["history.png"] = _history(new_figure, inputs)
        if inputs.comparison is not None:
            figures["regressions.png"] = _regressions(new_figure, inputs.comparison)
        for table in implementation_tables(inputs.summary):
            name = f"implementations_{safe_filename(table.kernel)}.png"
            figures[name] = _implementations(new_figure, table)
        return [_save(figure, target / name) for name, figure in figures.items()]


def _matplotlib() -> tuple[NewFigure, Callable[[], Any]]:
    """A figure factory on the Agg canvas, and a context manager for the default style."""
    try:
        import matplotlib
        import matplotlib.style
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        from kernbench.config.extras import install_command

        raise KernbenchError(f"{MISSING_MATPLOTLIB}: {install_command('matplotlib', 'plots')}"
                             ) from exc

    def new_figure(height_in: float) -> Figure:
        figure = Figure(figsize=(WIDTH_IN, min(max(height_in, 3.0), MAX_HEIGHT_IN)), dpi=DPI,
                        layout="constrained")
        FigureCanvasAgg(figure)
        return figure

    return new_figure, lambda: matplotlib.style.context("default")


def _save(figure: Figure, path: Path) -> Path:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata=PNG_METADATA)
    return write_bytes_atomic(path, buffer.getvalue())


def _empty(new_figure: NewFigure, title: str, message: str) -> Figure:
    figure = new_figure(3.0)
    axes = figure.add_subplot()
    axes.set_axis_off()
    axes.set_title(title)
    axes.text(0.5, 0.5, message, ha="center", va="center", transform=axes.transAxes)
    return figure


# --- reading documents --------------------------------------------------------------------


def _p50(record: Record) -> float | None:
    """The median, when positive: bar lengths, ratios and log axes need one."""
    value = p50_ms(record)
    return value if value is not None and value > 0 else None


def _ok(results: Sequence[Record]) -> list[Record]:
    return [r for r in results if r.get("status") == "ok" and _p50(r) is not None]


def _label(record: Record) -> str:
    """A row label for people: kernel · implementation · backend · precision · size, shortened
    in its middle past 60 characters (a long one squeezed every axis into a sliver)."""
    return clipped(human_label(record), 60 * CHAR_PX)


# --- latency ------------------------------------------------------------------------------


def _latency(new_figure: NewFigure, results: Sequence[Record]) -> Figure:
    rows = sorted(_ok(results), key=lambda r: (_p50(r) or 0.0, _label(r)))
    title = "Median latency per call, 95% CI of the median"
    if not rows:
        return _empty(new_figure, title, "No case finished successfully.")
    figure = new_figure(1.2 + ROW_IN * len(rows))
    axes = figure.add_subplot()
    p50 = [_p50(r) or 0.0 for r in rows]
    low, high = zip(*(_ci(r, m) for r, m in zip(rows, p50, strict=True)), strict=True)
    y = list(range(len(rows)))
    axes.barh(y, p50, color=OTHER_COLOR, alpha=0.7,
              xerr=[[m - lo for m, lo in zip(p50, low, strict=True)],
                    [hi - m for m, hi in zip(p50, high, strict=True)]], capsize=3)
    _row_labels(axes, [_label(r) for r in rows])
    if max(p50) / min(p50) > 100:
        axes.set_xscale("log")
    axes.set_xlabel("p50 latency (ms)")
    axes.set_title(title)
    return figure


def _ci(record: Record, p50: float) -> tuple[float, float]:
    ci = ci95_ms(record)
    return (min(ci[0], p50), max(ci[1], p50)) if ci else (p50, p50)


def _row_labels(axes: Axes, labels: Sequence[str]) -> None:
    axes.set_yticks(range(len(labels)), labels, fontsize=8)
    axes.invert_yaxis()  # first row on top
    axes.grid(axis="x", alpha=0.3)


# --- speedup over a baseline case ---------------------------------------------------------


def speedup_rows(results: Sequence[Record]) -> list[tuple[str, float, bool]]:
    """(label, baseline p50 / case p50, is the baseline) per successful case, kernel by kernel.

    Cases are grouped by kernel and problem size, in summary order; each group's baseline is
    the fp32 case of the group's first backend, else the group's first case.
    """
    rows = []
    for cases in kernel_groups(_ok(results), size_json).values():
        base = speedup_baseline(cases)
        for case in cases:
            rows.append((_label(case), (_p50(base) or 0.0) / (_p50(case) or math.inf),
                         case is base))
    return rows


def _speedups(new_figure: NewFigure, results: Sequence[Record]) -> Figure:
    rows = speedup_rows(results)
    title = ("Speedup over each kernel's baseline case (baseline p50 / p50; > 1 is faster)\n"
             "baseline: the first backend's fp32 case, else the kernel's first case")
    if not rows:
        return _empty(new_figure, title, "No case finished successfully.")
    figure = new_figure(1.6 + ROW_IN * len(rows))
    axes = figure.add_subplot()
    colors = [OTHER_COLOR if is_base else ("#2980b9" if s >= 1 else "#c0392b")
              for _, s, is_base in rows]
    axes.barh(range(len(rows)), [s for _, s, _ in rows], color=colors, alpha=0.8)
    _row_labels(axes, [f"{label} (baseline)" if is_base else label
                       for label, _, is_base in rows])
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.set_xlabel("speedup (x)")
    axes.set_title(title, fontsize=10)
    return figure


# --- implementations side by side -----------------------------------------------------------


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value


def _implementations(new_figure: NewFigure, table: ImplementationTable) -> Figure:
    """Speedup over the reference per shape (grouped bars), and GB/s per shape (lines)."""
    figure = new_figure(7.0 if table.has_bandwidth else 3.8)
    axes = figure.add_subplot(2 if table.has_bandwidth else 1, 1, 1)
    labels = [row.label for row in table.rows]
    width = 0.8 / len(table.names)
    for index, name in enumerate(table.names):
        values = [row.cells[name].speedup or 0.0 for row in table.rows]
        geomean = table.geomean_speedup[name]
        legend = f"{name} (geomean {geomean:.3g}x)" if geomean is not None else name
        axes.bar([i + (index - (len(table.names) - 1) / 2) * width for i in range(len(labels))],
                 values, width, label=legend)
    axes.axhline(1.0, color="black", linewidth=0.8)
    axes.set_xticks(range(len(labels)), labels, fontsize=8)
    axes.set_ylabel(f"speedup over {table.reference} (x)")
    axes.set_title(f"{table.kernel}: implementations on the same inputs "
                   "(reference p50 / p50; > 1 is faster)", fontsize=10)
    axes.legend(fontsize=8)
    if table.has_bandwidth:
        lines = figure.add_subplot(2, 1, 2)
        for name in table.names:
            values = [_or_nan(row.cells[name].gb_per_s) for row in table.rows]
            lines.plot(labels, values, marker="o", label=name)
        lines.set_ylabel("GB/s")
        lines.set_ylim(bottom=0)
        lines.tick_params(axis="x", labelsize=8)
        lines.legend(fontsize=8)
    return figure


# --- history ------------------------------------------------------------------------------


def _history(new_figure: NewFigure, inputs: ReportInputs) -> Figure:
    runs = list(reversed(inputs.history))  # records are newest first; plot oldest on the left
    series: dict[str, list[float]] = {}
    names: dict[str, str] = {}
    for index, run in enumerate(runs):
        for row in run.get("results") or []:
            p50 = _p50(row)
            if p50 is not None:
                series.setdefault(case_key(row), [math.nan] * len(runs))[index] = p50
                names[case_key(row)] = _label(row)
    regressed = _regressed_keys(inputs.comparison)
    title = "p50 per case over the recorded runs (oldest left)"
    if not series:
        return _empty(new_figure, title, "No timed case in the history records.")
    figure = new_figure(5.0 + 0.15 * len(series))
    axes = figure.add_subplot()
    x = list(range(len(runs)))
    for key in sorted(series, key=lambda k: (names[k], k)):
        marked = key in regressed
        axes.plot(x, series[key], marker="x" if marked else "o", markersize=4,
                  linewidth=2.5 if marked else 1.0,
                  label=f"{names[key]} (regressed)" if marked else names[key])
    axes.set_xticks(x, [_run_label(run) for run in runs], fontsize=7, rotation=30, ha="right")
    axes.set_ylabel("p50 latency (ms)")
    _log_axis(axes)
    axes.grid(alpha=0.3)
    axes.set_title(title)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure


def _log_axis(axes: Axes) -> None:
    """A log y axis labelled with plain numbers (8, 20, 40) rather than powers of ten."""
    from matplotlib.ticker import FormatStrFormatter

    axes.set_yscale("log")
    axes.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    axes.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    axes.tick_params(axis="y", which="minor", labelsize=7)


def _run_label(run: Record) -> str:
    commit = dig(run, "git", "short_commit") or "no git"
    moment = str(run.get("created_at") or dig(run, "run", "started_at") or "")
    return f"{str(commit)[:8]}\n{moment[:16].replace('T', ' ')}"


def _regressed_keys(comparison: Mapping[str, Any] | None) -> set[str]:
    return {str(case.get("key")) for case in mappings(dig(comparison, "cases"))
            if case.get("verdict") == "regressed"}


# --- regressions --------------------------------------------------------------------------


def _regressions(new_figure: NewFigure, comparison: Mapping[str, Any]) -> Figure:
    cases = sorted((c for c in mappings(comparison.get("cases")) if number(c.get("ratio"))),
                   key=_label)
    title = f"Candidate / baseline median latency: {comparison.get('verdict') or 'n/a'}"
    if not cases:
        return _empty(new_figure, title, "No case was measured on both sides.")
    figure = new_figure(1.6 + ROW_IN * len(cases))
    axes = figure.add_subplot()
    for y, case in enumerate(cases):
        _regression_row(axes, y, case)
    _row_labels(axes, [_label(c) for c in cases])
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.set_xscale("log")
    axes.set_xlabel("ratio (> 1 is slower), 95% interval; shaded: within the threshold")
    axes.set_title(title)
    handles = [axes.scatter([], [], color=color, label=verdict)
               for verdict, color in VERDICT_COLORS.items()]
    axes.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure


def _regression_row(axes: Axes, y: int, case: Mapping[str, Any]) -> None:
    ratio = number(case.get("ratio")) or 1.0
    threshold = number(case.get("threshold")) or 0.0
    axes.fill_betweenx([y - 0.4, y + 0.4], 1.0 / (1.0 + threshold), 1.0 + threshold,
                       color="#bdc3c7", alpha=0.5, linewidth=0)
    low, high = number(case.get("ci_low")), number(case.get("ci_high"))
    color = VERDICT_COLORS.get(str(case.get("verdict")), OTHER_COLOR)
    if low is not None and high is not None:
        axes.errorbar([ratio], [y], xerr=[[ratio - min(low, ratio)], [max(high, ratio) - ratio]],
                      fmt="o", color=color, capsize=3)
    else:
        axes.plot([ratio], [y], "o", color=color)
