"""NumPy power iteration on a dense n x n matrix, in the seed form (default n = 1024).

`run_benchmark(problem_size, iterations)` builds its own inputs and computes, so the timed
call includes building the matrix (a cheap closed-form fill) as well as
`STEPS_PER_ITERATION * iterations` normalised matrix-vector products. Native precision (fp64).

Work (`flops` / `bytes_moved`), for one call with `iterations` = 1 (the harness passes only
bench.yaml's problem_size): flops = 3 n^2 for the fill (subtract, add, divide per entry; the
abs not counted) plus, per step, 2 n^2 for A x and 3 n for the norm and the scaling;
bytes = 8 n^2 to write A once plus, per step, 8 n^2 to stream A (8 MiB at n = 1024, larger
than the L2 caches) and 8 * 4 n for reading and writing the vectors.

Accuracy: `reference` is an independent fp64 computation of the same iteration: A is never
formed; A x is a Toeplitz product done with FFTs (scipy.linalg.matmul_toeplitz), so it shares
no code path (BLAS, summation order) with the kernel.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

STEPS_PER_ITERATION = 16


def run_benchmark(problem_size: int = 1024, iterations: int = 1) -> np.ndarray:
    """Run x <- A x / |A x| from a constant start vector; return the final unit vector."""
    n = int(problem_size)
    idx = np.arange(n, dtype=np.float64)
    a = 1.0 / (1.0 + np.abs(idx[:, None] - idx[None, :]))  # symmetric, decaying off-diagonal
    x = np.ones(n) / np.sqrt(n)
    for _ in range(STEPS_PER_ITERATION * max(1, int(iterations))):
        y = a @ x
        x = y / np.linalg.norm(y)
    return x


def reference(problem_size: int = 1024, iterations: int = 1) -> np.ndarray:
    """The same power iteration with A x as an FFT-based symmetric Toeplitz product."""
    n = int(problem_size)
    column = 1.0 / (1.0 + np.arange(n, dtype=np.float64))  # A[i, j] = column[|i - j|]
    x = np.full(n, 1.0 / np.sqrt(n))
    for _ in range(STEPS_PER_ITERATION * max(1, int(iterations))):
        y = scipy.linalg.matmul_toeplitz(column, x)
        x = y / np.sqrt(np.dot(y, y))
    return x


def flops(problem_size: int = 1024, iterations: int = 1) -> int:
    """3 n^2 (fill) + steps * (2 n^2 + 3 n)."""
    n, steps = int(problem_size), STEPS_PER_ITERATION * max(1, int(iterations))
    return 3 * n * n + steps * (2 * n * n + 3 * n)


def bytes_moved(problem_size: int = 1024, iterations: int = 1) -> int:
    """8 * (n^2 (write A) + steps * (n^2 + 4 n)) bytes."""
    n, steps = int(problem_size), STEPS_PER_ITERATION * max(1, int(iterations))
    return 8 * (n * n + steps * (n * n + 4 * n))
