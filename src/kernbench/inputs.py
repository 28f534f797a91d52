"""Reading earlier results for comparison: a report directory, a summary.json, or a history
record (``.jsonl.gz``), each into case results plus facts about the run."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernbench.errors import KernbenchError
from kernbench.model import CaseResult
from kernbench.schema import migrate
from kernbench.serialize import result_from_dict


@dataclass(frozen=True)
class LoadedRun:
    results: list[CaseResult]
    meta: dict[str, Any]
    """source, commit, fingerprint, machine, started_at: for the comparison's header."""


def load_run(path: Path) -> LoadedRun:
    """Results of a run from a report directory, its summary.json or a history record."""
    target = path / "summary.json" if path.is_dir() else path
    if not target.is_file():
        raise KernbenchError(f"{path}: no such result file (expected a report directory, "
                             "a summary.json or a history .jsonl.gz)")
    try:
        raw = target.read_bytes()
        if target.name.endswith(".gz"):
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8")
        document = json.loads(text.splitlines()[0] if target.name.endswith(".jsonl.gz")
                              else text)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError, IndexError) as exc:
        raise KernbenchError(f"{target}: cannot read results: {exc}") from exc
    if not isinstance(document, dict):
        raise KernbenchError(f"{target}: not a kernbench result file (expected a JSON object)")
    return run_from_document(migrate(document, str(target)), str(target))


def run_from_document(document: Mapping[str, Any], source: str) -> LoadedRun:
    """A summary.json document or a history record, already migrated."""
    try:
        results = [result_from_dict(_as_record(r)) for r in document.get("results", [])]
    except (KeyError, TypeError, ValueError) as exc:
        raise KernbenchError(f"{source}: malformed result record: {exc!r}") from exc
    return LoadedRun(results, _meta(document, source))


def _as_record(entry: Mapping[str, Any]) -> dict[str, Any]:
    """History records keep results compact (samples at the top level); make them records."""
    if "timing" in entry:
        return dict(entry)
    timing = {"samples_ms": entry.get("samples_ms") or [],
              "process_sample_counts": entry.get("process_sample_counts") or []}
    return {**entry, "timing": timing}


def _meta(document: Mapping[str, Any], source: str) -> dict[str, Any]:
    env = document.get("environment") or {}
    git = document.get("git") or env.get("git") or {}
    machine = document.get("machine") or {}
    cpu = machine.get("cpu") or (env.get("cpu") or {}).get("model")
    gpus = machine.get("gpus") or [g.get("name") for g in env.get("gpus") or []
                                   if isinstance(g, dict)]
    described = ", ".join(str(x) for x in [cpu, *gpus] if x) or None
    thresholds = document.get("regression_thresholds")
    return {"source": source, "commit": git.get("short_commit") or git.get("commit"),
            "regression_thresholds": thresholds if isinstance(thresholds, dict) else {},
            "branch": git.get("branch"),
            "fingerprint": document.get("fingerprint") or env.get("fingerprint"),
            "machine": described,
            "started_at": document.get("started_at") or document.get("created_at")}
