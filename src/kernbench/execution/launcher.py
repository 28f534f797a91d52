"""How a case's worker process is started: forked from a preloaded server, or spawned.

:class:`WorkerLauncher` owns a run's fork servers (:mod:`kernbench.execution.forkserver`): one per
framework and *replicate slot*. The k-th worker process of every case forks from server k, so
the processes of one case do not all share one address-space layout and hash seed: between-
process noise, which comparisons rely on (:mod:`kernbench.analysis.stats_compare`), stays in the
replicates. Servers start on first use, all slots of a framework at once (a run starts its
first case's before it reads its environment: :meth:`WorkerLauncher.prestart`), and are
stopped when the run ends.

A server that dies while a case runs fails that case (its kernel may have killed it, and a
case is never run twice), and the slot gets a new server for the next case.

A server found dead between cases (killed from outside: the OOM killer, a user) is started
again, up to `MAX_RESTARTS` times a framework, and the record's ``worker.isolation_note``
says so. ``--isolation spawn``, a platform without safe fork
(:func:`~kernbench.execution.forkserver.fork_supported`), a framework that came out of its
import already initialised, or a server that failed to start or kept dying: the worker is
spawned as a fresh ``python -m kernbench.execution.guard`` instead, which on Linux forks the
worker at once and waits for it (:mod:`kernbench.execution.guard`: a kernel that kills its
parent kills the guard, not kernbench), and the record's ``worker.isolation_note`` says why.
"""

from __future__ import annotations

import os
import secrets
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kernbench.execution.forkserver import (
    ForkServer,
    NotSent,
    ServerGone,
    fork_supported,
    preload_key,
)
from kernbench.execution.guard import guarded, read_exit_record
from kernbench.execution.isolation import (
    PARENT_VARIABLE,
    TOKEN_VARIABLE,
    WorkerExit,
    kill_marked,
    process_mark,
    run_isolated,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kernbench.execution.settings import RunSettings
    from kernbench.results.model import Case, KernelSpec

ISOLATION_MODES = ("fork", "spawn")
MAX_RESTARTS = 3
"""Fork servers of one framework found dead between cases (killed from outside) that are
started again in a run, at most; then its cases are spawned."""
MAX_SLOTS = 10
"""Fork servers per framework at most: replicate k of a case forks from server k mod 10, so up
to 10 processes per case each have their own layout and hash seed (more share them: each
server of a heavy framework holds its memory, about 0.3 GB for torch)."""


class WorkerLauncher:
    """Starts case workers for one run (or both sides of an A/B run)."""

    def __init__(self, mode: str, env: dict[str, str], slots: int = 1) -> None:
        if mode not in ISOLATION_MODES:
            raise ValueError(f"isolation mode {mode!r}: expected one of {ISOLATION_MODES}")
        self.mode = mode
        self.slots = max(1, min(slots, MAX_SLOTS))
        self._env = env
        self._servers: dict[tuple[str, int], ForkServer] = {}
        self._unusable: dict[str, str] = {}
        """Preload key -> why its cases are spawned instead of forked."""
        self._restarts: dict[str, int] = {}
        """Preload key -> its servers found dead between cases and started again."""
        self._token = secrets.token_hex(16)
        """Marks the servers, so that closing finds anything they left."""
        platform = fork_supported()
        if mode == "fork" and platform is not None:
            self._unusable["*"] = platform

    def run(self, framework: str, slot: int, job: Path, cwd: Path, timeout_s: float,
            max_memory_bytes: int | None) -> WorkerExit:
        """Run the worker for `job`; forked where possible, spawned otherwise."""
        key = preload_key(framework)
        note = self._unusable.get("*") or self._unusable.get(key)
        if self.mode == "spawn" or note is not None:
            return self._spawn(job, cwd, timeout_s, max_memory_bytes, note)
        try:
            return self._forked(key, slot % self.slots, job, cwd, timeout_s, max_memory_bytes)
        except ServerGone as exc:
            self._drop(key)
            self._unusable.setdefault(key, f"fork server failed, workers spawned instead: {exc}")
            return self._spawn(job, cwd, timeout_s, max_memory_bytes, self._unusable[key])

    def _forked(self, key: str, slot: int, job: Path, cwd: Path, timeout_s: float,
                max_memory_bytes: int | None) -> WorkerExit:
        """The case forked from its slot's server. A server found dead before it got the job
        is started again (`MAX_RESTARTS` times a framework) and the case runs in the new one:
        the run's cases stay forked, not spawned from there on."""
        restarted = None
        while True:
            server = self._server(key, slot)
            try:
                # The worker keeps its server's mark (this launcher's token): whatever it
                # starts carries it, and close() finds it even where a server had to be killed.
                exit_info: WorkerExit = server.run(str(job), str(cwd), {}, timeout_s,
                                                   max_memory_bytes)
            except NotSent as exc:
                if self._restarts.get(key, 0) >= MAX_RESTARTS:
                    raise
                self._restarts[key] = self._restarts.get(key, 0) + 1
                self._servers.pop((key, slot)).close()
                restarted = f"its fork server was found gone ({exc}) and started again"
                continue
            if exit_info.cause is not None:  # the server died during the case (its cause)
                del self._servers[(key, slot)]  # the next case starts a new one
            return exit_info if restarted is None else replace(exit_info, note=restarted)

    def fresh(self) -> WorkerLauncher:
        """A launcher like this one with servers of its own, started on first use (new
        address-space layouts and hash seeds), that remembers which frameworks could not fork
        here: a failed or unsafe server is not tried again."""
        other = WorkerLauncher(self.mode, self._env, self.slots)
        other._unusable.update(self._unusable)
        return other

    def prestart(self, framework: str) -> None:
        """Start `framework`'s servers now without waiting for them, so that their imports
        overlap what the run does before its first case (its environment, its first files).
        Nothing where its cases would be spawned."""
        key = preload_key(framework)
        if self.mode == "fork" and "*" not in self._unusable and key not in self._unusable:
            self._start(key)

    def _start(self, key: str) -> None:
        """Start every slot of `key` that has no server yet, all at once: the imports
        overlap."""
        env = {**self._env, TOKEN_VARIABLE: self._token}
        for slot in range(self.slots):
            if (key, slot) not in self._servers:
                self._servers[(key, slot)] = ForkServer(key, str(Path.cwd()), env)

    def _server(self, key: str, slot: int) -> ForkServer:
        self._start(key)
        for name in [name for name in self._servers if name[0] == key]:
            hello = self._servers[name].ready()  # kept after the first wait
            if hello.get("unsafe"):
                self._unusable[key] = f"fork is unsafe after preloading: {hello['unsafe']}"
                raise ServerGone(self._unusable[key])
        return self._servers[(key, slot)]

    def _drop(self, key: str) -> None:
        """Stop every server of `key`: its cases are spawned from now on."""
        for name in [name for name in self._servers if name[0] == key]:
            self._servers.pop(name).close()

    def _spawn(self, job: Path, cwd: Path, timeout_s: float, max_memory_bytes: int | None,
               note: str | None) -> WorkerExit:
        exit_info = run_isolated([sys.executable, "-m", "kernbench.execution.guard", str(job)],
                                 cwd=cwd, env=self._env, timeout_s=timeout_s,
                                 max_memory_bytes=max_memory_bytes, dump_stack=True)
        if not guarded():
            return replace(exit_info, note=note)
        worker, status = read_exit_record(job)
        return replace(exit_info, note=note, cause=guard_cause(job, exit_info, status),
                       pid=worker or exit_info.pid)  # the kernel's process, not its guard's

    def close(self) -> None:
        """Stop every server (and anything carrying their mark)."""
        for server in self._servers.values():
            server.ask_to_leave()
        for server in self._servers.values():
            server.close()
        self._servers.clear()
        if self.mode == "fork":
            kill_marked(self._token)


def guard_cause(job: Path, exit_info: WorkerExit, status: int | None) -> str | None:
    """Why a guarded spawned worker's case failed where its exit status cannot say: its guard
    (the spawned process, :mod:`kernbench.execution.guard`) wrote no `status` of the
    worker's exit, as it was killed while the case ran, or stopped (its worker's reply
    written, the case timed out); else None."""
    if status is not None:
        return None
    if not exit_info.timed_out and exit_info.signal_name is not None:
        how = f"was killed by {exit_info.signal_name}"
    elif exit_info.timed_out and _replied(job):
        how = "stopped (it did not reap its worker, whose reply was written)"
    else:
        return None
    return (f"the spawned worker's guard, its parent process, {how} while the case ran, and "
            "the worker with it (a kernel that kills or stops its parent process does this, "
            "as can the out-of-memory killer); the case was not run again")


def _replied(job: Path) -> bool:
    from kernbench.errors import KernbenchError
    from kernbench.execution.jobs import load_job

    try:
        return load_job(job).result_path.exists()
    except KernbenchError:
        return False


def worker_env() -> dict[str, str]:
    """The environment of every worker and fork server: this kernbench importable first,
    unbuffered output (a worker killed mid-case still leaves its last lines in the tails),
    and this process's mark (:data:`~kernbench.execution.isolation.PARENT_VARIABLE`)."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])  # makes `kernbench` importable
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    mark = process_mark(os.getpid())
    if mark is not None:  # what a run killed before its sweep leaves, the next run kills
        env[PARENT_VARIABLE] = mark
    return env


def make_launcher(settings: RunSettings) -> WorkerLauncher:
    """The launcher of a run: its isolation mode, one fork-server slot per process."""
    return WorkerLauncher(settings.isolation, worker_env(), slots=settings.processes)


def prestarted_launcher(settings: RunSettings,
                        planned: Sequence[Case | KernelSpec]) -> WorkerLauncher:
    """:func:`make_launcher`, with the fork servers of the first planned case's framework
    already starting (:meth:`~kernbench.execution.launcher.WorkerLauncher.prestart`); the
    caller closes it."""
    from kernbench.results.model import Case

    launcher = make_launcher(settings)
    first = next((item for item in planned if isinstance(item, Case)), None)
    try:
        if first is not None:
            launcher.prestart(first.framework)
    except BaseException:  # a Ctrl-C or a failed start between two servers: stop the others
        launcher.close()
        raise
    return launcher
