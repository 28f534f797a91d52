"""Where an interleaved run keeps the finished processes of its cases until their records are
safe.

An interleaved run (:mod:`kernbench.execution.rounds`) measures process k of every case in
round k, so until the last round every case has some processes finished and some to come.
:class:`HeldProcesses` keeps them: in memory, or, for a run that writes reports, in a folder of
the output directory (``DIR/processes/``: one JSON Lines file per case, a line per process
holding every field of its record as it was built). In a folder the parent's memory stays
flat however large the suite, and a run stopped or killed between rounds leaves its finished
processes for ``kernbench run --resume``, which then runs only the processes each case still
lacks (:meth:`kernbench.execution.runner.BenchmarkRunner.run`).

Each line carries the key of what the process measured (:func:`measured_key`: the worker's
job, which holds the problem size, protocol, tracing and flush settings, and the bytes of the
kernel's file), so a resume never merges processes measured one way with processes measured
another: a case whose kernel or bench.yaml changed since runs again in full.

A line is appended once its process has finished (to the operating system, not synced to
disk: a killed process loses nothing, a crashed machine may). A line cut short by a kill, or
one of another key, ends what is read, and the next append first cuts the file back to the
lines before it. On disk a case's lines stay after its record is built, until :meth:`clear`
(the run completed): a record may wait in memory before the report files are written, and a
run killed then still has its processes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from kernbench.execution.jobs import WorkerJob, to_data
from kernbench.results.files import write_bytes_atomic
from kernbench.results.model import CaseResult

__all__ = ["FOLDER_NAME", "HeldProcesses", "held_count", "measured_key"]

FOLDER_NAME = "processes"
"""The folder of an output directory that holds an interleaved run's processes."""


def measured_key(job: WorkerJob) -> str:
    """What a case's later processes measure, as a digest: their job (the paths it names
    aside) and the kernel file's bytes."""
    blank = dataclasses.replace(job, result_path=Path("-"), skip_accuracy=True)
    digest = hashlib.sha256(json.dumps(to_data(blank), sort_keys=True, default=str).encode())
    try:
        digest.update(job.kernel_file.read_bytes())
    except OSError:
        digest.update(b"(unreadable)")
    return digest.hexdigest()[:32]


class HeldProcesses:
    """The finished processes of each case, by case id and key, in process order; in
    `folder` when one is given, else in memory."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._memory: dict[str, tuple[str, list[CaseResult]]] = {}

    def add(self, case_id: str, key: str, result: CaseResult) -> None:
        """Keep one more finished process of `case_id`, measured as `key` says; processes
        kept under another key are forgotten first."""
        line = json.dumps({"case": case_id, "key": key, "record": _fields(result)}) + "\n"
        if self.folder is None:
            kept = self._memory.get(case_id)
            earlier = kept[1] if kept is not None and kept[0] == key else []
            self._memory[case_id] = (key, [*earlier, result])
            return
        path = self._path(case_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        valid = _appendable(path, case_id, key)
        if valid is None:
            with path.open("a", encoding="utf-8") as out:
                out.write(line)
        else:  # a line cut short, or another key's: keep what is valid, then this one
            write_bytes_atomic(path, valid + line.encode(), durable=False)

    def get(self, case_id: str, key: str) -> list[CaseResult]:
        """The processes kept for `case_id` under `key`, in the order they were added."""
        if self.folder is None:
            kept = self._memory.get(case_id)
            return list(kept[1]) if kept is not None and kept[0] == key else []
        return _records(_read(self._path(case_id)), case_id, key)

    def release(self, case_id: str) -> None:
        """`case_id`'s record has been built from its processes: in memory they are dropped;
        on disk they stay until :meth:`clear`."""
        self._memory.pop(case_id, None)

    def clear(self) -> None:
        """Forget every case's processes (a new run, or a completed one)."""
        self._memory.clear()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _path(self, case_id: str) -> Path:
        assert self.folder is not None
        readable = re.sub(r"[^A-Za-z0-9._-]+", "_", case_id)[:80]
        digest = hashlib.sha256(case_id.encode()).hexdigest()[:12]
        return self.folder / f"{readable}-{digest}.jsonl"


def held_count(folder: Path) -> int:
    """How many finished processes `folder` (an output directory's processes/) holds, a line
    each, whatever their case and key."""
    return sum(1 for path in folder.glob("*.jsonl") for line in _read(path).splitlines()
               if line.strip())


_TUPLES = frozenset(f.name for f in dataclasses.fields(CaseResult)
                    if str(f.type).startswith("tuple"))


def _fields(result: CaseResult) -> dict[str, Any]:
    """Every field of `result`, as JSON takes it: a process's record exactly as it was built
    (not as a report writes it), so that a record merged from processes read back equals one
    merged from the processes themselves."""
    return {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return ""


def _appendable(path: Path, case_id: str, key: str) -> bytes | None:
    """None when the next line may simply be appended to a case's file; else what of it to
    keep before that line: nothing when its first line is not one of `case_id` measured as
    `key`, else the file up to its last whole line (each line is written whole, so only the
    last can be cut short). Reads the first line and the last byte, so that adding a process
    costs the same whatever the number of processes before it."""
    try:
        with path.open("rb") as data:
            first = data.readline()
            size = data.seek(0, os.SEEK_END)
            data.seek(max(size - 1, 0))
            last = data.read(1)
    except FileNotFoundError:
        return None
    if size == 0:
        return None
    try:
        entry = json.loads(first)
        if entry["case"] != case_id or entry["key"] != key:
            return b""
    except (ValueError, KeyError, TypeError):
        return b""
    if last == b"\n":
        return None
    whole = path.read_bytes()
    return whole[:whole.rfind(b"\n") + 1]


def _records(text: str, case_id: str, key: str) -> list[CaseResult]:
    """The records of a case's file, up to the first line that is not a whole record of
    `case_id` measured as `key` (a line cut short by a kill, a file of another case, or of
    another key)."""
    records = []
    for line in text.splitlines(keepends=True):
        try:
            entry = json.loads(line)
            if not line.endswith("\n") or entry["case"] != case_id or entry["key"] != key:
                break
            records.append(_record(entry["record"]))
        except (ValueError, KeyError, TypeError, AttributeError):
            break
    return records


def _record(fields: dict[str, Any]) -> CaseResult:
    values: dict[str, Any] = {key: tuple(value) if key in _TUPLES else value
                              for key, value in fields.items()}
    return CaseResult(**values)
