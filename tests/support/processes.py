"""Whether a process a test started (or a kernel started) is gone, for the isolation tests."""

from __future__ import annotations

import os
import time
from pathlib import Path


def is_gone(pid: int) -> bool:
    """True once `pid` no longer runs: it does not exist, or it is a zombie awaiting its reaper
    (an orphan is reparented to PID 1, which reaps it on its own schedule)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state == "Z"


def wait_gone(pid: int, within_s: float = 5.0) -> bool:
    """Wait up to `within_s` for `pid` to be gone; whether it is."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if is_gone(pid):
            return True
        time.sleep(0.02)
    return is_gone(pid)
