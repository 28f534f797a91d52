"""Layer normalisation of a (rows, hidden) activation in four implementations, on the same
inputs.

y = (x - mean) / sqrt(var + eps) * gamma + beta over the last axis. bench.yaml lists the
implementations: NumPy (the reference the others are checked against), PyTorch eager
(torch.nn.functional.layer_norm), the same function under torch.compile, and JAX jit. `setup`
returns NumPy arrays; the harness converts them to each implementation's framework, device
and precision. Each implementation imports only its own framework (inside the functions).

Work (bench.yaml `work`): flops = 7 per element (sum for the mean; subtract, square and sum
for the variance; scale by the row's rsqrt, multiply by gamma, add beta), the per-row rsqrt
not counted; bytes = reading x, gamma and beta once and writing y once, at the itemsize.

Accuracy: `reference` evaluates the formula in float64; the NumPy implementation is checked
against it, the other three against the NumPy implementation's output.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

EPS = 1e-5


def setup(rows: int = 1024, hidden: int = 1024, seed: int = 0) -> dict[str, np.ndarray]:
    """Random activations and affine parameters near (1, 0)."""
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((rows, hidden)),
            "gamma": 1.0 + 0.1 * rng.standard_normal(hidden),
            "beta": 0.1 * rng.standard_normal(hidden)}


def layernorm_numpy(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = np.square(x - mean).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + EPS) * gamma + beta
    return y.astype(x.dtype, copy=False)  # type: ignore[no-any-return]


def layernorm_torch(x: Any, gamma: Any, beta: Any) -> Any:
    """torch.nn.functional.layer_norm (bench.yaml also runs it under torch.compile)."""
    import torch

    return torch.nn.functional.layer_norm(x, x.shape[-1:], gamma, beta, EPS)


@functools.cache
def _layernorm_jit() -> Any:
    import jax
    import jax.numpy as jnp

    def layernorm(x: Any, gamma: Any, beta: Any) -> Any:
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + EPS) * gamma + beta
    return jax.jit(layernorm)


def layernorm_jax(x: Any, gamma: Any, beta: Any) -> Any:
    """JAX under jit (compiled on the first call, in warmup)."""
    return _layernorm_jit()(x, gamma, beta)


def reference(x: Any, gamma: Any, beta: Any) -> np.ndarray:
    """The formula in float64 with NumPy, from the same input values."""
    return layernorm_numpy(*(np.asarray(v, dtype=np.float64) for v in (x, gamma, beta)))
