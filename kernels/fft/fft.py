"""2-D complex FFT of an n x n field (default n = 512), with scipy.fft.

scipy.fft keeps the input precision (complex64 in, complex64 out), where numpy.fft would
always compute and return complex128; so fp32 here really is single precision.

Work (`flops` / `bytes_moved`): flops = 5 N log2 N with N = n^2, the conventional count of a
complex radix-2 FFT of N points (the 2-D transform is 2n 1-D transforms of length n:
2n * 5 n log2 n = 5 n^2 log2 n^2); bytes = the compulsory traffic of reading the complex
field once and writing the complex result once, 2 * n^2 * (2 * itemsize).

Accuracy: `reference` is an independent float64 computation, the DFT as two dense
complex128 matrix products, F = W X W with W[j, k] = exp(-2 pi i (j k mod n) / n), from the
same input values; no FFT is involved. It costs O(n^3) (BLAS), well under a second at
n = 512.
"""

from __future__ import annotations

import math

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


def _dft_matrix(n: int) -> np.ndarray:
    """W[j, k] = exp(-2 pi i jk / n), with jk reduced mod n first so every angle is exact."""
    idx = np.arange(n)
    return np.exp(-2j * np.pi * (np.outer(idx, idx) % n) / n)


def reference(field: np.ndarray) -> np.ndarray:
    """The 2-D DFT of `field` in complex128 as W X W (W is symmetric), without an FFT."""
    rows, cols = field.shape
    x = field.astype(np.complex128)
    return _dft_matrix(rows) @ x @ _dft_matrix(cols)


def flops(n: int = 512) -> float:
    """5 N log2 N for the N = n^2 point complex transform."""
    points = n * n
    return 5.0 * points * math.log2(points)


def bytes_moved(n: int = 512, precision: str = "fp64") -> int:
    """Read the n x n complex field once, write the complex result once."""
    itemsize = np.dtype(dtype_for("numpy", precision)).itemsize
    return 2 * n * n * 2 * itemsize
