"""What GPUs this machine has, for tests whose expectations differ on a machine with one (the
suite runs on machines without a GPU in CI, and with one on a developer's workstation)."""

from __future__ import annotations

import shutil


def cuda_available() -> bool:
    """PyTorch or CuPy can use a CUDA (or ROCm) device here."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        return True
    try:
        import cupy
    except ImportError:
        return False
    return bool(cupy.is_available())


def gpu_listed() -> bool:
    """env.json would list a GPU: nvidia-smi or rocm-smi is on PATH."""
    return any(shutil.which(tool) is not None for tool in ("nvidia-smi", "rocm-smi"))
