"""The PR comment: a short, size-capped Markdown rendering of one run and its comparison.

A trusted workflow posts it from an artifact that an untrusted pull request produced, so every
string read from the documents is treated as hostile and goes through
:func:`kernbench.reporting.comment_text.escape`. Data only ever lands in table cells or after
fixed text, never at the start of a line, so it cannot open a block (heading, list, HTML
block).

The text is assembled in Python rather than with a jinja2 template because it must fit
``max_chars``: rows are dropped from the collapsed table first, then from the significant
table, and every cut falls between whole rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernbench.analysis.compare import VERDICTS, CaseComparison, tally
from kernbench.errors import KernbenchError
from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.comment_machines import (
    MachineTag,
    grouped,
    machine_tag,
    machines_run_table,
    machines_verdict_table,
)
from kernbench.reporting.comment_text import (
    HEX,
    NOTE_CHARS,
    TOKEN,
    check_run_url,
    code_text,
    escape,
    fork_notice,
    number_text,
    table_row,
)
from kernbench.reporting.gpu_modes import mode_suffix
from kernbench.reporting.machines import incomplete_text
from kernbench.reporting.regressions import headline
from kernbench.reporting.views import (
    CHANGED,
    PROBLEM_STATUSES,
    RATIO_NOTE,
    ci95_bounds,
    dig,
    impact,
    mappings,
    section,
    verdict_text,
)

__all__ = ["MARKER", "MIN_MAX_CHARS", "render_comment"]

MARKER = "<!-- kernbench-comment -->"
"""First line of every comment: the bot finds (and updates) its own comment by it."""

MIN_MAX_CHARS = 3_000
"""The smallest `max_chars` accepted: the verdict and the run link always fit in it."""

PROBLEMS_LISTED = 20
WARNINGS_LISTED = 5
GPU_NAMES_LISTED = 4
RUN_STATUSES = ("ok", "failed", "timeout", "skipped", "invalid")


# --- the verdict ---------------------------------------------------------------------------

def _judged(cases: Sequence[Mapping[str, Any]]) -> list[CaseComparison]:
    """Just enough of each case for :func:`headline` and :func:`tally` (known verdicts only)."""
    return [CaseComparison(key="", kernel_name="", backend="", precision="",
                           verdict=str(c.get("verdict")), threshold=0.0,
                           accuracy_drift={"flagged": _drifted(c)},
                           claimed=c["claimed"] if c.get("claimed") in CHANGED else None)
            for c in cases if c.get("verdict") in VERDICTS]


def _drifted(case: Mapping[str, Any]) -> bool:
    """Strictly `true`, unlike :func:`views.significant`: the artifact is untrusted."""
    return section(case, "accuracy_drift").get("flagged") is True


def _significant(case: Mapping[str, Any]) -> bool:
    return case.get("verdict") in CHANGED or case.get("claimed") in CHANGED or _drifted(case)


def _verdict_blocks(comparison: Mapping[str, Any] | None,
                    summary: Mapping[str, Any]) -> list[str]:
    unfinished = ([f"> Warning: {' — '.join(incomplete_text(summary))}"]
                  if summary.get("complete") is False else [])
    if comparison is None:
        return ["**No comparison: this run was not compared with a baseline**", *unfinished,
                "Nothing was compared; this is not a pass."]
    note = comparison.get("baseline_note")
    cases = mappings(comparison.get("cases"))
    judged = _judged(cases)
    line = headline(judged, None if note is None else escape(note, NOTE_CHARS))
    if note is not None:
        return [f"**{line}**", *unfinished, "Nothing was compared; this is not a pass."]
    counts = tally(judged)
    several = machine_tag(summary) is not None
    table = machines_verdict_table(cases, summary) if several else "\n".join(
        [table_row(VERDICTS), "|" + "---:|" * len(VERDICTS),
         table_row([str(counts[v]) for v in VERDICTS])])
    return [f"**{line}**", *_warnings(comparison), table,
            _method_note(comparison, sum(c.get("q_value") is not None for c in cases), several)]


def _warnings(comparison: Mapping[str, Any]) -> list[str]:
    """The comparison's warnings (e.g. different machines), at most WARNINGS_LISTED."""
    found = comparison.get("warnings")
    found = [w for w in found if isinstance(w, str)] if isinstance(found, list) else []
    lines = [f"> Warning: {escape(w, NOTE_CHARS)}" for w in found[:WARNINGS_LISTED]]
    if len(found) > WARNINGS_LISTED:
        lines.append(f"> … and {len(found) - WARNINGS_LISTED} more warnings")
    return ["\n>\n".join(lines)] if lines else []


def _method_note(comparison: Mapping[str, Any], n_cases: int, several: bool) -> str:
    settings = section(comparison, "settings")
    threshold = settings.get("threshold")
    pct = number_text(threshold * 100) if isinstance(threshold, (int, float)) else "n/a"
    per_kernel = settings.get("per_kernel")
    own = [f"{escape(name)} {number_text(values['latency'] * 100)}%" for name, values in
           sorted(per_kernel.items() if isinstance(per_kernel, Mapping) else [])
           if isinstance(values, Mapping) and isinstance(values.get("latency"), (int, float))]
    bar = f"{pct}% threshold"
    if own:  # a kernel's bench.yaml overrides the threshold: say so, where it applied
        bar += f" (a kernel's own from its bench.yaml: {', '.join(own)})"
    text = (f"{RATIO_NOTE} A change is "
            f"claimed only beyond the {bar} **and** at q < "
            f"{number_text(settings.get('alpha'))} after Benjamini-Hochberg control across "
            + (f"each machine's cases ({n_cases} in all); each machine is compared only with "
               "its own baseline, and no case is compared across machines." if several else
               f"the {n_cases} compared cases."))
    skipped = comparison.get("skipped_both")
    if isinstance(skipped, list) and skipped:
        text += (f" {len(skipped)} case{' was' if len(skipped) == 1 else 's were'} skipped on "
                 "both sides and not judged.")
    return text


# --- tables --------------------------------------------------------------------------------

_SIGNIFICANT_HEAD = ("Case", "Verdict", "Ratio", "95% CI", "q", "Baseline p50 ms",
                     "Candidate p50 ms", "Accuracy drift")
_CASES_HEAD = ("Case", "Verdict", "Ratio", "95% CI", "q", "Baseline p50 ms",
               "Candidate p50 ms", "Note")
_RESULTS_HEAD = ("Case", "Status", "p50 ms", "95% CI ms", "p99 ms", "Samples")


def _head(columns: Sequence[str], numeric: Sequence[int], tag: MachineTag | None = None) -> str:
    if tag is not None:  # a report of several machines: every row names its machine
        columns, numeric = ("Machine", *columns), [i + 1 for i in numeric]
    rule = "|" + "".join("---:|" if i in numeric else "---|" for i in range(len(columns)))
    return table_row(columns) + "\n" + rule


def _row(cells: Sequence[str], item: Mapping[str, Any], tag: MachineTag | None) -> str:
    return table_row(cells if tag is None else [tag(item), *cells])


def _case_name(case: Mapping[str, Any]) -> str:
    """The case id, as summary.json, regressions.md and --filter know it (its matching key
    glued a problem size's JSON onto it and dropped the sweep point)."""
    return escape(case.get("label") or case.get("key"))


def _interval(low: object, high: object) -> str:
    if isinstance(low, (int, float)) and isinstance(high, (int, float)):
        return f"{number_text(low)} – {number_text(high)}"
    return "n/a"


def _figures(case: Mapping[str, Any]) -> list[str]:
    mode = case.get("gpu_mode")
    suffix = f" ({escape(mode, 20)})" if isinstance(mode, str) else ""
    return [number_text(case.get("ratio")), _interval(case.get("ci_low"), case.get("ci_high")),
            number_text(case.get("q_value"), 2), number_text(case.get("baseline_p50_ms")) + suffix,
            number_text(case.get("candidate_p50_ms")) + suffix]


def _verdict_cell(case: Mapping[str, Any], bold: bool) -> str:
    verdict = escape(verdict_text(case), 60)
    return f"**{verdict}**" if bold else verdict


def _drift_cell(case: Mapping[str, Any]) -> str:
    drift = section(case, "accuracy_drift")
    if drift.get("flagged") is not True:
        return "–"
    return (f"**{escape(drift.get('metric'), 40)} {number_text(drift.get('baseline'), 3)} → "
            f"{number_text(drift.get('candidate'), 3)}**")


def _significant_rows(cases: Sequence[Mapping[str, Any]], summary: Mapping[str, Any],
                      tag: MachineTag | None) -> list[str]:
    """By impact, largest first; with several machines, within each machine."""
    ranked = sorted((c for c in cases if _significant(c)), key=impact, reverse=True)
    return [_row([_case_name(c), _verdict_cell(c, True), *_figures(c), _drift_cell(c)], c, tag)
            for c in (grouped(ranked, summary) if tag else ranked)]


def _case_rows(cases: Sequence[Mapping[str, Any]], tag: MachineTag | None) -> list[str]:
    return [_row([_case_name(c), _verdict_cell(c, False), *_figures(c),
                  escape(c.get("note"), NOTE_CHARS) if c.get("note") else ""], c, tag)
            for c in cases]


def _result_rows(results: Sequence[Mapping[str, Any]], tag: MachineTag | None) -> list[str]:
    rows = []
    for r in results:
        timing = section(r, "timing")
        low, high = ci95_bounds(r)
        samples = r.get("samples_ms", timing.get("samples_ms"))
        rows.append(_row([escape(r.get("case_id")), escape(r.get("status"), 40),
                          number_text(timing.get("latency_ms_p50")) + mode_suffix(r),
                          _interval(low, high),
                          number_text(timing.get("latency_ms_p99")),
                          str(len(samples)) if isinstance(samples, list) else "n/a"], r, tag))
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
    return code_text(value, HEX, 12) if value else "n/a"


def _runs_table(inputs: ReportInputs) -> str:
    env = inputs.environment
    head_commit = section(env, "git").get("commit")
    comparison = inputs.comparison
    if machine_tag(inputs.summary) is not None:  # each machine's own row
        return "\n".join([_head(("", "Head"), ()), table_row(("Commit", _commit(head_commit))),
                          "", machines_run_table(inputs.summary)])
    if comparison is None:
        rows = [("Commit", _commit(head_commit)), ("Machine", _machine(env)),
                ("Fingerprint", code_text(env.get("fingerprint"), TOKEN))]
        return "\n".join([_head(("", "Head"), ()), *(table_row(r) for r in rows)])
    base, cand = section(comparison, "baseline"), section(comparison, "candidate")
    pairs = [("Commit", _commit(base.get("commit")), _commit(head_commit or cand.get("commit"))),
             ("Source", escape(base.get("source")), escape(cand.get("source"))),
             ("Machine", escape(base.get("machine")), _machine(env)),
             ("Fingerprint", code_text(base.get("fingerprint"), TOKEN),
              code_text(env.get("fingerprint") or cand.get("fingerprint"), TOKEN))]
    return "\n".join([_head(("", "Baseline", "Head"), ()), *(table_row(r) for r in pairs)])


def _run_blocks(inputs: ReportInputs) -> list[str]:
    results = mappings(inputs.summary.get("results"))
    statuses = [r.get("status") for r in results]
    counts = ", ".join(f"{statuses.count(s)} {s}" for s in RUN_STATUSES
                       if s != "invalid" or "invalid" in statuses)
    version = escape(inputs.summary.get("kernbench_version"), 40)
    blocks = ["#### Run", _runs_table(inputs),
              f"kernbench {version}; {len(results)} case{'' if len(results) == 1 else 's'} in "
              f"this run: {counts}."]
    problems = [r for r in results if r.get("status") in PROBLEM_STATUSES]
    if problems:
        rows = [table_row([escape(r.get("case_id")), escape(r.get("status"), 40),
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
    url = check_run_url(run_url)
    link = [f"[Workflow run]({url})"] if url else []
    comparison = inputs.comparison
    verdict = _verdict_blocks(comparison, inputs.summary)
    tag = machine_tag(inputs.summary)
    title = [MARKER + "\n### kernbench", *([fork_notice(fork)] if fork else [])]
    cases = mappings(dig(comparison, "cases"))
    compared = comparison is not None and comparison.get("baseline_note") is None
    parts = _Parts(
        top=[*title, *verdict],
        significant_head=_head(_SIGNIFICANT_HEAD, (2, 4, 5, 6), tag),
        significant=_significant_rows(cases, inputs.summary, tag) if compared else [],
        table_title="All cases" if compared else "All results",
        table_head=(_head(_CASES_HEAD, (2, 4, 5, 6), tag) if compared
                    else _head(_RESULTS_HEAD, (2, 4, 5), tag)),
        rows=_case_rows(cases, tag) if compared else _result_rows(mappings(
            inputs.summary.get("results")), tag),
        bottom=[*_run_blocks(inputs), *link],
    )
    fallback = "\n\n".join([*title, verdict[0],
                            "_The details do not fit the comment size limit; see the run's "
                            "report._", *link]) + "\n"
    return _fit(parts, max_chars, fallback)
