"""Check an untrusted report directory before anything renders it.

A PR's benchmark run uploads its report directory as an artifact; a trusted workflow downloads
it and posts a comment. :func:`validate_report_dir` is the gate in between: no links, no special
files, bounded sizes (checked with ``os.lstat`` before a byte is read), and summary.json,
env.json and comparison.json matching the JSON schemas below, which describe what the renderers
read. Extra keys are allowed, so a newer minor field does not break an older bot; strings and
arrays that reach a comment are capped. Messages name the file, the JSON path and what was
expected, and show offending data only through a short ``repr`` (it cannot forge log lines).
"""

from __future__ import annotations

import functools
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from kernbench.analysis.compare import VERDICTS
from kernbench.errors import KernbenchError
from kernbench.results.model import STATUSES
from kernbench.results.schema import SCHEMA_VERSION

__all__ = ["COMPARISON_SCHEMA", "ENVIRONMENT_SCHEMA", "SUMMARY_SCHEMA", "validate_report_dir"]

MAX_ENTRIES = 100_000
"""Files and directories a report directory may hold."""
MAX_CASES = 100_000
MAX_SAMPLES = 10_000_000
NAME_CHARS = 1_000
TEXT_CHARS = 100_000

_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _string(max_length: int = NAME_CHARS) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length}


def _nullable(kind: str, **extra: Any) -> dict[str, Any]:
    return {"type": [kind, "null"], **extra}


def _object(properties: dict[str, Any], required: tuple[str, ...] = (),
            nullable: bool = False) -> dict[str, Any]:
    return {"type": ["object", "null"] if nullable else "object", "required": list(required),
            "properties": properties, "additionalProperties": True}


_NUMBER_OR_NULL = _nullable("number")
_TEXT_OR_NULL = _nullable("string", maxLength=TEXT_CHARS)
_NAME_OR_NULL = _nullable("string", maxLength=NAME_CHARS)
_NUMBERS = {"type": "array", "maxItems": MAX_SAMPLES, "items": {"type": "number"}}
_COUNT = {"type": "integer", "minimum": 0}
_VERSION = {"type": "integer", "minimum": 1}

_LATENCIES = ("latency_ms_p50", "latency_ms_p90", "latency_ms_p99", "latency_ms_mean",
              "latency_ms_std", "latency_ms_min", "latency_ms_max", "throughput_ops_per_sec")
_TIMING = _object({
    **dict.fromkeys(_LATENCIES, _NUMBER_OR_NULL),
    "latency_ms_p50_ci95": _nullable("array", minItems=2, maxItems=2,
                                     items={"type": "number"}),
    "iterations": _nullable("integer", minimum=0),
    "inner_loops": _nullable("integer", minimum=0),
    "samples_ms": _NUMBERS, "warmup_ms": _NUMBERS,
    "process_sample_counts": {"type": "array", "maxItems": MAX_CASES, "items": _COUNT},
    "timer": _NAME_OR_NULL,
}, required=("latency_ms_p50",), nullable=True)
_MEASURED = {"source": _NAME_OR_NULL, "reason": _TEXT_OR_NULL}
_WARNING = _object({"code": _string(), "message": _string(TEXT_CHARS)})
_RESULT = _object({
    "kernel_name": _string(), "case_id": _string(), "backend": _string(),
    "precision": _string(), "status": {"enum": list(STATUSES)},
    "timing": _TIMING,
    "memory": _object({"peak_mb": _NUMBER_OR_NULL, "allocated_mb": _NUMBER_OR_NULL,
                       **_MEASURED}, nullable=True),
    "energy": _object({"energy_j": _NUMBER_OR_NULL, "power_w": _NUMBER_OR_NULL, **_MEASURED},
                      nullable=True),
    "accuracy": _object({"rmse": _NUMBER_OR_NULL, "max_error": _NUMBER_OR_NULL,
                         "passed": _nullable("boolean"), "reason": _TEXT_OR_NULL},
                        nullable=True),
    "success": {"type": "boolean"},
    "reason": _TEXT_OR_NULL,
    "warnings": {"type": "array", "maxItems": 1_000, "items": _WARNING},
    "framework": _NAME_OR_NULL, "kernel_path": _NAME_OR_NULL, "device": _NAME_OR_NULL,
    "work": _nullable("object"), "golden": _nullable("object"),
    "samples_ms": _NUMBERS,
}, required=("kernel_name", "case_id", "backend", "precision", "status", "timing"))

_GPU = _object({"name": _NAME_OR_NULL, "vendor": _NAME_OR_NULL,
                "driver_version": _NAME_OR_NULL, "memory_total_mb": _NUMBER_OR_NULL})
_GIT = _object({"commit": _NAME_OR_NULL, "short_commit": _NAME_OR_NULL,
                "branch": _NAME_OR_NULL, "dirty": _nullable("boolean"),
                "reason": _TEXT_OR_NULL}, nullable=True)

_ENVIRONMENT = _object({  # env.json, and the copy summary.json carries
    "schema_version": _VERSION,
    "os": _object({"system": _NAME_OR_NULL, "release": _NAME_OR_NULL,
                   "machine": _NAME_OR_NULL}),
    "cpu": _object({"model": _NAME_OR_NULL, "logical_cores": _nullable("integer")}),
    "python": _object({"version": _NAME_OR_NULL, "implementation": _NAME_OR_NULL}),
    "libraries": {"type": "object", "maxProperties": 1_000,
                  "additionalProperties": _NAME_OR_NULL},
    "git": _GIT,
    "gpus": {"type": "array", "maxItems": 1_000, "items": _GPU},
    "gpus_reason": _TEXT_OR_NULL,
    "hostname": _NAME_OR_NULL,
    "fingerprint": _NAME_OR_NULL,
})

ENVIRONMENT_SCHEMA: dict[str, Any] = {"$schema": _DRAFT, "title": "env.json", **_ENVIRONMENT}
"""env.json: the machine, libraries and commit of the run."""

SUMMARY_SCHEMA: dict[str, Any] = {
    "$schema": _DRAFT, "title": "summary.json",
    **_object({
        "schema_version": _VERSION,
        "kernbench_version": _string(100),
        "started_at": _NAME_OR_NULL, "finished_at": _NAME_OR_NULL,
        "complete": {"type": "boolean"},
        "settings": {"type": "object"},
        "environment": _ENVIRONMENT,
        "counts": {"type": "object", "additionalProperties": _COUNT},
        "results": {"type": "array", "maxItems": MAX_CASES, "items": _RESULT},
    }, required=("schema_version", "results")),
}
"""summary.json: the run's settings, counts and one record per case (raw samples included)."""

_SIDE = _object({"source": _NAME_OR_NULL, "commit": _NAME_OR_NULL, "branch": _NAME_OR_NULL,
                 "machine": _NAME_OR_NULL, "fingerprint": _NAME_OR_NULL,
                 "started_at": _NAME_OR_NULL})
_DRIFT = _object({"metric": _string(), "baseline": _NUMBER_OR_NULL,
                  "candidate": _NUMBER_OR_NULL, "delta": _NUMBER_OR_NULL,
                  "threshold": _NUMBER_OR_NULL, "flagged": {"type": "boolean"}},
                 required=("flagged",), nullable=True)
_CASE = _object({
    "key": _string(), "label": _string(), "kernel_name": _string(), "backend": _string(),
    "precision": _string(), "verdict": {"enum": list(VERDICTS)},
    "threshold": _NUMBER_OR_NULL,
    **dict.fromkeys(("ratio", "ci_low", "ci_high", "p_value", "q_value", "baseline_p50_ms",
                     "candidate_p50_ms"), _NUMBER_OR_NULL),
    "method": _NAME_OR_NULL,
    "processes": _object({"baseline": _COUNT, "candidate": _COUNT},
                         required=("baseline", "candidate")),
    "accuracy_drift": _DRIFT,
    "note": _TEXT_OR_NULL,
}, required=("key", "label", "verdict", "ratio", "ci_low", "ci_high", "q_value",
             "baseline_p50_ms", "candidate_p50_ms", "processes"))

COMPARISON_SCHEMA: dict[str, Any] = {
    "$schema": _DRAFT, "title": "comparison.json",
    **_object({
        "schema_version": _VERSION,
        "kind": {"const": "kernbench-comparison"},
        "verdict": _string(),
        "regression": {"type": "boolean"},
        "baseline_note": _TEXT_OR_NULL,
        "baseline": _SIDE, "candidate": _SIDE,
        "settings": _object({"threshold": {"type": "number"}, "alpha": {"type": "number"},
                             "accuracy_drift": {"type": "number"}}),
        "counts": _object(dict.fromkeys(VERDICTS, _COUNT), required=VERDICTS),
        "cases": {"type": "array", "maxItems": MAX_CASES, "items": _CASE},
        "skipped_both": {"type": "array", "maxItems": MAX_CASES, "items": _string()},
        "warnings": {"type": "array", "maxItems": 1_000, "items": _string(TEXT_CHARS)},
    }, required=("schema_version", "verdict", "baseline_note", "baseline", "candidate",
                 "settings", "counts", "cases")),
}
"""comparison.json: the verdict, counts per verdict and one comparison per case."""

_SCHEMAS: dict[str, dict[str, Any]] = {
    "summary.json": SUMMARY_SCHEMA, "env.json": ENVIRONMENT_SCHEMA,
    "comparison.json": COMPARISON_SCHEMA,
}
_TYPE_WORDS = {"object": "an object", "array": "an array", "string": "a string",
               "integer": "an integer", "number": "a number", "boolean": "true or false",
               "null": "null"}


# --- the directory -------------------------------------------------------------------------

def _short(value: object, limit: int = 80) -> str:
    """`value` for a message: a one-line repr, clipped (hostile data cannot forge lines)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _name(path: Path) -> str:
    """A path for a message; names inside the artifact are hostile too (newlines, escapes)."""
    text = str(path)
    return text if text.isprintable() and len(text) <= 300 else _short(text, 300)


def _scan(root: Path, max_file_bytes: int, max_total_bytes: int) -> None:
    """Walk `root` without following anything; every size comes from lstat, nothing is read."""
    if root.is_symlink() or not root.is_dir():
        what = ("a symlink" if root.is_symlink() else "no such folder" if not root.exists()
                else "not a folder")
        raise KernbenchError(f"{_name(root)}: expected a report directory, got {what}")
    pending, total, entries = [root], 0, 0
    while pending:
        directory = pending.pop()
        for path, info in _entries(directory):
            entries += 1
            if entries > MAX_ENTRIES:
                raise KernbenchError(f"{_name(root)}: more than {MAX_ENTRIES} entries")
            if stat.S_ISLNK(info.st_mode):
                raise KernbenchError(f"{_name(path)}: a symbolic link; report artifacts may "
                                     "not contain links")
            if stat.S_ISDIR(info.st_mode):
                pending.append(path)
                continue
            if not stat.S_ISREG(info.st_mode):
                raise KernbenchError(f"{_name(path)}: not a regular file or directory")
            if info.st_size > max_file_bytes:
                raise KernbenchError(f"{_name(path)}: {info.st_size} bytes, over the limit of "
                                     f"{max_file_bytes} bytes per file")
            total += info.st_size
            if total > max_total_bytes:
                raise KernbenchError(f"{_name(root)}: over the limit of {max_total_bytes} "
                                     f"bytes in all (at {_name(path)})")


def _entries(directory: Path) -> list[tuple[Path, os.stat_result]]:
    """The entries of `directory` with their lstat, in name order."""
    try:
        return [(directory / name, os.lstat(directory / name))
                for name in sorted(os.listdir(directory))]
    except OSError as error:
        raise KernbenchError(f"{_name(directory)}: cannot be listed "
                             f"({_short(error.strerror, 100)})") from None


MAX_INTEGER = 2**63
"""The largest integer magnitude accepted: beyond it a number no longer fits a float or int64."""


def _number_problem(value: object) -> tuple[str, str] | None:
    """(expected, got) when a parsed JSON number is refused: NaN, an infinity (1e309 and beyond
    parse as one), or an integer too large for a float or int64; None for anything else."""
    if isinstance(value, float) and not math.isfinite(value):
        return "a finite number", f"{value!r}; 1e309 and larger read as inf"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
        return "an integer of at most 2**63 in magnitude", f"{len(str(abs(value)))} digits"
    return None


def _first_bad_number(document: object) -> tuple[str, str, str] | None:
    """(JSON path, expected, got) of the first refused number in `document`, or None."""
    pending: list[tuple[str, object]] = [("$", document)]
    while pending:
        where, value = pending.pop()
        if isinstance(value, dict):
            pending.extend((f"{where}.{key}" if isinstance(key, str) and key.isidentifier()
                            else f"{where}[{_short(key, 40)}]", item)
                           for key, item in reversed(value.items()))
        elif isinstance(value, list):
            pending.extend((f"{where}[{i}]", item) for i, item in reversed(list(enumerate(value))))
        else:
            problem = _number_problem(value)
            if problem is not None:
                return where, *problem
    return None


def _load(path: Path) -> object:
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except OSError as error:
        raise KernbenchError(f"{_name(path)}: cannot be read "
                             f"({_short(error.strerror, 100)})") from None
    except UnicodeDecodeError as error:
        raise KernbenchError(f"{_name(path)}: not UTF-8 text ({error.reason} at byte "
                             f"{error.start})") from None
    except (ValueError, RecursionError) as error:
        reason = str(error) if isinstance(error, ValueError) else "nested too deeply"
        raise KernbenchError(f"{_name(path)}: not valid JSON ({_short(reason, 200)})") from None


# --- the documents -------------------------------------------------------------------------

@functools.cache
def _validator(name: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_SCHEMAS[name])


def _check_version(path: Path, document: object) -> None:
    version = document.get("schema_version") if isinstance(document, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise KernbenchError(f"{path}: $.schema_version: {version} is newer than this kernbench "
                             f"reads ({SCHEMA_VERSION}); the bot's kernbench must be upgraded")


def _expected(error: Any) -> str:
    kind, value = error.validator, error.validator_value
    if kind == "type":
        types = [value] if isinstance(value, str) else value
        return " or ".join(_TYPE_WORDS.get(t, t) for t in types)
    if kind == "enum":
        return "one of " + ", ".join(map(str, value))
    if kind == "const":
        return repr(value)
    if kind == "required":
        return "this key to be present"
    if kind == "maxLength":
        return f"a string of at most {value} characters"
    if kind in ("maxItems", "minItems"):
        return f"{'at most' if kind == 'maxItems' else 'at least'} {value} items"
    if kind == "maxProperties":
        return f"at most {value} keys"
    if kind in ("minimum", "exclusiveMinimum"):
        return f"a number {'>=' if kind == 'minimum' else '>'} {value}"
    return _short(error.message, 200)


def _got(error: Any) -> str:
    instance = error.instance
    if error.validator == "required":
        return "missing"
    if isinstance(instance, str):
        return f"a string of {len(instance)} characters" if len(instance) > 80 else repr(instance)
    if isinstance(instance, (list, dict)):
        noun = "items" if isinstance(instance, list) else "keys"
        return f"{_TYPE_WORDS['array' if isinstance(instance, list) else 'object']} of " \
               f"{len(instance)} {noun}"
    return _short(instance)


def _where(error: Any) -> str:
    path = str(error.json_path)
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        path += f".{missing[0]}" if missing else ""
    return path if path.isprintable() and len(path) <= 200 else _short(path, 200)


def _check_document(path: Path, name: str) -> None:
    document = _load(path)
    bad = _first_bad_number(document)
    if bad is not None:
        raise KernbenchError(f"{path}: {bad[0]}: expected {bad[1]} (got {bad[2]})")
    _check_version(path, document)
    error = next(iter(_validator(name).iter_errors(document)), None)
    if error is not None:
        raise KernbenchError(f"{path}: {_where(error)}: expected {_expected(error)} "
                             f"(got {_got(error)})")


def validate_report_dir(path: Path, *, max_file_bytes: int = 20_000_000,
                        max_total_bytes: int = 50_000_000) -> None:
    """Raise KernbenchError unless `path` is a safe, well-formed kernbench report directory.

    Refused: a symlink or special file anywhere, a file over `max_file_bytes`, more than
    `max_total_bytes` in all (sizes from ``os.lstat``, before reading), no summary.json, a
    summary.json / env.json / comparison.json (the last two when present) that is not JSON or
    does not match its schema, or a schema_version newer than this kernbench reads.
    """
    path = Path(path)
    _scan(path, max_file_bytes, max_total_bytes)
    if not (path / "summary.json").is_file():
        raise KernbenchError(f"{path / 'summary.json'}: no such file; expected a kernbench "
                             "report directory")
    for name in _SCHEMAS:
        if (path / name).exists():
            _check_document(path / name, name)
