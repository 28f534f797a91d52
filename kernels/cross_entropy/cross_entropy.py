"""Cross-entropy loss (forward, mean over the batch) of (batch, classes) logits against integer
targets, in four implementations on the same inputs.

loss = mean_i(logsumexp(logits_i) - logits_i[target_i]). bench.yaml lists the
implementations: NumPy (the reference the others are checked against), PyTorch eager
(torch.nn.functional.cross_entropy), the same function under torch.compile, and JAX jit.
`setup` returns NumPy arrays; the harness converts them to each implementation's framework and
device and casts the logits to the case's precision; the integer targets stay integers (JAX
without x64 holds them as int32). Each implementation imports only its own framework.

Work (bench.yaml `work`): flops = 4 per logit (max, subtract, exp, sum), the per-row log and
gather not counted; bytes = reading the logits once plus the int64 targets (8 bytes each).

Accuracy: `reference` evaluates the loss in float64; the NumPy implementation is checked
against it, the other three against the NumPy implementation's output (a scalar).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np


def setup(batch: int = 256, classes: int = 8192, seed: int = 0) -> dict[str, np.ndarray]:
    """Random logits and targets in [0, classes)."""
    rng = np.random.default_rng(seed)
    return {"logits": 2.0 * rng.standard_normal((batch, classes)),
            "targets": rng.integers(0, classes, size=batch, dtype=np.int64)}


def cross_entropy_numpy(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    top = logits.max(axis=-1, keepdims=True)
    lse = top[:, 0] + np.log(np.exp(logits - top).sum(axis=-1))
    picked = np.take_along_axis(logits, targets[:, None], axis=-1)[:, 0]
    return np.mean(lse - picked, dtype=logits.dtype)  # type: ignore[no-any-return]


def cross_entropy_torch(logits: Any, targets: Any) -> Any:
    """torch.nn.functional.cross_entropy (bench.yaml also runs it under torch.compile)."""
    import torch

    return torch.nn.functional.cross_entropy(logits, targets)


@functools.cache
def _cross_entropy_jit() -> Any:
    import jax
    import jax.numpy as jnp

    def cross_entropy(logits: Any, targets: Any) -> Any:
        picked = jnp.take_along_axis(logits, targets[:, None], axis=-1)[:, 0]
        return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - picked)
    return jax.jit(cross_entropy)


def cross_entropy_jax(logits: Any, targets: Any) -> Any:
    """JAX under jit (compiled on the first call, in warmup)."""
    return _cross_entropy_jit()(logits, targets)


def reference(logits: Any, targets: Any) -> np.ndarray:
    """The loss in float64 with NumPy, from the same input values."""
    return cross_entropy_numpy(np.asarray(logits, dtype=np.float64),
                               np.asarray(targets, dtype=np.int64))
