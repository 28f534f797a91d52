"""RunSettings: everything that selects and shapes the cases of one run, as one frozen value.

The CLI, the suite file and the library API each build one; the runner and the case planner
read it. It lives apart from the runner so the planner can read it without importing the runner.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from kernbench.config.options import MAX_TIMEOUT_S
from kernbench.errors import KernbenchError
from kernbench.results.model import ProtocolSettings, SweepPoint

__all__ = ["RunSettings", "check_timeout"]


@dataclass(frozen=True)
class RunSettings:
    """Everything that selects and shapes the cases of a run."""

    root: Path
    protocol: ProtocolSettings = field(default_factory=ProtocolSettings)
    backends: tuple[str, ...] | None = None
    """Requested device kinds; None means each kernel's declared backends."""
    precisions: tuple[str, ...] | None = None
    """Requested precisions; None means each kernel's declared precisions."""
    filters: tuple[str, ...] = ()
    timeout_s: float = 300.0
    processes: int = 3
    """Worker processes per case; their samples are kept as groups (see
    kernbench.execution.replicates)."""
    interleave: bool = True
    """Run the processes of every case in rounds (round k: process k of every case, asv's
    ``--interleave-rounds``) rather than back to back (kernbench.execution.rounds); nothing
    changes with one process."""
    shard: tuple[int, int] | None = None
    """Run only shard K of N (1-based) of the planned cases, split stably by kernel."""
    sku: str | None = None
    """The SKU golden values are looked up for; None: detected from the GPU's name."""
    trace_python: bool = False
    """Opt-in tracemalloc of Python allocations (slows Python code inside the timed region)."""
    flush_l2: bool = True
    """Evict the GPU's L2 cache before every call (GPU cases only)."""
    gpu_timing: str | None = None
    """GPU timing mode (kernbench.measure.gpu_timing) for every kernel; None: each kernel's
    bench.yaml ``gpu_timing``, else "cold"."""
    cache_dir: Path | None = None
    """Where machine-level measurements (the CPU peak probe) are cached; None: no CPU peak."""
    inject_slowdown: tuple[tuple[str, float], ...] = ()
    """Testing aid: (kernel glob, factor) pairs; matching kernels' calls take factor x as long
    (a busy wait after each call), to measure how well comparisons detect a known slowdown."""
    fake_call_ms: float | None = None
    """Debug mode: every kernel call takes exactly this long on a fake clock."""
    profile: str | None = None
    """Profiler run after each case's timed samples (cprofile, torch or jax); None: none."""
    profile_iters: int = 5
    """Kernel calls made under the profiler."""
    profile_dir: Path | None = None
    """The run's output directory: profiles go to its `profiles/` folder."""
    compile_mode: str | None = None
    """torch.compile mode for every implementation with `compile:` (None: each one's own)."""
    sweeps: tuple[tuple[str, tuple[SweepPoint, ...]], ...] = ()
    """Suite-file sweeps: (kernel-name glob, points) replacing matching kernels' bench.yaml
    sweep."""
    sweeps_source: str = "suite file"
    """The file `sweeps` came from, for error messages."""
    max_memory_bytes: int | None = None
    """Address-space limit (RLIMIT_AS) of each worker; None: no limit
    (kernbench.execution.limits)."""
    testbed: str | None = None
    """The name this machine goes by in merged reports (``--testbed``; kept for the host); None:
    the name kept for this host, else the host name (kernbench.measure.identity)."""
    testbed_dir: Path | None = None
    """Where the testbed name is kept (``--cache-dir``); None: the user's cache folder."""
    isolation: str = "fork"
    """How workers start: "fork" (from a preloaded server per framework, spawned where fork
    is unsafe) or "spawn" (a fresh interpreter per worker); see kernbench.execution.launcher."""

    def __post_init__(self) -> None:
        check_timeout(self.timeout_s, "timeout_s")


def check_timeout(value: object, where: str) -> None:
    """KernbenchError unless `value` is a per-case limit the waits for a worker can take: a
    finite number of seconds > 0, at most :data:`~kernbench.config.options.MAX_TIMEOUT_S`
    (the CLI and the config schemas check this first; the library API and a resumed run's
    recorded settings reach here unchecked)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT_S):
        raise KernbenchError(f"{where}: expected a finite number of seconds > 0 and at most "
                             f"{MAX_TIMEOUT_S} (one week), got {value!r}")
