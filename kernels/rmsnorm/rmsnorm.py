"""PyTorch RMSNorm written out: y = x * rsqrt(mean(x^2) + eps) * weight (default 4096 x 1024).

The mean of squares is taken in fp32 for half-precision input, as model code does, and the
result is cast back to the input dtype.

Work (`flops` / `bytes_moved`): flops = 4 per element (square, sum, scale by the row's
rsqrt, multiply by weight), the per-row mean and rsqrt not counted; bytes = the compulsory
traffic of reading x and weight once and writing y once, at the case's itemsize.

Accuracy: `reference` evaluates the same formula in float64 with NumPy from the same input
values, so the fp16/bf16 cases' error includes the kernel's two roundings to the input dtype
(after normalising and after the weight).
"""

from __future__ import annotations

import numpy as np
import torch

from kernbench.precision import dtype_for

EPS = 1e-6


def setup(
    rows: int = 4096,
    hidden: int = 1024,
    precision: str = "fp32",
    device: str = "cpu",
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """Random activations and a weight vector near one, at `precision` on `device`."""
    generator = torch.Generator().manual_seed(seed)
    dtype = dtype_for("torch", precision)
    x = torch.randn(rows, hidden, generator=generator)
    weight = 1.0 + 0.1 * torch.randn(hidden, generator=generator)
    return {
        "x": x.to(device=device, dtype=dtype),
        "weight": weight.to(device=device, dtype=dtype),
    }


def run_benchmark(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """RMS-normalise each row of `x` and scale by `weight`."""
    xf = x.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return (xf * inv_rms).to(x.dtype) * weight


def reference(x: torch.Tensor, weight: torch.Tensor) -> np.ndarray:
    """The same RMSNorm in float64 with NumPy."""
    x64 = x.detach().cpu().double().numpy()
    w64 = weight.detach().cpu().double().numpy()
    return x64 / np.sqrt(np.square(x64).mean(axis=-1, keepdims=True) + EPS) * w64


def flops(rows: int = 4096, hidden: int = 1024) -> int:
    """4 flops per element of x."""
    return 4 * rows * hidden


def bytes_moved(rows: int = 4096, hidden: int = 1024, precision: str = "fp32") -> int:
    """itemsize * (x + weight + y), each read or written once."""
    itemsize = torch.empty((), dtype=dtype_for("torch", precision)).element_size()
    return itemsize * (2 * rows * hidden + hidden)
