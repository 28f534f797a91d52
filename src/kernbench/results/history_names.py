"""History file names: ``<created_at compact>-<short sha|nogit>-<fingerprint>[-N].jsonl.gz``.

A name says when, which commit and which machine, so readers can skip files without opening
them; the date shards the store into ``YYYY/MM/DD`` folders. See :mod:`kernbench.results.history`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = [
    "HISTORY_DIR",
    "SUFFIX",
    "HistoryName",
    "format_created_at",
    "history_name",
    "name_fingerprint",
    "parse_history_name",
    "parse_instant",
    "record_path",
]

HISTORY_DIR = "benchmarks/history"
SUFFIX = ".jsonl.gz"

_NAME = re.compile(
    r"^(?P<stamp>\d{8}T\d{9}Z)-(?P<commit>[0-9A-Za-z]+)-(?P<fingerprint>[0-9A-Za-z_]+)"
    r"(?:-(?P<counter>\d+))?\.jsonl\.gz$"
)


def parse_instant(text: str) -> datetime:
    """An ISO 8601 time as an aware datetime (a trailing ``Z`` is accepted, which Python
    3.10's fromisoformat is not; no offset means UTC); ValueError for anything else."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def format_created_at(moment: datetime | str | None = None) -> str:
    """``2024-05-01T12:34:56.789Z``: UTC, milliseconds, so strings sort like the times.

    A string is parsed as ISO 8601 (:func:`parse_instant`).
    """
    if moment is None:
        moment = datetime.now(timezone.utc)
    elif isinstance(moment, str):
        moment = parse_instant(moment)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


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

