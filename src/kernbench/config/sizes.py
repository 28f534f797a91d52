"""Sizes as people write them (`512M`, `2G`, `1.5GiB`): the pure parsing behind ``--max-memory``
and a suite file's ``max_memory``, here so that both the command line and the suite loader read
them alike without importing the execution room that applies the limit."""

from __future__ import annotations

import re

from kernbench.errors import KernbenchError

MIN_MAX_MEMORY_BYTES = 64 << 20
"""Below this, Python and the worker cannot even start, so every case would fail alike."""
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str, what: str = "--max-memory") -> int:
    """Bytes in `512M`, `2G`, `1.5GiB`, `1048576` (binary units); KernbenchError otherwise."""
    match = _SIZE.match(text)
    if match is None:
        raise KernbenchError(f"{what}: expected a size such as 512M or 2G (units K, M, G, T; "
                             f"powers of 1024), got {text!r}")
    size = int(float(match.group(1)) * _UNITS[match.group(2).upper()])
    if size < MIN_MAX_MEMORY_BYTES:
        raise KernbenchError(f"{what}: expected at least {format_size(MIN_MAX_MEMORY_BYTES)} "
                             f"(a worker cannot start with less), got {text!r}")
    return size


def format_size(size_bytes: int) -> str:
    """`512M`, `2G`, `1536M`: the largest binary unit that divides the size, else bytes."""
    for unit in ("T", "G", "M", "K"):
        if size_bytes % _UNITS[unit] == 0:
            return f"{size_bytes // _UNITS[unit]}{unit}"
    return f"{size_bytes}B"
