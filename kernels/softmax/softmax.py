"""PyTorch softmax over the last axis of a (rows, cols) matrix (default 4096 x 1024).

Runs on CPU or CUDA (the `device` argument); the input is built in `setup`.
"""

from __future__ import annotations

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
