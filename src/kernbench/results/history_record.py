"""One history record: built from a run's documents, encoded as one gzipped JSON line, decoded.

A record is built from a run's ``summary.json`` and ``env.json`` by :func:`history_record`:
who ran what where (git commit, machine fingerprint and testbed, settings) and, per case, the
raw samples (rounded to 6 significant digits), their median and the accuracy verdict.
Everything else in the summary can be derived again from the samples, so it is left out.
``testbed`` (the ``--testbed`` name; None where the run had none) came after the first schema-3
records: a reader takes a record without it as one without a testbed (``record.get``).

Decoding skips, with a message, what it cannot use: corrupt or truncated gzip data, lines that
are not JSON, records of a newer ``schema_version`` (older ones go through
:func:`kernbench.results.schema.migrate`).
"""

from __future__ import annotations

import gzip
import json
import math
import statistics
import zlib
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from kernbench import __version__
from kernbench.errors import KernbenchError
from kernbench.results.fingerprint import machine_fingerprint
from kernbench.results.history_names import format_created_at
from kernbench.results.model import case_id_of
from kernbench.results.schema import SCHEMA_VERSION, migrate

__all__ = ["RECORD_KIND", "ErrorSink", "check_record", "decompress_history", "encode_record",
           "history_record", "parse_record_lines"]

RECORD_KIND = "kernbench-history"
SETTINGS_KEYS = ("iterations", "warmup", "seed", "processes", "interleave", "protocol",
                 "backends", "precisions", "filters", "timeout_s", "fake_call_ms", "gpu_timing",
                 "inject_slowdown")
"""Settings copied into a record (machine-specific paths such as `root` are left out)."""
ACCURACY_KEYS = ("rmse", "max_error", "relative_error", "passed")
GIT_KEYS = ("commit", "short_commit", "branch", "dirty")
GPU_MODE_KEYS = ("mode", "requested_mode", "reason", "flush", "calls_per_sample")
"""What a history record keeps of each GPU timing mode (no samples)."""

ErrorSink = Callable[[str], None]
"""Receives one message per file, line or record that reading had to skip."""


def history_record(run_summary: Mapping[str, Any], environment: Mapping[str, Any], *,
                   created_at: datetime | str | None = None) -> dict[str, Any]:
    """A run's compact history record, from its summary.json and env.json documents.

    `created_at` defaults to now. Raises KernbenchError for a summary of a newer schema.
    """
    summary = migrate(dict(run_summary), "summary.json")
    env = _merged_environment(summary, environment)
    settings = summary.get("settings") or {}
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": RECORD_KIND,
        "created_at": format_created_at(created_at),
        "git": _git_section(env.get("git")),
        "fingerprint": _fingerprint(env),
        "testbed": env.get("testbed") if isinstance(env.get("testbed"), str) else None,
        "machine": _machine(env),
        "kernbench_version": summary.get("kernbench_version") or __version__,
        "settings": {key: settings[key] for key in SETTINGS_KEYS if key in settings},
        "run": {"started_at": summary.get("started_at"),
                "finished_at": summary.get("finished_at"), "complete": summary.get("complete")},
        "regression_thresholds": dict(summary.get("regression_thresholds") or {}),
        "results": [_compact_result(r) for r in summary.get("results") or []],
        **({"machine_state": env["machine_state"]} if env.get("machine_state") else {}),
    }


def _merged_environment(summary: Mapping[str, Any],
                        environment: Mapping[str, Any]) -> dict[str, Any]:
    """env.json's values, falling back to the summary's copy of the environment."""
    merged = dict(summary.get("environment") or {})
    merged.update({k: v for k, v in environment.items() if v is not None})
    return merged


def _git_section(git: Any) -> dict[str, Any]:
    git = git if isinstance(git, Mapping) else {}
    return {key: git.get(key) for key in GIT_KEYS}


def _fingerprint(env: Mapping[str, Any]) -> str:
    found = env.get("fingerprint")
    return str(found) if found else machine_fingerprint(env)


def _gpu_names(env: Mapping[str, Any]) -> list[str]:
    return [str(g.get("name")) for g in env.get("gpus") or [] if isinstance(g, Mapping)]


def _machine(env: Mapping[str, Any]) -> dict[str, Any]:
    found = env.get("cpu")
    cpu: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    gpus = _gpu_names(env)
    return {"cpu": cpu.get("model"), "logical_cores": cpu.get("logical_cores"), "gpus": gpus,
            "sku": _sku(env, cpu, gpus)}


def _sku(env: Mapping[str, Any], cpu: Mapping[str, Any], gpus: list[str]) -> str | None:
    """env's own `sku` when it has one, else a label: `2x NVIDIA H100` or the CPU and cores."""
    if isinstance(env.get("sku"), str) and env["sku"]:
        return str(env["sku"])
    if gpus:
        names = sorted(set(gpus))
        return " + ".join(f"{gpus.count(name)}x {name}" for name in names)
    if cpu.get("model"):
        cores = cpu.get("logical_cores")
        return f"{cpu['model']} ({cores} cores)" if cores else str(cpu["model"])
    return None


def _round6(value: Any) -> Any:
    """A float to 6 significant digits (non-finite -> None); other values unchanged."""
    if isinstance(value, float):
        return float(f"{value:.6g}") if math.isfinite(value) else None
    return value


def _compact_result(record: Mapping[str, Any]) -> dict[str, Any]:
    timing = record.get("timing") or {}
    samples = [float(x) for x in timing.get("samples_ms") or []]
    counts = timing.get("process_sample_counts") or ([len(samples)] if samples else [])
    accuracy = record.get("accuracy") or {}
    return {
        "kernel_name": record.get("kernel_name"),
        "backend": record.get("backend"),
        "precision": record.get("precision"),
        "problem_size": record.get("problem_size"),
        "status": record.get("status"),
        "samples_ms": [_round6(x) for x in samples],
        "process_sample_counts": [int(c) for c in counts],
        "inner_loops": int(timing.get("inner_loops") or 0),
        **({"warmup_s": _round6(float(timing["warmup_s"]))}
           if isinstance(timing.get("warmup_s"), (int, float)) else {}),
        "latency_ms_p50": _round6(float(statistics.median(samples))) if samples else None,
        "accuracy": {key: _round6(accuracy.get(key)) for key in ACCURACY_KEYS},
        **({"machine": record["machine"]} if record.get("machine") else {}),
        **({"gpu_timing": _gpu_modes(timing["gpu_timing"])} if timing.get("gpu_timing") else {}),
        **_sweep_case_id(record),
        **({"implementation": record["implementation"]} if record.get("implementation") else {}),
    }


def _gpu_modes(raw: Mapping[str, Any]) -> dict[str, Any]:
    """What a comparison needs of a GPU record's timing modes: which mode each figure is, not
    every mode's samples (the primary mode's are `samples_ms`)."""
    found = raw.get("modes")
    modes: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    return {"requested": raw.get("requested"), "primary": raw.get("primary"),
            "modes": {str(name): {key: mode.get(key) for key in GPU_MODE_KEYS}
                      for name, mode in modes.items() if isinstance(mode, Mapping)}}


def _sweep_case_id(record: Mapping[str, Any]) -> dict[str, Any]:
    """``case_id`` of a bench.yaml sweep point (it names the point); the others' rebuild."""
    case_id = record.get("case_id")
    plain = case_id_of(str(record.get("kernel_name")), str(record.get("backend")),
                       str(record.get("precision")))
    return {"case_id": case_id} if isinstance(case_id, str) and case_id != plain else {}



# --- encoding and decoding ---------------------------------------------------------------


def encode_record(record: Mapping[str, Any]) -> bytes:
    """One compact JSON line, gzipped with a fixed mtime (same record -> same bytes)."""
    line = json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n"
    return gzip.compress(line.encode("utf-8"), mtime=0)


def check_record(record: Mapping[str, Any]) -> None:
    if record.get("kind") != RECORD_KIND:
        raise ValueError(f"not a history record: kind is {record.get('kind')!r}, "
                         f"expected {RECORD_KIND!r}")
    if not isinstance(record.get("schema_version"), int):
        raise ValueError("not a history record: no integer schema_version")
    created_at = record.get("created_at")
    if not isinstance(created_at, str):
        raise ValueError("not a history record: no created_at string")
    format_created_at(created_at)  # raises ValueError for a time it cannot parse


def decompress_history(data: bytes, source: str, on_error: ErrorSink) -> bytes | None:
    if not data.startswith(b"\x1f\x8b"):
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        on_error(f"{source}: corrupt or truncated gzip data ({exc}); file skipped")
        return None


def _valid_record(obj: Any, source: str, on_error: ErrorSink) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        on_error(f"{source}: not a JSON object; skipped")
        return None
    if obj.get("kind") != RECORD_KIND:
        on_error(f"{source}: not a kernbench history record (kind {obj.get('kind')!r}); skipped")
        return None
    try:
        record: dict[str, Any] = migrate(obj, source)
    except KernbenchError as exc:
        on_error(f"{exc}; skipped")
        return None
    if not isinstance(record.get("created_at"), str) or not isinstance(
            record.get("results"), list):
        on_error(f"{source}: record without created_at or results; skipped")
        return None
    return record


def parse_record_lines(text: bytes, source: str, on_error: ErrorSink,
                 needle: bytes | None = None) -> list[dict[str, Any]]:
    """Records of JSON Lines text; lines without `needle` are dropped without parsing."""
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.split(b"\n"), start=1):
        if not line.strip() or (needle is not None and needle not in line):
            continue
        where = f"{source}:{number}"
        try:
            obj = json.loads(line)
        except ValueError as exc:
            on_error(f"{where}: not valid JSON ({exc}); line skipped")
            continue
        record = _valid_record(obj, where, on_error)
        if record is not None:
            records.append(record)
    return records

