"""Peak resident memory of the worker process during one case (Linux: VmHWM, reset per case).

Writing ``5`` to ``/proc/self/clear_refs`` resets the kernel's high-water mark of the resident
set, so the peak read afterwards covers the case alone, not the interpreter start-up or imports.
Where that is not possible the lifetime peak from ``getrusage`` is reported, and the source says
which one it is.
"""

from __future__ import annotations

import resource
import sys
from typing import Any

_STATUS = "/proc/self/status"


def _status_kb(field: str) -> float | None:
    try:
        with open(_STATUS, encoding="ascii") as handle:
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

    def __init__(self) -> None:
        self._reset = False
        self._start_mb: float | None = None

    def start(self) -> None:
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
                handle.write("5")
            self._reset = True
        except OSError:
            self._reset = False
        rss = _status_kb("VmRSS")
        self._start_mb = rss / 1024 if rss is not None else None

    def stop(self) -> dict[str, Any]:
        hwm = _status_kb("VmHWM") if self._reset else None
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
        return record
