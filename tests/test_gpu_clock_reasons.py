"""benchmarks/gpu_clock_reasons.py: it refuses to run without a CUDA GPU and NVML, and its
table line counts each reason bitmask and gives the clock's and the power's medians."""

from __future__ import annotations

from types import ModuleType

import pytest

from support.scripts import load_script, run_script


def script() -> ModuleType:
    return load_script("gpu_clock_reasons")


def test_without_a_gpu_it_says_why_and_exits_2() -> None:
    reason = script().missing()
    if reason is None:
        pytest.skip("a CUDA GPU with NVML is present")
    done = run_script("gpu_clock_reasons")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"gpu_clock_reasons.py needs a CUDA GPU with NVML: {reason}.\n"


def test_a_phase_line_counts_the_reasons_and_gives_medians_and_ranges() -> None:
    reads = [(0x4, 1680, 594.0), (0x4, 1590, 692.0), (0x0, 1980, 300.0)]
    assert script().line("matmul", reads) == (
        "| matmul | 3 | 0x4: 2, 0x0: 1 | 1680 MHz (1590-1980) | 594 W (300-692) |")
