"""PyTorch sum and max of one large vector (default 2**24 elements).

Values are uniform in [0, 1) so the sum is large and well conditioned in low precision.
Returns a 2-element tensor [sum, max] in the input dtype.

Work (bench.yaml `work` formulas): flops = 2 n (n - 1 additions for the sum and n - 1
comparisons for the max, each counted as one); bytes = itemsize * (n + 2), reading x once
(a fused single pass; PyTorch reads it twice) and writing the two results.

Accuracy: `reference` is [math.fsum(x), max(x)] in float64 from the same input values, the
sum correctly rounded, so the error is the kernel's accumulation plus rounding its results to
the input dtype (a bf16 sum near 8e6 is rounded to a multiple of 32768).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from kernbench.precision import dtype_for


def setup(
    n: int = 2**24, precision: str = "fp32", device: str = "cpu", seed: int = 0
) -> dict[str, torch.Tensor]:
    """A random vector of `n` elements at `precision` on `device`."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.rand(n, generator=generator)
    return {"x": x.to(device=device, dtype=dtype_for("torch", precision))}


def run_benchmark(x: torch.Tensor) -> torch.Tensor:
    """[sum(x), max(x)] as one tensor."""
    return torch.stack((x.sum(), x.max()))


def reference(x: torch.Tensor) -> np.ndarray:
    """[sum(x), max(x)] in float64; the sum correctly rounded (math.fsum)."""
    x64 = x.detach().cpu().double().numpy()
    return np.array([math.fsum(x64), x64.max()])
