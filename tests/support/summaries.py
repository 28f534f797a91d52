"""Small summary.json documents built the way a run writes them, for merge tests."""

from __future__ import annotations

import json
from typing import Any

from kernbench.analysis.summary import summary_dict
from kernbench.results.model import CaseResult, RunResult, Status


def result(kernel: str, backend: str = "cpu", precision: str = "fp32",
           status: Status = "ok") -> CaseResult:
    samples = (1.0, 2.0, 3.0) if status == "ok" else ()
    return CaseResult(kernel_name=kernel, kernel_path=f"kernels/{kernel}/{kernel}.py",
                      framework="numpy", backend=backend, precision=precision,
                      problem_size={"n": 8}, status=status,
                      reason=None if status == "ok" else "boom", samples_ms=samples,
                      inner_loops=1 if samples else 0)


def summary(*results: CaseResult, started: str = "2024-01-01T10:00:00Z",
            finished: str = "2024-01-01T10:05:00Z", complete: bool = True,
            host: str = "a", fingerprint: str = "f00d",
            testbed: str | None = None) -> dict[str, Any]:
    """A summary.json of `results` run on `host` (testbed: the host unless given)."""
    run = RunResult(started_at=started, finished_at=finished, complete=complete,
                    settings={"iterations": 3, "warmup": 1, "seed": 1},
                    environment={"fingerprint": fingerprint, "hostname": host,
                                 "testbed": testbed or host},
                    kernels=(), results=results)
    document: dict[str, Any] = json.loads(json.dumps(summary_dict(run)))
    return document
