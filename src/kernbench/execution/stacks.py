"""Where a worker was when its case timed out: the Python stack it dumps on ``STACK_SIGNAL``.

A worker registers :mod:`faulthandler` for ``STACK_SIGNAL`` (every thread's stack to its
stderr, written from the signal handler, so a worker stuck in C code dumps too). At a timeout
the parent sends the signal, drains the output for ``STACK_GRACE_S`` and only then kills the
worker's group, as pytest-timeout does. The dump lands in the record's ``stderr_tail``, and
:func:`timeout_detail` turns its innermost frame into the reason's last words.
"""

from __future__ import annotations

import re
import signal

STACK_SIGNAL = signal.SIGUSR1
STACK_GRACE_S = 0.25
"""How long the parent waits for the dump before it kills the worker."""
CHILD_WAIT_PATHS = ("/multiprocessing/", "/concurrent/futures/process.py")
"""Frames in these files mean the worker was waiting for a child process."""
FORK_HINT = ("it was waiting for a child process: a process forked after torch or OpenMP "
             "started their threads can hang (multiprocessing's 'spawn' start method avoids "
             "that)")

_HEADER = re.compile(r"^(Current thread|Thread) 0x[0-9a-f]+ .*\(most recent call first\):$|"
                     r"^Stack \(most recent call first\):$")
_FRAME = re.compile(r'^  File "(?P<path>.*)", line (?P<line>\d+) in (?P<function>\S+)$')


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
            threads[-1][1].append((frame["path"], int(frame["line"]), frame["function"]))
        elif not _in_dump(line):
            break  # the dump ended; what follows is the kernel's own output
    threads.sort(key=lambda thread: not thread[0])  # the current thread first (stable)
    return [frames for _, frames in threads if frames]


def _in_dump(line: str) -> bool:
    return line == "" or line.startswith("  ") or _HEADER.match(line) is not None


def timeout_detail(stderr_tail: str) -> str | None:
    """The end of a timeout's reason: the innermost frame of the worker's stack at the
    timeout, and a hint where it was waiting for a child; None where no dump came."""
    threads = last_dump(stderr_tail)
    if not threads:
        return None
    path, line, function = threads[0][0]
    detail = (f"its stack at the timeout ended in {path.rsplit('/', 1)[-1]}, line {line}, in "
              f"{function} (stderr_tail holds every thread's)")
    if any(any(part in frame[0] for part in CHILD_WAIT_PATHS)
           for frames in threads for frame in frames):
        detail += f"; {FORK_HINT}"
    return detail
