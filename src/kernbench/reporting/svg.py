"""Inline SVG charts for the HTML report: small pure functions from numbers to SVG text.

Geometry (box statistics, scales, ticks) is computed by functions that return data, so tests
can check exact numbers; the ``*_svg`` functions turn that data into markup. Every piece of
text a caller passes in (labels, hover titles, links) is escaped here, so a kernel named
``<script>`` stays text. Styling (fonts, greys) comes from the page's CSS; series colours are
attributes, so a chart reads the same when copied out of the page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from kernbench.analysis.stats import percentile
from kernbench.reporting.svg_layout import (
    LEGEND_ROW_PX,
    LINE_PX,
    VALUE_CHAR_PX,
    at_least,
    clipped,
    legend_rows,
    legend_width_px,
    longest_word_px,
    row_count,
    text_px,
    wrap,
)
from kernbench.reporting.svg_scale import Scale, nice_scale
from kernbench.reporting.views import fmt_num

__all__ = ["PALETTE", "Bar", "BoxRow", "BoxStats", "Scale", "Series", "TrendPoint",
           "box_plot_svg", "box_stats", "box_title", "colour_map", "grouped_bar_svg",
           "line_chart_svg", "nice_scale", "trend_svg"]

PALETTE = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2",
           "#97bbf5", "#9c6b4e", "#9498a0")
"""Observable's 10-colour categorical scheme: distinct and colour-blind aware."""

MAX_OUTLIERS = 40
"""At most this many outlier dots per box (the extremes always among them): a case with
10,000 samples must not turn into 10,000 circles."""

LOG_SPAN = 20.0
"""A shared latency axis is logarithmic when its largest value is more than this many times
its smallest; otherwise linear."""


@dataclass(frozen=True)
class BoxStats:
    """Tukey box-plot statistics of a sample (percentiles by linear interpolation, as in the
    summary's own ``latency_ms_p50``); whiskers reach the furthest sample within 1.5 IQR."""

    count: int
    minimum: float
    q1: float
    median: float
    q3: float
    maximum: float
    whisker_low: float
    whisker_high: float
    outlier_count: int
    outliers: tuple[float, ...]  # the ones drawn: all, or MAX_OUTLIERS spread over them


def box_stats(samples: Sequence[object]) -> BoxStats | None:
    """Box statistics of the finite numbers in `samples`; None when there are none."""
    values = sorted(float(v) for v in samples
                    if isinstance(v, (int, float)) and not isinstance(v, bool)
                    and math.isfinite(v))
    if not values:
        return None
    q1, median, q3 = (percentile(values, q) for q in (25, 50, 75))
    low_fence, high_fence = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    inside = [v for v in values if low_fence <= v <= high_fence] or values
    outside = [v for v in values if v < low_fence or v > high_fence]
    return BoxStats(len(values), values[0], q1, median, q3, values[-1], inside[0], inside[-1],
                    len(outside), _spread(outside, MAX_OUTLIERS))


def _spread(values: Sequence[float], limit: int) -> tuple[float, ...]:
    """`values` (sorted) thinned to `limit` evenly spaced ones, first and last kept."""
    if len(values) <= limit:
        return tuple(values)
    last = len(values) - 1
    return tuple(values[round(i * last / (limit - 1))] for i in range(limit))


# --- markup helpers -----------------------------------------------------------------------

def _esc(text: object) -> str:
    return escape(str(text), quote=True)


def _open(width: int, height: int, label: str, css: str) -> str:
    return (f'<svg class="chart {css}" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" role="img" aria-label="{_esc(label)}">')


def _text(x: float, y: float, text: object, anchor: str = "start", css: str = "") -> str:
    klass = f' class="{css}"' if css else ""
    return (f'<text x="{x:g}" y="{y:g}" text-anchor="{anchor}"{klass}>{_esc(text)}</text>')


def _lines(x: float, y: float, lines: Sequence[str], anchor: str, css: str) -> str:
    """Lines of one label, the first at `y`, each next one LINE_PX lower."""
    return "".join(_text(x, y + i * LINE_PX, line, anchor, css) for i, line in enumerate(lines))


def _line(x1: float, y1: float, x2: float, y2: float, css: str) -> str:
    return f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" class="{css}"/>'


def _x_axis(scale: Scale, top: float, bottom: float, title: str) -> list[str]:
    """Vertical grid lines with tick labels under `bottom`, and the axis title below them."""
    parts = []
    for tick, label in zip(scale.ticks, tick_labels(scale.ticks), strict=True):
        x = scale(tick)
        parts.append(_line(x, top, x, bottom, "grid"))
        parts.append(_text(x, bottom + 14, label, "middle", "tick"))
    middle = (scale.start + scale.end) / 2
    parts.append(_text(middle, bottom + 30, title, "middle", "axis-title"))
    return parts


def _y_axis(scale: Scale, left: float, right: float, title: str, top: float) -> list[str]:
    """Horizontal grid lines with tick labels left of `left`, the title above the plot."""
    parts = []
    for tick, label in zip(scale.ticks, tick_labels(scale.ticks), strict=True):
        y = scale(tick)
        parts.append(_line(left, y, right, y, "grid"))
        parts.append(_text(left - 6, y + 4, label, "end", "tick"))
    parts.append(_text(left, top - 8, title, "start", "axis-title"))
    return parts


def _y_margin(scale: Scale) -> float:
    """The left margin the y tick labels need (at least 56 px)."""
    return max(56.0, 12 + max(text_px(label) for label in tick_labels(scale.ticks)))


def tick_labels(ticks: Sequence[float]) -> list[str]:
    """The ticks' labels with 3 significant digits, or as many more as it takes to tell
    each from its neighbours (ticks 0.000165 and 0.000166 apart must not read alike)."""
    for digits in range(3, 10):
        labels = [fmt_num(t, digits) for t in ticks]
        if len(set(labels)) == len(labels):
            return labels
    return labels


def _legend(names: Sequence[str], colours: Mapping[str, str], x: float, y: float,
            right: float) -> list[str]:
    """Legend entries from `x`, wrapped onto rows of LEGEND_ROW_PX before `right`."""
    parts = []
    for slot in legend_rows(names, x, right):
        row_y = y + slot.row * LEGEND_ROW_PX
        parts.append(f'<rect x="{slot.x:g}" y="{row_y - 9:g}" width="10" height="10" '
                     f'fill="{colours[slot.name]}"/>')
        parts.append(_text(slot.x + 14, row_y, slot.name, "start", "legend"))
    return parts


def colour_map(names: Sequence[str]) -> dict[str, str]:
    """One palette colour per name, in order: pass it to several charts to keep a series'
    colour the same across them."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(dict.fromkeys(names))}


# --- box plots -----------------------------------------------------------------------------

@dataclass(frozen=True)
class BoxRow:
    label: str
    stats: BoxStats
    href: str | None = None
    title: str = ""


def box_plot_svg(rows: Sequence[BoxRow], *, log: bool | None = None, width: int = 960,
                 unit: str = "ms") -> str:
    """Horizontal box plots, one row per case, on one shared axis.

    `log` None picks a log axis when the values span more than LOG_SPAN times."""
    label_width = 24 + max(text_px(clipped(r.label)) for r in rows)
    width = at_least(width, label_width + 400)  # the labels never crowd the plot out
    row_height, top = 26, 8
    bottom = top + row_height * len(rows)
    low = min(min(r.stats.minimum, r.stats.whisker_low) for r in rows)
    high = max(r.stats.maximum for r in rows)
    if log is None:
        log = low > 0 and high / low > LOG_SPAN
    scale = nice_scale(low, high, label_width, width - 16, log=log)
    last_tick = text_px(tick_labels(scale.ticks)[-1]) / 2 + 4  # centred under the right end
    if last_tick > 16:
        scale = nice_scale(low, high, label_width, width - last_tick, log=log)
    title = f"latency per call ({unit}, {'log' if scale.log else 'linear'} scale)"
    parts = [_open(width, bottom + 40, "box plots of latency per case", "boxplot")]
    parts += _x_axis(scale, top, bottom, title)
    for index, row in enumerate(rows):
        parts.append(_box_row(row, scale, top + index * row_height, row_height, label_width))
    parts.append("</svg>")
    return "".join(parts)


def _box_row(row: BoxRow, scale: Scale, y: float, height: float, label_width: float) -> str:
    s, middle = row.stats, y + height / 2
    label = _text(label_width - 10, middle + 4, clipped(row.label), "end", "label")
    if row.href:
        label = f'<a href="{_esc(row.href)}">{label}</a>'
    box_top, box_height = y + 5, height - 10
    parts = [f'<g class="box"><title>{_esc(row.title or box_title(row.label, s))}</title>',
             label,
             _line(scale(s.whisker_low), middle, scale(s.q1), middle, "whisker"),
             _line(scale(s.q3), middle, scale(s.whisker_high), middle, "whisker"),
             _line(scale(s.whisker_low), box_top + 3, scale(s.whisker_low),
                   box_top + box_height - 3, "whisker"),
             _line(scale(s.whisker_high), box_top + 3, scale(s.whisker_high),
                   box_top + box_height - 3, "whisker"),
             f'<rect x="{scale(s.q1):g}" y="{box_top:g}" '
             f'width="{max(scale(s.q3) - scale(s.q1), 1):g}" height="{box_height:g}" '
             f'class="iqr"/>',
             _line(scale(s.median), box_top, scale(s.median), box_top + box_height, "median")]
    parts += [f'<circle cx="{scale(v):g}" cy="{middle:g}" r="2.5" class="outlier"/>'
              for v in s.outliers]
    parts.append("</g>")
    return "".join(parts)


def box_title(label: str, s: BoxStats, unit: str = "ms") -> str:
    """The hover text of a box: every statistic it draws, with exact numbers."""
    outliers = f"{s.outlier_count} outliers"
    if s.outlier_count > len(s.outliers):
        outliers += f" ({len(s.outliers)} drawn)"
    return (f"{label}: n={s.count}; median {fmt_num(s.median)} {unit}; "
            f"quartiles {fmt_num(s.q1)} - {fmt_num(s.q3)} {unit}; "
            f"whiskers {fmt_num(s.whisker_low)} - {fmt_num(s.whisker_high)} {unit}; "
            f"min {fmt_num(s.minimum)}, max {fmt_num(s.maximum)} {unit}; {outliers}")


# --- bars, lines, trends -------------------------------------------------------------------

@dataclass(frozen=True)
class Bar:
    series: str
    value: float
    label: str
    title: str


def grouped_bar_svg(groups: Sequence[tuple[str, Sequence[Bar]]], *, y_label: str,
                    reference: float | None = None, width: int = 960, height: int = 300,
                    colours: Mapping[str, str] | None = None) -> str:
    """Vertical bars grouped along x (one group per label), one colour per series.

    The chart grows wider than `width` when its labels need it: every bar is as wide as its
    value label, and group labels wrap onto lines no wider than their group."""
    series = list(dict.fromkeys(bar.series for _, bars in groups for bar in bars))
    colours = {**colour_map(series), **(colours or {})}
    high = max([bar.value for _, bars in groups for bar in bars] + [reference or 0.0])
    value_px = max(text_px(bar.label, VALUE_CHAR_PX) for _, bars in groups for bar in bars)
    per_bar = max(14.0, value_px + 4)
    frame = _category_frame([name for name, _ in groups], series, y_label, high * 1.08 or 1.0,
                            width, height - 84, 24 + per_bar * max(len(b) for _, b in groups))
    scale, bottom = frame.scale, frame.bottom
    parts = [_open(frame.width, frame.height, y_label, "bars")]
    parts += _y_axis(scale, frame.left, frame.right, y_label, frame.top)
    parts += _legend(series, colours, frame.left, 14, frame.right)
    for index, (_, bars) in enumerate(groups):
        x0 = frame.left + index * frame.slot
        bar_width = min(48.0, (frame.slot - 24) / max(len(bars), 1))
        first = x0 + (frame.slot - bar_width * len(bars)) / 2
        for j, bar in enumerate(bars):
            x, y = first + j * bar_width, scale(bar.value)
            parts.append(f'<g class="bar"><title>{_esc(bar.title)}</title>'
                         f'<rect x="{x + 2:g}" y="{y:g}" width="{bar_width - 4:g}" '
                         f'height="{max(bottom - y, 0.5):g}" fill="{colours[bar.series]}"/>'
                         f'{_text(x + bar_width / 2, y - 4, bar.label, "middle", "value")}</g>')
        parts.append(_lines(x0 + frame.slot / 2, bottom + 16, frame.labels[index], "middle",
                            "label"))
    if reference is not None:
        parts.append(_line(frame.left, scale(reference), frame.right, scale(reference),
                           "reference"))
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class _Frame:
    """The geometry of a chart over categorical x labels."""

    width: int
    height: int
    left: float
    right: float
    top: float
    bottom: float
    slot: float
    labels: tuple[tuple[str, ...], ...]  # each x label's lines
    scale: Scale


def _category_frame(x_labels: Sequence[str], series: Sequence[str], y_label: str, high: float,
                    width: int, plot_height: int, min_slot: float) -> _Frame:
    """Room for everything a chart over `x_labels` writes: y ticks, the y title, the legend
    (wrapped onto rows), each x label (wrapped onto lines) and `min_slot` per category."""
    margin = 12
    left = _y_margin(nice_scale(0.0, high, 1.0, 0.0, zero=True))
    slot_needed = max(min_slot, longest_word_px(x_labels) + 8)
    width = at_least(width, left + margin + max(len(x_labels) * slot_needed, text_px(y_label),
                                                legend_width_px(series)))
    right = width - margin
    slot = (right - left) / len(x_labels)
    top = 44 + LEGEND_ROW_PX * (row_count(legend_rows(series, left, right)) - 1)
    bottom = top + plot_height
    labels = tuple(tuple(wrap(label, slot - 8)) for label in x_labels)
    height = bottom + 24 + LINE_PX * (max(len(lines) for lines in labels) - 1)
    return _Frame(width, int(height), left, right, top, bottom, slot, labels,
                  nice_scale(0.0, high, bottom, top, zero=True))


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]  # one per x label; None where this series has no point
    titles: Sequence[str]


def line_chart_svg(x_labels: Sequence[str], series: Sequence[Series], *, y_label: str,
                   width: int = 470, height: int = 260,
                   colours: Mapping[str, str] | None = None) -> str:
    """Lines with point markers over categorical x labels (shapes), y from zero; wider than
    `width` when the labels need it (see :func:`grouped_bar_svg`)."""
    colours = {**colour_map([s.name for s in series]), **(colours or {})}
    values = [v for s in series for v in s.values if v is not None]
    names = [s.name for s in series]
    frame = _category_frame(x_labels, names, y_label, max(values) * 1.08 if values else 1.0,
                            width, height - 84, 24.0)
    left, slot, scale = frame.left, frame.slot, frame.scale
    parts = [_open(frame.width, frame.height, y_label, "lines")]
    parts += _y_axis(scale, left, frame.right, y_label, frame.top)
    parts += _legend(names, colours, left, 14, frame.right)
    for index, lines in enumerate(frame.labels):
        parts.append(_lines(left + slot * (index + 0.5), frame.bottom + 16, lines, "middle",
                            "label"))
    for s in series:
        points = [(left + slot * (i + 0.5), scale(v), t)
                  for i, (v, t) in enumerate(zip(s.values, s.titles, strict=True))
                  if v is not None]
        if len(points) > 1:
            path = " ".join(f"{x:g},{y:g}" for x, y, _ in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colours[s.name]}" '
                         'stroke-width="2"/>')
        parts += [f'<circle cx="{x:g}" cy="{y:g}" r="4" fill="{colours[s.name]}">'
                  f'<title>{_esc(t)}</title></circle>' for x, y, t in points]
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class TrendPoint:
    value: float
    label: str  # the x label (run date)
    title: str  # hover text: date, commit, value
    mark: str | None = None  # "regressed" / "improved" for the current run's verdict


def trend_svg(points: Sequence[TrendPoint], *, y_label: str = "p50 ms", width: int = 340,
              height: int = 150) -> str:
    """p50 over runs (oldest left): a line with a dot per run, marked dots for verdicts."""
    top, bottom = 26, height - 30
    low, high = min(p.value for p in points), max(p.value for p in points)
    pad = max(0.0, 0.2 * high - (high - low)) / 2  # a 2% wobble must not fill the chart
    scale = nice_scale(max(low - pad, 0.0), high + pad, bottom, top, ticks=4)
    left = _y_margin(scale) - 6
    width = at_least(width, left + 14 + text_px(points[0].label) + text_px(points[-1].label)
                     + 16)
    right = width - 14
    step = (right - left) / max(len(points) - 1, 1)
    xy = [(left + i * step, scale(p.value)) for i, p in enumerate(points)]
    parts = [_open(width, height, f"{y_label} over runs", "trend")]
    parts += _y_axis(scale, left, right, y_label, top)
    parts.append(_text(left, bottom + 16, points[0].label, "start", "tick"))
    parts.append(_text(right, bottom + 16, points[-1].label, "end", "tick"))
    path = " ".join(f"{x:g},{y:g}" for x, y in xy)
    parts.append(f'<polyline points="{path}" class="trend-line" fill="none"/>')
    for (x, y), point in zip(xy, points, strict=True):
        css = f"point {point.mark}" if point.mark else "point"
        radius = 5.5 if point.mark else 3
        parts.append(f'<circle cx="{x:g}" cy="{y:g}" r="{radius}" class="{css}">'
                     f'<title>{_esc(point.title)}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)
