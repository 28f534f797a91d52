"""The spool of a merge: each shard's records, as JSON texts in merge order, in one unnamed
temporary file beside the output, read back a chunk at a time for the ordered write
(:func:`kernbench.api.merge.merge_report_sets`)."""

from __future__ import annotations

import marshal
import os
from collections.abc import Iterator, Sequence
from typing import IO, Any

from kernbench.errors import KernbenchError
from kernbench.execution.merging import Entry

__all__ = ["CHUNK", "Spool"]

CHUNK = 1 << 16
"""Bytes read at a time from each shard's run in the spool."""


class Spool:
    """Shards' records in merge order, one run per shard, in an unnamed temporary file."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.runs: list[tuple[int, int]] = []

    @staticmethod
    def encode(entries: Sequence[tuple[Any, str, str]]) -> bytes:
        """One shard's run as the spool stores it: each (sort key, case id, JSON text) entry
        marshalled after its length."""
        chunks = []
        for entry in entries:
            data = marshal.dumps(entry)
            chunks.append(len(data).to_bytes(4, "little"))
            chunks.append(data)
        return b"".join(chunks)

    def write(self, entries: Sequence[tuple[Any, str, str]]) -> None:
        self.write_run(self.encode(entries))

    def write_run(self, run: bytes) -> None:
        """A shard's run as :meth:`encode` gives it (perhaps in another process)."""
        start = self.handle.tell()
        self.handle.write(run)
        self.runs.append((start, self.handle.tell()))

    def read(self, index: int) -> Iterator[Entry]:
        """The entries of run `index`, read a chunk at a time."""
        self.handle.flush()
        fd = self.handle.fileno()
        offset, end = self.runs[index]
        buffer, at = b"", 0
        while True:
            size = int.from_bytes(buffer[at:at + 4], "little") if len(buffer) - at >= 4 else -1
            if size < 0 or len(buffer) - at - 4 < size:  # the next entry is not all here
                if offset >= end:
                    return
                data = os.pread(fd, min(max(CHUNK, size + 4), end - offset), offset)
                if not data:
                    raise KernbenchError("the merge's spool file was cut short")
                offset += len(data)
                buffer, at = buffer[at:] + data, 0
                continue
            key, case_id, text = marshal.loads(memoryview(buffer)[at + 4:at + 4 + size])
            at += 4 + size
            yield tuple(key), case_id, text
