"""The benchmarks/ scripts, loaded as modules so tests can call their functions."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_script(name: str) -> ModuleType:
    """benchmarks/`name`.py as a module (its `main` is not run)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python benchmarks/<name>.py ARGS`` in a subprocess, its output captured."""
    return subprocess.run([sys.executable, str(BENCHMARKS / f"{name}.py"), *args],
                          capture_output=True, text=True, timeout=120, check=False)
