"""One table from (framework, precision) to dtype, so kernels do not each carry their own.

Kernels call ``dtype_for("torch", precision)``; a precision the framework cannot represent
raises :class:`~kernbench.errors.UnsupportedPrecision`, which the harness records as `skipped`.
Frameworks are imported lazily, only when asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

from kernbench.errors import UnsupportedPrecision

PRECISIONS: tuple[str, ...] = (
    "fp64", "fp32", "fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8",
)
ALIASES = {"fp8": "fp8_e4m3", "float64": "fp64", "float32": "fp32", "float16": "fp16",
           "bfloat16": "bf16", "half": "fp16", "double": "fp64", "float": "fp32"}

# (framework, canonical precision) -> (module, attribute). ml_dtypes gives NumPy bf16 and fp8.
_DTYPES: dict[tuple[str, str], tuple[str, str]] = {
    ("numpy", "fp64"): ("numpy", "float64"),
    ("numpy", "fp32"): ("numpy", "float32"),
    ("numpy", "fp16"): ("numpy", "float16"),
    ("numpy", "bf16"): ("ml_dtypes", "bfloat16"),
    ("numpy", "fp8_e4m3"): ("ml_dtypes", "float8_e4m3fn"),
    ("numpy", "fp8_e5m2"): ("ml_dtypes", "float8_e5m2"),
    ("numpy", "int8"): ("numpy", "int8"),
    ("torch", "fp64"): ("torch", "float64"),
    ("torch", "fp32"): ("torch", "float32"),
    ("torch", "fp16"): ("torch", "float16"),
    ("torch", "bf16"): ("torch", "bfloat16"),
    ("torch", "fp8_e4m3"): ("torch", "float8_e4m3fn"),
    ("torch", "fp8_e5m2"): ("torch", "float8_e5m2"),
    ("torch", "int8"): ("torch", "int8"),
    ("jax", "fp64"): ("jax.numpy", "float64"),
    ("jax", "fp32"): ("jax.numpy", "float32"),
    ("jax", "fp16"): ("jax.numpy", "float16"),
    ("jax", "bf16"): ("jax.numpy", "bfloat16"),
    ("jax", "fp8_e4m3"): ("jax.numpy", "float8_e4m3fn"),
    ("jax", "fp8_e5m2"): ("jax.numpy", "float8_e5m2"),
    ("jax", "int8"): ("jax.numpy", "int8"),
}
_FRAMEWORK_ALIASES = {"pytorch": "torch", "np": "numpy", "cupy": "numpy"}


def canonical(precision: str) -> str:
    """The canonical name of a precision (``"fp8"`` -> ``"fp8_e4m3"``); unknown names raise."""
    name = ALIASES.get(precision, precision)
    if name not in PRECISIONS:
        known = ", ".join(PRECISIONS)
        raise UnsupportedPrecision(f"unknown precision {precision!r}; known: {known}")
    return name


def dtype_for(framework: str, precision: str) -> Any:
    """The dtype object of `framework` ("numpy", "torch"/"pytorch", "jax") for `precision`."""
    fw = _FRAMEWORK_ALIASES.get(framework, framework)
    key = (fw, canonical(precision))
    if key not in _DTYPES:
        raise UnsupportedPrecision(f"{framework} has no dtype for {precision}")
    module_name, attr = _DTYPES[key]
    if key == ("jax", "fp64"):
        _enable_jax_x64()
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnsupportedPrecision(
            f"{precision} on {framework} needs {module_name}: {exc}") from exc
    dtype = getattr(module, attr, None)
    if dtype is None:
        raise UnsupportedPrecision(f"this {module_name} has no {attr} (needed for {precision})")
    return dtype


def _enable_jax_x64() -> None:  # pragma: no cover - needs jax
    """JAX silently computes fp64 as fp32 unless x64 is on; a worker runs one case: turn it on."""
    import jax

    jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]


def precision_of_dtype(dtype: object) -> str | None:
    """The precision name of a dtype of any framework (``torch.float16`` -> ``"fp16"``), or None."""
    name = getattr(dtype, "name", None)  # NumPy dtypes: ">f4" prints oddly but is named float32
    text = (name if isinstance(name, str) else str(dtype)).rsplit(".", 1)[-1].strip("'<>").lower()
    if text.startswith("complex"):
        bits = int(text.removeprefix("complex") or 128) // 2
        return {64: "fp64", 32: "fp32", 16: "fp16"}.get(bits)
    table = {"float64": "fp64", "float32": "fp32", "float16": "fp16", "bfloat16": "bf16",
             "float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2", "int8": "int8",
             "double": "fp64", "float": "fp32", "half": "fp16"}
    return table.get(text)


FLOATS = ("fp64", "fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2")


def ignored_precision(requested: str, leaves: list[dict[str, Any]]) -> str | None:
    """Why a case's output shows the kernel ignored its precision, or None.

    `leaves` describe the output's first leaves (``dtype`` and ``precision``, as the worker's
    output description gives them). Only the unmistakable case counts: a floating precision
    narrower than fp64 was asked for, and every floating-point array returned is float64 (the
    NumPy default) - a kernel may well return a wider type than it computes in (an fp8 matmul
    into bf16, a loss in fp32), but not float64 everywhere by accident of design."""
    if requested not in FLOATS or requested == "fp64":
        return None
    floats = [leaf for leaf in leaves if "dtype" in leaf and leaf.get("precision") in FLOATS]
    if not floats or any(leaf["precision"] != "fp64" for leaf in floats):
        return None
    dtypes = ", ".join(sorted({str(leaf["dtype"]) for leaf in floats}))
    return (f"precision not honoured: asked for {requested}, the kernel returned only {dtypes} "
            f"arrays, so this case would be timed under a label it did not compute in; make "
            f"the kernel build its inputs with dtype_for(framework, precision), or list only "
            f"the precisions it supports in bench.yaml `precisions`")
