"""Peak memory of the worker during one case.

Host: the resident set's high-water mark (Linux ``VmHWM``), reset at the start of the case by
writing ``5`` to ``/proc/self/clear_refs``, so the peak covers the case alone, not interpreter
start-up or imports. Where the reset is impossible the lifetime peak from ``getrusage`` is
reported and the source says so. Opt-in: Python allocations via ``tracemalloc`` (it slows
Python code, so timings taken with it on carry a warning). Device allocators are read by the
backends (see :meth:`kernbench.measure.backends.base.Backend.device_memory`) and merged here.
"""

from __future__ import annotations

import resource
import sys
from collections.abc import Mapping
from typing import Any

_STATUS = "/proc/self/status"


def status_kb(field: str, path: str = _STATUS) -> float | None:
    """A field of this process's /proc status in KiB (``VmRSS``, ``VmHWM``, ``VmSize``), or
    None where there is no /proc or no such field."""
    try:
        with open(path, encoding="ascii") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def _lifetime_peak_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB else


class PeakMemory:
    """Call :meth:`start` before the case and :meth:`stop` after; `stop` returns the record."""

    def __init__(self, trace_python: bool = False) -> None:
        self._reset = False
        self._start_mb: float | None = None
        self._trace = trace_python

    def start(self) -> None:
        if self._trace:  # opt-in, so imported only then, and before the peak is reset:
            import tracemalloc  # the import's own ~0.5 MB is not the case's memory
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
                handle.write("5")
            self._reset = True
        except OSError:
            self._reset = False
        rss = status_kb("VmRSS")
        self._start_mb = rss / 1024 if rss is not None else None
        if self._trace:
            import tracemalloc

            tracemalloc.start()

    def stop(self) -> dict[str, Any]:
        hwm = status_kb("VmHWM") if self._reset else None
        if hwm is not None:
            peak, source = hwm / 1024, "VmHWM (peak RSS of the worker during the case)"
        else:
            peak, source = _lifetime_peak_mb(), "ru_maxrss (peak RSS over the worker's lifetime)"
        growth = peak - self._start_mb if self._start_mb is not None and self._reset else None
        record: dict[str, Any] = {"peak_mb": peak, "allocated_mb": growth,
                                  "rss_start_mb": self._start_mb, "source": source}
        if growth is None:
            record["allocated_mb_reason"] = "the peak could not be reset at the start of the case"
        else:
            record["allocated_mb_source"] = "peak RSS during the case minus RSS at its start"
        if self._trace:
            import tracemalloc

            current, python_peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            record.update(python_peak_mb=python_peak / 2**20, python_current_mb=current / 2**20,
                          python_source="tracemalloc (Python allocations; slows Python code)")
        return record


def merge_device_memory(host: Mapping[str, Any],
                        device: Mapping[str, Any] | None) -> dict[str, Any]:
    """On a GPU case the record's peak/allocated figures are the device allocator's; the host
    figures move to ``host_*`` keys. On a CPU case the host record is returned as is."""
    if device is None:
        return dict(host)
    merged = {f"host_{k}" if k in ("peak_mb", "allocated_mb", "source") else k: v
              for k, v in host.items()}
    merged.update(peak_mb=device["peak_mb"], allocated_mb=device["allocated_mb"],
                  source=device["source"])
    return merged
