"""The versioned result JSON: its version and the migrations that bring older files to it.

Result files carry ``schema_version``. Readers accept the current version and migrate older ones
step by step through :data:`MIGRATIONS`; a newer version is refused with a clear message.
This module imports nothing else of the package but :mod:`kernbench.errors`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernbench.errors import KernbenchError
from kernbench.results.vocabulary import GPU_BACKENDS

SCHEMA_VERSION = 3
"""Version of summary.json, kernels/<name>.json, kernel_manifest.json, env.json and history
records. 2: GPU records say how they were timed (``timing.gpu_timing``, ``timing.mode``).
3: every record names its machine (``fingerprint``, ``testbed``), the environment its
``testbed``, ``settings.shards`` lists each shard's identity instead of its path, and a
history record's results keep ``inner_loops`` (0 where an older record did not say)."""


# --- versioned result JSON -------------------------------------------------------------

Migration = Callable[[dict[str, Any]], dict[str, Any]]

SCHEMA_1_GPU_REASON = ("measured before kernbench had GPU timing modes (schema 1): a host "
                       "synchronise after every call, inside the timed region")


def _schema_1_gpu_timing(entry: dict[str, Any], timing: dict[str, Any]) -> dict[str, Any]:
    """What a schema-1 GPU record measured, said the schema-2 way: the ``sync`` mode."""
    flushed = entry.get("l2_flush")
    return {"requested": "sync", "primary": "sync", "modes": {"sync": {
        "mode": "sync", "requested_mode": None, "reason": SCHEMA_1_GPU_REASON,
        "flush": {"bytes": None, "per": "sample" if flushed else "none" if flushed is False
                  else None},
        "calls_per_sample": int(timing.get("inner_loops") or 1),
        "samples_us": [float(s) * 1e3 for s in timing.get("samples_ms") or ()],
        "discarded_blocks": 0, "discard_reasons": {}}}}


def _gpu_records_say_sync(document: dict[str, Any]) -> dict[str, Any]:
    """1 -> 2: every GPU record of a summary, kernel file or history record was timed with a
    host synchronise per call; it now says so, so it is never compared with another mode."""
    entries = document.get("results")
    for entry in entries if isinstance(entries, list) else ():  # a reader names a bad shape
        if not isinstance(entry, dict) or entry.get("backend") not in GPU_BACKENDS:
            continue
        nested = entry.get("timing")
        timing: dict[str, Any] = nested if isinstance(nested, dict) else entry
        if not timing.get("samples_ms"):  # it never ran: nothing was timed in any mode
            continue
        timing.setdefault("gpu_timing", _schema_1_gpu_timing(entry, timing))
        if timing is not entry:  # a history record's compact result keeps samples at the top
            timing.setdefault("mode", "sync")
    return document



def _v2_to_v3(document: dict[str, Any]) -> dict[str, Any]:
    """Versions 1 and 2 had no testbed: the host name stands for it (the default of version
    3), and each record takes its machine from the document's environment (a summary,
    env.json) or the record's own fingerprint (a history record); merged summaries listed
    shard paths."""
    env = document.get("environment")
    env = env if isinstance(env, dict) else document
    if "hostname" in env or "fingerprint" in env:
        env.setdefault("testbed", env.get("hostname"))
    machine = {"fingerprint": env.get("fingerprint") or document.get("fingerprint"),
               "testbed": env.get("testbed")}
    results = document.get("results")
    history = document.get("kind") == "kernbench-history"
    for record in results if isinstance(results, list) else []:
        if isinstance(record, dict):
            for key, value in machine.items():
                record.setdefault(key, value)
            if history:
                record.setdefault("inner_loops", 0)
    settings = document.get("settings")
    if isinstance(settings, dict) and isinstance(settings.get("shards"), list):
        settings["shards"] = [
            entry if isinstance(entry, dict) else
            {"source": str(entry), "shard": None, "host": None, "testbed": None,
             "fingerprint": None, "scheduler": {}}
            for entry in settings["shards"]]
    return document


MIGRATIONS: dict[int, Migration] = {1: _gpu_records_say_sync, 2: _v2_to_v3}
"""`MIGRATIONS[n]` turns a version-n document into version n+1."""


def migrate(document: dict[str, Any], source: str) -> dict[str, Any]:
    """Bring a result document to :data:`SCHEMA_VERSION`, or explain why it cannot be read."""
    version = document.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise KernbenchError(f"{source}: not a kernbench result file (no integer schema_version)")
    if version > SCHEMA_VERSION:
        raise KernbenchError(f"{source}: schema_version {version} is newer than this kernbench "
                             f"reads ({SCHEMA_VERSION}); upgrade kernbench")
    while version < SCHEMA_VERSION:
        document = MIGRATIONS[version](document)
        version += 1
        document["schema_version"] = version
    return document


def read_document(path: Path) -> dict[str, Any]:
    """A kernbench JSON document, migrated; KernbenchError naming the file otherwise."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise KernbenchError(f"{path}: cannot read: {exc}") from exc
    except ValueError as exc:
        raise KernbenchError(f"{path}: not valid JSON (truncated or corrupt?): {exc}") from exc
    if not isinstance(document, dict):
        raise KernbenchError(f"{path}: expected a JSON object, got {type(document).__name__}")
    return migrate(document, str(path))


def started_before_run(started_at: object, run_started_at: object) -> bool:
    """Whether a record in a run's folder started before that run did: an earlier run's, left
    in the folder, that must never be read back as this run's (by --resume, or by the report
    of a run that did not finish). Both are ISO times in UTC, so their text orders them; False
    where either is missing."""
    return (isinstance(started_at, str) and isinstance(run_started_at, str)
            and started_at < run_started_at)
