"""kernbench.reporting.recommendations: comparison advice in the entry point's own knobs."""

from __future__ import annotations

from typing import Any

from kernbench.reporting.recommendations import comparison_advice, recommendations

COMPARISON: dict[str, Any] = {
    "baseline": {"commit": "c305d4b8da5b"},
    "cases": [{"key": "a[cpu,fp32]", "kernel_name": "a", "backend": "cpu", "precision": "fp32",
               "verdict": "regressed", "ratio": 1.5},
              {"key": "b[cpu,fp32]", "kernel_name": "b", "backend": "cpu", "precision": "fp32",
               "verdict": "inconclusive", "ratio": 1.2}]}


def test_a_pytest_session_is_advised_in_the_plugins_knobs_and_never_the_clis() -> None:
    worse, unsure = comparison_advice(COMPARISON, "pytest")
    text = worse[0].message + unsure[0].message
    assert "--ab" not in text and "--processes" not in text
    assert "confirm by measuring both again on a quiet machine with the marker's processes=3 " \
           "(with isolation='fork') or more before reverting." in worse[0].message
    assert unsure[0].message.endswith("Compare with more worker processes per case (the "
                                      "marker's processes=3 (with isolation='fork') or more).")


def test_a_run_is_advised_the_ab_run_and_the_runners_setting_decides() -> None:
    worse, unsure = comparison_advice(COMPARISON)
    assert "interleaved A/B run (--ab REF) before reverting" in worse[0].message
    assert unsure[0].message.endswith("(--processes) or with an interleaved A/B run (--ab REF).")
    advice = recommendations({"results": [], "settings": {"runner": "pytest"}}, COMPARISON)
    assert all("--ab" not in a.message for a in advice) and len(advice) == 2
