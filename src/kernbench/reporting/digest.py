"""The regression digest: what summary.md says about a comparison (comparison.json), as data.

regressions.md lists every case; the digest keeps the verdict, the counts per verdict, the
settings that judged them and the significant changes, largest first (see :func:`_impact`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernbench.reporting.views import (
    comparison_label,
    dig,
    fmt_num,
    mappings,
    number,
    ratio_impact,
    section,
    significant,
    verdict_text,
)

__all__ = ["VERDICTS", "Change", "RegressionDigest", "regression_digest"]

VERDICTS = ("regressed", "improved", "unchanged", "inconclusive", "new", "missing")
"""kernbench.analysis.compare.VERDICTS, repeated so that reading documents does not import numpy."""


@dataclass(frozen=True)
class Change:
    """A significant change against the baseline (ratio = candidate / baseline p50)."""

    case_id: str
    verdict: str
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    q_value: float | None
    baseline_p50_ms: float | None
    candidate_p50_ms: float | None
    accuracy_drift: str | None = None


@dataclass(frozen=True)
class RegressionDigest:
    """What summary.md says about comparison.json; regressions.md has every case."""

    verdict: str
    regression: bool
    compared: bool
    counts: tuple[tuple[str, int], ...]
    changes: tuple[Change, ...]
    threshold: float | None
    alpha: float | None
    baseline_commit: str | None


def regression_digest(comparison: Mapping[str, Any] | None) -> RegressionDigest | None:
    """The verdict, counts and significant changes of a comparison; None without one."""
    if not comparison:
        return None
    settings = comparison.get("settings") or {}
    counts = comparison.get("counts") or {}
    changes = sorted((_change(c) for c in mappings(comparison.get("cases")) if significant(c)),
                     key=_impact)
    return RegressionDigest(
        verdict=str(comparison.get("verdict") or "n/a"),
        regression=bool(comparison.get("regression")),
        compared=not comparison.get("baseline_note"),
        counts=tuple((v, int(counts.get(v) or 0)) for v in VERDICTS),
        changes=tuple(changes), threshold=number(settings.get("threshold")),
        alpha=number(settings.get("alpha")),
        baseline_commit=dig(comparison, "baseline", "commit"))


def _change(case: Mapping[str, Any]) -> Change:
    drift = section(case, "accuracy_drift")
    drift_text = (f"{drift.get('metric')} {fmt_num(number(drift.get('baseline')), 3)} → "
                  f"{fmt_num(number(drift.get('candidate')), 3)}") if drift.get("flagged") else None
    return Change(case_id=comparison_label(case),
                  verdict=verdict_text(case), ratio=number(case.get("ratio")),
                  ci_low=number(case.get("ci_low")), ci_high=number(case.get("ci_high")),
                  q_value=number(case.get("q_value")),
                  baseline_p50_ms=number(case.get("baseline_p50_ms")),
                  candidate_p50_ms=number(case.get("candidate_p50_ms")),
                  accuracy_drift=drift_text)


def _impact(change: Change) -> tuple[float, str]:
    """Largest change first (|log ratio|); unknown ratios first, as regressions.md does."""
    return -ratio_impact(change.ratio), change.case_id
