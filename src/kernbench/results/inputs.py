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
from kernbench.results.model import CaseResult
from kernbench.results.schema import migrate
from kernbench.results.serialize import result_from_dict


@dataclass(frozen=True)
class LoadedRun:
    results: list[CaseResult]
    meta: dict[str, Any]
    """source, commit, fingerprint, machine, started_at: for the comparison's header."""


def load_run(path: Path) -> LoadedRun:
    """Results of a run from a report directory, its summary.json or a history record."""
    target = path / "summary.json" if path.is_dir() else path
    if not target.is_file():
        what = "a folder without summary.json" if path.is_dir() else "no such result file"
        raise KernbenchError(f"{path}: {what} (expected a report directory, a summary.json "
                             "or a history .jsonl.gz)")
    try:
        raw = target.read_bytes()
        if target.name.endswith(".gz"):
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8")
        if target.name.endswith(".jsonl.gz") and not text.strip():
            raise KernbenchError(f"{target}: cannot read results: the history record is "
                                 "empty (expected one JSON line)")
        document = json.loads(text.splitlines()[0] if target.name.endswith(".jsonl.gz")
                              else text)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise KernbenchError(f"{target}: cannot read results: {exc}") from exc
    if not isinstance(document, dict):
        raise KernbenchError(f"{target}: not a kernbench result file (expected a JSON object)")
    if "kernel_name" in document:  # kernels/NAME.json: one kernel's records, no run around
        raise KernbenchError(f"{target}: one kernel's file of a report set (kernels/NAME.json), "
                             "not a run: give the report directory, its summary.json or a "
                             "history record")
    if "results" not in document:  # env.json, comparison.json, a manifest: not a run
        kind = document.get("kind")
        raise KernbenchError(f"{target}: key 'results': expected a run's results (a report "
                             f"directory, its summary.json or a history record), got "
                             f"{'a ' + str(kind) if kind else 'a document without them'}")
    return run_from_document(migrate(document, str(target)), str(target))


def run_from_document(document: Mapping[str, Any], source: str) -> LoadedRun:
    """A summary.json document or a history record, already migrated."""
    records = records_from_entries(document.get("results", []), source)
    return LoadedRun(records, _meta(document, source))


STATUS_NAMES = ("ok", "failed", "skipped", "timeout", "invalid")
_TEXT_FIELDS = ("kernel_name", "backend", "precision", "status")
_MAPPING_FIELDS = ("timing", "memory", "energy", "accuracy", "output", "device_info", "worker",
                   "work", "gpu_state", "golden", "profile")


def records_from_entries(entries: object, source: str) -> list[CaseResult]:
    """Case records from a document's `results`; KernbenchError naming the file and the key
    of the first entry that is not a record (a wrong type anywhere would surface later, in a
    report, as a traceback)."""
    if not isinstance(entries, list):
        raise KernbenchError(f"{source}: key 'results': expected a list of case records "
                             f"(got {type(entries).__name__})")
    records: list[CaseResult] = []
    seen: dict[tuple[str, object, object], int] = {}
    for index, entry in enumerate(entries):
        problem = _record_problem(entry)
        if problem is None:
            try:
                record = result_from_dict(_as_record(entry))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                # one record per case and machine (a merge keeps machines apart): which
                # copy a comparison used would be chance
                key = (record.case_id, entry.get("fingerprint"), entry.get("testbed"))
                if key in seen:
                    raise KernbenchError(
                        f"{source}: key 'results[{index}]': case {record.case_id} is also "
                        f"results[{seen[key]}]; a run has one record per case and machine")
                seen[key] = index
                records.append(record)
                continue
        raise KernbenchError(f"{source}: key 'results[{index}]': not a case record ({problem})")
    return records


def _record_problem(entry: object) -> str | None:
    """What makes `entry` unusable as a case record, or None."""
    if not isinstance(entry, dict):
        return f"expected a JSON object, got {type(entry).__name__}"
    for key in _TEXT_FIELDS:
        if not isinstance(entry.get(key), str):
            return f"'{key}' must be text, got {entry.get(key)!r}"[:200]
    if entry["status"] not in STATUS_NAMES:
        return f"'status' must be one of {', '.join(STATUS_NAMES)}, got {entry['status']!r}"
    for key in _MAPPING_FIELDS:
        if entry.get(key) is not None and not isinstance(entry[key], dict):
            return f"'{key}' must be a mapping or null, got {type(entry[key]).__name__}"
    timing = entry.get("timing") or entry
    for key in ("samples_ms", "warmup_ms", "process_sample_counts"):
        values = timing.get(key)
        if values is not None and not (isinstance(values, list) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
                for v in values)):
            return f"'{key}' must be a list of numbers, none negative"
    return None


def _as_record(entry: Mapping[str, Any]) -> dict[str, Any]:
    """History records keep results compact (samples at the top level); make them records."""
    if "timing" in entry:
        return dict(entry)
    timing = {"samples_ms": entry.get("samples_ms") or [],
              "process_sample_counts": entry.get("process_sample_counts") or [],
              "gpu_timing": entry.get("gpu_timing")}
    return {**entry, "timing": timing}


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _meta(document: Mapping[str, Any], source: str) -> dict[str, Any]:
    env = _mapping(document.get("environment"))
    git = _mapping(document.get("git") or env.get("git"))
    machine = _mapping(document.get("machine"))
    cpu = machine.get("cpu") or _mapping(env.get("cpu")).get("model")
    env_gpus = env.get("gpus")
    gpus = machine.get("gpus") or [g.get("name") for g in _list(env_gpus)
                                   if isinstance(g, dict)]
    described = ", ".join(str(x) for x in [cpu, *(gpus if isinstance(gpus, list) else [])]
                          if x) or None
    thresholds = document.get("regression_thresholds")
    return {"source": source, "commit": _text(git.get("short_commit") or git.get("commit")),
            "regression_thresholds": thresholds if isinstance(thresholds, dict) else {},
            "branch": _text(git.get("branch")), "dirty": git.get("dirty") is True,
            "fingerprint": _text(document.get("fingerprint") or env.get("fingerprint")),
            "machine": described,
            "started_at": _text(document.get("started_at") or document.get("created_at")),
            "machine_state": _mapping(document.get("machine_state")
                                      or env.get("machine_state")) or None,
            "complete": document.get("complete") is not False,
            "fake_call_ms": _mapping(document.get("settings")).get("fake_call_ms"),
            "runner": _text(_mapping(document.get("settings")).get("runner")),
            "completeness": _mapping(document.get("completeness")) or None}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: object) -> str | None:
    """A field shown in a comparison's header: text, or None for anything else."""
    return value if isinstance(value, str) else None
