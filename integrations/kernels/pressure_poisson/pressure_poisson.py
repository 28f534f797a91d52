"""NumPy Jacobi solver for the pressure-Poisson equation, lap(p) = b, in the seed form.

Default: a 64 x 64 grid on the unit square, p = 0 on the boundary, source
b = sin(pi x) sin(pi y) (exact solution p = -b / (2 pi^2)); at most 50 Jacobi sweeps per
solve, stopping early once the relative L1 change of a sweep drops below `tolerance`.
The call builds its own inputs (seed form: no setup, native fp64 only) and returns p.

Work (`flops` / `bytes_moved`), for one solve (`iterations` = 1; the harness passes only
bench.yaml's problem_size), over the number of sweeps the solve really takes (found by
running it once, untimed: at most `max_iterations`): per sweep, 7 flops per interior point
for the update (3 additions, 1 subtraction, 3 multiplications) and 3 per grid point for the
convergence test (subtract, accumulate |change|, accumulate |p|; abs not counted); bytes per
sweep = 8 * 3 * ny * nx, reading p and the right-hand side once and writing p once (the
traffic of a fused sweep; this NumPy form also makes temporaries, not counted). Building
the source term is not counted.

Accuracy: the kernel is native fp64, so a float64 re-run would only compare it with itself.
`reference` is instead an independent implementation of the same iteration: the Jacobi
sweep as a sparse matrix (scipy.sparse, a Kronecker sum of 1-D neighbour operators) applied
to the vector of interior unknowns, with the same stopping test.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse


def _source(ny: int, nx: int) -> tuple[np.ndarray, float, float]:
    y = np.linspace(0.0, 1.0, ny)
    x = np.linspace(0.0, 1.0, nx)
    b = np.outer(np.sin(np.pi * y), np.sin(np.pi * x))
    return b, x[1] - x[0], y[1] - y[0]


def _jacobi(
    p: np.ndarray, b: np.ndarray, dx: float, dy: float, max_iterations: int, tolerance: float
) -> tuple[np.ndarray, int]:
    """At most `max_iterations` sweeps, in place; returns p and the number of sweeps done."""
    dx2, dy2 = dx * dx, dy * dy
    scale = 1.0 / (2.0 * (dx2 + dy2))
    rhs = b[1:-1, 1:-1] * dx2 * dy2
    sweeps = 0
    for _ in range(max_iterations):
        old = p.copy()
        p[1:-1, 1:-1] = scale * (
            (old[1:-1, 2:] + old[1:-1, :-2]) * dy2 + (old[2:, 1:-1] + old[:-2, 1:-1]) * dx2 - rhs
        )
        sweeps += 1
        change = np.abs(p - old).sum()
        if change <= tolerance * max(np.abs(p).sum(), np.finfo(p.dtype).tiny):
            break
    return p, sweeps


def _shape(grid_size: Sequence[int] | int, problem_size: int | None) -> tuple[int, int]:
    if problem_size is not None:
        grid_size = int(problem_size)
    ny, nx = (grid_size, grid_size) if isinstance(grid_size, int) else tuple(grid_size)
    return int(ny), int(nx)


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
    ny, nx = _shape(grid_size, problem_size)
    b, dx, dy = _source(ny, nx)
    p = np.zeros_like(b)
    for _ in range(max(1, int(iterations))):
        p, _ = _jacobi(p, b, dx, dy, int(max_iterations), float(tolerance))
    return p


def _neighbours(size: int) -> scipy.sparse.csr_matrix:
    """1-D operator adding each interior point's two interior neighbours."""
    return scipy.sparse.diags([1.0, 1.0], [-1, 1], shape=(size, size), format="csr")


def reference(
    grid_size: Sequence[int] | int = (64, 64),
    max_iterations: int = 50,
    tolerance: float = 1.0e-5,
    problem_size: int | None = None,
    iterations: int = 1,
) -> np.ndarray:
    """The same Jacobi solve, as p_int <- M p_int - c with a sparse M over interior points."""
    ny, nx = _shape(grid_size, problem_size)
    b, dx, dy = _source(ny, nx)
    dx2, dy2 = dx * dx, dy * dy
    scale = 1.0 / (2.0 * (dx2 + dy2))
    my, mx = ny - 2, nx - 2
    # Row-major interior vector: x neighbours are +-1 apart, y neighbours +-mx apart; the
    # boundary values are zero, so they drop out of the sums.
    step = scale * (
        dy2 * scipy.sparse.kron(scipy.sparse.identity(my), _neighbours(mx))
        + dx2 * scipy.sparse.kron(_neighbours(my), scipy.sparse.identity(mx))
    )
    step = step.tocsr()
    constant = scale * dx2 * dy2 * b[1:-1, 1:-1].ravel()
    interior = np.zeros(my * mx)
    for _ in range(max(1, int(iterations))):
        for _ in range(int(max_iterations)):
            new = step @ interior - constant
            change = np.sum(np.abs(new - interior))
            interior = new
            if change <= float(tolerance) * max(np.sum(np.abs(new)), np.finfo(float).tiny):
                break
    p = np.zeros((ny, nx))
    p[1:-1, 1:-1] = interior.reshape(my, mx)
    return p


def flops(
    grid_size: Sequence[int] | int = (64, 64),
    max_iterations: int = 50,
    tolerance: float = 1.0e-5,
    problem_size: int | None = None,
) -> int:
    """sweeps * (7 (ny - 2)(nx - 2) + 3 ny nx)."""
    ny, nx = _shape(grid_size, problem_size)
    sweeps = _sweeps(ny, nx, max_iterations, tolerance)
    return sweeps * (7 * (ny - 2) * (nx - 2) + 3 * ny * nx)


def bytes_moved(
    grid_size: Sequence[int] | int = (64, 64),
    max_iterations: int = 50,
    tolerance: float = 1.0e-5,
    problem_size: int | None = None,
) -> int:
    """sweeps * 8 * 3 ny nx."""
    ny, nx = _shape(grid_size, problem_size)
    return _sweeps(ny, nx, max_iterations, tolerance) * 8 * 3 * ny * nx


def _sweeps(ny: int, nx: int, max_iterations: int, tolerance: float) -> int:
    """How many sweeps one solve from zero takes (runs it once)."""
    b, dx, dy = _source(ny, nx)
    return _jacobi(np.zeros_like(b), b, dx, dy, int(max_iterations), float(tolerance))[1]
