"""One finding of a run (:mod:`kernbench.reporting.findings`) and the group summary.md lists
it under."""

from __future__ import annotations

from dataclasses import dataclass

FINDING_GROUPS = {
    "fastest": "Fastest", "slowest": "Slowest", "implementations": "Implementations",
    "unstable": "Unstable",
    "accuracy_failure": "Accuracy failures", "failure": "Anomalies",
    "narrow_slower": "Anomalies", "tail_latency": "Anomalies", "memory_growth": "Anomalies",
    "busy_machine": "Caveats", "output_precision": "Caveats", "precision_unread": "Caveats",
}  # fmt: skip


@dataclass(frozen=True)
class Finding:
    """One fact worth a reader's attention; `value` is its key number (p50, ratio, ...)."""

    kind: str
    case_id: str
    message: str
    value: float | None = None

    @property
    def group(self) -> str:
        return FINDING_GROUPS.get(self.kind, "Anomalies")
