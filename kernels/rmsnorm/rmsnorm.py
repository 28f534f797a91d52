"""PyTorch RMSNorm written out: y = x * rsqrt(mean(x^2) + eps) * weight (default 4096 x 1024).

The mean of squares is taken in fp32 for half-precision input, as model code does, and the
result is cast back to the input dtype.
"""

from __future__ import annotations

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
