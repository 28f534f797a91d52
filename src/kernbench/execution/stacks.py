"""Where a worker was when its case timed out: the Python stack it dumps on ``STACK_SIGNAL``.

A worker registers :mod:`faulthandler` for ``STACK_SIGNAL``, writing every thread's stack to a
file of its own beside its reply (:func:`stack_path`; written from the signal handler, so a
worker stuck in C code dumps too, and the kernel's own stderr tail is left alone). At a timeout
the parent sends the signal, waits ``STACK_GRACE_S`` and only then kills the worker's group, as
pytest-timeout does; it keeps the file as the record's ``worker.stack_at_timeout``, and
:func:`timeout_detail` turns its innermost frame into the reason's last words.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from pathlib import Path

_REAL_TIME = getattr(signal, "SIGRTMIN", None)
STACK_SIGNAL: int = _REAL_TIME + 4 if _REAL_TIME is not None else signal.SIGUSR1
"""A real-time signal where there are any (Linux): libraries give SIGUSR1 meanings of their own
(a requeue under Slurm, say), and a kernel's handler for it would replace the dump."""
STACK_GRACE_S = 0.25
"""How long the parent waits for the dump before it kills the worker."""
MAX_STACK_BYTES = 64 * 1024
"""The most of a dump a record keeps: its end, where faulthandler lists the main thread."""
CHILD_WAITS = ("/multiprocessing/popen_", "/concurrent/futures/process.py")
"""Frames in these files mean the thread was waiting for a child process."""
FORK_HINT = ("it was waiting for a child process: a process forked after torch or OpenMP "
             "started their threads can hang (multiprocessing's 'spawn' start method avoids "
             "that)")


def ask_for_stack(pid: int) -> None:
    """Have the timed-out worker `pid` dump its stack (nothing if it is gone already)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, STACK_SIGNAL)


def stack_path(result_path: Path) -> Path:
    """Where a worker whose reply goes to `result_path` dumps its stack."""
    return result_path.with_name("stack.txt")


def read_stack(path: Path) -> str | None:
    """The dump in `path` (its last ``MAX_STACK_BYTES``), or None when there is none."""
    try:
        with path.open("rb") as file:
            file.seek(0, 2)
            file.seek(max(file.tell() - MAX_STACK_BYTES, 0))
            text = file.read().decode("utf-8", "replace")
    except OSError:
        return None
    return text or None


_HEADER = re.compile(r"^(Current thread|Thread) 0x[0-9a-f]+ .*\(most recent call first\):$|"
                     r"^Stack \(most recent call first\):$")
_FRAME = re.compile(r'^  File "(?P<path>.*)", line (?P<line>\d+|\?\?\?) in (?P<function>\S+)$')


def last_dump(text: str) -> list[list[tuple[str, int, str]]]:
    """The last faulthandler dump in `text`: one list of (path, line, function) per thread,
    innermost frame first, the thread that took the signal first; empty if there is none."""
    lines = text.splitlines()
    headers = [i for i, line in enumerate(lines) if _HEADER.match(line)]
    if not headers:
        return []
    start = headers[-1]
    while start > 0 and _in_dump(lines[start - 1]):  # back to the dump's first thread
        start -= 1
    threads: list[tuple[bool, list[tuple[str, int, str]]]] = []
    for line in lines[start:]:
        if _HEADER.match(line):
            threads.append((line.startswith("Current thread"), []))
        elif (frame := _FRAME.match(line)) and threads:
            number = int(frame["line"]) if frame["line"].isdigit() else 0
            threads[-1][1].append((frame["path"], number, frame["function"]))
        elif not _in_dump(line):
            break  # the dump ended; what follows is the kernel's own output
    if threads:  # the signalled thread first; unmarked, the main one, which is listed last
        current = next((i for i, (marked, _) in enumerate(threads) if marked), -1)
        threads.insert(0, threads.pop(current))
    return [frames for _, frames in threads if frames]


def _in_dump(line: str) -> bool:
    return line == "" or line.startswith("  ") or _HEADER.match(line) is not None


def timeout_detail(dump: str | None) -> str | None:
    """The end of a timeout's reason: the innermost frame of the signalled thread's stack at
    the timeout, and a hint where that thread was waiting for a child process; None where no
    dump came."""
    threads = last_dump(dump or "")
    if not threads:
        return None
    path, line, function = threads[0][0]
    where = f"line {line}" if line else "an unknown line"
    detail = (f"its stack at the timeout ended in {path.rsplit('/', 1)[-1]}, {where}, in "
              f"{function} (worker.stack_at_timeout holds every thread's)")
    if any(wait in frame[0] for frame in threads[0] for wait in CHILD_WAITS):
        detail += f"; {FORK_HINT}"
    return detail
