"""The benchmark history: one compact record per run, kept under ``benchmarks/history/``.

A record is built from a run's ``summary.json`` and ``env.json`` by :func:`history_record`:
who ran what where (git commit, machine fingerprint, settings) and, per case, the raw samples
(rounded to 6 significant digits), their median and the accuracy verdict. Everything else in
the summary can be derived again from the samples, so it is left out.

Storage is append-only. Each run gets a new gzipped JSON Lines file, sharded by date::

    benchmarks/history/YYYY/MM/DD/<created_at compact>-<short sha|nogit>-<fingerprint>.jsonl.gz

An existing file is never rewritten or appended to. The bytes are written to a hidden temporary
file first and then hard-linked to the final name, which fails instead of replacing, so no
partial file ever appears under a record's name (a name clash gets a ``-N`` counter suffix).

Reading skips, with a message, what it cannot use: corrupt or truncated gzip files, lines that
are not JSON, records of a newer ``schema_version`` (older ones go through
:func:`kernbench.results.schema.migrate`). The date and fingerprint in file names let
:func:`load_records` skip files without opening them.
"""

from __future__ import annotations

import fnmatch
import gzip
import json
import logging
import math
import os
import re
import secrets
import statistics
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from kernbench import __version__
from kernbench.errors import KernbenchError
from kernbench.measure.environment import machine_fingerprint
from kernbench.results.model import case_id_of
from kernbench.results.schema import SCHEMA_VERSION, migrate

__all__ = [
    "HISTORY_DIR", "RECORD_KIND", "SUFFIX", "ErrorSink", "HistoryName", "append_record",
    "encode_record", "format_created_at", "history_name", "history_record", "iter_records",
    "load_records", "load_records_with_errors", "name_fingerprint", "parse_history_name",
    "parse_record_bytes", "record_path",
]  # fmt: skip

HISTORY_DIR = "benchmarks/history"
RECORD_KIND = "kernbench-history"
SUFFIX = ".jsonl.gz"
SETTINGS_KEYS = ("iterations", "warmup", "seed", "processes", "protocol", "backends",
                 "precisions", "filters", "timeout_s", "fake_call_ms")
"""Settings copied into a record (machine-specific paths such as `root` are left out)."""
ACCURACY_KEYS = ("rmse", "max_error", "relative_error", "passed")
GIT_KEYS = ("commit", "short_commit", "branch", "dirty")
MAX_NAME_CLASHES = 1000

ErrorSink = Callable[[str], None]
"""Receives one message per file, line or record that reading had to skip."""

log = logging.getLogger(__name__)

_NAME = re.compile(
    r"^(?P<stamp>\d{8}T\d{9}Z)-(?P<commit>[0-9A-Za-z]+)-(?P<fingerprint>[0-9A-Za-z_]+)"
    r"(?:-(?P<counter>\d+))?\.jsonl\.gz$"
)
_LITERAL_KERNEL = re.compile(r"^[A-Za-z0-9_.-]+$")


# --- building a record -------------------------------------------------------------------


def format_created_at(moment: datetime | str | None = None) -> str:
    """``2024-05-01T12:34:56.789Z``: UTC, milliseconds, so strings sort like the times.

    A string is parsed as ISO 8601 (a trailing ``Z`` is accepted; no offset means UTC).
    """
    if moment is None:
        moment = datetime.now(timezone.utc)
    elif isinstance(moment, str):
        moment = datetime.fromisoformat(moment.strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


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
        "latency_ms_p50": _round6(float(statistics.median(samples))) if samples else None,
        "accuracy": {key: _round6(accuracy.get(key)) for key in ACCURACY_KEYS},
        **({"machine": record["machine"]} if record.get("machine") else {}),
        **_sweep_case_id(record),
        **({"implementation": record["implementation"]} if record.get("implementation") else {}),
    }


def _sweep_case_id(record: Mapping[str, Any]) -> dict[str, Any]:
    """``case_id`` of a bench.yaml sweep point (it names the point); the others' rebuild."""
    case_id = record.get("case_id")
    plain = case_id_of(str(record.get("kernel_name")), str(record.get("backend")),
                       str(record.get("precision")))
    return {"case_id": case_id} if isinstance(case_id, str) and case_id != plain else {}


# --- file names ------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryName:
    """What a record file's name says: when, which commit, which machine."""

    stamp: str
    """`created_at` compacted: 20240501T123456789Z."""
    commit: str
    fingerprint: str
    counter: int = 0

    @property
    def day(self) -> str:
        return f"{self.stamp[0:4]}-{self.stamp[4:6]}-{self.stamp[6:8]}"

    @property
    def created_at(self) -> str:
        s = self.stamp
        return f"{self.day}T{s[9:11]}:{s[11:13]}:{s[13:15]}.{s[15:18]}Z"

    @property
    def sort_key(self) -> tuple[str, int]:
        return self.stamp, self.counter


def parse_history_name(name: str) -> HistoryName | None:
    """The parts of a record file's base name, or None for a name this module did not make."""
    match = _NAME.match(name)
    if match is None:
        return None
    return HistoryName(match["stamp"], match["commit"], match["fingerprint"],
                       int(match["counter"] or 0))


def _name_part(value: Any, default: str, pattern: str) -> str:
    cleaned = re.sub(pattern, "_", str(value)) if value else ""
    return cleaned or default


def name_fingerprint(fingerprint: str | None) -> str:
    """A fingerprint as it appears in file names (16 hex digits pass unchanged)."""
    return _name_part(fingerprint, "unknown", r"[^0-9A-Za-z_]")


def history_name(record: Mapping[str, Any], counter: int = 0) -> str:
    """The base name of a record's file (`counter` > 0 only after a name clash)."""
    stamp = re.sub(r"[-:.]", "", format_created_at(record.get("created_at")))
    git = record.get("git") or {}
    commit = _name_part(git.get("short_commit") or (git.get("commit") or "")[:12], "nogit",
                        r"[^0-9A-Za-z]")
    fingerprint = name_fingerprint(record.get("fingerprint"))
    suffix = f"-{counter}" if counter else ""
    return f"{stamp}-{commit}-{fingerprint}{suffix}{SUFFIX}"


def record_path(root: Path, record: Mapping[str, Any], directory: str = HISTORY_DIR,
                counter: int = 0) -> Path:
    """Where :func:`append_record` puts `record` when the name is free."""
    name = history_name(record, counter)
    parsed = parse_history_name(name)
    assert parsed is not None, name
    year, month, day = parsed.day.split("-")
    return Path(root) / directory / year / month / day / name


# --- writing ---------------------------------------------------------------------------


def encode_record(record: Mapping[str, Any]) -> bytes:
    """One compact JSON line, gzipped with a fixed mtime (same record -> same bytes)."""
    line = json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n"
    return gzip.compress(line.encode("utf-8"), mtime=0)


def _check_record(record: Mapping[str, Any]) -> None:
    if record.get("kind") != RECORD_KIND:
        raise ValueError(f"not a history record: kind is {record.get('kind')!r}, "
                         f"expected {RECORD_KIND!r}")
    if not isinstance(record.get("schema_version"), int):
        raise ValueError("not a history record: no integer schema_version")
    created_at = record.get("created_at")
    if not isinstance(created_at, str):
        raise ValueError("not a history record: no created_at string")
    format_created_at(created_at)  # raises ValueError for a time it cannot parse


def append_record(root: Path, record: Mapping[str, Any], directory: str = HISTORY_DIR, *,
                  fsync: bool = True) -> Path:
    """Write `record` to a new file under `root/directory`; return its path.

    Never replaces or appends to an existing file. `fsync=False` skips flushing to disk (for
    bulk imports and tests).
    """
    _check_record(record)
    data = encode_record(record)
    folder = record_path(root, record, directory).parent
    folder.mkdir(parents=True, exist_ok=True)
    tmp = _write_temp(folder, data, fsync=fsync)
    try:
        for counter in range(MAX_NAME_CLASHES):
            target = folder / history_name(record, counter)
            if _publish(tmp, target):
                if fsync:
                    _fsync_directory(folder)
                return target
    finally:
        tmp.unlink(missing_ok=True)
    raise FileExistsError(f"{folder}: {MAX_NAME_CLASHES} files already take this record's name")


def _write_temp(folder: Path, data: bytes, *, fsync: bool) -> Path:
    """The bytes in a hidden file of `folder` (readers ignore names starting with a dot)."""
    tmp = folder / f".tmp-{os.getpid()}-{secrets.token_hex(6)}{SUFFIX}"
    try:
        with open(tmp, "xb") as handle:
            handle.write(data)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _publish(tmp: Path, target: Path) -> bool:
    """Give the complete temp file the name `target`; False if that name is taken."""
    try:
        os.link(tmp, target)
        return True
    except FileExistsError:
        return False
    except OSError:
        return _rename_no_replace(tmp, target)


def _rename_no_replace(tmp: Path, target: Path) -> bool:
    """For file systems without hard links: rename unless the name exists.

    On Windows os.rename itself refuses an existing target; elsewhere the check and the rename
    are two steps (names carry a millisecond stamp, commit and machine, so a race is remote).
    """
    if os.path.lexists(target):
        return False
    try:
        os.rename(tmp, target)
    except FileExistsError:
        return False
    return True


def _fsync_directory(folder: Path) -> None:
    """Make the new directory entry durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --- reading ---------------------------------------------------------------------------


def _decompress(data: bytes, source: str, on_error: ErrorSink) -> bytes | None:
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


def _parse_lines(text: bytes, source: str, on_error: ErrorSink,
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


def _log_error(message: str) -> None:
    log.warning("%s", message)


def parse_record_bytes(data: bytes, source: str,
                       on_error: ErrorSink | None = None) -> list[dict[str, Any]]:
    """The usable records of a history file's bytes (gzipped or plain JSON Lines).

    For records read out of git objects. What is skipped is reported to `on_error`
    (default: this module's logger), each message starting with `source`.
    """
    sink = on_error or _log_error
    text = _decompress(data, source, sink)
    return [] if text is None else _parse_lines(text, source, sink)


@dataclass(frozen=True)
class _Filter:
    kernel: str | None = None
    fingerprint: str | None = None
    branch: str | None = None
    since: str | None = None

    def name_ok(self, name: HistoryName) -> bool:
        """What the file name alone rules out (no need to open the file)."""
        if self.fingerprint is not None and name.fingerprint != name_fingerprint(
                self.fingerprint):
            return False
        return self.since is None or name.created_at[:len(self.since)] >= self.since

    def day_ok(self, prefix: str) -> bool:
        """Whether a date folder (`2024`, `2024-05`, `2024-05-01`) may hold newer records."""
        return self.since is None or prefix >= self.since[:len(prefix)]

    def needle(self) -> bytes | None:
        """Bytes every matching line contains, when the kernel pattern is a plain name."""
        if self.kernel is None or not _LITERAL_KERNEL.match(self.kernel):
            return None
        return json.dumps(self.kernel).encode("ascii")

    def apply(self, record: dict[str, Any]) -> dict[str, Any] | None:
        """The record (keeping only matching results) or None."""
        if self.fingerprint is not None and record.get("fingerprint") != self.fingerprint:
            return None
        if self.branch is not None and (record.get("git") or {}).get("branch") != self.branch:
            return None
        if self.since is not None and record["created_at"][:len(self.since)] < self.since:
            return None
        if self.kernel is not None:
            kept = [r for r in record["results"] if isinstance(r, dict)
                    and fnmatch.fnmatchcase(str(r.get("kernel_name")), self.kernel)]
            if not kept:
                return None
            record["results"] = kept
        return record


def _date_prefix(parts: tuple[str, ...]) -> str | None:
    """`2024-05` for the folder parts ('2024', '05'); None for other folders."""
    if not 1 <= len(parts) <= 3:
        return None
    widths = (4, 2, 2)[:len(parts)]
    if all(len(p) == w and p.isdigit() for p, w in zip(parts, widths, strict=True)):
        return "-".join(parts)
    return None


def _history_files(base: Path, flt: _Filter) -> list[tuple[Path, HistoryName | None]]:
    """Record files under `base` that the filter does not rule out by folder or name."""
    found: list[tuple[Path, HistoryName | None]] = []
    for folder, dirnames, filenames in os.walk(base):
        parts = Path(folder).relative_to(base).parts
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and _keep_folder(
            (*parts, d), flt))
        for filename in filenames:
            if filename.startswith(".") or not filename.endswith(SUFFIX):
                continue
            name = parse_history_name(filename)
            if name is None or flt.name_ok(name):
                found.append((Path(folder) / filename, name))
    return found


def _keep_folder(parts: tuple[str, ...], flt: _Filter) -> bool:
    prefix = _date_prefix(parts)
    return prefix is None or flt.day_ok(prefix)


def _read_file(path: Path, flt: _Filter, on_error: ErrorSink) -> list[dict[str, Any]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        on_error(f"{path}: cannot be read ({exc}); file skipped")
        return []
    text = _decompress(data, str(path), on_error)
    if text is None:
        return []
    records = _parse_lines(text, str(path), on_error, flt.needle())
    return [kept for r in records if (kept := flt.apply(r)) is not None]


def _newest_first(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: str(r["created_at"]), reverse=True)


def _load(base: Path, flt: _Filter, limit: int | None,
          on_error: ErrorSink) -> list[dict[str, Any]]:
    """Files with unparsed names are all read; named ones newest first until `limit` is met
    (a name's stamp is its record's created_at, so older files cannot hold newer records)."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    files = _history_files(base, flt) if base.is_dir() else []
    records: list[dict[str, Any]] = []
    for path, _ in (f for f in files if f[1] is None):
        records.extend(_read_file(path, flt, on_error))
    named = sorted(((n.sort_key, p) for p, n in files if n is not None), reverse=True)
    taken = 0
    for _, path in named:
        if limit is not None and taken >= limit:
            break
        found = _read_file(path, flt, on_error)
        records.extend(found)
        taken += len(found)
    records = _newest_first(records)
    return records if limit is None else records[:limit]


def load_records_with_errors(
        root: Path, *, kernel: str | None = None, fingerprint: str | None = None,
        branch: str | None = None, since: str | None = None, limit: int | None = None,
        directory: str = HISTORY_DIR) -> tuple[list[dict[str, Any]], list[str]]:
    """:func:`load_records`, plus the messages about what had to be skipped."""
    errors: list[str] = []
    records = load_records(root, kernel=kernel, fingerprint=fingerprint, branch=branch,
                           since=since, limit=limit, directory=directory,
                           on_error=errors.append)
    return records, errors


def load_records(root: Path, *, kernel: str | None = None, fingerprint: str | None = None,
                 branch: str | None = None, since: str | None = None,
                 limit: int | None = None, directory: str = HISTORY_DIR,
                 on_error: ErrorSink | None = None) -> list[dict[str, Any]]:
    """History records under `root/directory`, newest first by created_at.

    `kernel` is a glob on results' kernel_name (a record matches if any result does and keeps
    only those); `fingerprint` and `branch` must be equal; `since` is an ISO date or time
    prefix (`2024-05`, `2024-05-01T12`) that created_at must not sort before; `limit` caps the
    count. Skipped files, lines and records go to `on_error` (default: a logged warning).
    """
    flt = _Filter(kernel=kernel, fingerprint=fingerprint, branch=branch,
                  since=since.rstrip("Z") if since else None)
    return _load(Path(root) / directory, flt, limit, on_error or _log_error)


def iter_records(root: Path, directory: str = HISTORY_DIR, *,
                 on_error: ErrorSink | None = None) -> Iterator[dict[str, Any]]:
    """Every usable record under `root/directory`, in file-name order (oldest first)."""
    base = Path(root) / directory
    if not base.is_dir():
        return
    files = _history_files(base, _Filter())
    files.sort(key=lambda f: (f[1] is not None, f[1].sort_key if f[1] else ("", 0), str(f[0])))
    for path, _ in files:
        yield from _read_file(path, _Filter(), on_error or _log_error)
