"""Per-worker resource limits: ``--max-memory SIZE`` and what a case that hit it says.

The limit is RLIMIT_AS, set in each worker before it execs (:mod:`kernbench.execution.isolation`).
It bounds virtual address space, so it must leave room for what the frameworks map on import:
about 150 MB for Python with numpy and kernbench's worker, 650 MB with torch, 1.6 GB with jax
(2 cores; thread pools grow it with the core count). :data:`MIN_MAX_MEMORY_BYTES` refuses a
limit under which not even the worker can start.
"""

from __future__ import annotations

import dataclasses
import re

from kernbench.errors import KernbenchError
from kernbench.results.model import CaseResult

MIN_MAX_MEMORY_BYTES = 64 << 20
"""Below this, Python and the worker cannot even start, so every case would fail alike."""
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)
OUT_OF_MEMORY_WORDS = ("MemoryError", "bad_alloc", "Cannot allocate memory", "out of memory",
                       "failed to map segment", "Unable to allocate")
"""Text in a failure that says an allocation failed."""


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


def explain_memory_limit(result: CaseResult, max_memory_bytes: int | None) -> CaseResult:
    """A failed case under a memory limit names the limit when an allocation failed, or when
    the worker died without a result (native code often aborts when malloc fails)."""
    if max_memory_bytes is None or result.status != "failed" or not result.reason:
        return result
    limit = f"--max-memory {format_size(max_memory_bytes)} (address space, RLIMIT_AS)"
    text = f"{result.reason}\n{result.worker.get('stderr_tail') or ''}"
    if any(word in text for word in OUT_OF_MEMORY_WORDS):
        reason = f"memory limit reached: {limit}: {result.reason}"
    elif "before reporting a result" in result.reason:
        reason = f"{result.reason} (a worker under {limit} may have died allocating past it)"
    else:
        return result
    return dataclasses.replace(result, reason=reason)
