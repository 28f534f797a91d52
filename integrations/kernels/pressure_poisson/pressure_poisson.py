"""NumPy Jacobi solver for the pressure-Poisson equation, lap(p) = b, in the seed form.

Default: a 64 x 64 grid on the unit square, p = 0 on the boundary, source
b = sin(pi x) sin(pi y) (exact solution p = -b / (2 pi^2)); at most 50 Jacobi sweeps per
solve, stopping early once the relative L1 change of a sweep drops below `tolerance`.
The call builds its own inputs (seed form: no setup, native fp64 only) and returns p.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _source(ny: int, nx: int) -> tuple[np.ndarray, float, float]:
    y = np.linspace(0.0, 1.0, ny)
    x = np.linspace(0.0, 1.0, nx)
    b = np.outer(np.sin(np.pi * y), np.sin(np.pi * x))
    return b, x[1] - x[0], y[1] - y[0]


def _jacobi(
    p: np.ndarray, b: np.ndarray, dx: float, dy: float, max_iterations: int, tolerance: float
) -> np.ndarray:
    dx2, dy2 = dx * dx, dy * dy
    scale = 1.0 / (2.0 * (dx2 + dy2))
    rhs = b[1:-1, 1:-1] * dx2 * dy2
    for _ in range(max_iterations):
        old = p.copy()
        p[1:-1, 1:-1] = scale * (
            (old[1:-1, 2:] + old[1:-1, :-2]) * dy2 + (old[2:, 1:-1] + old[:-2, 1:-1]) * dx2 - rhs
        )
        change = np.abs(p - old).sum()
        if change <= tolerance * max(np.abs(p).sum(), np.finfo(p.dtype).tiny):
            break
    return p


def run_benchmark(
    grid_size: Sequence[int] | int = (64, 64),
    max_iterations: int = 50,
    tolerance: float = 1.0e-5,
    problem_size: int | None = None,
    iterations: int = 1,
) -> np.ndarray:
    """Solve lap(p) = b `iterations` times (each warm-started from the last); return p.

    `grid_size` is (ny, nx) or one int for a square grid; a scalar `problem_size`, when
    given, overrides it with a square grid of that side.
    """
    if problem_size is not None:
        grid_size = int(problem_size)
    ny, nx = (grid_size, grid_size) if isinstance(grid_size, int) else tuple(grid_size)
    b, dx, dy = _source(int(ny), int(nx))
    p = np.zeros_like(b)
    for _ in range(max(1, int(iterations))):
        p = _jacobi(p, b, dx, dy, int(max_iterations), float(tolerance))
    return p
