"""The benchmark history store: one compact record per run, kept under ``benchmarks/history/``.

Records are built and encoded by :mod:`kernbench.results.history_record`; their file names
come from :mod:`kernbench.results.history_names`. Storage is append-only. Each run gets a new
gzipped JSON Lines file, sharded by date::

    benchmarks/history/YYYY/MM/DD/<created_at compact>-<short sha|nogit>-<fingerprint>.jsonl.gz

An existing file is never rewritten or appended to. The bytes are written to a hidden temporary
file first and then hard-linked to the final name, which fails instead of replacing, so no
partial file ever appears under a record's name (a name clash gets a ``-N`` counter suffix).

Reading skips, with a message, what it cannot use (see the record module). The date and
fingerprint in file names let :func:`load_records` skip files without opening them.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import re
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernbench.results.history_names import (
    HISTORY_DIR,
    SUFFIX,
    HistoryName,
    history_name,
    name_fingerprint,
    parse_history_name,
    record_path,
)
from kernbench.results.history_record import (
    ErrorSink,
    check_record,
    decompress_history,
    encode_record,
    parse_record_lines,
)

__all__ = ["append_record", "iter_records", "load_records", "load_records_with_errors",
           "parse_record_bytes"]

MAX_NAME_CLASHES = 1000

log = logging.getLogger(__name__)

_LITERAL_KERNEL = re.compile(r"^[A-Za-z0-9_.-]+$")


# --- writing ---------------------------------------------------------------------------


def append_record(root: Path, record: Mapping[str, Any], directory: str = HISTORY_DIR, *,
                  fsync: bool = True) -> Path:
    """Write `record` to a new file under `root/directory`; return its path.

    Never replaces or appends to an existing file. `fsync=False` skips flushing to disk (for
    bulk imports and tests).
    """
    check_record(record)
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


def _log_error(message: str) -> None:
    log.warning("%s", message)


def parse_record_bytes(data: bytes, source: str,
                       on_error: ErrorSink | None = None) -> list[dict[str, Any]]:
    """The usable records of a history file's bytes (gzipped or plain JSON Lines).

    For records read out of git objects. What is skipped is reported to `on_error`
    (default: this module's logger), each message starting with `source`.
    """
    sink = on_error or _log_error
    text = decompress_history(data, source, sink)
    return [] if text is None else parse_record_lines(text, source, sink)


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
    text = decompress_history(data, str(path), on_error)
    if text is None:
        return []
    records = parse_record_lines(text, str(path), on_error, flt.needle())
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
