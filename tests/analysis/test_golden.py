"""Golden values per SKU: detection, matching and the check against the median latency."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from kernbench.analysis.golden import (
    DEFAULT_TOLERANCE_MULTIPLIER,
    GOLDEN_SCHEMA,
    IGNORE_SKUS_SCHEMA,
    detect_sku,
    find_golden,
    golden_check,
    normalise_sku,
    sku_matches,
)
from kernbench.errors import KernbenchError

GOLDEN: dict[str, dict[str, Any]] = {
    "mi300": {"time_ms": 1.0, "tolerance_multiplier": 1.1, "size_bytes": 1024},
    "h100": {"time_ms": 0.85},
}


@pytest.mark.parametrize(("name", "sku"), [
    ("NVIDIA H100 80GB HBM3", "h100"),
    ("NVIDIA H100 PCIe", "h100"),
    ("NVIDIA H200", "h200"),
    ("NVIDIA GH200 480GB", "gh200"),
    ("NVIDIA A100-SXM4-80GB", "a100"),
    ("NVIDIA A100 80GB PCIe", "a100"),
    ("NVIDIA L40S", "l40s"),
    ("NVIDIA L4", "l4"),
    ("NVIDIA A10", "a10"),
    ("NVIDIA A10G", "a10g"),
    ("Tesla T4", "t4"),
    ("Tesla V100-SXM2-16GB", "v100"),
    ("NVIDIA GeForce RTX 4090", "rtx4090"),
    ("NVIDIA RTX A6000", "rtxa6000"),
    ("AMD Instinct MI300X", "mi300x"),
    ("AMD Instinct MI300A", "mi300a"),
    ("AMD Instinct MI250X", "mi250x"),
    ("AMD Instinct MI250X/MI250", "mi250"),
    ("AMD Instinct MI210", "mi210"),
    ("AMD Radeon RX 7900 XTX", "rx7900xtx"),
])
def test_detect_sku_of_real_device_names(name: str, sku: str) -> None:
    backend = "rocm" if name.startswith("AMD") else "cuda"
    assert detect_sku(name, backend) == sku


@pytest.mark.parametrize(("name", "backend"), [
    ("Intel(R) Xeon(R) Platinum 8480+", "cpu"),
    ("AMD EPYC 9654 96-Core Processor", "cpu"),
    ("NVIDIA H100 80GB HBM3", "cpu"),       # the CPU backend never has a SKU
    (None, "cuda"),
    ("", "cuda"),
    ("AMD Radeon Pro W7900", "rocm"),       # not a recognised family
    ("Some Accelerator", "cuda"),
])
def test_detect_sku_gives_none_for_cpu_and_unknown_names(name: str | None, backend: str) -> None:
    assert detect_sku(name, backend) is None


def test_memory_sizes_and_form_factors_are_not_skus() -> None:
    assert detect_sku("NVIDIA A100-SXM4-40GB HBM2", "cuda") == "a100"
    assert detect_sku("80GB HBM3 SXM5 PCIe", "cuda") is None


def test_normalise_sku() -> None:
    assert normalise_sku("MI300X") == "mi300x"
    assert normalise_sku(" RTX 4090 ") == "rtx4090"
    assert normalise_sku("h100_sxm-5") == "h100sxm5"


@pytest.mark.parametrize(("configured", "sku", "expected"), [
    ("mi300x", "mi300x", True),
    ("MI300X", "mi300x", True),          # case-insensitive
    ("RTX 4090", "rtx4090", True),       # blanks ignored
    ("mi300", "mi300x", True),           # family prefix + letters
    ("mi300", "mi300a", True),
    ("a10", "a10g", True),
    ("mi300x", "mi300", False),          # a variant does not cover its family
    ("mi300x", "mi300a", False),
    ("a10", "a100", False),              # prefix followed by a digit: another GPU
    ("l4", "l40s", False),
    ("h1", "h100", False),
    ("h100", "h200", False),
    ("", "h100", False),
])
def test_sku_matches_rules(configured: str, sku: str, expected: bool) -> None:
    assert sku_matches(configured, sku) is expected


def test_find_golden_prefers_exact_then_longest_family() -> None:
    table: dict[str, Any] = {"mi300": {}, "MI300X": {}, "mi3": {}}
    assert find_golden(table, "mi300x") == "MI300X"
    assert find_golden(table, "mi300a") == "mi300"
    assert find_golden(table, "mi250") is None


def test_no_golden_table_gives_none() -> None:
    assert golden_check(None, [], "h100", 1.0) is None
    assert golden_check({}, ["mi250"], "h100", 1.0) is None


def test_within_limit_passes() -> None:
    record = golden_check(GOLDEN, [], "mi300x", 1.05, output_bytes=1024)
    assert record is not None
    assert record["passed"] is True
    assert record["reason"] is None
    assert record["sku"] == "mi300x"
    assert record["golden_sku"] == "mi300"
    assert record["golden_time_ms"] == 1.0
    assert record["tolerance_multiplier"] == 1.1
    assert record["limit_ms"] == pytest.approx(1.1)
    assert record["measured_ms"] == 1.05
    assert record["ratio"] == 1.05
    assert record["exceeded_by_pct"] is None


def test_exactly_at_the_limit_passes() -> None:
    record = golden_check({"h100": {"time_ms": 1.0, "tolerance_multiplier": 1.1}}, [], "h100",
                          1.0 * 1.1)
    assert record is not None and record["passed"] is True


def test_slower_than_golden_times_multiplier_fails_with_exact_excess() -> None:
    record = golden_check(GOLDEN, [], "mi300x", 1.21)
    assert record is not None
    assert record["passed"] is False
    assert record["limit_ms"] == pytest.approx(1.1)
    assert record["exceeded_by_pct"] == 10.0
    assert record["ratio"] == 1.21
    assert "over the limit" in record["reason"]
    assert "10%" in record["reason"]


def test_default_tolerance_multiplier_applies() -> None:
    assert DEFAULT_TOLERANCE_MULTIPLIER == 1.1
    record = golden_check({"h100": {"time_ms": 2.0}}, [], "h100", 2.3)
    assert record is not None
    assert record["tolerance_multiplier"] == 1.1
    assert record["limit_ms"] == pytest.approx(2.2)
    assert record["passed"] is False
    record = golden_check({"h100": {"time_ms": 2.0}}, [], "h100", 2.1)
    assert record is not None and record["passed"] is True


def test_ignored_sku_is_not_checked() -> None:
    record = golden_check(GOLDEN, ["mi250"], "mi250x", 99.0)
    assert record is not None
    assert record["passed"] is None
    assert record["sku"] == "mi250x"
    assert "ignore" in record["reason"] and "mi250" in record["reason"]
    assert record["measured_ms"] is None


def test_unknown_sku_asks_for_sku_flag() -> None:
    record = golden_check(GOLDEN, [], None, 1.0)
    assert record is not None
    assert record["passed"] is None
    assert record["sku"] is None
    assert "--sku" in record["reason"]


def test_missing_entry_lists_available_skus() -> None:
    record = golden_check(GOLDEN, [], "a100", 1.0)
    assert record is not None
    assert record["passed"] is None
    assert record["reason"] == "no golden value for SKU a100 (golden values exist for: h100, mi300)"


def test_size_mismatch_fails() -> None:
    record = golden_check(GOLDEN, [], "mi300x", 1.0, output_bytes=2048)
    assert record is not None
    assert record["passed"] is False
    assert record["reason"] == "output size 2048 bytes, golden 1024"
    assert record["exceeded_by_pct"] is None


def test_size_and_time_failures_are_both_reported() -> None:
    record = golden_check(GOLDEN, [], "mi300x", 5.0, output_bytes=1)
    assert record is not None
    assert record["passed"] is False
    assert "over the limit" in record["reason"]
    assert record["reason"].endswith("output size 1 bytes, golden 1024")


def test_size_is_not_checked_without_output_bytes() -> None:
    record = golden_check(GOLDEN, [], "mi300x", 1.0)
    assert record is not None and record["passed"] is True


def test_missing_latency_is_not_a_verdict() -> None:
    record = golden_check(GOLDEN, [], "h100", None)
    assert record is not None
    assert record["passed"] is None
    assert record["golden_time_ms"] == 0.85
    assert "did not run" in record["reason"]


def test_bad_entry_is_a_kernbench_error() -> None:
    with pytest.raises(KernbenchError, match=r"golden\.h100\.tolerance_multiplier"):
        golden_check({"h100": {"time_ms": 1.0, "tolerance_multiplier": 0.5}}, [], "h100", 1.0)
    with pytest.raises(KernbenchError, match=r"golden\.h100\.time_ms"):
        golden_check({"h100": {"time_ms": 0}}, [], "h100", 1.0)


def test_golden_schema_accepts_and_refuses() -> None:
    validator = Draft202012Validator(GOLDEN_SCHEMA)
    good = {"mi300": {"time_ms": 1.2, "tolerance_multiplier": 1.1, "size_bytes": 1048576},
            "h100": {"time_ms": 0.85}}
    assert list(validator.iter_errors(good)) == []
    per_point = {"h100": {"points": {"n=8": {"time_ms": 0.5}, "impl=jax,n=8": {"time_ms": 0.4,
                                                                              "size_bytes": 8}}}}
    assert list(validator.iter_errors(per_point)) == []
    bad: object
    for bad in ({"h100": {}},                                   # time_ms required
                {"h100": {"time_ms": 0}},                       # > 0
                {"h100": {"time_ms": 1, "tolerance_multiplier": 0.9}},
                {"h100": {"time_ms": 1, "size_bytes": -1}},
                {"h100": {"time_ms": 1, "size_bytes": 1.5}},
                {"h100": {"time_ms": 1, "typo": 1}},
                {"h100": {"tolerance_multiplier": 1.2}},       # time_ms or points
                {"h100": {"points": {}}},
                {"h100": {"points": {"n=8": {"tolerance_multiplier": 1.2}}}},
                {"h100": {"points": {"n=8": {"time_ms": 1, "typo": 1}}}},
                {}, []):
        assert list(validator.iter_errors(bad)), bad
    ignore = Draft202012Validator(IGNORE_SKUS_SCHEMA)
    assert list(ignore.iter_errors(["mi250", "t4"])) == []
    assert list(ignore.iter_errors("mi250"))
    assert list(ignore.iter_errors([""]))
    assert list(ignore.iter_errors([1]))


PER_POINT = {"h100": {"time_ms": 10.0, "tolerance_multiplier": 1.5,
                      "points": {"n=8": {"time_ms": 1.0},
                                 "impl=jax,n=8": {"time_ms": 2.0, "tolerance_multiplier": 1.0}}}}


def test_a_point_uses_its_own_golden_value_and_inherits_the_multiplier() -> None:
    check = golden_check(PER_POINT, [], "h100", 1.4, point="n=8")
    assert check is not None
    assert (check["golden_time_ms"], check["tolerance_multiplier"], check["limit_ms"]) == (
        1.0, 1.5, 1.5)
    assert check["golden_point"] == "n=8" and check["passed"] is True
    slow = golden_check(PER_POINT, [], "h100", 2.2, point="impl=jax,n=8")
    assert slow is not None and slow["passed"] is False and slow["limit_ms"] == 2.0


def test_a_point_without_its_own_value_falls_back_to_the_skus() -> None:
    check = golden_check(PER_POINT, [], "h100", 12.0, point="n=16")
    assert check is not None
    assert check["golden_time_ms"] == 10.0 and check["passed"] is True
    assert "golden_point" not in check


def test_points_only_entry_has_no_value_for_other_points() -> None:
    golden = {"h100": {"points": {"n=8": {"time_ms": 1.0}}}}
    check = golden_check(golden, [], "h100", 1.0, point="n=16")
    assert check is not None and check["passed"] is None
    assert check["reason"] == "no golden value for n=16 on SKU h100 (golden points: n=8)"
