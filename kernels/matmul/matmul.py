"""NumPy matrix multiply C = A @ B of an m x k and a k x n matrix, swept over shapes.

bench.yaml's `sweep` runs one case per [m, k, n] point (a `pow2` sweep: m = k = n = 64, 128,
256); each point arrives as the keyword arguments `m`, `k`, `n` of `setup`, which fills the
inputs so only the multiply (BLAS) is timed.

Work (bench.yaml `work` formulas, per point): flops = 2 m k n (a multiply and an add per term of
the m n dot products of length k); bytes = itemsize (m k + k n + m n), reading A and B once and
writing C once.

Accuracy: `reference` recomputes C in float64 from the same inputs with ``np.einsum`` (its own
loops, not BLAS), so even the fp64 case is checked against an independent computation.
"""

from __future__ import annotations

import numpy as np

from kernbench.precision import dtype_for


def setup(m: int = 128, k: int = 128, n: int = 128, precision: str = "fp32",
          seed: int = 0) -> dict[str, np.ndarray]:
    """A random m x k matrix A and k x n matrix B at `precision`."""
    rng = np.random.default_rng(seed)
    dtype = dtype_for("numpy", precision)
    return {
        "a": rng.standard_normal((m, k)).astype(dtype),
        "b": rng.standard_normal((k, n)).astype(dtype),
    }


def run_benchmark(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C = A @ B."""
    return a @ b


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C = A @ B in float64 without BLAS (einsum's own loops), from the same inputs."""
    return np.einsum("ik,kj->ij", a.astype(np.float64), b.astype(np.float64), optimize=False)
