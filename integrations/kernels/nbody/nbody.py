"""JAX all-pairs gravitational n-body acceleration step (default n = 1024 bodies, G = 1).

a_i = sum_j m_j (r_j - r_i) / (|r_j - r_i|^2 + eps^2)^(3/2), with Plummer softening eps, as
one jit-compiled all-pairs computation. `setup` places the bodies on `device` and compiles
ahead of time; the timed call returns the (n, 3) accelerations. The pair sum is an einsum at
Precision.HIGHEST, so GPUs do not run the fp32 case's contraction in TF32 or bf16 passes.

Work (`flops` / `bytes_moved`): flops = 20 n^2, the conventional count per pair interaction
(the list here gives 19: 3 subtractions, 3 multiplications and 3 additions for the softened
squared distance, 1 for the rsqrt and 2 to cube it, 1 for the mass, 3 multiply-adds to
accumulate), the self pairs included as the kernel computes them; bytes = the compulsory
traffic of reading positions and masses once and writing the accelerations once,
itemsize * 7 n.

Accuracy: bench.yaml `reference: {backend: cpu, precision: fp64}` makes the harness run the
fp64 CPU case of this same kernel as the reference; every other case (fp32, and the CUDA
cases) is compared with its output. The fp32 error includes rounding the positions and
masses to fp32.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from kernbench.precision import dtype_for

SOFTENING = 1.0e-2


def accelerations(positions: jax.Array, masses: jax.Array) -> jax.Array:
    """Softened gravitational acceleration on every body from every other body."""
    delta = positions[None, :, :] - positions[:, None, :]  # (n, n, 3): r_j - r_i
    dist2 = jnp.sum(delta * delta, axis=-1) + SOFTENING**2
    weight = masses[None, :] * jax.lax.rsqrt(dist2) ** 3  # self term: delta = 0
    return jnp.einsum("ij,ijk->ik", weight, delta, precision=jax.lax.Precision.HIGHEST)


def _jax_device(device: str) -> Any:
    platform, _, index = device.partition(":")
    platform = "cpu" if platform == "cpu" else "gpu"
    return jax.devices(platform)[int(index or 0)]


def setup(
    n: int = 1024, precision: str = "fp32", device: str = "cpu", seed: int = 0
) -> dict[str, Any]:
    """Bodies in a unit Gaussian cloud with masses summing to one, plus the compiled step."""
    dtype = dtype_for("jax", precision)  # turns on jax_enable_x64 for fp64
    rng = np.random.default_rng(seed)
    target = _jax_device(device)
    positions = jax.device_put(jnp.asarray(rng.standard_normal((n, 3)), dtype=dtype), target)
    masses = jax.device_put(jnp.asarray(rng.uniform(0.5, 1.5, n) / n, dtype=dtype), target)
    compiled = jax.jit(accelerations).lower(positions, masses).compile()
    return {"fn": compiled, "positions": positions, "masses": masses}


def run_benchmark(fn: Any, positions: jax.Array, masses: jax.Array) -> jax.Array:
    """Call the compiled acceleration step; the harness waits for the result."""
    return fn(positions, masses)


def flops(n: int = 1024) -> int:
    """20 flops per ordered pair of bodies."""
    return 20 * n * n


def bytes_moved(n: int = 1024, precision: str = "fp32") -> int:
    """itemsize * (3 n positions + n masses + 3 n accelerations)."""
    return jnp.dtype(dtype_for("jax", precision)).itemsize * 7 * n
