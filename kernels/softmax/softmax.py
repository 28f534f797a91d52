"""Row softmax of a (rows, cols) matrix in four implementations, compared on the same inputs.

bench.yaml lists them under `implementations`: NumPy (the reference the others are checked
against), PyTorch eager, the same PyTorch function under torch.compile, and JAX jit. `setup`
returns NumPy arrays; the harness converts them to each implementation's framework, device
and precision, so all four see the same values.

Each implementation runs in its own worker process, so each imports only its own framework
(the imports are inside the functions): a NumPy case never pays for importing PyTorch or JAX.

Work (bench.yaml `work`): flops = 5 per element (max, subtract, exp, sum, divide; exp counted
as one); bytes = itemsize * 2 * rows * cols, reading x once and writing y once.

Accuracy: `reference` computes the softmax in float64; the NumPy implementation is checked
against it, the other three against the NumPy implementation's output.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np


def setup(rows: int = 1024, cols: int = 1024, seed: int = 0) -> dict[str, np.ndarray]:
    """Random logits; the harness casts them to the case's precision."""
    return {"x": np.random.default_rng(seed).standard_normal((rows, cols))}


def softmax_numpy(x: np.ndarray) -> np.ndarray:
    """Max-shifted softmax over the last axis."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]


def softmax_torch(x: Any) -> Any:
    """torch.softmax over the last axis (bench.yaml runs it eagerly and compiled)."""
    import torch

    return torch.softmax(x, dim=-1)


@functools.cache
def _softmax_jit() -> Any:
    import jax

    return jax.jit(lambda x: jax.nn.softmax(x, axis=-1))


def softmax_jax(x: Any) -> Any:
    """jax.nn.softmax under jit (compiled on the first call, in warmup)."""
    return _softmax_jit()(x)


def reference(x: Any) -> np.ndarray:
    """The softmax in float64 with NumPy, from the same input values."""
    return softmax_numpy(np.asarray(x, dtype=np.float64))
