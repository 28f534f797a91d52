"""The verdict line of a comparison (kernbench.reporting.regressions.headline)."""

from __future__ import annotations

from kernbench.analysis.compare import CaseComparison
from kernbench.reporting.regressions import headline


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
