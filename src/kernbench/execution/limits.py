"""Per-worker resource limits: ``--max-memory SIZE`` and what a case that hit it says.

The limit is RLIMIT_AS, set in each worker before it execs (:mod:`kernbench.execution.isolation`).
It bounds virtual address space, so it must leave room for what the frameworks map on import:
about 150 MB for Python with numpy and kernbench's worker, 650 MB with torch, 1.6 GB with jax
(2 cores; thread pools grow it with the core count). ``MIN_MAX_MEMORY_BYTES``
(:mod:`kernbench.config.sizes`) refuses a limit under which not even the worker can start.
"""

from __future__ import annotations

import dataclasses

from kernbench.config.sizes import format_size
from kernbench.results.model import CaseResult

OUT_OF_MEMORY_WORDS = ("MemoryError", "bad_alloc", "Cannot allocate memory", "out of memory",
                       "failed to map segment", "Unable to allocate",
                       "Memory allocation still failed", "not enough memory",
                       "can't allocate memory", "Thread creation failed",
                       "pthread_create failed")
"""Text in a failure that says an allocation failed: Python's, C++'s, glibc's, numpy's,
OpenBLAS's, PyTorch's allocator's, and OpenMP's (libgomp exits with code 1 when a thread's
stack cannot be mapped under the limit; OpenBLAS, failing the same way in numpy's import,
says "pthread_create failed" and can leave the worker with a KeyboardInterrupt)."""
ALLOCATION_DEATHS = ("SIGABRT", "SIGSEGV", "SIGBUS")
"""How native code that could not allocate usually dies (abort on a failed malloc, or a write
through the NULL it returned); an exit code or another signal says nothing of memory."""


def explain_memory_limit(result: CaseResult, max_memory_bytes: int | None) -> CaseResult:
    """A failed case under a memory limit names the limit when an allocation failed, or when
    the worker died without a result as native code dies when malloc fails
    (``ALLOCATION_DEATHS``)."""
    if max_memory_bytes is None or result.status != "failed" or not result.reason:
        return result
    limit = f"--max-memory {format_size(max_memory_bytes)} (address space, RLIMIT_AS)"
    text = f"{result.reason}\n{result.worker.get('stderr_tail') or ''}"
    if any(word in text for word in OUT_OF_MEMORY_WORDS):
        reason = f"memory limit reached: {limit}: {result.reason}"
    elif ("before reporting a result" in result.reason
          and result.worker.get("signal") in ALLOCATION_DEATHS):
        reason = f"{result.reason} (a worker under {limit} may have died allocating past it)"
    else:
        return result
    return dataclasses.replace(result, reason=reason)
