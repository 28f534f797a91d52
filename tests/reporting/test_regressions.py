"""The verdict line of a comparison (kernbench.reporting.regressions.headline)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernbench.analysis.compare import CaseComparison
from kernbench.reporting.regressions import headline
from kernbench.results.schema import SCHEMA_VERSION


def case(name: str, verdict: str) -> CaseComparison:
    return CaseComparison(key=name, kernel_name=name, backend="cpu", precision="fp32",
                          verdict=verdict, threshold=0.1)


def test_runs_without_a_case_in_common_are_no_comparison_not_a_pass() -> None:
    cases = [case("a", "missing"), case("b", "missing"), case("c", "new")]
    assert headline(cases, None) == ("No comparison: no case ran in both runs (1 only in "
                                     "the candidate, 2 only in the baseline)")
    assert headline([case("c", "new")], None).startswith("No comparison: ")


def test_one_compared_case_makes_a_verdict() -> None:
    assert headline([case("a", "missing"), case("b", "unchanged")], None) == "No regression"
    assert headline([case("a", "regressed"), case("b", "new")], None) == "Regression: 1 regressed"
    assert headline([], None) == "No regression"
    assert headline([case("a", "missing")], "no record at main") == \
        "No comparison: no record at main"


def test_regressions_md_says_which_side_had_uncommitted_changes(tmp_path: Path) -> None:
    """summary.md said it; regressions.md showed the bare commit, as if committed."""
    import json

    from kernbench.reporting.regressions import comparison_document, render_regressions
    from kernbench.results.inputs import load_run

    def side(name: str, dirty: bool) -> dict[str, Any]:
        document = {"schema_version": SCHEMA_VERSION, "results": [],
                    "environment": {"git": {"commit": name * 40, "short_commit": name * 12,
                                            "dirty": dirty}}}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        return load_run(path).meta

    document = comparison_document([case("a", "unchanged")], side("a", False), side("b", True),
                                   {"threshold": 0.1, "alpha": 0.05})
    line = next(x for x in render_regressions(document).splitlines() if x.startswith("| Commit"))
    assert line == f"| Commit | {'a' * 12} | {'b' * 12} (uncommitted changes) |"
