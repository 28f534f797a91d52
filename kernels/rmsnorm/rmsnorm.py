"""RMSNorm of a (rows, hidden) activation in four implementations, on the same inputs.

y = x / sqrt(mean(x^2) + eps) * weight. bench.yaml lists the implementations: NumPy (the
reference the others are checked against), PyTorch eager, the same PyTorch function under
torch.compile, and JAX jit. `setup` returns NumPy arrays; the harness converts them to each
implementation's framework, device and precision. Each implementation runs in its own worker,
so each imports only its own framework (the imports are inside the functions).

Work (bench.yaml `work`): flops = 4 per element (square, sum, scale by the row's rsqrt,
multiply by weight), the per-row mean and rsqrt not counted; bytes = reading x and weight once
and writing y once, at the case's itemsize.

Accuracy: `reference` evaluates the formula in float64; the NumPy implementation is checked
against it, the other three against the NumPy implementation's output.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

EPS = 1e-6


def setup(rows: int = 1024, hidden: int = 1024, seed: int = 0) -> dict[str, np.ndarray]:
    """Random activations and a weight vector near one."""
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((rows, hidden)),
            "weight": 1.0 + 0.1 * rng.standard_normal(hidden)}


def rmsnorm_numpy(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    inv_rms = 1.0 / np.sqrt(np.mean(np.square(x), axis=-1, keepdims=True) + EPS)
    return (x * inv_rms * weight).astype(x.dtype, copy=False)  # type: ignore[no-any-return]


def rmsnorm_torch(x: Any, weight: Any) -> Any:
    """Eager PyTorch (bench.yaml also runs it under torch.compile)."""
    import torch

    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + EPS) * weight


@functools.cache
def _rmsnorm_jit() -> Any:
    import jax
    import jax.numpy as jnp

    def rmsnorm(x: Any, weight: Any) -> Any:
        return x * jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + EPS) * weight
    return jax.jit(rmsnorm)


def rmsnorm_jax(x: Any, weight: Any) -> Any:
    """JAX under jit (compiled on the first call, in warmup)."""
    return _rmsnorm_jit()(x, weight)


def reference(x: Any, weight: Any) -> np.ndarray:
    """The formula in float64 with NumPy, from the same input values."""
    return rmsnorm_numpy(np.asarray(x, dtype=np.float64), np.asarray(weight, dtype=np.float64))
