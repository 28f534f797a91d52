"""Where an interleaved run keeps the finished processes of its unfinished cases.

An interleaved run (:mod:`kernbench.execution.rounds`) measures process k of every case in
round k, so until the last round every case has some processes finished and some to come.
:class:`HeldProcesses` keeps them until the case's record is built: in memory, or, for a run
that writes reports, in a folder of the output directory (``DIR/processes/``: one JSON Lines
file per case, a line per process holding every field of its record as it was built). In a
folder the parent's memory stays flat however large the suite, and a run stopped between
rounds leaves its finished processes for ``kernbench run --resume``, which then runs only the
processes each case still lacks (:meth:`kernbench.execution.runner.BenchmarkRunner.run`).

A line is appended and flushed once its process has finished, so a run killed outright loses
at most the process it was running; a last line cut short by the kill is ignored on reading.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

from kernbench.results.model import CaseResult

__all__ = ["FOLDER_NAME", "HeldProcesses"]

FOLDER_NAME = "processes"
"""The folder of an output directory that holds an interleaved run's unfinished cases."""


class HeldProcesses:
    """The finished processes of each unfinished case, by case id, in process order; in
    `folder` when one is given, else in memory."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._memory: dict[str, list[CaseResult]] = {}

    def add(self, case_id: str, result: CaseResult) -> None:
        """Keep one more finished process of `case_id`."""
        if self.folder is None:
            self._memory.setdefault(case_id, []).append(result)
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._path(case_id).open("a", encoding="utf-8") as out:
            out.write(json.dumps({"case": case_id, "record": _fields(result)}) + "\n")

    def get(self, case_id: str) -> list[CaseResult]:
        """The processes kept for `case_id`, in the order they were added ([] when none)."""
        if self.folder is None:
            return list(self._memory.get(case_id, ()))
        try:
            lines = self._path(case_id).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        return _records(lines, case_id)

    def discard(self, case_id: str) -> None:
        """Forget `case_id`'s processes (its record has been built from them)."""
        self._memory.pop(case_id, None)
        if self.folder is not None:
            self._path(case_id).unlink(missing_ok=True)

    def clear(self) -> None:
        """Forget every case's processes (a new run, or a finished one)."""
        self._memory.clear()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _path(self, case_id: str) -> Path:
        assert self.folder is not None
        readable = re.sub(r"[^A-Za-z0-9._-]+", "_", case_id)[:80]
        digest = hashlib.sha256(case_id.encode()).hexdigest()[:12]
        return self.folder / f"{readable}-{digest}.jsonl"


_TUPLES = frozenset(f.name for f in dataclasses.fields(CaseResult)
                    if str(f.type).startswith("tuple"))


def _fields(result: CaseResult) -> dict[str, Any]:
    """Every field of `result`, as JSON takes it: a process's record exactly as it was built
    (not as a report writes it), so that a record merged from processes read back equals one
    merged from the processes themselves."""
    return {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}


def _records(lines: list[str], case_id: str) -> list[CaseResult]:
    """The records of a case's file, up to the first line that is not one of `case_id`'s
    records (a line cut short by a kill, or a file of another case)."""
    records = []
    for line in lines:
        try:
            entry = json.loads(line)
            if entry["case"] != case_id:
                break
            fields: dict[str, Any] = {key: tuple(value) if key in _TUPLES else value
                                      for key, value in entry["record"].items()}
            records.append(CaseResult(**fields))
        except (ValueError, KeyError, TypeError, AttributeError):
            break
    return records
