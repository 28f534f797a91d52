"""A small suite run whole and as shards, as the executor tests compare them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernbench.execution.settings import RunSettings
from kernbench.results.model import ProtocolSettings
from support.kernel_tree import kernel, load

KERNELS = ("axpy", "gemm", "relu", "scale")
FAILS = """
def run_benchmark():
    raise RuntimeError("boom")
"""
GOOD = """
def run_benchmark():
    return 1
"""


def tree(root: Path) -> Path:
    """Four kernels that return at once and one that always raises."""
    for name in KERNELS:
        kernel(root, name, GOOD)
    kernel(root, "broken", FAILS)
    return root


def settings(root: Path) -> RunSettings:
    """Few samples on the fake clock, one worker process per case: fast and exact."""
    return RunSettings(root=root, protocol=ProtocolSettings(warmup=1, iterations=3),
                       processes=1, fake_call_ms=1.0, testbed_dir=root / "cache")


def statuses(report_dir: Path) -> dict[str, str]:
    """case_id -> status of a report set's summary.json."""
    summary: dict[str, Any] = load(report_dir / "summary.json")
    return {r["case_id"]: r["status"] for r in summary["results"]}
