"""PyTorch 2-D convolution, torch.nn.functional.conv2d, 3 x 3 kernel, stride 1, padding 1.

Default: a batch of 4 images, 32 input and 64 output channels, 32 x 32 pixels (NCHW).
"""

from __future__ import annotations

import torch

from kernbench.precision import dtype_for


def setup(
    batch: int = 4,
    in_channels: int = 32,
    out_channels: int = 64,
    height: int = 32,
    width: int = 32,
    kernel_size: int = 3,
    precision: str = "fp32",
    device: str = "cpu",
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """Random images, filters (He-scaled) and bias at `precision` on `device`."""
    generator = torch.Generator().manual_seed(seed)
    dtype = dtype_for("torch", precision)
    fan_in = in_channels * kernel_size * kernel_size
    images = torch.randn(batch, in_channels, height, width, generator=generator)
    filters = torch.randn(out_channels, in_channels, kernel_size, kernel_size, generator=generator)
    bias = torch.randn(out_channels, generator=generator)
    return {
        "images": images.to(device=device, dtype=dtype),
        "filters": (filters * (2.0 / fan_in) ** 0.5).to(device=device, dtype=dtype),
        "bias": (0.1 * bias).to(device=device, dtype=dtype),
    }


def run_benchmark(images: torch.Tensor, filters: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Same-size convolution of `images` with `filters`, plus `bias`."""
    return torch.nn.functional.conv2d(images, filters, bias, padding=filters.shape[-1] // 2)
