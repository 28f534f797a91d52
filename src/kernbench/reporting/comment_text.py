"""Hostile text as inert Markdown, for the PR comment (:mod:`kernbench.reporting.comment`).

A trusted workflow posts the comment from an artifact that an untrusted pull request produced,
so every string read from the documents goes through :func:`escape`: clipped, stripped of
control and format characters, Markdown/HTML-escaped, with mentions, bare links, issue
references and commit-like hex runs defused. Numbers, commits and links are checked against
strict shapes before they are shown as such.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence

from kernbench.errors import KernbenchError
from kernbench.reporting.markdown import md_escape
from kernbench.reporting.views import fmt_num

__all__ = ["CELL_CHARS", "HEX", "NOTE_CHARS", "TOKEN", "check_run_url", "code_text", "escape",
           "fork_notice", "number_text", "table_row"]

CELL_CHARS = 200
"""A value from the data is clipped to this many characters before escaping."""
NOTE_CHARS = 300
ZWSP = "\u200b"

_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_URL_SAFE = re.compile(r"^https?://[A-Za-z0-9\-._~:/?#@!$&'*+,;=%]+$")
HEX = re.compile(r"^[0-9a-fA-F]{4,64}$")
TOKEN = re.compile(r"^[0-9A-Za-z_.\-]{1,64}$")
REPO = re.compile(r"^[0-9A-Za-z_.\-]{1,100}/[0-9A-Za-z_.\-]{1,100}$")
_BARE_LINK = re.compile(r"(?i)(://|\bwww\.)")
_ISSUE_REF = re.compile(r"(?i)(#|\bGH-)(?=[0-9])")
_HEX_RUN = re.compile(r"[0-9a-fA-F]{7,}")
HEX_CHUNK = 6
"""GitHub links a word of 7 or more hex digits to the commit it names: runs are cut into
chunks of at most this many by zero-width spaces."""



def escape(value: object, limit: int = CELL_CHARS) -> str:
    """`value` as inert inline Markdown on one line: at most `limit` source characters.

    On top of :func:`md_escape` (backslash, ``| ` * _ < > [ ]``, whitespace collapsed):
    control, format (bidi overrides, zero-width) and surrogate characters become spaces;
    ``&`` (entities), ``~`` (strikethrough) and ``$`` (math) are escaped; ``@`` is followed
    by a zero-width space so nobody is mentioned; ``://`` and ``www.`` are broken so nothing
    is autolinked; ``#123``, ``GH-123`` and ``owner/repo#123`` get a zero-width space before
    the number and runs of 7+ hex digits one every :data:`HEX_CHUNK` characters, so no issue,
    pull request or commit is linked (or notified of a cross-reference).
    Non-scalar values (lists, objects) render as "n/a".
    """
    if value is None or not isinstance(value, (str, int, float)):
        return "n/a"
    text = str(value)
    clipped = len(text) > limit
    if clipped:  # at the last space in the kept part, if it keeps most of it: no cut word
        head = text[:limit]
        text = head[:cut] if (cut := head.rfind(" ")) > limit * 3 // 4 else head
    text = "".join(" " if unicodedata.category(ch) in _DROPPED_CATEGORIES else ch
                   for ch in text)
    text = md_escape(text) + ("…" if clipped else "")
    for char in "&~$":
        text = text.replace(char, "\\" + char)
    text = text.replace("@", "@" + ZWSP)
    text = _ISSUE_REF.sub(lambda m: m.group(1) + ZWSP, text)
    text = _HEX_RUN.sub(_cut_hex, text)
    return _BARE_LINK.sub(lambda m: m.group(1)[0] + ZWSP + m.group(1)[1:], text)


def _cut_hex(match: re.Match[str]) -> str:
    run = match.group(0)
    return ZWSP.join(run[i:i + HEX_CHUNK] for i in range(0, len(run), HEX_CHUNK))


def number_text(value: object, digits: int = 4) -> str:
    """A finite number, or "n/a" for anything else (None, strings, booleans, NaN, infinities,
    integers too large for a float): unvalidated data must not end in a traceback."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "n/a"
    if isinstance(value, int) and abs(value) > 2**63:
        return "n/a"
    return fmt_num(value, digits) if math.isfinite(value) else "n/a"


def code_text(value: object, pattern: re.Pattern[str], length: int = 64) -> str:
    """A commit or fingerprint in backticks when it looks like one; escaped text otherwise."""
    if isinstance(value, str) and pattern.match(value):
        return f"`{value[:length]}`"
    return escape(value, 64)


def table_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def check_run_url(run_url: str | None) -> str | None:
    if run_url is None:
        return None
    if len(run_url) > 1_000 or not _URL_SAFE.match(run_url):
        raise KernbenchError("--run-url: expected an http(s) URL of at most 1000 characters "
                             "without spaces, quotes, brackets or parentheses")
    return run_url


def fork_notice(fork: str) -> str:
    """The warning a comment carries when the pull request comes from the fork `fork`."""
    name = f"`{fork}`" if REPO.match(fork) else escape(fork, 100)
    return ("> [!WARNING]\n"
            f"> This pull request comes from the fork {name}. Its own code ran these benchmarks "
            "on a runner it controlled and wrote this report, so every figure and name below "
            "is untrusted data: a claim by the fork, not a measurement this repository vouches "
            "for. Re-run the benchmarks from a trusted branch before relying on them.")

