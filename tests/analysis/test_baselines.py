"""Tests for kernbench.analysis.baselines: the baseline side a history record at a git ref gives
a comparison (pure; reading git is gitref's, writing files is kernbench.api.baselines')."""

from __future__ import annotations

from kernbench.analysis.baselines import baseline_from_history
from kernbench.results.history_record import history_record

FP = "0123456789abcdef"


def test_no_record_gives_an_empty_baseline_and_says_why() -> None:
    baseline, note = baseline_from_history(None, "no history at main", "main", FP)
    assert baseline.results == []
    assert baseline.meta == {"source": "history at main", "fingerprint": FP}
    assert note == "no history at main"


def test_a_record_is_the_baseline_and_names_where_it_came_from() -> None:
    summary = {"schema_version": 1, "settings": {"iterations": 2},
               "results": [{"kernel_name": "gemm", "backend": "cpu", "precision": "fp32",
                            "status": "ok", "timing": {"samples_ms": [1.0, 2.0]}}]}
    record = history_record(summary, {"fingerprint": FP}, created_at="2026-01-01T00:00:00Z")
    baseline, note = baseline_from_history(record, "newest of 2 records", "main", FP)
    assert note is None
    assert [r.kernel_name for r in baseline.results] == ["gemm"]
    assert baseline.meta["source"] == "history at main: newest of 2 records"
