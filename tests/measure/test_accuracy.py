"""Tests for kernbench.measure.metrics.accuracy: error norms, tolerance resolution and pass/fail."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from kernbench.measure.metrics.accuracy import (
    DEFAULT_TOLERANCES,
    TOLERANCE_NAMES,
    compute_accuracy,
    resolve_tolerances,
)

REF = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
DELTA = np.array([0.1, -0.2, 0.3, -0.4, 0.5])
# sum(DELTA^2) = 0.55, sum(REF^2) = 55
RMSE = math.sqrt(0.55 / 5)
MAX_ERROR = 0.5
RELATIVE = math.sqrt(0.55 / 55)  # 0.1

RECORD_KEYS = {"passed", "reason", "mismatch", "rmse", "max_error", "relative_error",
               "relative_error_note", "nan_count", "nonfinite_mismatch", "elements", "leaves",
               "dtype", "dtype_mismatch", "tolerances", "exceeded"}
NO_LIMITS = {"rmse": 1e9}  # a configured key: defaults off, and nothing realistic fails it


def json_safe(record: dict[str, Any]) -> dict[str, Any]:
    """The record survives strict JSON (no NaN / inf) unchanged."""
    loaded: dict[str, Any] = json.loads(json.dumps(record, allow_nan=False))
    assert loaded == record
    return record


# --- known errors ---------------------------------------------------------------------------


def test_hand_computed_errors() -> None:
    record = json_safe(compute_accuracy(REF + DELTA, REF, "fp32"))
    assert set(record) == RECORD_KEYS
    assert record["rmse"] == pytest.approx(RMSE, rel=1e-12)
    assert record["max_error"] == pytest.approx(MAX_ERROR, rel=1e-12)
    assert record["relative_error"] == pytest.approx(RELATIVE, rel=1e-12)
    assert record["elements"] == 5 and record["leaves"] == 1 and record["nan_count"] == 0
    assert all(type(record[key]) is float for key in TOLERANCE_NAMES)


def test_identical_outputs_have_zero_error_and_pass() -> None:
    record = compute_accuracy(REF.copy(), REF, "fp64")
    assert (record["rmse"], record["max_error"], record["relative_error"]) == (0.0, 0.0, 0.0)
    assert record["passed"] is True and record["reason"] is None and record["exceeded"] == []


def test_errors_pool_all_leaves_on_one_scale() -> None:
    # leaf a: ref [3, 4], error [0, 0]; leaf b: ref [0], error [1] -> ||d|| = 1, ||ref|| = 5
    out = {"a": np.array([3.0, 4.0]), "b": np.array([1.0])}
    ref = {"a": np.array([3.0, 4.0]), "b": np.array([0.0])}
    record = compute_accuracy(out, ref, "fp32")
    assert record["relative_error"] == pytest.approx(0.2)
    assert record["rmse"] == pytest.approx(math.sqrt(1 / 3))
    assert record["max_error"] == 1.0
    assert record["leaves"] == 2 and record["elements"] == 3


def test_a_failed_check_says_why() -> None:
    record = compute_accuracy(REF + DELTA, REF, "fp32")
    assert record["passed"] is False
    assert record["exceeded"] == ["relative_error"]
    assert record["reason"] == "relative_error 0.1 > 1e-05"


# --- containers -----------------------------------------------------------------------------

CONTAINERS: dict[str, tuple[object, object, float, int]] = {
    # name: (output, reference, expected max_error, leaves)
    "array": (REF + DELTA, REF, 0.5, 1),
    "scalar": (2.25, 2.0, 0.25, 1),
    "0-d": (np.array(1.5), np.array(1.0), 0.5, 1),
    "tuple": ((np.ones(2) + 0.5, np.zeros(1)), (np.ones(2), np.zeros(1)), 0.5, 2),
    "list": ([1.0, 2.75], [1.0, 3.0], 0.25, 2),
    "dict": ({"w": np.ones(3) * 2, "b": 0.5}, {"b": 0.0, "w": np.ones(3) * 2}, 0.5, 2),
    "nested": ((np.ones(2), {"x": [np.zeros(2) + 0.125, None]}),
               (np.ones(2), {"x": [np.zeros(2), None]}), 0.125, 2),
}


@pytest.mark.parametrize("name", list(CONTAINERS))
def test_every_container_kind_is_compared(name: str) -> None:
    out, ref, max_error, leaves = CONTAINERS[name]
    record = json_safe(compute_accuracy(out, ref, "fp32", NO_LIMITS))
    assert record["mismatch"] is None
    assert record["max_error"] == pytest.approx(max_error)
    assert record["leaves"] == leaves


def test_dict_leaves_match_by_key_not_by_order() -> None:
    out = {"a": np.ones(2), "b": np.zeros(3)}
    ref = {"b": np.zeros(3), "a": np.ones(2)}
    record = compute_accuracy(out, ref, "fp64")
    assert record["passed"] is True and record["max_error"] == 0.0


def test_a_tuple_and_a_list_of_the_same_leaves_compare() -> None:
    record = compute_accuracy((np.ones(2), 1.0), [np.ones(2), 1.0], "fp64")
    assert record["passed"] is True and record["leaves"] == 2


def test_integers_compare_exactly() -> None:
    big = np.array([2**62 + 1, -(2**62)], dtype=np.int64)
    record = compute_accuracy(big + np.array([1, 0]), big, "int8", NO_LIMITS)
    assert record["max_error"] == 1.0  # float64 alone would round the 1 away
    same = compute_accuracy(big.copy(), big, "int8")
    assert same["passed"] is True and same["max_error"] == 0.0


def test_integers_beyond_int64_compare_exactly() -> None:
    out = np.array([2**64 - 1], dtype=np.uint64)
    ref = np.array([-(2**63)], dtype=np.int64)
    record = compute_accuracy(out, ref, "int8", NO_LIMITS)
    assert record["max_error"] == float(2**64 - 1 + 2**63)


def test_complex_outputs_use_the_modulus() -> None:
    record = compute_accuracy(np.array([1 + 1j]), np.array([4 + 5j]), "fp64", NO_LIMITS)
    assert record["max_error"] == pytest.approx(5.0)  # |(-3) + (-4)j|


def test_empty_outputs_pass_with_nothing_to_measure() -> None:
    record = json_safe(compute_accuracy(np.zeros((0, 3)), np.zeros((0, 3)), "fp32"))
    assert record["passed"] is True and record["elements"] == 0
    assert record["rmse"] is None and record["relative_error_note"] == "no elements to compare"


# --- frameworks and dtypes ------------------------------------------------------------------


def test_numpy_float16_against_float64_reference() -> None:
    record = compute_accuracy(REF.astype(np.float16), REF, "fp16")
    assert record["dtype"] == {"output": ["float16"], "reference": ["float64"]}
    assert record["dtype_mismatch"] is True and record["passed"] is True


@pytest.mark.parametrize(("name", "precision"), [("bfloat16", "bf16"), ("float16", "fp16")])
def test_torch_low_precision_tensors(name: str, precision: str) -> None:
    torch = pytest.importorskip("torch")
    values = np.linspace(-3, 3, 50)
    out = torch.tensor(values).to(getattr(torch, name))
    record = json_safe(compute_accuracy((out,), (values,), precision))
    assert record["dtype"] == {"output": [name], "reference": ["float64"]}
    assert record["passed"] is True
    assert 0.0 < record["relative_error"] < DEFAULT_TOLERANCES[precision]["relative_error"]


def test_jax_bf16_arrays() -> None:
    jnp = pytest.importorskip("jax.numpy")
    values = np.linspace(-3, 3, 50)
    record = compute_accuracy({"y": jnp.asarray(values, dtype=jnp.bfloat16)}, {"y": values},
                              "bf16")
    assert record["dtype"]["output"] == ["bfloat16"] and record["passed"] is True
    fp32 = compute_accuracy({"y": jnp.asarray(values, dtype=jnp.bfloat16)}, {"y": values},
                            "fp32")
    assert fp32["passed"] is False


def test_same_dtypes_are_no_mismatch() -> None:
    record = compute_accuracy(np.ones(2, np.float32), np.ones(2, np.float32), "fp32")
    assert record["dtype_mismatch"] is False


def test_fp16_matmul_passes_fp16_and_fails_fp32_defaults() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 64)), rng.standard_normal((64, 64))
    reference = a @ b
    output = a.astype(np.float16) @ b.astype(np.float16)
    fp16 = compute_accuracy(output, reference, "fp16")
    fp32 = compute_accuracy(output, reference, "fp32")
    assert fp16["passed"] is True and fp16["exceeded"] == []
    assert fp32["passed"] is False and fp32["exceeded"] == ["relative_error"]
    assert fp16["relative_error"] == fp32["relative_error"]


# --- non-finite values ----------------------------------------------------------------------


def test_nan_in_output_fails_but_errors_stay_numbers() -> None:
    out = REF + DELTA
    out[4] = np.nan  # the finite positions carry errors 0.1, 0.2, 0.3, 0.4
    record = json_safe(compute_accuracy(out, REF, "fp32", NO_LIMITS))
    assert record["nan_count"] == 1 and record["passed"] is False
    assert record["rmse"] == pytest.approx(math.sqrt(0.30 / 4))
    assert record["max_error"] == pytest.approx(0.4)
    assert record["relative_error"] == pytest.approx(math.sqrt(0.30 / 30))
    assert "1 NaN/inf" in record["reason"]


def test_inf_in_output_counts_as_non_finite() -> None:
    record = compute_accuracy(np.array([np.inf, -np.inf, 1.0]), np.ones(3), "fp32")
    assert record["nan_count"] == 2 and record["passed"] is False


def test_matching_non_finite_reference_values_pass() -> None:
    ref = np.array([np.nan, np.inf, 1.0])
    record = compute_accuracy(ref.copy(), ref, "fp64")
    assert record["passed"] is True and record["nonfinite_mismatch"] == 0
    assert record["elements"] == 3 and record["max_error"] == 0.0


def test_output_differing_from_a_non_finite_reference_fails() -> None:
    ref = np.array([np.nan, np.inf, 1.0])
    record = compute_accuracy(np.array([0.0, -np.inf, 1.0]), ref, "fp64")
    assert record["nonfinite_mismatch"] == 2 and record["nan_count"] == 0
    assert record["passed"] is False


def test_all_nan_output_has_no_numbers_and_fails() -> None:
    record = json_safe(compute_accuracy(np.full(3, np.nan), np.ones(3), "fp32"))
    assert record["rmse"] is None and record["relative_error"] is None
    assert record["nan_count"] == 3 and record["passed"] is False


def test_overflowing_difference_is_none_and_fails() -> None:
    record = json_safe(compute_accuracy(np.array([1e308]), np.array([-1e308]), "fp64",
                                        {"max_error": 1.0}))
    assert record["max_error"] is None and record["exceeded"] == ["max_error"]
    assert record["passed"] is False


def test_tiny_values_do_not_underflow() -> None:
    ref = np.array([1e-200, 2e-200])
    record = compute_accuracy(ref * (1 + 1e-3), ref, "fp64", NO_LIMITS)
    assert record["relative_error"] == pytest.approx(1e-3, rel=1e-6)
    assert record["relative_error_note"] is None


# --- zero reference -------------------------------------------------------------------------


def test_zero_reference_and_zero_output_pass() -> None:
    record = compute_accuracy(np.zeros(3), np.zeros(3), "fp32")
    assert record["relative_error"] == 0.0 and record["passed"] is True


def test_zero_reference_with_nonzero_output_has_no_relative_error() -> None:
    record = json_safe(compute_accuracy(np.array([0.0, 0.5]), np.zeros(2), "fp32"))
    assert record["relative_error"] is None
    assert record["relative_error_note"] == "reference norm is zero"
    assert record["passed"] is False and record["exceeded"] == ["relative_error"]
    assert record["max_error"] == 0.5


def test_zero_reference_passes_an_absolute_tolerance() -> None:
    record = compute_accuracy(np.array([0.0, 1e-6]), np.zeros(2), "fp32", {"max_error": 1e-3})
    assert record["passed"] is True and record["relative_error"] is None


# --- structure mismatches -------------------------------------------------------------------


def assert_mismatch(record: dict[str, Any], text: str) -> None:
    json_safe(record)
    assert record["passed"] is False
    assert record["mismatch"] == text and record["reason"] == text
    assert all(record[key] is None for key in
               ("rmse", "max_error", "relative_error", "nan_count", "elements", "leaves"))


def test_shape_mismatch() -> None:
    record = compute_accuracy([np.zeros((3, 4))], [np.zeros((4, 3))], "fp32")
    assert_mismatch(record, "shape (3,4) vs (4,3) at 0")


def test_broadcastable_shapes_are_still_a_mismatch() -> None:
    record = compute_accuracy(np.zeros(3), np.zeros((1, 3)), "fp32")
    assert_mismatch(record, "shape (3,) vs (1,3) at <root>")


def test_missing_dict_key() -> None:
    record = compute_accuracy({"a": np.ones(1)}, {"a": np.ones(1), "b": np.ones(1)}, "fp32")
    assert_mismatch(record, "leaf count 1 vs 2; missing from output: b")


def test_renamed_dict_key() -> None:
    record = compute_accuracy({"a": 1.0, "c": 2.0}, {"a": 1.0, "b": 2.0}, "fp32")
    assert_mismatch(record, "missing from output: b; not in reference: c")


def test_different_leaf_count() -> None:
    record = compute_accuracy((1.0, 2.0, 3.0), (1.0, 2.0), "fp32")
    assert_mismatch(record, "leaf count 3 vs 2; not in reference: 2")


def test_none_where_the_reference_has_an_array() -> None:
    record = compute_accuracy((1.0, None), (1.0, 2.0), "fp32")
    assert_mismatch(record, "leaf count 1 vs 2; missing from output: 1")


def test_unconvertible_output_is_a_mismatch_not_an_exception() -> None:
    record = compute_accuracy(["text"], [1.0], "fp32")
    assert record["passed"] is False
    assert record["mismatch"].startswith("output: cannot convert a str at 0")


# --- tolerance resolution -------------------------------------------------------------------

DEFAULTS = {"fp64": 1e-9, "fp32": 1e-5, "native": 1e-5, "fp16": 1e-2, "bf16": 2e-2,
            "fp8_e4m3": 1e-1, "fp8_e5m2": 2e-1, "int8": 5e-2}


@pytest.mark.parametrize(("precision", "limit"), list(DEFAULTS.items()))
def test_defaults_per_precision(precision: str, limit: float) -> None:
    assert resolve_tolerances(precision, None) == {"relative_error": limit}
    assert resolve_tolerances(precision, {}) == {"relative_error": limit}


def test_default_table_is_exactly_the_documented_one() -> None:
    assert {p: dict(t) for p, t in DEFAULT_TOLERANCES.items()} == \
        {p: {"relative_error": v} for p, v in DEFAULTS.items()}


@pytest.mark.parametrize(("alias", "canonical"), [("fp8", "fp8_e4m3"), ("half", "fp16"),
                                                  ("bfloat16", "bf16"), ("double", "fp64")])
def test_aliases_resolve_to_the_canonical_defaults(alias: str, canonical: str) -> None:
    assert resolve_tolerances(alias, None) == {"relative_error": DEFAULTS[canonical]}


def test_unknown_precision_has_no_defaults() -> None:
    assert resolve_tolerances("tf32", None) == {}
    record = compute_accuracy(REF + DELTA, REF, "tf32")
    assert record["passed"] is True and record["tolerances"] == {}


def test_configured_keys_replace_the_defaults() -> None:
    assert resolve_tolerances("fp16", {"rmse": 1e-3}) == {"rmse": 1e-3}


def test_per_precision_mapping_overrides_the_top_level() -> None:
    configured = {"rmse": 1e-3, "max_error": 0.5, "fp16": {"rmse": 1e-2}}
    assert resolve_tolerances("fp16", configured) == {"rmse": 1e-2, "max_error": 0.5}
    assert resolve_tolerances("fp32", configured) == {"rmse": 1e-3, "max_error": 0.5}


def test_per_precision_mapping_named_by_an_alias() -> None:
    assert resolve_tolerances("fp8_e4m3", {"fp8": {"max_error": 2.0}}) == {"max_error": 2.0}


def test_only_another_precisions_mapping_leaves_the_defaults() -> None:
    configured = {"fp16": {"rmse": 1e-2}}
    assert resolve_tolerances("fp32", configured) == {"relative_error": 1e-5}
    assert resolve_tolerances("fp16", configured) == {"rmse": 1e-2}


def test_resolved_tolerances_are_recorded() -> None:
    record = compute_accuracy(REF, REF, "bf16", {"bf16": {"max_error": 0.25}, "rmse": 0.1})
    assert record["tolerances"] == {"rmse": 0.1, "max_error": 0.25}


@pytest.mark.parametrize("configured", [
    {"rmsee": 0.1}, {"rmse": -1.0}, {"rmse": "x"}, {"rmse": True}, {"rmse": math.nan},
    {"rmse": math.inf}, {"fp16": {"bogus": 1.0}}, {"fp32": {"rmse": {"deeper": 1.0}}},
])
def test_malformed_tolerances_raise(configured: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="tolerances"):
        resolve_tolerances("fp16", configured)


# --- pass / fail at the boundary ------------------------------------------------------------
# out 4.5 against ref 4.0: rmse = max_error = 0.5, relative_error = 0.125, all exact in binary


@pytest.mark.parametrize(("name", "value"), [("rmse", 0.5), ("max_error", 0.5),
                                             ("relative_error", 0.125)])
def test_an_error_equal_to_its_tolerance_passes(name: str, value: float) -> None:
    at = compute_accuracy(np.array([4.5]), np.array([4.0]), "fp32", {name: value})
    assert at["passed"] is True and at["exceeded"] == []
    below = compute_accuracy(np.array([4.5]), np.array([4.0]), "fp32",
                             {name: math.nextafter(value, 0.0)})
    assert below["passed"] is False and below["exceeded"] == [name]


def test_only_configured_keys_are_checked() -> None:
    # relative_error 0.1 would fail the fp32 default; a configured rmse alone does not check it
    record = compute_accuracy(REF + DELTA, REF, "fp32", {"rmse": 0.5})
    assert record["passed"] is True and record["tolerances"] == {"rmse": 0.5}


def test_several_exceeded_tolerances_are_all_named() -> None:
    record = compute_accuracy(REF + DELTA, REF, "fp32",
                              {"max_error": 0.1, "rmse": 0.1, "relative_error": 0.5})
    assert record["exceeded"] == ["rmse", "max_error"]
