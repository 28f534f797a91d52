"""What a kernel returned, described without its data: type, dtype, shape and precision.

The description goes into the record (``output``) and labels a native kernel's precision; it
is computed once, untimed, after the samples.
"""

from __future__ import annotations

from typing import Any

from kernbench.measure.backends.base import Backend, walk_leaves
from kernbench.measure.precision import precision_of_dtype

DESCRIBED_LEAVES = 8
"""Leaves described one by one; the rest are only counted (and their bytes summed)."""


def describe_output(value: object) -> dict[str, Any]:
    """Type, dtype, shape and precision of a result (of its first leaves), never its data.
    One lazy pass over the leaves (a list of a million floats is walked once, untimed)."""
    described: list[dict[str, Any]] = []
    count, nbytes = 0, 0
    sized = True
    for leaf in walk_leaves(value):
        if count < DESCRIBED_LEAVES:
            described.append(_describe_leaf(leaf))
        count += 1
        size = getattr(leaf, "nbytes", None) if sized else None
        if isinstance(size, int):
            nbytes += size
        else:
            sized = False
    first = next((d for d in described if d.get("precision")), None)
    return {"type": type(value).__name__, "leaves": count, "items": described,
            "precision": first["precision"] if first else None,
            "nbytes": nbytes if sized else None}


def _describe_leaf(leaf: object) -> dict[str, Any]:
    dtype = getattr(leaf, "dtype", None)
    shape = getattr(leaf, "shape", None)
    info: dict[str, Any] = {"type": type(leaf).__name__}
    if dtype is not None:
        info["dtype"] = str(dtype)
        info["precision"] = precision_of_dtype(dtype)
    elif isinstance(leaf, (float, complex)):
        # A Python float is a double whatever the kernel computed in (a NumPy fp16 sum turned
        # into float() included): it says what it is, and labels no precision.
        info["dtype"] = f"python {type(leaf).__name__}"
    if shape is not None:
        try:
            info["shape"] = [int(s) for s in shape]
        except (TypeError, ValueError):
            info["shape"] = str(shape)
    return info


def unevaluated(value: object) -> str | None:
    """Why a result shows that the work was never done inside the timed calls, or None: a
    generator, an iterator (map, zip, itertools) or a coroutine (an ``async`` run_benchmark)
    is returned before any of the work it describes has run, so each sample timed only its
    creation. Timed as it stands, such a case would report nanoseconds for any kernel."""
    import inspect
    from collections.abc import AsyncIterator, Iterator

    if inspect.iscoroutine(value):
        value.close()  # no "coroutine was never awaited" warning for this one
    if inspect.isawaitable(value):
        return ("run_benchmark returned a coroutine: an async function's body runs only when "
                "awaited, which no sample did; make run_benchmark a plain function")
    if isinstance(value, (Iterator, AsyncIterator)):
        return (f"run_benchmark returned a lazy {type(value).__name__}: its work runs only when "
                f"it is consumed, which no sample did; return the computed values instead "
                f"(e.g. list(...) or np.fromiter(...))")
    return None


def describe_device(backend: Backend, backend_name: str) -> dict[str, Any]:
    """The backend's device facts; a failure to read them is recorded, never raised."""
    try:
        return dict(backend.describe(backend_name))
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
