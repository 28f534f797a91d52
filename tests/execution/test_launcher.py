"""kernbench.execution.launcher: fork servers started ahead of the first case (prestart)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernbench.execution.forkserver import fork_supported
from kernbench.execution.launcher import WorkerLauncher, worker_env
from support.forkserver import job_for

needs_fork = pytest.mark.skipif(fork_supported() is not None,
                                reason=f"fork servers unsupported here: {fork_supported()}")


@needs_fork
def test_prestart_starts_every_slot_at_once_and_the_cases_fork_from_those_servers(
        tmp_path: Path) -> None:
    launcher = WorkerLauncher("fork", worker_env(), slots=2)
    try:
        launcher.prestart("python")
        servers = {slot: launcher._servers[("python", slot)] for slot in range(2)}
        assert all(server.hello is None for server in servers.values())  # not waited for
        parents = [launcher.run("python", slot, job_for(tmp_path, "import os\nprint(os.getppid())"),
                                tmp_path, 30.0, None).stdout_tail.strip() for slot in range(2)]
        assert parents == [str(servers[slot]._proc.pid) for slot in range(2)]
        assert len(launcher._servers) == 2  # none started twice
    finally:
        launcher.close()


def test_prestart_starts_nothing_where_cases_are_spawned(
        monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    monkeypatch.setattr("kernbench.execution.launcher.ForkServer",
                        lambda key, *args: started.append(key))
    WorkerLauncher("spawn", worker_env()).prestart("numpy")
    monkeypatch.setattr("kernbench.execution.launcher.fork_supported", lambda: "no fork here")
    WorkerLauncher("fork", worker_env()).prestart("numpy")
    assert started == []


def test_a_run_calibrates_then_starts_its_first_cases_servers_then_reads_its_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The servers' imports overlap the environment's reading, and never the calibration."""
    from kernbench.api import run as api_run
    from kernbench.api import run_suite
    from kernbench.execution import launcher as launcher_module
    from kernbench.execution.settings import RunSettings
    from kernbench.measure import machine
    from support.kernel_tree import kernel

    order: list[str] = []

    def noting(name: str, function):  # type: ignore[no-untyped-def]
        def wrapped(*args, **kwargs):  # type: ignore[no-untyped-def]
            order.append(name)
            return function(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(machine, "calibrate", noting("calibration", machine.calibrate))
    monkeypatch.setattr(api_run, "collect_environment",
                        noting("environment", api_run.collect_environment))
    monkeypatch.setattr(launcher_module.WorkerLauncher, "_start",
                        noting("servers", launcher_module.WorkerLauncher._start))
    kernel(tmp_path, "k", "import numpy\n\ndef run_benchmark():\n    return None\n")
    outcome = run_suite(RunSettings(root=tmp_path, processes=1, isolation="fork"),
                        tmp_path / "out")
    assert [r.status for r in outcome.run.results] == ["ok"]
    first = order.index("servers")
    assert order.index("calibration") < first < order.index("environment")


def test_a_prestart_cut_short_stops_the_servers_it_started(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C (or a failed start) between two servers' starts: the first one is stopped,
    not left to the parent's exit."""
    from kernbench.execution import launcher as launcher_module
    from kernbench.execution.settings import RunSettings
    from kernbench.results.model import Case, KernelSpec

    started: list[Stub] = []

    class Stub:
        def __init__(self, *args: object) -> None:
            if started:
                raise KeyboardInterrupt
            self.closed = False
            started.append(self)

        def ask_to_leave(self) -> None:
            pass

        def close(self) -> None:
            self.closed = True

    first = Case(kernel=KernelSpec(name="k", path="k.py", framework="numpy"), backend="cpu",
                 precision="native")
    monkeypatch.setattr(launcher_module, "ForkServer", Stub)
    monkeypatch.setattr(launcher_module, "fork_supported", lambda: None)
    with pytest.raises(KeyboardInterrupt):
        launcher_module.prestarted_launcher(
            RunSettings(root=Path(), processes=3, isolation="fork"), [first])
    assert len(started) == 1 and started[0].closed
