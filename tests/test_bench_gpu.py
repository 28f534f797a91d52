"""benchmarks/bench_gpu.py: it refuses to run without a CUDA GPU (never printing a figure it
did not measure), and its acceptance checks read the issue's limits."""

from __future__ import annotations

from types import ModuleType

import pytest

from support.scripts import load_script, run_script


def script() -> ModuleType:
    return load_script("bench_gpu")


def test_without_a_gpu_it_says_why_and_exits_2() -> None:
    reason = script().no_gpu_reason()
    if reason is None:
        pytest.skip("a CUDA GPU is present")
    done = run_script("bench_gpu")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"bench_gpu.py needs a CUDA GPU and cannot run here: {reason}.\n"


def test_the_checks_apply_the_issues_limits() -> None:
    checks = script().checks
    assert checks("copy_256m", {"cold": 168.0, "do_bench": 165.0}, "NVIDIA H100 80GB HBM3") == [
        "PASS copy_256m: cold 168.0 us vs do_bench 165.0 us (1.8% apart, limit 5%)",
        "PASS copy_256m: cold 0.168 ms >= 0.16 ms (H100 bandwidth limit)"]
    assert checks("matmul_4k", {"cold": 120.0, "do_bench": 100.0}, "A100") == [
        "FAIL matmul_4k: cold 120.0 us vs do_bench 100.0 us (20.0% apart, limit 5%)"]
    assert checks("copy_8m", {"graph_cold": 7.8, "graph": 7.0, "cold": 30.0, "hot": 9.5},
                  "A100") == [
        "FAIL copy_8m: graph_cold / graph = 1.11 (>= 1.2: the L2 flush shows)"]
    assert checks("copy_8m", {"graph_cold": 7.77, "graph": 3.70}, "H100") == [
        "PASS copy_8m: graph_cold / graph = 2.10 (>= 1.2: the L2 flush shows)"]
    assert checks("add_1k", {"cold": 3.0}, "A100") == []


def test_the_api_is_held_to_do_bench_as_cold_is() -> None:
    assert script().checks("matmul_4k", {"api": 223.0, "do_bench": 190.0}, "H100") == [
        "FAIL matmul_4k: api 223.0 us vs do_bench 190.0 us (17.4% apart, limit 5%)"]


def test_rounds_give_each_figure_its_median_and_range() -> None:
    merged = script().over_rounds([{"cold": 3.0, "graph_reason": "x"}, {"cold": 9.0},
                                   {"cold": 4.0}])
    assert merged == {"cold": 4.0, "cold_range": [3.0, 9.0], "graph_reason": "x"}


def test_a_tool_that_raises_leaves_its_reason_not_a_crash() -> None:
    def broken() -> dict[str, float]:
        raise RuntimeError("every block was discarded")

    assert script().guarded("api", broken) == {
        "api_reason": "RuntimeError: every block was discarded"}
