"""Profiling on request (``kernbench run --profile``): after a case's timed samples, the worker
calls the kernel a few more times under a profiler and writes one file (or folder) per case
under ``<output-dir>/profiles/``. The timed samples are never profiled.

Every outcome is a record, never an exception: a profiler that does not fit the kernel's
framework, is not installed or fails leaves ``{"path": None, "reason": ...}``.
"""

from __future__ import annotations

import cProfile
import importlib.util
import io
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernbench.config.options import PROFILERS

if TYPE_CHECKING:  # the CLI imports this module for its choices: keep it light
    from kernbench.measure.protocol import SyncChoice

SUBDIR = "profiles"
SUMMARY_LINES = 25
FITS: dict[str, tuple[str, ...]] = {"torch": ("pytorch", "triton"), "jax": ("jax",)}
"""Frameworks each framework-specific profiler can see (cProfile fits every kernel)."""

Loop = Callable[[], None]


def profile_case(kind: str, call: Callable[[], object], sync: SyncChoice, iterations: int,
                 output_dir: Path, case_id: str, framework: str,
                 backend: str) -> dict[str, Any]:
    """Profile `iterations` synchronised calls; the record for the case's `profile` field."""
    started = time.perf_counter()
    record = _profile(kind, _loop(call, sync, iterations), output_dir, case_id, framework,
                      backend)
    record.setdefault("kind", kind)
    if record.get("path") is not None:
        record["iterations"] = iterations
    record["wall_s"] = round(time.perf_counter() - started, 6)
    return record


def _loop(call: Callable[[], object], sync: SyncChoice, iterations: int) -> Loop:
    from kernbench.measure.protocol import wait_untimed

    def run() -> None:
        for _ in range(iterations):
            wait_untimed(sync, call())
    return run


def _profile(kind: str, loop: Loop, output_dir: Path, case_id: str, framework: str,
             backend: str) -> dict[str, Any]:
    from kernbench.results.files import safe_filename

    reason = unfit_reason(kind, framework)
    if reason:
        return {"path": None, "reason": reason}
    stem = safe_filename(case_id)
    try:
        (output_dir / SUBDIR).mkdir(parents=True, exist_ok=True)
        if kind == "cprofile":
            name = run_cprofile(loop, output_dir / SUBDIR, stem)
        elif kind == "torch":
            name = run_torch(loop, output_dir / SUBDIR, stem, backend)
        else:
            name = run_jax(loop, output_dir / SUBDIR, stem)
    except Exception as exc:
        return {"path": None, "reason": f"profiling failed: {type(exc).__name__}: {exc}"[:500]}
    return {"path": f"{SUBDIR}/{name}"}


def unfit_reason(kind: str, framework: str) -> str | None:
    """Why profiler `kind` cannot profile a kernel of `framework` here, else None."""
    if kind not in PROFILERS:
        return f"unknown profiler {kind!r} (choose from {', '.join(PROFILERS)})"
    fits = FITS.get(kind)
    if fits is not None and framework not in fits:
        return f"the {kind} profiler does not fit a {framework} kernel (use --profile cprofile)"
    module = {"torch": "torch", "jax": "jax"}.get(kind)
    if module and importlib.util.find_spec(module) is None:
        return f"the {kind} profiler is unavailable: {module} is not installed"
    return None


def run_cprofile(loop: Loop, folder: Path, stem: str) -> str:
    """`<stem>.prof` (pstats) and `<stem>.txt` (top functions by cumulative time)."""
    from kernbench.results.files import write_text_atomic

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        loop()
    finally:
        profiler.disable()
    profiler.dump_stats(str(folder / f"{stem}.prof"))
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(SUMMARY_LINES)
    write_text_atomic(folder / f"{stem}.txt", text.getvalue())
    return f"{stem}.prof"


def run_torch(loop: Loop, folder: Path, stem: str, backend: str) -> str:
    """`<stem>.torch.json`: a Chrome trace of CPU (and CUDA, on CUDA cases) activity."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    on_cuda = backend in ("cuda", "rocm") and torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_cuda else [])
    with profile(activities=activities) as profiler:
        loop()
        if on_cuda:
            torch.cuda.synchronize()  # queued kernels land inside the trace
    name = f"{stem}.torch.json"
    profiler.export_chrome_trace(str(folder / name))
    return name


def run_jax(loop: Loop, folder: Path, stem: str) -> str:
    """`<stem>.jax/`: the trace directory `jax.profiler.trace` writes."""
    import jax

    name = f"{stem}.jax"
    with jax.profiler.trace(str(folder / name)):
        loop()  # each call is synchronised (block_until_ready) before the trace stops
    return name
