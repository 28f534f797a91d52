"""What GPUs this machine has, for tests whose expectations differ on a machine with one (the
suite runs on machines without a GPU in CI, and with one on a developer's workstation)."""

from __future__ import annotations

import shutil


def torch_has_cuda() -> bool:
    """PyTorch is installed and sees a CUDA (or ROCm) device."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def cuda_available() -> bool:
    """PyTorch or CuPy can use a CUDA (or ROCm) device here."""
    if torch_has_cuda():
        return True
    try:
        import cupy
    except ImportError:
        return False
    return bool(cupy.is_available())


def gpu_listed() -> bool:
    """env.json would list a GPU: nvidia-smi or rocm-smi is on PATH."""
    return any(shutil.which(tool) is not None for tool in ("nvidia-smi", "rocm-smi"))
