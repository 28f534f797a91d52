"""What every report format is rendered from: the JSON documents of one run, never live objects.

A run directory holds ``summary.json`` (with the results and their raw samples), ``env.json``
and, when the run was compared with a baseline, ``comparison.json``. History records (see
:mod:`kernbench.results.history`) of the same machine add trends. :func:`load_report_inputs` reads
them back, so ``kernbench report DIR`` renders exactly what the run itself rendered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kernbench.errors import KernbenchError
from kernbench.results.schema import read_document, started_before_run

__all__ = ["ReportInputs", "load_report_inputs", "machine_history"]


@dataclass(frozen=True)
class ReportInputs:
    """The documents of one run. Treat the mappings as read-only.

    * `summary`: summary.json (``results`` holds one record per case, raw samples included);
    * `environment`: env.json (falls back to the summary's own copy);
    * `comparison`: comparison.json when the run was compared with a baseline, else None;
    * `history`: history records of this machine, newest first (may be empty).
    """

    summary: Mapping[str, Any]
    environment: Mapping[str, Any]
    comparison: Mapping[str, Any] | None = None
    history: Sequence[Mapping[str, Any]] = field(default_factory=tuple)

    @property
    def results(self) -> list[Mapping[str, Any]]:
        return list(self.summary.get("results") or [])


def _read(path: Path) -> dict[str, Any] | None:
    from kernbench.results.files import read_json_object

    return read_json_object(path) if path.exists() else None


def load_report_inputs(run_dir: Path, history_root: Path | None = None,
                       history_limit: int = 200) -> ReportInputs:
    """The documents of the run in `run_dir`; KernbenchError when summary.json is unusable.

    With `history_root` (a repository root), history records of the run's machine fingerprint
    are loaded from there, newest first, at most `history_limit` of them.
    """
    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():
        raise KernbenchError(f"{summary_path}: no such file; is {run_dir} a kernbench output "
                             "directory?")
    summary = read_document(summary_path)
    if not isinstance(summary.get("results"), list):
        raise KernbenchError(f"{summary_path}: not a kernbench summary (expected a JSON object "
                             "with a 'results' list)")
    if summary.get("complete") is False:
        summary = {**summary, "results": _finished_records(run_dir, summary)}
    environment = _read(run_dir / "env.json") or dict(summary.get("environment") or {})
    comparison = _read(run_dir / "comparison.json")
    history: list[dict[str, Any]] = []
    if history_root is not None:
        history = machine_history(history_root, environment, history_limit,
                                  until=summary.get("started_at"))
    return ReportInputs(summary, environment, comparison, tuple(history))


def _finished_records(run_dir: Path, summary: Mapping[str, Any]) -> list[Any]:
    """The records of a run that did not finish: its kernels/*.json, which it rewrites as cases
    finish (summary.json of a killed run lists none of them), where they hold more cases;
    never a record that started before the run did (an earlier run's, left in the folder)."""
    listed, began = list(summary["results"]), summary.get("started_at")
    found: list[Any] = []
    for path in sorted((run_dir / "kernels").glob("*.json")):
        results = read_document(path).get("results")
        found.extend(r for r in (results if isinstance(results, list) else [])
                     if not (isinstance(r, Mapping)
                             and started_before_run(r.get("started_at"), began)))
    return found if len(found) > len(listed) else listed


def machine_history(root: Path, environment: Mapping[str, Any], limit: int = 200,
                    until: object = None) -> list[dict[str, Any]]:
    """The history records of `environment`'s machine under `root`, newest first; with
    `until` (a run's ``started_at``), only the runs that started no later than it: a report
    rendered again later shows the history its run had, not runs made since as its past."""
    from kernbench.results.history import load_records

    fingerprint = environment.get("fingerprint")
    if not fingerprint:
        return []
    records = load_records(root, fingerprint=str(fingerprint),
                           limit=None if until else limit, on_error=lambda message: None)
    end = instant(until)
    if end is not None:
        records = [r for r in records if (instant(run_start(r)) or end) <= end]
    return records[:limit]


def run_start(record: Mapping[str, Any]) -> object:
    """When a history record's run started (records without it: when the record was made)."""
    run = record.get("run")
    return (run.get("started_at") if isinstance(run, Mapping) else None) \
        or record.get("created_at")


def instant(text: object) -> datetime | None:
    """An ISO time (:func:`~kernbench.results.history_names.parse_instant`), or None where
    `text` is not one."""
    from kernbench.results.history_names import parse_instant

    try:
        return parse_instant(str(text))
    except ValueError:
        return None
