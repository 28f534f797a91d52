"""2-D complex FFT of an n x n field (default n = 512), with scipy.fft.

scipy.fft keeps the input precision (complex64 in, complex64 out), where numpy.fft would
always compute and return complex128; so fp32 here really is single precision.
"""

from __future__ import annotations

import numpy as np
import scipy.fft

from kernbench.errors import UnsupportedPrecision
from kernbench.precision import dtype_for

_COMPLEX = {np.dtype(np.float64): np.complex128, np.dtype(np.float32): np.complex64}


def setup(n: int = 512, precision: str = "fp64", seed: int = 0) -> dict[str, np.ndarray]:
    """A random complex n x n field whose real and imaginary parts have `precision`."""
    real = np.dtype(dtype_for("numpy", precision))
    if real not in _COMPLEX:
        raise UnsupportedPrecision(f"scipy.fft has no complex type for {precision}")
    rng = np.random.default_rng(seed)
    field = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return {"field": field.astype(_COMPLEX[real])}


def run_benchmark(field: np.ndarray) -> np.ndarray:
    """Forward 2-D FFT of `field`, same complex dtype."""
    return scipy.fft.fft2(field)
