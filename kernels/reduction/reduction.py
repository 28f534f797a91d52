"""PyTorch sum and max of one large vector (default 2**24 elements).

Values are uniform in [0, 1) so the sum is large and well conditioned in low precision.
Returns a 2-element tensor [sum, max] in the input dtype.
"""

from __future__ import annotations

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
