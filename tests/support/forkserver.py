"""Jobs for a fork server of the tests: a kernel that runs a body of code at import."""

from __future__ import annotations

import textwrap
from pathlib import Path

from kernbench.execution.forkserver import ForkServer
from kernbench.execution.isolation import WorkerExit
from kernbench.execution.jobs import WorkerJob, dump_job
from kernbench.results.model import ProtocolSettings

FAST = ProtocolSettings(warmup=0, iterations=2, max_inner_loops=10, calibration_budget_s=0.1,
                        warmup_time_s=0.0)


def job_for(tmp_path: Path, body: str, framework: str = "python") -> Path:
    """A job whose kernel runs `body` at import (once), then returns None per call."""
    kernel = tmp_path / "kern.py"
    kernel.write_text(textwrap.dedent(body) + "\n\ndef run_benchmark():\n    return None\n",
                      encoding="utf-8")
    job = WorkerJob(kernel_file=kernel, root=tmp_path, kernel_name="kern",
                    function_name="run_benchmark", framework=framework, backend="cpu",
                    precision="native", settings=FAST, result_path=tmp_path / "result.json")
    path = tmp_path / "job.json"
    dump_job(job, path)
    return path


def run(server: ForkServer, tmp_path: Path, body: str, timeout_s: float = 30.0,
        max_memory: int | None = None) -> WorkerExit:
    job = job_for(tmp_path, body)
    exit_info = server.run(str(job), str(tmp_path), {"KERNBENCH_TEST_MARKER": "m-7"},
                           timeout_s, max_memory)
    assert isinstance(exit_info, WorkerExit)
    return exit_info
