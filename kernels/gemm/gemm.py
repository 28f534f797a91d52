"""NumPy dense matrix multiply C = A @ B of two square n x n matrices (default n = 512).

Inputs are filled in `setup` so only the multiply (BLAS) is timed.

Work (bench.yaml `work` formulas): flops = 2 n^3 (one multiply and one add per term of each
of the n^2 dot products of length n); bytes = itemsize * 3 n^2, the compulsory traffic of
reading A and B once and writing C once (cache reuse inside the multiply is not counted).

Accuracy: `reference` recomputes C in float64 from the same inputs with ``np.einsum`` (its own
sum-of-products loops, not BLAS), so even the fp64 case is checked against an independent
computation, and the fp32 case's rounding is measured against an fp64 truth. (It runs at a
few GFLOP/s: a second or so at n = 1024, half a minute at n = 4096.)
"""

from __future__ import annotations

import numpy as np

from kernbench.precision import dtype_for


def setup(n: int = 512, precision: str = "fp32", seed: int = 0) -> dict[str, np.ndarray]:
    """Two random n x n matrices at `precision`."""
    rng = np.random.default_rng(seed)
    dtype = dtype_for("numpy", precision)
    return {
        "a": rng.standard_normal((n, n)).astype(dtype),
        "b": rng.standard_normal((n, n)).astype(dtype),
    }


def run_benchmark(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C = A @ B."""
    return a @ b


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C = A @ B in float64 without BLAS (einsum's own loops), from the same inputs."""
    return np.einsum("ik,kj->ij", a.astype(np.float64), b.astype(np.float64), optimize=False)
