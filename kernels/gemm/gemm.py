"""NumPy dense matrix multiply C = A @ B of two square n x n matrices (default n = 512).

Inputs are filled in `setup` so only the multiply is timed; `flops(n)` gives the work, 2 n^3.
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


def flops(n: int = 512) -> int:
    """Floating-point operations of one n x n x n multiply (one multiply and one add each)."""
    return 2 * n**3
