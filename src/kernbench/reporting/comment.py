"""The PR comment: a short, size-capped Markdown rendering of one run and its comparison.

A trusted workflow posts it from an artifact that an untrusted pull request produced, so every
string read from the documents is treated as hostile: it is clipped, stripped of control and
format characters, Markdown/HTML-escaped, and mentions and bare links are defused
(:func:`escape`). Data only ever lands in table cells or after fixed text, never at the start
of a line, so it cannot open a block (heading, list, HTML block).

The text is assembled in Python rather than with a jinja2 template because it must fit
``max_chars``: rows are dropped from the collapsed table first, then from the significant
table, and every cut falls between whole rows.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernbench.analysis.compare import VERDICTS, CaseComparison, tally
from kernbench.errors import KernbenchError
from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.markdown import md_escape
from kernbench.reporting.regressions import headline
from kernbench.reporting.views import (
    CHANGED,
    PROBLEM_STATUSES,
    ci95_bounds,
    dig,
    fmt_num,
    impact,
    mappings,
    section,
)

__all__ = ["MARKER", "MIN_MAX_CHARS", "escape", "fork_notice", "render_comment"]

MARKER = "<!-- kernbench-comment -->"
"""First line of every comment: the bot finds (and updates) its own comment by it."""

MIN_MAX_CHARS = 3_000
"""The smallest `max_chars` accepted: the verdict and the run link always fit in it."""

CELL_CHARS = 200
"""A value from the data is clipped to this many characters before escaping."""
NOTE_CHARS = 300
PROBLEMS_LISTED = 20
WARNINGS_LISTED = 5
GPU_NAMES_LISTED = 4
RUN_STATUSES = ("ok", "failed", "timeout", "skipped", "invalid")
ZWSP = "\u200b"

_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_URL_SAFE = re.compile(r"^https?://[A-Za-z0-9\-._~:/?#@!$&'*+,;=%]+$")
_HEX = re.compile(r"^[0-9a-fA-F]{4,64}$")
_TOKEN = re.compile(r"^[0-9A-Za-z_.\-]{1,64}$")
_REPO = re.compile(r"^[0-9A-Za-z_.\-]{1,100}/[0-9A-Za-z_.\-]{1,100}$")
_BARE_LINK = re.compile(r"(?i)(://|\bwww\.)")
_ISSUE_REF = re.compile(r"(?i)(#|\bGH-)(?=[0-9])")
_HEX_RUN = re.compile(r"[0-9a-fA-F]{7,}")
HEX_CHUNK = 6
"""GitHub links a word of 7 or more hex digits to the commit it names: runs are cut into
chunks of at most this many by zero-width spaces."""


# --- escaping ------------------------------------------------------------------------------

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
    text = "".join(" " if unicodedata.category(ch) in _DROPPED_CATEGORIES else ch
                   for ch in text[:limit])
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


def _num(value: object, digits: int = 4) -> str:
    """A finite number, or "n/a" for anything else (None, strings, booleans, NaN, infinities,
    integers too large for a float): unvalidated data must not end in a traceback."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "n/a"
    if isinstance(value, int) and abs(value) > 2**63:
        return "n/a"
    return fmt_num(value, digits) if math.isfinite(value) else "n/a"


def _code(value: object, pattern: re.Pattern[str], length: int = 64) -> str:
    """A commit or fingerprint in backticks when it looks like one; escaped text otherwise."""
    if isinstance(value, str) and pattern.match(value):
        return f"`{value[:length]}`"
    return escape(value, 64)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _check_url(run_url: str | None) -> str | None:
    if run_url is None:
        return None
    if len(run_url) > 1_000 or not _URL_SAFE.match(run_url):
        raise KernbenchError("--run-url: expected an http(s) URL of at most 1000 characters "
                             "without spaces, quotes, brackets or parentheses")
    return run_url


def fork_notice(fork: str) -> str:
    """The warning a comment carries when the pull request comes from the fork `fork`."""
    name = f"`{fork}`" if _REPO.match(fork) else escape(fork, 100)
    return ("> [!WARNING]\n"
            f"> This pull request comes from the fork {name}. Its own code ran these benchmarks "
            "on a runner it controlled and wrote this report, so every figure and name below "
            "is untrusted data: a claim by the fork, not a measurement this repository vouches "
            "for. Re-run the benchmarks from a trusted branch before relying on them.")


# --- the verdict ---------------------------------------------------------------------------

def _judged(cases: Sequence[Mapping[str, Any]]) -> list[CaseComparison]:
    """Just enough of each case for :func:`headline` and :func:`tally` (known verdicts only)."""
    return [CaseComparison(key="", kernel_name="", backend="", precision="",
                           verdict=str(c.get("verdict")), threshold=0.0,
                           accuracy_drift={"flagged": _drifted(c)})
            for c in cases if c.get("verdict") in VERDICTS]


def _drifted(case: Mapping[str, Any]) -> bool:
    """Strictly `true`, unlike :func:`views.significant`: the artifact is untrusted."""
    return section(case, "accuracy_drift").get("flagged") is True


def _significant(case: Mapping[str, Any]) -> bool:
    return case.get("verdict") in CHANGED or _drifted(case)


def _verdict_blocks(comparison: Mapping[str, Any] | None) -> list[str]:
    if comparison is None:
        return ["**No comparison: this run was not compared with a baseline**",
                "Nothing was compared; this is not a pass."]
    note = comparison.get("baseline_note")
    cases = mappings(comparison.get("cases"))
    judged = _judged(cases)
    line = headline(judged, None if note is None else escape(note, NOTE_CHARS))
    if note is not None:
        return [f"**{line}**", "Nothing was compared; this is not a pass."]
    counts = tally(judged)
    table = "\n".join([_row(VERDICTS), "|" + "---:|" * len(VERDICTS),
                       _row([str(counts[v]) for v in VERDICTS])])
    return [f"**{line}**", *_warnings(comparison), table, _method_note(comparison, len(cases))]


def _warnings(comparison: Mapping[str, Any]) -> list[str]:
    """The comparison's warnings (e.g. different machines), at most WARNINGS_LISTED."""
    found = comparison.get("warnings")
    found = [w for w in found if isinstance(w, str)] if isinstance(found, list) else []
    lines = [f"> Warning: {escape(w, NOTE_CHARS)}" for w in found[:WARNINGS_LISTED]]
    if len(found) > WARNINGS_LISTED:
        lines.append(f"> … and {len(found) - WARNINGS_LISTED} more warnings")
    return ["\n>\n".join(lines)] if lines else []


def _method_note(comparison: Mapping[str, Any], n_cases: int) -> str:
    settings = section(comparison, "settings")
    threshold = settings.get("threshold")
    pct = _num(threshold * 100) if isinstance(threshold, (int, float)) else "n/a"
    text = (f"Ratio is candidate / baseline median latency (above 1 is slower). A change is "
            f"claimed only beyond the {pct}% threshold **and** at q < "
            f"{_num(settings.get('alpha'))} after Benjamini-Hochberg control across all "
            f"{n_cases} cases.")
    skipped = comparison.get("skipped_both")
    if isinstance(skipped, list) and skipped:
        text += f" {len(skipped)} cases were skipped on both sides and are not judged."
    return text


# --- tables --------------------------------------------------------------------------------

_SIGNIFICANT_HEAD = ("Case", "Verdict", "Ratio", "95% CI", "q", "Baseline p50 ms",
                     "Candidate p50 ms", "Accuracy drift")
_CASES_HEAD = ("Case", "Verdict", "Ratio", "95% CI", "q", "Baseline p50 ms",
               "Candidate p50 ms", "Note")
_RESULTS_HEAD = ("Case", "Status", "p50 ms", "95% CI ms", "p99 ms", "Samples")


def _head(columns: Sequence[str], numeric: Sequence[int]) -> str:
    rule = "|" + "".join("---:|" if i in numeric else "---|" for i in range(len(columns)))
    return _row(columns) + "\n" + rule


def _case_name(case: Mapping[str, Any]) -> str:
    return escape(case.get("key") or case.get("label"))


def _interval(low: object, high: object) -> str:
    if isinstance(low, (int, float)) and isinstance(high, (int, float)):
        return f"{_num(low)} – {_num(high)}"
    return "n/a"


def _figures(case: Mapping[str, Any]) -> list[str]:
    return [_num(case.get("ratio")), _interval(case.get("ci_low"), case.get("ci_high")),
            _num(case.get("q_value"), 2), _num(case.get("baseline_p50_ms")),
            _num(case.get("candidate_p50_ms"))]


def _verdict_cell(case: Mapping[str, Any], bold: bool) -> str:
    verdict = escape(case.get("verdict"), 40)
    return f"**{verdict}**" if bold else verdict


def _drift_cell(case: Mapping[str, Any]) -> str:
    drift = section(case, "accuracy_drift")
    if drift.get("flagged") is not True:
        return "–"
    return (f"**{escape(drift.get('metric'), 40)} {_num(drift.get('baseline'), 3)} → "
            f"{_num(drift.get('candidate'), 3)}**")


def _significant_rows(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    ranked = sorted((c for c in cases if _significant(c)), key=impact, reverse=True)
    return [_row([_case_name(c), _verdict_cell(c, True), *_figures(c), _drift_cell(c)])
            for c in ranked]


def _case_rows(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    return [_row([_case_name(c), _verdict_cell(c, False), *_figures(c),
                  escape(c.get("note"), NOTE_CHARS) if c.get("note") else ""])
            for c in cases]


def _result_rows(results: Sequence[Mapping[str, Any]]) -> list[str]:
    rows = []
    for r in results:
        timing = section(r, "timing")
        low, high = ci95_bounds(r)
        samples = r.get("samples_ms", timing.get("samples_ms"))
        rows.append(_row([escape(r.get("case_id")), escape(r.get("status"), 40),
                          _num(timing.get("latency_ms_p50")), _interval(low, high),
                          _num(timing.get("latency_ms_p99")),
                          str(len(samples)) if isinstance(samples, list) else "n/a"]))
    return rows


# --- the run -------------------------------------------------------------------------------

def _machine(env: Mapping[str, Any]) -> str:
    cpu = escape(section(env, "cpu").get("model") or "unknown CPU")
    names: dict[str, int] = {}
    for gpu in mappings(env.get("gpus")):
        name = escape(gpu.get("name"), 80)
        names[name] = names.get(name, 0) + 1
    gpus = ", ".join(f"{n} × {name}" if n > 1 else name
                     for name, n in list(names.items())[:GPU_NAMES_LISTED])
    if len(names) > GPU_NAMES_LISTED:
        gpus += f" and {len(names) - GPU_NAMES_LISTED} more"
    return f"{cpu}; GPUs: {gpus or 'none'}"


def _commit(value: object) -> str:
    return _code(value, _HEX, 12) if value else "n/a"


def _runs_table(inputs: ReportInputs) -> str:
    env = inputs.environment
    head_commit = section(env, "git").get("commit")
    comparison = inputs.comparison
    if comparison is None:
        rows = [("Commit", _commit(head_commit)), ("Machine", _machine(env)),
                ("Fingerprint", _code(env.get("fingerprint"), _TOKEN))]
        return "\n".join([_head(("", "Head"), ()), *(_row(r) for r in rows)])
    base, cand = section(comparison, "baseline"), section(comparison, "candidate")
    pairs = [("Commit", _commit(base.get("commit")), _commit(head_commit or cand.get("commit"))),
             ("Source", escape(base.get("source")), escape(cand.get("source"))),
             ("Machine", escape(base.get("machine")), _machine(env)),
             ("Fingerprint", _code(base.get("fingerprint"), _TOKEN),
              _code(env.get("fingerprint") or cand.get("fingerprint"), _TOKEN))]
    return "\n".join([_head(("", "Baseline", "Head"), ()), *(_row(r) for r in pairs)])


def _run_blocks(inputs: ReportInputs) -> list[str]:
    results = mappings(inputs.summary.get("results"))
    statuses = [r.get("status") for r in results]
    counts = ", ".join(f"{statuses.count(s)} {s}" for s in RUN_STATUSES
                       if s != "invalid" or "invalid" in statuses)
    version = escape(inputs.summary.get("kernbench_version"), 40)
    blocks = ["#### Run", _runs_table(inputs),
              f"kernbench {version}; {len(results)} cases in this run: {counts}."]
    problems = [r for r in results if r.get("status") in PROBLEM_STATUSES]
    if problems:
        rows = [_row([escape(r.get("case_id")), escape(r.get("status"), 40),
                      escape(r.get("reason"), NOTE_CHARS)]) for r in problems[:PROBLEMS_LISTED]]
        table = "\n".join([_head(("Case", "Status", "Reason"), ()), *rows])
        if len(problems) > PROBLEMS_LISTED:
            table += f"\n\n… and {len(problems) - PROBLEMS_LISTED} more failed or timed out."
        blocks.append(table)
    return blocks


# --- assembly and the size cap -------------------------------------------------------------

@dataclass(frozen=True)
class _Parts:
    top: list[str]
    significant_head: str
    significant: list[str]
    table_title: str
    table_head: str
    rows: list[str]
    bottom: list[str]

    def assemble(self, n_significant: int, n_rows: int) -> str:
        blocks = [*self.top]
        if self.significant:
            blocks += [f"#### Significant changes ({len(self.significant)})",
                       "\n".join([self.significant_head, *self.significant[:n_significant]])
                       if n_significant else ""]
            if n_significant < len(self.significant):
                blocks.append(f"_Only the {n_significant} largest of {len(self.significant)} "
                              "significant changes are shown, to fit the comment size limit._")
        if self.rows:
            blocks += [self._collapsed(n_rows)]
        blocks += self.bottom
        return "\n\n".join(b for b in blocks if b) + "\n"

    def _collapsed(self, n_rows: int) -> str:
        parts = [f"<details><summary>{self.table_title} ({len(self.rows)})</summary>"]
        if n_rows:
            parts.append("\n".join([self.table_head, *self.rows[:n_rows]]))
        if n_rows < len(self.rows):
            parts.append(f"_{len(self.rows) - n_rows} of {len(self.rows)} rows were left out "
                         "to fit the comment size limit; the run's report has them all._")
        return "\n\n".join([*parts, "</details>"])


def _largest(fits: Callable[[int], bool], most: int) -> int | None:
    """The largest k in [0, most] with fits(k), for a `fits` true up to some k; None if none."""
    if not fits(0):
        return None
    low, high = 0, most
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low


def _fit(parts: _Parts, max_chars: int, fallback: str) -> str:
    n_sig, n_rows = len(parts.significant), len(parts.rows)
    k = _largest(lambda k: len(parts.assemble(n_sig, k)) <= max_chars, n_rows)
    if k is not None:
        return parts.assemble(n_sig, k)
    k = _largest(lambda k: len(parts.assemble(k, 0)) <= max_chars, n_sig)
    return parts.assemble(k, 0) if k is not None else fallback


def render_comment(inputs: ReportInputs, *, max_chars: int = 60_000,
                   run_url: str | None = None, fork: str | None = None) -> str:
    """The PR comment for a run (Markdown), at most `max_chars` characters.

    Layout: :data:`MARKER`; the verdict and counts per verdict; the significant changes by
    impact; every case, collapsed; commits, machines, version and the run's case counts with
    its failures; the workflow run link. With `fork` (the pull request's head repository
    when it is not the base repository), a warning under the title says the figures come from
    that fork's untrusted code; it is never dropped. Too long, the comment drops collapsed rows
    first, then significant ones, each time saying how many; the same inputs give the same
    text.
    """
    if max_chars < MIN_MAX_CHARS:
        raise KernbenchError(f"--max-chars: expected at least {MIN_MAX_CHARS} (got {max_chars})")
    url = _check_url(run_url)
    link = [f"[Workflow run]({url})"] if url else []
    comparison = inputs.comparison
    verdict = _verdict_blocks(comparison)
    title = [MARKER + "\n### kernbench", *([fork_notice(fork)] if fork else [])]
    cases = mappings(dig(comparison, "cases"))
    compared = comparison is not None and comparison.get("baseline_note") is None
    parts = _Parts(
        top=[*title, *verdict],
        significant_head=_head(_SIGNIFICANT_HEAD, (2, 4, 5, 6)),
        significant=_significant_rows(cases) if compared else [],
        table_title="All cases" if compared else "All results",
        table_head=(_head(_CASES_HEAD, (2, 4, 5, 6)) if compared
                    else _head(_RESULTS_HEAD, (2, 4, 5))),
        rows=_case_rows(cases) if compared else _result_rows(mappings(
            inputs.summary.get("results"))),
        bottom=[*_run_blocks(inputs), *link],
    )
    fallback = "\n\n".join([*title, verdict[0],
                            "_The details do not fit the comment size limit; see the run's "
                            "report._", *link]) + "\n"
    return _fit(parts, max_chars, fallback)
