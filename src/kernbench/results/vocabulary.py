"""The words kernbench's records are written in: precisions, backends (device kinds) and
frameworks, defined once.

bench.yaml's schema, the CLI's choices, discovery, the worker and the reports all speak this
vocabulary, so it lives in the lowest room (``results``) as plain data that every room may
import. What a word *means* to one framework (its dtype objects, its devices) is that
framework's backend's business (:mod:`kernbench.measure.backends`), not this module's.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from kernbench.errors import UnsupportedPrecision
from kernbench.results.measurement import NATIVE

__all__ = [
    "BACKEND_FRAMEWORK",
    "BACKEND_LABELS",
    "BACKEND_NAMES",
    "BENIGN_THROTTLE_REASONS",
    "DTYPE_NAMES",
    "DTYPE_NAME_PRECISIONS",
    "FLOAT_PRECISIONS",
    "FRAMEWORK_NAMES",
    "GPU_BACKENDS",
    "GPU_CAPABLE_FRAMEWORKS",
    "GPU_ONLY_FRAMEWORKS",
    "GPU_TIMING_CHOICES",
    "GPU_TIMING_MODES",
    "KERNEL_SYNC_FLUSH",
    "KNOBS",
    "NARROW_PRECISIONS",
    "PRECISION_ALIASES",
    "PRECISION_NAMES",
    "PRECISION_UNREAD",
    "canonical_precision",
    "knob",
    "other_output_precision",
    "precision_unread",
    "ran_unread",
]

PRECISION_NAMES: tuple[str, ...] = (
    "fp64", "fp32", "fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8",
)
"""Every precision bench.yaml and the CLI accept (``fp8`` is short for ``fp8_e4m3``)."""

PRECISION_ALIASES: Mapping[str, str] = MappingProxyType({
    "fp8": "fp8_e4m3", "float64": "fp64", "float32": "fp32", "float16": "fp16",
    "bfloat16": "bf16", "half": "fp16", "double": "fp64", "float": "fp32",
})
"""Other spellings of a precision, to its canonical name."""

FLOAT_PRECISIONS: tuple[str, ...] = ("fp64", "fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2")
"""The canonical floating-point precisions, widest first."""

NARROW_PRECISIONS: tuple[str, ...] = ("bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2")
"""Precisions narrow enough that their accuracy is judged against a wider run, and that are
expected to be no slower and no bigger than fp32 of the same case."""

DTYPE_NAMES: Mapping[str, str] = MappingProxyType({
    "fp64": "float64", "fp32": "float32", "fp16": "float16", "bf16": "bfloat16",
    "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2", "int8": "int8",
})
"""The name NumPy, ml_dtypes, PyTorch and JAX all give the dtype of a canonical precision
(which module holds it is each backend's knowledge)."""

DTYPE_NAME_PRECISIONS: Mapping[str, str] = MappingProxyType({
    **{name: precision for precision, name in DTYPE_NAMES.items()},
    "double": "fp64", "float": "fp32", "half": "fp16",
})
"""A dtype's name, as any framework spells it (C names included), to its precision."""

BACKEND_NAMES: tuple[str, ...] = ("cpu", "cuda", "rocm")
"""The device kinds a case can run on."""

GPU_BACKENDS: tuple[str, ...] = ("cuda", "rocm")
"""The device kinds of :data:`BACKEND_NAMES` that are GPUs."""

BENIGN_THROTTLE_REASONS: frozenset[str] = frozenset({"GpuIdle", "ApplicationsClocksSetting"})
"""NVML clocks-event reasons (a record's ``gpu_state`` ``throttle_reasons``) that say the
clocks are low because the GPU is idle or pinned on purpose, not held back by power or heat."""

BACKEND_LABELS: Mapping[str, str] = MappingProxyType({"cpu": "CPU", "cuda": "CUDA",
                                                      "rocm": "ROCm"})
"""How a device kind is written in messages ("ROCm", not "ROCM")."""

FRAMEWORK_NAMES: tuple[str, ...] = (
    "numpy", "pytorch", "jax", "cupy", "triton", "numba", "tensorflow", "python",
)
"""The frameworks a kernel may be written in, as discovery and bench.yaml name them."""

GPU_ONLY_FRAMEWORKS: frozenset[str] = frozenset({"cupy", "triton"})
"""Frameworks whose kernels never run on the CPU."""

GPU_CAPABLE_FRAMEWORKS: frozenset[str] = frozenset(
    {"pytorch", "jax", "cupy", "triton", "tensorflow", "numba"})
"""Frameworks whose kernels may run on a GPU."""

BACKEND_FRAMEWORK: Mapping[str, str] = MappingProxyType({"triton": "pytorch"})
"""Frameworks whose kernels run through another framework's backend: a Triton kernel is
launched on PyTorch tensors, so PyTorch's CUDA/ROCm backend times it (events, graphs,
profiler)."""


GPU_TIMING_MODES: tuple[str, ...] = ("cold", "hot", "graph", "kernel", "sync")
"""How a GPU case's time is taken (kernbench.measure.gpu_timing); ``all`` takes every one."""
GPU_TIMING_CHOICES: tuple[str, ...] = (*GPU_TIMING_MODES, "all")
"""What ``--gpu-timing`` (suite key and bench.yaml key ``gpu_timing``) accepts."""
KERNEL_SYNC_FLUSH = "kernel_sync_flush"
"""Under ``all``, the kernels' device time (as ``kernel``) with ``sync``'s flush policy (the L2
flushed once per sample), which ``launch_overhead_us`` subtracts from ``sync``."""

COMPILE_MODE_NAMES: tuple[str, ...] = (
    "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
"""torch.compile modes an implementation's ``compile.mode`` (or ``--compile-mode``) may name."""


def canonical_precision(precision: str) -> str:
    """The canonical name of a precision (``"fp8"`` -> ``"fp8_e4m3"``); unknown names raise
    :class:`~kernbench.errors.UnsupportedPrecision`."""
    name = PRECISION_ALIASES.get(precision, precision)
    if name not in PRECISION_NAMES:
        known = ", ".join(PRECISION_NAMES)
        raise UnsupportedPrecision(f"unknown precision {precision!r}; known: {known}")
    return name


KNOBS: Mapping[str, Mapping[str | None, str]] = MappingProxyType({
    "iterations": {None: "--iters {}", "kernbench.bench": "iterations={}",
                   "pytest": "--kernbench-iterations {} (or the marker's iterations={})"},
    "warmup": {None: "--warmup {}", "kernbench.bench": "warmup={}",
               "pytest": "--kernbench-warmup {} (or the marker's warmup={})"},
    "processes": {None: "--processes {}",
                  "kernbench.bench": "processes={} (with isolation='fork')",
                  "pytest": "the marker's processes={} (with isolation='fork')"},
    "gpu_timing": {None: "--gpu-timing {}", "kernbench.bench": "gpu_timing={}",
                   "pytest": "gpu_timing={} (the marker's or the fixture's)"},
})
"""What the user sets each protocol setting with, by entry point: None for ``kernbench run``,
``kernbench.bench`` for the library API, ``pytest`` for the plugin (a record's
``worker.entry_point``, a report set's ``settings.runner``). Advice names the knob the user
has there (:func:`knob`)."""


PRECISION_UNREAD = {"precision_parameter": "unread"}
"""What a record's `output` carries when its kernel declares a `precision` parameter and never
reads it: the case ran at the kernel's own precision, labelled by its output's, whatever
``--precision`` asked (:attr:`~kernbench.results.model.KernelSpec.precision_unread`)."""


def precision_unread(output: object) -> bool:
    """Whether a record's `output` says its kernel never read its `precision` parameter."""
    return isinstance(output, Mapping) and all(output.get(k) == v
                                               for k, v in PRECISION_UNREAD.items())


def ran_unread(precision: object) -> str:
    """What a precision-unread case (:func:`precision_unread`) labelled `precision` did."""
    named = ("its output has no dtype to name it" if precision == NATIVE
             else f"{precision}, its output's")
    return f"it ran once, at its own precision ({named}), whatever precision was asked"


def other_output_precision(asked: object, output: object) -> bool:
    """A case timed at `asked` whose output is in another floating precision: an fp32, fp16
    or bf16 case returning another one (an fp16 case returning fp32), or an int8 case
    returning floats. Not a failure (fp32 accumulation is a design; an int8 kernel may
    dequantize), but its label may not be what it computed in. fp8 cases return wider types
    by design."""
    if asked in ("fp32", "fp16", "bf16"):
        return output in FLOAT_PRECISIONS and output != asked
    return asked == "int8" and output in FLOAT_PRECISIONS


def has_ab(entry_point: str | None) -> bool:
    """Whether `entry_point` can run an interleaved A/B (``--ab``): ``kernbench run`` alone."""
    return entry_point not in ("kernbench.bench", "pytest")


def knob(setting: str, entry_point: str | None, value: object = "") -> str:
    """How `entry_point`'s user sets `setting` (to `value` where given): ``--iters 10``,
    ``iterations=10``, ``--kernbench-warmup (or the marker's warmup=)``."""
    by_entry = KNOBS[setting]
    template = by_entry.get(entry_point, by_entry[None])
    return " ".join(template.replace("{}", str(value)).split())
