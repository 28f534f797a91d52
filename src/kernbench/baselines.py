"""Baselines for a run: append it to the history store, or compare it with the newest history
record at a git ref for this machine (``--save-history``, ``--compare-to REF``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernbench.compare import Thresholds
from kernbench.gitref import history_at_ref
from kernbench.history import append_record, history_record
from kernbench.inputs import LoadedRun, run_from_document
from kernbench.model import RunResult
from kernbench.schema import migrate
from kernbench.serialize import summary_dict


def save_history(root: Path, run: RunResult) -> Path:
    """Append the run's compact record under `root`/benchmarks/history; never rewrites."""
    return append_record(root, history_record(summary_dict(run), run.environment))


def compare_to_ref(root: Path, ref: str, run: RunResult, output_dir: Path,
                   thresholds: Thresholds, alpha: float) -> dict[str, Any]:
    """Compare `run` with the newest record for this machine at `ref`. Without one, the
    comparison document says why in plain words (no baseline is not a pass)."""
    from kernbench.api import write_run_comparison

    fingerprint = run.environment.get("fingerprint")
    record, message = history_at_ref(root, ref, fingerprint)
    candidate = run_from_document(summary_dict(run), "this run")
    if record is None:
        baseline = LoadedRun([], {"source": f"history at {ref}", "fingerprint": fingerprint})
        return write_run_comparison(baseline, candidate, output_dir, thresholds, alpha,
                                    note=message)
    baseline = run_from_document(migrate(record, f"history at {ref}"),
                                 f"history at {ref}: {message}")
    return write_run_comparison(baseline, candidate, output_dir, thresholds, alpha)
