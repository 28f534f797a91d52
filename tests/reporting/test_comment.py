"""The PR comment: layout (golden), size cap, escaping of hostile data, determinism."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

import pytest

from kernbench.errors import KernbenchError
from kernbench.reporting.bundle import ReportInputs, load_report_inputs
from kernbench.reporting.comment import MARKER, MIN_MAX_CHARS, render_comment
from kernbench.reporting.comment_text import escape
from kernbench.reporting.validate import validate_report_dir
from support.reports import FIXTURE, assert_golden, load_fixture

RUN_URL = "https://github.com/octo/kernels/actions/runs/4242"

HOSTILE = [
    "</details>",
    "<img src=x onerror=alert(1)>",
    "| col |",
    "```",
    "`code`",
    "@octocat",
    "hi @octo-org/team and a@b.com",
    "[link](javascript:alert(1))",
    "![img](https://evil.example/x.png)",
    "line one\nline two\r\n| a | b |",
    "<!-- kernbench-comment -->",
    "# heading",
    "&#64;octocat &lt;b&gt;",
    "https://evil.example and www.evil.example",
    "back\\slash\\| pipe",
    "~~strike~~ **bold** _em_",
    "bidi \u202egnp.exe\u202c and nul \x00 and \u2028 sep",
    "lone \ud800 surrogate",
    "$\\color{red}{\\Huge BIG}$ and $$x$$",
    "fixes #123, see GH-42 and acme/kernels#7",
    "revert c305d4b8da5b0123456789abcdef0123456789ab (was 4f2e1d0)",
    "#1#2 @@x GH-3",
]
REFERENCE = re.compile(r"(?i)(#|\bGH-)[0-9]")
HEX_RUN = re.compile(r"[0-9a-fA-F]{7,}")


def outside_code(text: str) -> str:
    """`text` without its `code spans` (GitHub links nothing inside them)."""
    return re.sub(r"(?<!\\)`[^`\n]*`", "", text)


def unescaped(text: str, char: str) -> int:
    """How many times `char` occurs in `text` not preceded by an odd run of backslashes."""
    found, backslashes = 0, 0
    for c in text:
        if c == char and backslashes % 2 == 0:
            found += 1
        backslashes = backslashes + 1 if c == "\\" else 0
    return found


def tags(text: str) -> list[str]:
    """The HTML tags and comments in `text` (an unescaped `<` before a letter, `/` or `!`)."""
    found, backslashes = [], 0
    for i, c in enumerate(text):
        if c == "<" and backslashes % 2 == 0 and re.match(r"<[A-Za-z/!]", text[i:i + 2]):
            found.append(re.match(r"<[^ >]*>?", text[i:]).group(0))  # type: ignore[union-attr]
        backslashes = backslashes + 1 if c == "\\" else 0
    return found


def table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def assert_tables_well_formed(text: str) -> None:
    """Each table row has as many cells as its header and ends its line."""
    width = None
    for line in text.splitlines():
        if not line.startswith("|"):
            width = None
            continue
        assert line.endswith(" |") or line.endswith("|"), line
        cells = unescaped(line, "|")
        width = cells if width is None else width
        assert cells == width, line


def assert_details_balanced(text: str) -> None:
    assert text.count("<details>") == text.count("</details>") <= 1
    if "<details>" in text:
        assert text.index("<details>") < text.index("</details>")


# --- layout --------------------------------------------------------------------------------

def test_golden_comment() -> None:
    text = render_comment(load_fixture(), run_url=RUN_URL)
    assert_golden("comment.md", text)


def test_bot_flow_validate_then_render() -> None:
    """What `kernbench comment DIR --validate` does: the same text as the golden file."""
    validate_report_dir(FIXTURE)
    text = render_comment(load_report_inputs(FIXTURE), run_url=RUN_URL)
    assert text == render_comment(load_fixture(), run_url=RUN_URL)


def test_marker_is_first_line() -> None:
    for inputs in (load_fixture(), load_fixture(comparison=False)):
        assert render_comment(inputs).splitlines()[0] == MARKER


def test_sections_in_order() -> None:
    text = render_comment(load_fixture(), run_url=RUN_URL)
    order = ["**Regression: 2 regressed**", "| regressed | improved |",
             "#### Significant changes", "<details>", "</details>", "#### Run", "kernbench 0.1.0",
             "| stuck\\[cpu,native\\] | timeout", f"[Workflow run]({RUN_URL})"]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    assert_tables_well_formed(text)
    assert_details_balanced(text)


def test_significant_rows_sorted_by_impact() -> None:
    text = render_comment(load_fixture())
    significant = text.split("#### Significant changes")[1].split("<details>")[0]
    rows = [line for line in table_lines(significant) if "**regressed**" in line]
    # named by their case ids, as summary.json and regressions.md name them
    assert [r.split(" | ")[0] for r in rows] == ["| gemm\\[cpu,fp64\\]", "| gemm\\[cpu,fp32\\]"]


def test_no_comparison() -> None:
    text = render_comment(load_fixture(comparison=False))
    assert "**No comparison: this run was not compared with a baseline**" in text
    assert "this is not a pass" in text
    assert "Significant changes" not in text
    assert "<details><summary>All results (15)</summary>" in text
    assert "| Commit | `c305d4b8da5b` |" in text
    assert "Workflow run" not in text


def test_missing_baseline_says_why() -> None:
    inputs = load_fixture()
    assert inputs.comparison is not None
    comparison = {**inputs.comparison, "cases": [], "baseline_note": "no history for @octocat"}
    text = render_comment(ReportInputs(inputs.summary, inputs.environment, comparison))
    assert "**No comparison: no history for @\u200boctocat**" in text
    assert "| regressed |" not in text


def test_comparison_warnings_shown() -> None:
    inputs = load_fixture()
    assert inputs.comparison is not None
    warnings = ["different machines\n# not a heading", *(f"w{i}" for i in range(9))]
    comparison = {**inputs.comparison, "warnings": warnings}
    text = render_comment(ReportInputs(inputs.summary, inputs.environment, comparison))
    assert "> Warning: different machines # not a heading\n>\n> Warning: w0\n" in text
    assert "> Warning: w3\n>\n> … and 5 more warnings\n" in text
    assert text.index("> Warning:") < text.index("| regressed |")


def test_an_unfinished_run_says_so_under_the_verdict() -> None:
    inputs = load_fixture(comparison=False)
    summary = {**inputs.summary, "complete": False,
               "completeness": {"missing_shards": ["1/2"], "missing_cases": ["a", "b"]}}
    text = render_comment(ReportInputs(summary, inputs.environment, None))
    assert ("> Warning: Incomplete merge — not every case of the suite came back once (1 shards "
            "never came back; 2 planned cases have no record; see completeness in "
            "summary.json)") in text
    assert "Incomplete" not in render_comment(inputs)


def test_a_change_the_machine_checks_demoted_is_shown_with_what_it_looked_like() -> None:
    inputs = load_fixture()
    assert inputs.comparison is not None
    comparison = copy.deepcopy(dict(inputs.comparison))
    for case in comparison["cases"]:
        if case["verdict"] == "regressed":
            case.update(verdict="inconclusive", claimed="regressed")
    text = render_comment(ReportInputs(inputs.summary, inputs.environment, comparison))
    assert "**No regression; 2 changes inconclusive because the machine was busy or changed**" \
        in text
    significant = text.split("#### Significant changes")[1].split("<details>")[0]
    assert significant.count("**inconclusive (statistics alone: regressed)**") == 2


def test_failed_and_timed_out_cases_listed() -> None:
    text = render_comment(load_fixture())
    run = text.split("#### Run")[1]
    assert "7 ok, 2 failed, 1 timeout, 5 skipped." in run
    assert "| stuck\\[cpu,native\\] | timeout | process 1 of 8: timed out after 2 s" in run
    assert "rmsnorm\\[cuda" not in run  # skipped cases are counted, not listed


def test_deterministic() -> None:
    inputs = load_fixture()
    again = ReportInputs(copy.deepcopy(dict(inputs.summary)),
                         copy.deepcopy(dict(inputs.environment)),
                         copy.deepcopy(dict(inputs.comparison or {})))
    assert render_comment(inputs, run_url=RUN_URL) == render_comment(again, run_url=RUN_URL)
    assert render_comment(inputs, max_chars=5_000) == render_comment(inputs, max_chars=5_000)


# --- size cap ------------------------------------------------------------------------------

def synthetic(n_cases: int, n_regressed: int, name_chars: int = 40) -> ReportInputs:
    inputs = load_fixture()
    assert inputs.comparison is not None
    template = inputs.comparison["cases"][2]
    cases = []
    for i in range(n_cases):
        regressed = i < n_regressed
        cases.append({**template, "key": f"k{i:05d}{'x' * name_chars}[cpu,fp32]",
                      "label": f"k{i:05d}[cpu,fp32]",
                      "verdict": "regressed" if regressed else "unchanged",
                      "ratio": 1.2 + i / 10_000 if regressed else 1.0,
                      "note": f"note {i}"})
    comparison = {**inputs.comparison, "cases": cases}
    return ReportInputs(inputs.summary, inputs.environment, comparison)


def test_size_cap_drops_collapsed_rows_first() -> None:
    text = render_comment(synthetic(5_000, 30), run_url=RUN_URL)
    assert len(text) <= 60_000
    assert_details_balanced(text)
    assert_tables_well_formed(text)
    shown = text.split("<details>")[1].split("</details>")[0]
    kept = len(table_lines(shown)) - 2  # header and rule
    match = re.search(r"_(\d+) of 5000 rows were left out", text)
    assert match is not None and kept > 0 and kept + int(match.group(1)) == 5_000
    assert "#### Significant changes (30)" in text
    assert "largest of" not in text  # the significant table is whole
    assert text.rstrip().endswith(f"[Workflow run]({RUN_URL})")
    assert len(text) > 55_000  # it fills the space it has


def test_size_cap_then_drops_significant_rows() -> None:
    text = render_comment(synthetic(5_000, 5_000), max_chars=20_000)
    assert len(text) <= 20_000
    assert_details_balanced(text)
    assert_tables_well_formed(text)
    match = re.search(r"_Only the (\d+) largest of 5000 significant changes are shown", text)
    assert match is not None
    significant = text.split("#### Significant changes")[1].split("<details>")[0]
    assert len(table_lines(significant)) - 2 == int(match.group(1))
    assert "_5000 of 5000 rows were left out" in text
    # most impact first: the biggest ratios (the last cases) lead
    assert table_lines(significant)[2].startswith("| k04999")


def test_size_cap_with_huge_values() -> None:
    inputs = synthetic(500, 50, name_chars=100_000)
    for limit in (MIN_MAX_CHARS, 10_000, 65_536):
        text = render_comment(inputs, max_chars=limit, run_url=RUN_URL)
        assert len(text) <= limit
        assert text.splitlines()[0] == MARKER
        assert_details_balanced(text)
        assert_tables_well_formed(text)
        assert f"[Workflow run]({RUN_URL})" in text


def test_max_chars_too_small() -> None:
    with pytest.raises(KernbenchError, match="max-chars"):
        render_comment(load_fixture(), max_chars=100)


# --- hostile data --------------------------------------------------------------------------

@pytest.mark.parametrize("value", HOSTILE)
def test_escape_makes_text_inert(value: str) -> None:
    text = escape(value)
    for char in "|`<>[]*_&~$":
        assert unescaped(text, char) == 0, (char, text)
    assert "\n" not in text and "\r" not in text
    assert re.search(r"@[A-Za-z0-9]", text) is None
    assert "://" not in text and "www." not in text.lower()
    assert REFERENCE.search(text) is None and HEX_RUN.search(text) is None, text
    assert "\u202e" not in text and "\x00" not in text and "\ud800" not in text
    text.encode("utf-8")


def test_escape_defuses_references_but_keeps_the_text() -> None:
    text = escape("fixes #123 in acme/k#7, GH-42, commit c305d4b8da5b01")
    assert text.replace("\u200b", "") == "fixes #123 in acme/k#7, GH-42, commit c305d4b8da5b01"
    assert "#\u200b123" in text and "GH-\u200b42" in text and "c305d4\u200bb8da5b\u200b01" in text
    assert escape("# 5 and GH-x and beef") == "# 5 and GH-x and beef"  # not references


def test_escape_clips_long_values() -> None:
    text = escape("x" * 100_000)
    assert len(text) <= 201 and text.endswith("…")
    # a note is cut after a whole word, not in the middle of one ("(the defau…")
    words = escape("run --ab origin/main (the default rounds are thirty)", 40)
    assert words == "run --ab origin/main (the default…"
    assert escape(["not", "a", "scalar"]) == "n/a"
    assert escape(None) == "n/a"


def hostile_inputs(value: str) -> ReportInputs:
    inputs = load_fixture()
    assert inputs.comparison is not None

    def poison(case: Mapping[str, Any]) -> dict[str, Any]:
        return {**case, "key": value, "label": value, "note": value, "verdict": value
                if case["verdict"] == "inconclusive" else case["verdict"],
                "accuracy_drift": {"metric": value, "baseline": 0.0, "candidate": 1.0,
                                   "flagged": True}}

    comparison = {**inputs.comparison,
                  "cases": [poison(c) for c in inputs.comparison["cases"]],
                  "baseline": {"commit": value, "machine": value, "source": value,
                               "fingerprint": value},
                  "settings": {"threshold": value, "alpha": value}}
    summary = {**inputs.summary, "kernbench_version": value,
               "results": [{**r, "case_id": value, "reason": value, "status": r["status"]}
                           for r in inputs.summary["results"]]}
    environment = {**inputs.environment, "cpu": {"model": value}, "fingerprint": value,
                   "git": {"commit": value}, "gpus": [{"name": value}, {"name": value}]}
    return ReportInputs(summary, environment, comparison)


@pytest.mark.parametrize("value", [*HOSTILE, "x" * 100_000])
def test_hostile_strings_are_escaped(value: str) -> None:
    text = render_comment(hostile_inputs(value), run_url=RUN_URL)
    assert len(text) <= 60_000
    assert text.splitlines()[0] == MARKER
    assert text.count(MARKER) == 1
    assert_details_balanced(text)
    assert_tables_well_formed(text)
    assert unescaped(text, "[") == unescaped(text, "]") == 1  # only [Workflow run](...)
    assert re.search(r"@[A-Za-z0-9]", text) is None
    assert REFERENCE.search(text) is None
    assert HEX_RUN.search(outside_code(text)) is None
    assert tags(text) == ["<!--", "<details>", "<summary>", "</summary>", "</details>"]
    assert unescaped(text, "`") == 0  # no commit looked like a commit: none in backticks
    text.encode("utf-8")


def test_hostile_run_url_refused() -> None:
    for url in ("javascript:alert(1)", "https://x/)[a](javascript:1)", "https://a b",
                "https://x/" + "a" * 2_000, 'https://x/"onmouseover'):
        with pytest.raises(KernbenchError, match="run-url"):
            render_comment(load_fixture(), run_url=url)


def test_fork_notice_under_the_title_and_never_dropped() -> None:
    inputs = synthetic(5_000, 5_000)
    for limit in (MIN_MAX_CHARS, 60_000):
        text = render_comment(inputs, max_chars=limit, fork="mallory/kernels")
        assert len(text) <= limit
        lines = text.splitlines()
        assert lines[:4] == [MARKER, "### kernbench", "", "> [!WARNING]"]
        assert "fork `mallory/kernels`" in lines[4] and "untrusted" in lines[4]
    assert "[!WARNING]" not in render_comment(inputs)


@pytest.mark.parametrize("fork", ["@octocat/x#1", "a/b\n# heading", "</details>"])
def test_hostile_fork_name_is_escaped(fork: str) -> None:
    text = render_comment(load_fixture(), fork=fork)
    notice = text.splitlines()[3:5]
    assert notice[0] == "> [!WARNING]" and notice[1].startswith("> This pull request")
    assert re.search(r"@[A-Za-z0-9]", text) is None and REFERENCE.search(text) is None
    assert_details_balanced(text)


def test_non_finite_and_huge_numbers_render_as_na() -> None:
    inputs = load_fixture()
    assert inputs.comparison is not None
    bad = [float("inf"), float("nan"), 10**400, -float("inf")]
    cases = [{**c, "ratio": bad[i % 4], "ci_low": bad[i % 4], "q_value": bad[i % 4]}
             for i, c in enumerate(inputs.comparison["cases"])]
    comparison = {**inputs.comparison, "cases": cases, "settings": {"threshold": 10**400}}
    text = render_comment(ReportInputs(inputs.summary, inputs.environment, comparison))
    assert "inf" not in text.replace("inconclusive", "") and "nan" not in text
    assert "beyond the n/a% threshold" in text


def test_unvalidated_odd_types_do_not_crash() -> None:
    inputs = load_fixture()
    comparison = {"cases": [{"verdict": ["x"], "ratio": "1.5", "key": {"a": 1}}, "junk"],
                  "baseline_note": None, "settings": "junk", "baseline": 5}
    summary = {"results": [{"status": 3, "timing": "fast"}, 7], "kernbench_version": None}
    environment = {"cpu": None, "gpus": "many", "git": []}
    text = render_comment(ReportInputs(summary, environment, comparison))
    assert text.splitlines()[0] == MARKER
    assert_tables_well_formed(text)
    del inputs
