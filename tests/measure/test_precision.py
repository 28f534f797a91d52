"""Tests for kernbench.measure.precision: the (framework, precision) -> dtype table and its
inverse."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from kernbench.errors import UnsupportedPrecision
from kernbench.measure.precision import canonical, dtype_for, precision_of_dtype
from kernbench.results.vocabulary import PRECISION_ALIASES as ALIASES
from kernbench.results.vocabulary import PRECISION_NAMES as PRECISIONS

ASKED = ("fp64", "fp32", "fp16", "bf16", "fp8", "fp8_e5m2", "int8")
CANONICAL = {"fp8": "fp8_e4m3"}


@pytest.fixture(autouse=True)
def restore_jax_x64() -> Iterator[None]:
    """dtype_for("jax", "fp64") turns on jax_enable_x64 process-wide: put it back."""
    try:
        import jax
    except ImportError:
        yield
        return
    before = bool(jax.config.jax_enable_x64)
    yield
    jax.config.update("jax_enable_x64", before)


# --- dtype_for ------------------------------------------------------------------------------


@pytest.mark.parametrize(("precision", "expected"), [
    ("fp64", np.float64), ("fp32", np.float32), ("fp16", np.float16),
    ("bf16", ml_dtypes.bfloat16), ("fp8", ml_dtypes.float8_e4m3fn),
    ("fp8_e4m3", ml_dtypes.float8_e4m3fn), ("fp8_e5m2", ml_dtypes.float8_e5m2),
    ("int8", np.int8),
])
def test_numpy_dtypes(precision: str, expected: Any) -> None:
    dtype = dtype_for("numpy", precision)
    assert dtype is expected
    assert np.zeros(2, dtype=dtype).dtype == np.dtype(expected)


@pytest.mark.parametrize(("module_name", "names"), [
    ("torch", ("torch", "pytorch")), ("jax.numpy", ("jax",)),
])
def test_framework_dtypes(module_name: str, names: tuple[str, ...]) -> None:
    module = pytest.importorskip(module_name)
    expected = {"fp64": module.float64, "fp32": module.float32, "fp16": module.float16,
                "bf16": module.bfloat16, "fp8": module.float8_e4m3fn,
                "fp8_e5m2": module.float8_e5m2, "int8": module.int8}
    for precision in ASKED:
        for name in names:
            assert dtype_for(name, precision) is expected[precision], (name, precision)


def test_jax_fp64_enables_x64_so_arrays_really_are_fp64() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", False)
    dtype = dtype_for("jax", "fp64")
    assert jax.config.jax_enable_x64 is True
    assert str(jax.numpy.zeros(2, dtype=dtype).dtype) == "float64"


@pytest.mark.parametrize(("alias", "name"), [
    ("fp8", "fp8_e4m3"), ("float64", "fp64"), ("double", "fp64"), ("float32", "fp32"),
    ("float", "fp32"), ("float16", "fp16"), ("half", "fp16"), ("bfloat16", "bf16"),
])
def test_aliases(alias: str, name: str) -> None:
    assert canonical(alias) == name
    assert ALIASES[alias] == name
    assert dtype_for("numpy", alias) is dtype_for("numpy", name)


@pytest.mark.parametrize("name", PRECISIONS)
def test_canonical_names_are_fixed_points(name: str) -> None:
    assert canonical(name) == CANONICAL.get(name, name)


@pytest.mark.parametrize(("framework", "same_as"), [("np", "numpy"), ("cupy", "numpy")])
def test_framework_aliases(framework: str, same_as: str) -> None:
    for precision in ASKED:
        assert dtype_for(framework, precision) is dtype_for(same_as, precision)


@pytest.mark.parametrize("precision", ["fp4", "tf32", "", "int4", "fp32 ", "fp17"])
def test_an_unknown_precision_is_the_kernels_mistake(precision: str) -> None:
    with pytest.raises(ValueError, match=r"dtype_for: unknown precision .*; known: fp64, fp32"):
        dtype_for("numpy", precision)
    with pytest.raises(UnsupportedPrecision, match="known: fp64, fp32"):
        canonical(precision)


@pytest.mark.parametrize("framework", ["python", "tensorflow", "numba", "jaxx", "numpyy"])
def test_an_unknown_framework_is_the_kernels_mistake(framework: str) -> None:
    with pytest.raises(ValueError, match=f"unknown framework '{framework}'; known: cupy, jax, "
                                         "np, numpy, pytorch, torch, triton"):
        dtype_for(framework, "fp32")


def test_a_precision_this_install_lacks_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    real = importlib.import_module

    def without_ml_dtypes(name: str, *args: object) -> object:
        if name == "ml_dtypes":
            raise ImportError("No module named 'ml_dtypes'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_ml_dtypes)
    with pytest.raises(UnsupportedPrecision, match="bf16 on numpy needs ml_dtypes"):
        dtype_for("numpy", "bf16")


def test_unsupported_precision_is_not_a_kernbench_usage_error() -> None:
    from kernbench.errors import KernbenchError

    assert not issubclass(UnsupportedPrecision, KernbenchError)


# --- precision_of_dtype ---------------------------------------------------------------------


@pytest.mark.parametrize("framework", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("precision", ASKED)
def test_round_trip(framework: str, precision: str) -> None:
    if framework != "numpy":
        pytest.importorskip(framework)
    dtype = dtype_for(framework, precision)
    assert precision_of_dtype(dtype) == CANONICAL.get(precision, precision)


@pytest.mark.parametrize("precision", ASKED)
def test_round_trip_through_array_dtypes(precision: str) -> None:
    """The dtype *of an array* (what describe_output sees), not the dtype class."""
    expected = CANONICAL.get(precision, precision)
    assert precision_of_dtype(np.zeros(1, dtype=dtype_for("numpy", precision)).dtype) == expected
    torch = pytest.importorskip("torch")
    assert precision_of_dtype(torch.zeros(1, dtype=dtype_for("torch", precision)).dtype) \
        == expected
    jnp = pytest.importorskip("jax.numpy")
    assert precision_of_dtype(jnp.zeros(1, dtype=dtype_for("jax", precision)).dtype) == expected


def test_complex_dtypes_report_their_component_precision() -> None:
    assert precision_of_dtype(np.dtype(np.complex64)) == "fp32"
    assert precision_of_dtype(np.complex64) == "fp32"
    assert precision_of_dtype(np.dtype(np.complex128)) == "fp64"
    torch = pytest.importorskip("torch")
    assert precision_of_dtype(torch.complex64) == "fp32"
    assert precision_of_dtype(torch.complex128) == "fp64"
    assert precision_of_dtype(torch.complex32) == "fp16"
    jnp = pytest.importorskip("jax.numpy")
    assert precision_of_dtype(jnp.complex64) == "fp32"


def test_torch_short_names() -> None:
    torch = pytest.importorskip("torch")
    assert precision_of_dtype(torch.half) == "fp16"
    assert precision_of_dtype(torch.double) == "fp64"
    assert precision_of_dtype(torch.float) == "fp32"


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.bool_, np.int32, object, "str"])
def test_other_dtypes_have_no_precision(dtype: Any) -> None:
    assert precision_of_dtype(np.dtype(dtype)) is None


def test_strings_are_understood() -> None:
    assert precision_of_dtype("float32") == "fp32"
    assert precision_of_dtype("torch.bfloat16") == "bf16"
    assert precision_of_dtype("<class 'numpy.float16'>") == "fp16"
