"""JAX layer normalisation over the last axis of a (rows, hidden) activation (default 4096 x 1024).

y = (x - mean) / sqrt(var + eps) * gamma + beta, statistics accumulated in fp32 for bf16 input.
`setup` places the inputs on `device` and compiles the function ahead of time, so the timed
call is the compiled computation only.

Work (`flops` / `bytes_moved`): flops = 8 per element (sum for the mean; subtract, square
and sum for the variance; subtract, scale by rsqrt, multiply by gamma, add beta), the
per-row rsqrt not counted; bytes = the compulsory traffic of reading x, gamma and beta once
and writing y once, at the case's itemsize.

Accuracy: `reference` evaluates the same formula in float64 with NumPy from the same input
values (bf16 inputs are exact in float64), so the bf16 case's error includes rounding the
output to bf16.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from kernbench.precision import dtype_for

EPS = 1e-5


def layernorm(x: jax.Array, gamma: jax.Array, beta: jax.Array) -> jax.Array:
    """Normalise each row of `x`; the result has the dtype of `x`."""
    xf = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    mean = jnp.mean(xf, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(xf - mean), axis=-1, keepdims=True)
    y = (xf - mean) * jax.lax.rsqrt(var + EPS)
    return (y * gamma + beta).astype(x.dtype)


def _jax_device(device: str) -> Any:
    platform, _, index = device.partition(":")
    platform = "cpu" if platform == "cpu" else "gpu"
    return jax.devices(platform)[int(index or 0)]


def setup(
    rows: int = 4096,
    hidden: int = 1024,
    precision: str = "fp32",
    device: str = "cpu",
    seed: int = 0,
) -> dict[str, Any]:
    """Random activations and affine parameters on `device`, plus the compiled layernorm."""
    dtype = dtype_for("jax", precision)
    rng = np.random.default_rng(seed)
    target = _jax_device(device)

    def put(values: np.ndarray) -> jax.Array:
        return jax.device_put(jnp.asarray(values, dtype=dtype), target)

    x = put(rng.standard_normal((rows, hidden)))
    gamma = put(1.0 + 0.1 * rng.standard_normal(hidden))
    beta = put(0.1 * rng.standard_normal(hidden))
    compiled = jax.jit(layernorm).lower(x, gamma, beta).compile()
    return {"fn": compiled, "x": x, "gamma": gamma, "beta": beta}


def run_benchmark(fn: Any, x: jax.Array, gamma: jax.Array, beta: jax.Array) -> jax.Array:
    """Call the compiled layernorm; the harness waits for the (asynchronous) result."""
    return fn(x, gamma, beta)


def reference(fn: Any, x: jax.Array, gamma: jax.Array, beta: jax.Array) -> np.ndarray:
    """The same layernorm in float64 with NumPy (`fn`, the compiled kernel, is not used)."""
    x64, g64, b64 = (np.asarray(v, dtype=np.float64) for v in (x, gamma, beta))
    mean = x64.mean(axis=-1, keepdims=True)
    var = np.square(x64 - mean).mean(axis=-1, keepdims=True)
    return (x64 - mean) / np.sqrt(var + EPS) * g64 + b64


def flops(rows: int = 4096, hidden: int = 1024) -> int:
    """8 flops per element of x."""
    return 8 * rows * hidden


def bytes_moved(rows: int = 4096, hidden: int = 1024, precision: str = "fp32") -> int:
    """itemsize * (x + gamma + beta + y), each read or written once."""
    itemsize = jnp.dtype(dtype_for("jax", precision)).itemsize
    return itemsize * (2 * rows * hidden + 2 * hidden)
