"""kernbench.api.run_suite, called as a library: what it checks before any kernel runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernbench.api import run_suite
from kernbench.errors import KernbenchError
from kernbench.execution.settings import RunSettings
from support.kernel_tree import kernel


def test_run_suite_refuses_an_output_dir_that_is_a_file_before_running_anything(
        tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    kernel(tmp_path, "k", f"def run_benchmark():\n    open({str(marker)!r}, 'w').close()\n")
    blocker = tmp_path / "out"
    blocker.write_text("x")
    with pytest.raises(KernbenchError, match="not a folder"):
        run_suite(RunSettings(root=tmp_path, processes=1), blocker)
    assert not marker.exists()
    assert blocker.read_text() == "x"
