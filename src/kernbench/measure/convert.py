"""The same inputs for every implementation of a kernel: NumPy arrays into each framework.

A kernel with several implementations (bench.yaml ``implementations``) has one ``setup`` that
returns NumPy arrays. In each implementation's worker the harness converts them, leaf by leaf,
into that implementation's framework on the case's device, casting floating-point arrays to the
case's precision and leaving integer and boolean arrays (indices, labels, masks) as they are::

    to_framework({"x": np.ones((2, 3)), "labels": np.arange(2)}, "pytorch", "bf16", "cpu")
    # {"x": tensor(bfloat16, cpu), "labels": tensor(int64, cpu)}

So every implementation sees the same values (rounded once to the case's precision), and the
reference implementation, run at its own precision, sees them too. Values that are not NumPy
arrays (sizes, flags, already-converted tensors) pass through unchanged. Runs in the worker
only; frameworks are imported when asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kernbench.measure.precision import dtype_for
from kernbench.results.measurement import NATIVE

Array = np.ndarray[Any, Any]
Converter = Callable[[Array, Any], Any]


def to_framework(prepared: Mapping[str, Any], framework: str, precision: str,
                 backend: str) -> dict[str, Any]:
    """`prepared` (setup()'s keyword arguments) with every NumPy array leaf converted."""
    convert = _converter(framework, backend)
    floating = None if precision == NATIVE else dtype_for(_dtype_family(framework), precision)
    return {name: _convert_value(value, convert, floating) for name, value in prepared.items()}


def _convert_value(value: object, convert: Converter, floating: Any, depth: int = 0) -> object:
    if isinstance(value, np.ndarray):
        return convert(value, floating if _is_floating(value) else None)
    if depth < 4 and isinstance(value, (list, tuple)):
        return type(value)(_convert_value(v, convert, floating, depth + 1) for v in value)
    return value


def _is_floating(array: Array) -> bool:
    return bool(np.issubdtype(array.dtype, np.floating))


def _dtype_family(framework: str) -> str:
    return {"pytorch": "torch", "jax": "jax"}.get(framework, "numpy")


def _converter(framework: str, backend: str) -> Converter:
    if framework == "pytorch":
        return _torch_converter(backend)
    if framework == "jax":
        return _jax_converter(backend)
    if framework == "cupy":
        return _cupy_converter()
    return _numpy_converter


def _numpy_converter(array: Array, dtype: Any) -> Array:
    return array if dtype is None else array.astype(dtype)


def _torch_converter(backend: str) -> Converter:
    import torch

    device = "cpu" if backend == "cpu" else "cuda"  # ROCm builds name HIP devices "cuda"

    def convert(array: Array, dtype: Any) -> Any:
        tensor = torch.from_numpy(np.ascontiguousarray(array))
        return tensor.to(device=device, dtype=dtype) if dtype is not None else tensor.to(device)
    return convert


def _jax_converter(backend: str) -> Converter:
    import jax
    import jax.numpy as jnp

    device = jax.devices("cpu" if backend == "cpu" else "gpu")[0]

    def convert(array: Array, dtype: Any) -> Any:
        return jax.device_put(jnp.asarray(array, dtype=dtype), device)
    return convert


def _cupy_converter() -> Converter:  # pragma: no cover - needs a GPU
    import cupy

    def convert(array: Array, dtype: Any) -> Any:
        return cupy.asarray(array if dtype is None else array.astype(dtype))
    return convert
