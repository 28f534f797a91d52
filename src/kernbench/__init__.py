"""kernbench: discover compute kernels, measure them under one protocol, report honestly.

The public API. Heavy modules (NumPy, SciPy, jinja2) load only when a class is first used, so
``import kernbench`` and ``kernbench --help`` stay fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "BenchComparison",
    "BenchResult",
    "BenchmarkRunner",
    "ConfigError",
    "KernbenchError",
    "KernelDiscovery",
    "MetricsCollector",
    "ReportGenerator",
    "RunSettings",
    "SkipCase",
    "UnsupportedPrecision",
    "__version__",
    "bench",
    "compare",
    "current_precision",
    "run_suite",
]

_LAZY = {
    "bench": "kernbench.api.bench",
    "compare": "kernbench.api.bench",
    "BenchResult": "kernbench.api.display",
    "BenchComparison": "kernbench.api.display",
    "BenchmarkRunner": "kernbench.execution.runner",
    "RunSettings": "kernbench.execution.settings",
    "KernelDiscovery": "kernbench.discovery.scan",
    "MetricsCollector": "kernbench.measure.metrics",
    "ReportGenerator": "kernbench.reporting",
    "run_suite": "kernbench.api",
    "ConfigError": "kernbench.errors",
    "KernbenchError": "kernbench.errors",
    "SkipCase": "kernbench.errors",
    "UnsupportedPrecision": "kernbench.errors",
    "current_precision": "kernbench.measure.precision",
}

if TYPE_CHECKING:
    from kernbench.api import run_suite
    from kernbench.api.bench import bench, compare
    from kernbench.api.display import BenchComparison, BenchResult
    from kernbench.discovery.scan import KernelDiscovery
    from kernbench.errors import ConfigError, KernbenchError, SkipCase, UnsupportedPrecision
    from kernbench.execution.runner import BenchmarkRunner
    from kernbench.execution.settings import RunSettings
    from kernbench.measure.metrics import MetricsCollector
    from kernbench.measure.precision import current_precision
    from kernbench.reporting import ReportGenerator


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'kernbench' has no attribute {name!r}")
