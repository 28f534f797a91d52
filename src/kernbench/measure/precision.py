"""Precisions at run time: the dtype a framework uses for a precision, and back.

Kernels call ``dtype_for("torch", precision)``; a precision the framework cannot represent
raises :class:`~kernbench.errors.UnsupportedPrecision`, which the harness records as `skipped`,
and a name it does not know (a typo) raises ValueError, which fails the case.
The names are the vocabulary's (:mod:`kernbench.results.vocabulary`); which dtype a framework
uses for each is its backend's knowledge (``Backend.DTYPES``), asked here. Frameworks are
imported lazily, only when asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kernbench.errors import UnsupportedPrecision
from kernbench.measure.backends import backend_for
from kernbench.results.measurement import NATIVE
from kernbench.results.vocabulary import DTYPE_NAME_PRECISIONS, FLOAT_PRECISIONS
from kernbench.results.vocabulary import canonical_precision as canonical

__all__ = ["canonical", "current_precision", "dtype_for", "ignored_precision",
           "precision_of_dtype"]

_FRAMEWORK_ALIASES = {"torch": "pytorch", "np": "numpy"}
"""Spellings kernels use for a framework, to the name discovery (and backend_for) uses."""
_DTYPE_FRAMEWORKS = frozenset({"numpy", "pytorch", "jax", "cupy", "triton"})
"""Frameworks with dtypes of their own (a Triton kernel's are PyTorch's)."""


_CASE: dict[str, str | None] = {"precision": None}
"""The running case's precision: one case per worker process, so one value per process (a
plain global, which threads the kernel starts see too, unlike a ContextVar)."""


def current_precision(default: str | None = None) -> str | None:
    """The precision the running case asks for ("fp32", "bf16", ...), for a kernel that takes
    no ``precision`` parameter: ``dtype_for("torch", current_precision())``. `default` outside
    a kernbench case (or for a case run at the kernel's native precision). A kernel whose
    source calls it is planned one case per precision, like one that takes ``precision``."""
    return _CASE["precision"] or default


def set_current_precision(precision: str | None) -> None:
    """The worker sets the case's precision before it imports the kernel (``native``: none
    asked for, as outside a case)."""
    _CASE["precision"] = None if precision == NATIVE else precision


@contextmanager
def precision_in_force(precision: str | None) -> Iterator[None]:
    """`precision` as :func:`current_precision` inside the block (``kernbench.bench`` with
    ``precision=``: the function it times reads what a worker's kernel would); the one
    before after it."""
    outer = _CASE["precision"]
    set_current_precision(precision)
    try:
        yield
    finally:
        _CASE["precision"] = outer


def dtype_for(framework: str, precision: str) -> Any:
    """The dtype object of `framework` ("numpy", "torch"/"pytorch", "jax", "cupy") for
    `precision`, as that framework's backend names it. A precision the framework cannot
    represent here raises UnsupportedPrecision (the case is skipped); a framework or precision
    name kernbench does not know is the kernel's mistake: ValueError (the case fails)."""
    if _FRAMEWORK_ALIASES.get(framework, framework) not in _DTYPE_FRAMEWORKS:
        raise ValueError(f"dtype_for: unknown framework {framework!r}; known: "
                         f"{', '.join(sorted({*_DTYPE_FRAMEWORKS, *_FRAMEWORK_ALIASES}))}")
    backend = backend_for(_FRAMEWORK_ALIASES.get(framework, framework))
    try:
        name = canonical(precision)
    except UnsupportedPrecision as exc:
        raise ValueError(f"dtype_for: {exc}") from None
    location = backend.DTYPES.get(name)
    if location is None:
        raise UnsupportedPrecision(f"{framework} has no dtype for {precision}")
    module_name, attr = location
    backend.prepare_precision(name)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnsupportedPrecision(
            f"{precision} on {framework} needs {module_name}: {exc}") from exc
    dtype = getattr(module, attr, None)
    if dtype is None:
        raise UnsupportedPrecision(f"this {module_name} has no {attr} (needed for {precision})")
    return dtype


def precision_of_dtype(dtype: object) -> str | None:
    """The precision name of a dtype of any framework (``torch.float16`` -> ``"fp16"``), or None."""
    name = getattr(dtype, "name", None)  # NumPy dtypes: ">f4" prints oddly but is named float32
    text = (name if isinstance(name, str) else str(dtype)).rsplit(".", 1)[-1].strip("'<>").lower()
    if text.startswith("complex"):
        bits = int(text.removeprefix("complex") or 128) // 2
        return {64: "fp64", 32: "fp32", 16: "fp16"}.get(bits)
    return DTYPE_NAME_PRECISIONS.get(text)


def ignored_precision(requested: str, leaves: list[dict[str, Any]]) -> str | None:
    """Why a case's output shows the kernel ignored its precision, or None.

    `leaves` describe the output's first leaves (``dtype`` and ``precision``, as the worker's
    output description gives them). Only the unmistakable case counts: a floating precision
    narrower than fp64 was asked for, and every floating-point array returned is float64 (the
    NumPy default) - a kernel may well return a wider type than it computes in (an fp8 matmul
    into bf16, a loss in fp32), but not float64 everywhere by accident of design."""
    if requested not in FLOAT_PRECISIONS or requested == "fp64":
        return None
    floats = [leaf for leaf in leaves
              if "dtype" in leaf and leaf.get("precision") in FLOAT_PRECISIONS]
    if not floats or any(leaf["precision"] != "fp64" for leaf in floats):
        return None
    dtypes = ", ".join(sorted({str(leaf["dtype"]) for leaf in floats}))
    return (f"precision not honoured: asked for {requested}, the kernel returned only {dtypes} "
            f"arrays, so this case would be timed under a label it did not compute in; make "
            f"the kernel build its inputs with dtype_for(framework, precision), or list only "
            f"the precisions it supports in bench.yaml `precisions`")
