"""Room for the text of a chart: estimated text widths, labels wrapped onto lines, legends laid out
in rows. The charts of :mod:`kernbench.reporting.svg` size their plot areas from these, so no
label is cut or runs out of its chart (tests/reporting/test_html_browser.py measures the drawn
text in Chromium).

Widths are estimates from the character count, deliberately generous: the page's sans-serif at
11 px averages about 6 px a character, digits and lower case less, capitals and ``m``/``w``
more; :data:`CHAR_PX` covers a label of wide characters.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

CHAR_PX = 7.0
"""Width of one character of an 11 px label (labels, legends, ticks), in pixels."""
VALUE_CHAR_PX = 6.4
"""Width of one character of a 10 px value label (above a bar)."""
LINE_PX = 13
"""Height of one line of label text."""
LEGEND_SWATCH_PX = 14
"""The colour square and the gap after it, before a legend entry's name."""
LEGEND_GAP_PX = 14
"""Space between two legend entries on one row."""
LEGEND_ROW_PX = 16


def text_px(text: str, char_px: float = CHAR_PX) -> float:
    """The estimated width of `text`, in pixels."""
    return len(text) * char_px


def words(text: str) -> list[str]:
    """`text` cut after each space and comma: the places a label may wrap."""
    return [w for w in re.split(r"(?<=[ ,])", text) if w]


def longest_word_px(texts: Sequence[str]) -> float:
    """The widest unbreakable piece of any of `texts`: a line cannot be narrower."""
    return max((text_px(w.strip()) for t in texts for w in words(t)), default=0.0)


def wrap(text: str, width_px: float) -> list[str]:
    """`text` on as few lines as fit in `width_px`, broken after spaces and commas; a word wider
    than a line stays whole (size the chart with :func:`longest_word_px` so none is)."""
    lines: list[str] = []
    line = ""
    for word in words(text):
        if line and text_px((line + word).rstrip()) > width_px:
            lines.append(line.rstrip())
            line = word.lstrip()
        else:
            line += word
    lines.append(line.rstrip())
    return lines


def legend_entry_px(name: str) -> float:
    return LEGEND_SWATCH_PX + text_px(name)


@dataclass(frozen=True)
class LegendSlot:
    name: str
    x: float
    row: int


def legend_rows(names: Sequence[str], x: float, right: float) -> list[LegendSlot]:
    """Where each legend entry goes: left to right from `x`, onto a new row when the next entry
    would pass `right` (an entry wider than the whole row gets a row of its own)."""
    slots, offset, row = [], x, 0
    for name in names:
        end = offset + legend_entry_px(name)
        if offset > x and end > right:
            row, offset = row + 1, x
            end = offset + legend_entry_px(name)
        slots.append(LegendSlot(name, offset, row))
        offset = end + LEGEND_GAP_PX
    return slots


def legend_width_px(names: Sequence[str]) -> float:
    """The widest single legend entry: a chart must be at least this wide after its margin."""
    return max((legend_entry_px(n) for n in names), default=0.0)


def row_count(slots: Sequence[LegendSlot]) -> int:
    return max((s.row for s in slots), default=-1) + 1


def at_least(width: float, needed: float) -> int:
    """`width`, or `needed` rounded up when that is more."""
    return int(max(width, math.ceil(needed)))


LABEL_PX = 1000.0
"""The widest a row label of a chart is drawn (about 140 characters: a fused kernel's name
with its implementation and a sweep point of four keys fits): a longer one is shortened in
its middle, so one 220-character kernel name cannot squeeze every box into a sliver at the
chart's right edge."""


def clipped(text: str, most_px: float = LABEL_PX) -> str:
    """`text`, or its start and end around an ellipsis, at most `most_px` wide."""
    keep = int(most_px / CHAR_PX)
    if len(text) <= keep:
        return text
    head = (keep - 1) // 2
    return f"{text[:head]}…{text[len(text) - (keep - 1 - head):]}"
