"""PyTorch softmax over the last axis of a (rows, cols) matrix (default 4096 x 1024).

Runs on CPU or CUDA (the `device` argument); the input is built in `setup`.

Work (bench.yaml `work` formulas): flops = 5 per element (max, subtract, exp, sum, divide;
exp counted as one); bytes = itemsize * 2 * rows * cols, reading x once and writing y once.

Accuracy: `reference` computes the (max-shifted) softmax in float64 with NumPy from the same
input values.
"""

from __future__ import annotations

import numpy as np
import torch

from kernbench.precision import dtype_for


def setup(
    rows: int = 4096,
    cols: int = 1024,
    precision: str = "fp32",
    device: str = "cpu",
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """A random (rows, cols) matrix of logits at `precision` on `device`."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=generator)
    return {"x": x.to(device=device, dtype=dtype_for("torch", precision))}


def run_benchmark(x: torch.Tensor) -> torch.Tensor:
    """Row-wise softmax of `x`, same dtype and device as `x`."""
    return torch.softmax(x, dim=-1)


def reference(x: torch.Tensor) -> np.ndarray:
    """Row-wise softmax of `x` in float64 with NumPy."""
    x64 = x.detach().cpu().double().numpy()
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
