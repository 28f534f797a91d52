"""PyTorch 2-D convolution, torch.nn.functional.conv2d, 3 x 3 kernel, stride 1, padding 1.

Default: a batch of 4 images, 32 input and 64 output channels, 32 x 32 pixels (NCHW).
On CUDA, `setup` turns TF32 off for cuDNN and matmuls, so the fp32 case really computes in
fp32 (PyTorch's default would let Ampere and later GPUs use TF32's 10-bit mantissa).

Work (`flops` / `bytes_moved`): flops = 2 B Cout H W Cin k^2 for the multiply-adds of the
convolution plus B Cout H W for the bias; bytes = the compulsory traffic of reading the
images, filters and bias once and writing the output once, at the case's itemsize.

Accuracy: `reference` computes the same convolution in float64 with NumPy (zero padding,
sliding windows and one tensordot) from the same input values.
"""

from __future__ import annotations

import numpy as np
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
    if device != "cpu":
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
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


def _float64(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().cpu().double().numpy()


def reference(images: torch.Tensor, filters: torch.Tensor, bias: torch.Tensor) -> np.ndarray:
    """The same convolution (cross-correlation, as PyTorch's) in float64 with NumPy."""
    x, w, b = _float64(images), _float64(filters), _float64(bias)
    k = w.shape[-1]
    pad = k // 2
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    # windows[b, c, y, x, i, j] = padded[b, c, y + i, x + j]
    windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(2, 3))
    out = np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3]))  # (B, H, W, Cout)
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2)) + b[None, :, None, None]


def flops(
    batch: int = 4,
    in_channels: int = 32,
    out_channels: int = 64,
    height: int = 32,
    width: int = 32,
    kernel_size: int = 3,
) -> int:
    """2 B Cout H W Cin k^2 (multiply-adds) + B Cout H W (bias)."""
    outputs = batch * out_channels * height * width
    return 2 * outputs * in_channels * kernel_size**2 + outputs


def bytes_moved(
    batch: int = 4,
    in_channels: int = 32,
    out_channels: int = 64,
    height: int = 32,
    width: int = 32,
    kernel_size: int = 3,
    precision: str = "fp32",
) -> int:
    """itemsize * (images + filters + bias + output), each read or written once."""
    elements = (
        batch * in_channels * height * width
        + out_channels * in_channels * kernel_size**2
        + out_channels
        + batch * out_channels * height * width
    )
    itemsize = torch.empty((), dtype=dtype_for("torch", precision)).element_size()
    return itemsize * elements
