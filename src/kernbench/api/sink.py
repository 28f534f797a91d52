"""The run's report set written as it goes: each finished case lands in its kernel's file, so an
interrupted or killed run leaves a report set that ``--resume`` continues."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kernbench.execution.runner import now_iso
from kernbench.reporting import ReportGenerator
from kernbench.results.model import CaseResult, KernelSpec, RunResult
from kernbench.results.serialize import spec_dict

OnResult = Callable[[CaseResult, int, int], None]

WRITE_SHARE = 0.1
"""Most of a run's wall time that rewriting kernel files may take (see :class:`ResultSink`)."""


class ResultSink:
    """Writes a run's files as it goes: each finished case into its kernel's file (inside the
    signal guard's critical section), the summary at the start and at the end.

    The parent's memory stays flat however many cases run: only the current kernel's records
    are held (its file is rewritten with them; a kernel met again is read back from its
    file). At the end every kernel file is read back, in the order the kernels first finished
    a case, for the summary and the returned run.

    A kernel's file holds all its records, so rewriting it after every case would cost time
    quadratic in a big sweep's points. It is rewritten after a case only when the time since
    the last write is at least 1 / :data:`WRITE_SHARE` times what that write took (writes
    then take at most ~10% of the run), and always when the next kernel starts and when the
    run stops, interrupted or not. A small kernel's file is still written after every case;
    only a process killed outright (SIGKILL) can lose the last few cases of a big sweep."""

    def __init__(self, output_dir: Path, selected: Sequence[KernelSpec],
                 kept: Sequence[CaseResult], critical: Callable[[], Any],
                 on_result: OnResult | None) -> None:
        self.reports = ReportGenerator(output_dir)
        self.entries = {s.name: spec_dict(s) for s in selected}
        self.kernels = tuple(selected)
        self._kept = list(kept)
        self._written: dict[str, None] = {}
        """Kernels whose file this run wrote, in order: an ordered set."""
        self._current: tuple[str, list[CaseResult]] = ("", [])
        self._critical = critical
        self._on_result = on_result
        self._pending = False
        """Records of the current kernel not yet in its file."""
        self._written_at, self._write_cost_s = 0.0, 0.0
        """When the last kernel-file write ended, and how long it took."""
        self._started = ""
        self._settings: dict[str, Any] = {}
        self._environment: dict[str, Any] = {}

    def start(self, environment: Mapping[str, Any], manifest: Mapping[str, Any],
              started: str, settings: dict[str, Any]) -> None:
        """env.json, the manifest, kept kernels' files and an incomplete summary.json, so a
        run killed before its end (SIGKILL, power loss) still leaves a report set to resume."""
        self._started, self._settings = started, settings
        self._environment = dict(environment)
        self.reports.write_environment(environment)
        self.reports.write_manifest(dict(manifest))
        by_kernel: dict[str, list[CaseResult]] = {}
        for result in self._kept:
            by_kernel.setdefault(result.kernel_name, []).append(result)
        for name, results in by_kernel.items():
            self.reports.write_kernel(name, self.entries.get(name), results)
            self._written[name] = None
        self.reports.write_summary(self._run(False, self._kept))
        self._kept = []

    def record(self, result: CaseResult, index: int, total: int) -> None:
        with self._critical():
            name = result.kernel_name
            if self._current[0] != name:
                self._flush()  # the previous kernel's records not yet on disk
                self._write_cost_s = 0.0
            self._records_of(name).append(result)
            self._pending = True
            if time.monotonic() - self._written_at >= self._write_cost_s / WRITE_SHARE:
                self._flush()
        if self._on_result is not None:
            self._on_result(result, index, total)

    def _flush(self) -> None:
        """Rewrite the current kernel's file with its records, if any are not on disk yet."""
        name, records = self._current
        if not self._pending or not name:
            return
        start = time.monotonic()
        self.reports.write_kernel(name, self.entries.get(name), records)
        self._written[name] = None
        self._written_at = time.monotonic()
        self._write_cost_s, self._pending = self._written_at - start, False

    def _records_of(self, name: str) -> list[CaseResult]:
        if self._current[0] != name:
            earlier = self._read_back(name) if name in self._written else []
            self._current = (name, earlier)
        return self._current[1]

    def _read_back(self, name: str) -> list[CaseResult]:
        from kernbench.execution.resume import records_of
        from kernbench.results.schema import read_document

        path = self.reports.kernel_path(name)
        return records_of(read_document(path), path)

    def finish(self, complete: bool, machine_state: Mapping[str, Any] | None = None) -> RunResult:
        try:
            self._flush()
        except OSError:  # its kernel file cannot be written: save the summary all the same
            self._save_what_can_be(machine_state)
            raise
        self._current = ("", [])
        results = [r for name in self._written for r in self._read_back(name)]
        if machine_state is not None:
            self._environment["machine_state"] = dict(machine_state)
        run = self._run(complete, results)
        self.reports.write_environment(run.environment)
        self.reports.write_summary(run)
        return run

    def _save_what_can_be(self, machine_state: Mapping[str, Any] | None) -> None:
        """An incomplete summary.json of every record still readable (the kernel files that
        can be read back, the current kernel's records in memory), after a kernel file could
        not be written; nothing more is raised if this fails too."""
        from kernbench.errors import KernbenchError

        name, current = self._current
        results: list[CaseResult] = []
        for written in self._written:
            if written != name:
                with contextlib.suppress(OSError, KernbenchError):
                    results.extend(self._read_back(written))
        results.extend(current)
        if machine_state is not None:
            self._environment["machine_state"] = dict(machine_state)
        with contextlib.suppress(OSError):
            self.reports.write_summary(self._run(False, results))

    def _run(self, complete: bool, results: Sequence[CaseResult]) -> RunResult:
        environment = {**self._environment, "devices": _devices(results)}
        return RunResult(started_at=self._started, finished_at=now_iso(), complete=complete,
                         settings=self._settings, environment=environment,
                         kernels=self.kernels, results=tuple(results))



def _devices(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """What each backend reported about its device, once per distinct description."""
    devices: list[dict[str, Any]] = []
    for result in results:
        info = dict(result.device_info)
        if info and "error" not in info and info not in devices:
            devices.append(info)
    return devices
