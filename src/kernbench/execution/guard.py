"""A spawned worker's guard: ``python -m kernbench.execution.guard JOB.json``.

A kernel may kill its parent process (``os.kill(os.getppid(), SIGKILL)``). A forked worker's
parent is its fork server, whose death fails that case alone
(:class:`~kernbench.execution.forkserver.DiedDuringCase`). A spawned worker's parent would be
kernbench itself, so on Linux the spawned interpreter forks at once, before it imports the
worker, the kernel or any framework, and the child runs the case
(:func:`kernbench.execution.worker.main`) while the spawned process only waits. It relays the
worker's exit (its code, or the signal that killed it, raised again on itself), forwards the
timeout's stack request (:data:`~kernbench.execution.stacks.STACK_SIGNAL`), and writes the
worker's pid and then its wait status to :func:`exit_record_path`. The worker starts its own
session, as a forked worker does. A spawned process that ended with no status written was
itself killed while the case ran (by the kernel, or the out-of-memory killer), and the worker
died with it (``PR_SET_PDEATHSIG``); one that timed out with the worker's reply written but no
status was stopped. The launcher says so, and the case fails
(:func:`kernbench.execution.launcher.guard_cause`); the record's ``worker.pid`` is the
worker's. Elsewhere the spawned process is the worker, as it was before guards.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sys
from pathlib import Path
from typing import NoReturn

from kernbench.execution.reaping import die_with, prctl
from kernbench.execution.stacks import STACK_SIGNAL

UNRELAYABLE = (signal.SIGKILL, signal.SIGSTOP)
"""Signals whose action cannot be changed: raised again as they are."""


def guarded() -> bool:
    """Whether a spawned worker runs under a guard here: Linux, where a child can ask to die
    with its parent."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and prctl() is not None


def exit_record_path(job: Path) -> Path:
    """Where the guard of the worker of `job` writes the worker's pid once it is forked, then
    its wait status once it has ended (:func:`read_exit_record`)."""
    return job.with_name("worker-exit.txt")


def read_exit_record(job: Path) -> tuple[int | None, int | None]:
    """The worker's pid and wait status as its guard wrote them; None for what it did not
    (a guard killed or stopped during the case wrote no status)."""
    try:
        lines = exit_record_path(job).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None, None
    pid, status, *_ = [int(line) if line.lstrip("-").isdigit() else None
                       for line in lines[:2]] + [None, None]
    return pid, status


def main() -> None:
    """Run the worker of the job named in ``sys.argv[1]``, guarded where :func:`guarded`."""
    if not guarded():
        _work()
    parent, record = os.getpid(), exit_record_path(Path(sys.argv[1]))
    pid = os.fork()
    if pid == 0:
        die_with(parent)
        os.setsid()  # its own session and group, as a forked worker has
        _work()
    # SIGINT from a kernel ends the guard as any signal does, without a traceback in the
    # worker's stderr; the timeout's stack request goes on to the worker.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(STACK_SIGNAL, lambda *_: _forward(pid))
    _write(record, f"{pid}\n")
    _, status = os.waitpid(pid, 0)  # retried after a forwarded signal (PEP 475)
    _write(record, f"{pid}\n{status}\n")
    relay(status)


def _write(path: Path, text: str) -> None:
    with contextlib.suppress(OSError):
        path.write_text(text, encoding="utf-8")


def _work() -> NoReturn:
    from kernbench.execution.worker import main as work

    work()  # leaves with os._exit
    os._exit(0)


def _forward(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, STACK_SIGNAL)


def relay(status: int) -> NoReturn:
    """Leave as a process with wait status `status` left: the same exit code, or killed by
    the same signal (no core dump of this process: the worker's own was written, if any)."""
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        os._exit(code)
    signum = -code
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if signum not in UNRELAYABLE:
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)  # a signal whose default is not to end a process


if __name__ == "__main__":
    main()
