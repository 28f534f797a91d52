"""The baseline a history record at a git ref gives a comparison (``--compare-to REF``).

Pure: :mod:`kernbench.analysis.gitref` finds the record, :mod:`kernbench.api.baselines` reads
and writes the files; this decides what the comparison's baseline side is."""

from __future__ import annotations

from typing import Any

from kernbench.results.inputs import LoadedRun, run_from_document
from kernbench.results.schema import migrate


def baseline_from_history(record: dict[str, Any] | None, message: str, ref: str,
                          fingerprint: str | None) -> tuple[LoadedRun, str | None]:
    """The baseline run of the history `record` found at `ref` (with gitref's `message`), and
    the note the comparison must carry.

    Without a record the baseline is empty and the note is `message`, which says why in plain
    words: no baseline is not a pass. With one the note is None and the record, migrated to the
    current schema, names where it came from."""
    source = f"history at {ref}"
    if record is None:
        return LoadedRun([], {"source": source, "fingerprint": fingerprint}), message
    return run_from_document(migrate(record, source), f"{source}: {message}"), None
