"""Accuracy of a kernel's output against a reference: error norms, tolerances, pass/fail.

Both values may be any tree :func:`~kernbench.measure.metrics.outputs.to_numpy` accepts (arrays,
tensors, scalars, nested tuples / lists / dicts). They are flattened, matched leaf by leaf by path,
and compared in float64 (complex128 when either side is complex; integer leaves exactly)::

    compute_accuracy(out, ref, "fp16")
    # {"passed": True, "rmse": 3.1e-4, "max_error": 9.8e-4, "relative_error": 2.7e-4, ...}

Errors are over all elements of all leaves taken together:

* ``rmse`` = sqrt(mean(|out - ref|^2)), ``max_error`` = max |out - ref|,
* ``relative_error`` = ||out - ref||_2 / ||ref||_2 (one scale for the whole output).

All three are computed over the positions where **both** output and reference are finite, so
they stay informative when a few NaNs appear; ``nan_count`` counts the positions where the
output is NaN/inf and the reference is finite, and ``nonfinite_mismatch`` those where the
reference is NaN/inf and the output is not the same value (NaN matches NaN, inf the same inf).
Either count above zero fails the check. Every number in the record is a plain Python
int/float or None (JSON-safe: never NaN or inf): None where a value is undefined (nothing to
compare) or infinite (then the check fails if that tolerance is set).

Default tolerances (:data:`DEFAULT_TOLERANCES`) set only ``relative_error``, which is free of
the output's scale. Each is above the precision's unit roundoff u (rounding once to the output
dtype alone gives a norm-wise relative error near u/sqrt(3)), leaving room for the error that
grows over reductions of hundreds to thousands of terms, and (for fp64 and fp32) well below
what the next lower precision gives, so a kernel that silently computes in fp32 when asked
for fp64, or in fp16/bf16/tf32 when asked for fp32, fails:

=============  ==============  ===========================================================
precision      relative_error  unit roundoff (for scale)
=============  ==============  ===========================================================
fp64           1e-9            1.1e-16
fp32           1e-5            6.0e-8
native         1e-5            (the framework's default, normally fp32)
fp16           1e-2            4.9e-4
bf16           2e-2            3.9e-3
fp8_e4m3       1e-1            6.3e-2
fp8_e5m2       2e-1            1.3e-1
int8           5e-2            (quantisation error of a typical int8 kernel)
=============  ==============  ===========================================================

Aliases ("fp8", "float16", "half"...) resolve as in :mod:`kernbench.measure.precision`; a precision
not in the table (e.g. "tf32") has no default. Tolerances configured in bench.yaml replace
the defaults entirely: see :func:`resolve_tolerances`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from kernbench.measure.metrics.outputs import Leaf, flatten_leaves
from kernbench.results.vocabulary import PRECISION_ALIASES

TOLERANCE_NAMES: tuple[str, ...] = ("rmse", "relative_error", "max_error")

DEFAULT_TOLERANCES: Mapping[str, Mapping[str, float]] = MappingProxyType({
    precision: MappingProxyType({"relative_error": limit})
    for precision, limit in (
        ("fp64", 1e-9), ("fp32", 1e-5), ("native", 1e-5), ("fp16", 1e-2), ("bf16", 2e-2),
        ("fp8_e4m3", 1e-1), ("fp8_e5m2", 2e-1), ("int8", 5e-2),
    )
})

Array = np.ndarray[Any, Any]


# --- tolerances -----------------------------------------------------------------------------


def _canonical(precision: str) -> str:
    return PRECISION_ALIASES.get(precision, precision)


def _limit(where: str, value: object) -> float:
    """A tolerance value as a float; ValueError unless a finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0:
        raise ValueError(f"tolerances.{where} must be a finite number >= 0, got {value!r}")
    return float(value)


def _limits(where: str, mapping: Mapping[str, Any]) -> dict[str, float]:
    """The tolerance keys of one level; at the top level, sub-mappings are left to the caller."""
    limits: dict[str, float] = {}
    for key, value in mapping.items():
        if isinstance(value, Mapping) and not where:
            continue
        if key not in TOLERANCE_NAMES:
            known = ", ".join(TOLERANCE_NAMES)
            raise ValueError(f"unknown tolerance tolerances.{where}{key}; known: {known}")
        limits[key] = _limit(f"{where}{key}", value)
    return limits


def resolve_tolerances(precision: str, configured: Mapping[str, Any] | None) -> dict[str, float]:
    """The tolerances that apply to `precision`, from bench.yaml's `tolerances` or the defaults.

    `configured` has top-level keys (rmse, relative_error, max_error) and optional
    per-precision sub-mappings (``{"rmse": 1e-3, "fp16": {"rmse": 1e-2}}``); a sub-mapping
    whose name is `precision` (or an alias of it) overrides the top level key by key. When that
    gives any key for `precision`, exactly those keys are checked, with no defaults mixed in;
    when it gives none (nothing configured, or only other precisions' sub-mappings), the
    defaults for `precision` apply. Malformed values (any precision's) raise ValueError.
    """
    name = _canonical(precision)
    chosen = _limits("", configured or {})
    for key, value in (configured or {}).items():
        if isinstance(value, Mapping):
            limits = _limits(f"{key}.", value)
            if _canonical(str(key)) == name:
                chosen.update(limits)
    if chosen:
        return chosen
    return dict(DEFAULT_TOLERANCES.get(name, {}))


# --- norms ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Norm:
    """A 2-norm accumulated without overflow or underflow: scale * sqrt(ssq)."""

    scale: float = 0.0
    ssq: float = 0.0

    @staticmethod
    def of(magnitudes: Array) -> _Norm:
        scale = float(magnitudes.max()) if magnitudes.size else 0.0
        if scale == 0.0 or math.isinf(scale):
            return _Norm(scale, 1.0 if scale else 0.0)
        return _Norm(scale, float(np.sum(np.square(magnitudes / scale))))

    def plus(self, other: _Norm) -> _Norm:
        big, small = (self, other) if self.scale >= other.scale else (other, self)
        if big.scale == 0.0 or math.isinf(big.scale):
            return big
        return _Norm(big.scale, big.ssq + small.ssq * (small.scale / big.scale) ** 2)

    def value(self) -> float:
        return self.scale * math.sqrt(self.ssq) if self.scale else 0.0

    def rms(self, count: int) -> float:
        return self.scale * math.sqrt(self.ssq / count) if self.scale else 0.0

    def ratio(self, other: _Norm) -> float:
        """self / other, for other > 0."""
        if math.isinf(self.scale):
            return math.inf
        return (self.scale / other.scale) * math.sqrt(self.ssq / other.ssq)


@dataclass(frozen=True)
class _Sums:
    """Running totals over the leaves compared so far."""

    elements: int = 0
    compared: int = 0
    nan_count: int = 0
    nonfinite_mismatch: int = 0
    max_error: float = 0.0
    diff: _Norm = _Norm()
    ref: _Norm = _Norm()

    def plus(self, other: _Sums) -> _Sums:
        return _Sums(self.elements + other.elements, self.compared + other.compared,
                     self.nan_count + other.nan_count,
                     self.nonfinite_mismatch + other.nonfinite_mismatch,
                     max(self.max_error, other.max_error),
                     self.diff.plus(other.diff), self.ref.plus(other.ref))


# --- one leaf -------------------------------------------------------------------------------


def _integer_difference(out: Array, ref: Array) -> Array:
    """out - ref exactly (as float64 afterwards), whatever the integer dtypes."""
    if out.size == 0:
        return np.zeros(out.shape)
    lo = min(int(out.min()), int(ref.min()))
    hi = max(int(out.max()), int(ref.max()))
    if lo >= -2**63 and hi < 2**63 and hi - lo < 2**63:
        exact: Array = out.astype(np.int64) - ref.astype(np.int64)
    else:
        exact = out.astype(object) - ref.astype(object)  # Python ints: beyond int64
    return exact.astype(np.float64)


def _widen(array: Array, complex_: bool) -> Array:
    return array.astype(np.complex128 if complex_ else np.float64)


def _compare_leaf(out: Array, ref: Array) -> _Sums:
    """Error totals of one pair of leaves of the same shape."""
    if out.dtype.kind in "biu" and ref.dtype.kind in "biu":
        diff = np.abs(_integer_difference(out, ref)).ravel()
        ref_abs = np.abs(ref.astype(np.float64)).ravel()
        return _Sums(out.size, out.size, 0, 0, float(diff.max()) if diff.size else 0.0,
                     _Norm.of(diff), _Norm.of(ref_abs))
    complex_ = out.dtype.kind == "c" or ref.dtype.kind == "c"
    o, r = _widen(out, complex_).ravel(), _widen(ref, complex_).ravel()
    out_ok, ref_ok = np.isfinite(o), np.isfinite(r)
    both = out_ok & ref_ok
    same = (o == r) | (np.isnan(o) & np.isnan(r))
    with np.errstate(over="ignore", invalid="ignore"):
        diff = np.abs(o[both] - r[both])
    return _Sums(out.size, int(both.sum()), int(np.sum(~out_ok & ref_ok)),
                 int(np.sum(~ref_ok & ~same)), float(diff.max()) if diff.size else 0.0,
                 _Norm.of(diff), _Norm.of(np.abs(r[both])))


# --- structure ------------------------------------------------------------------------------


def _shape(shape: Sequence[int]) -> str:
    return f"({','.join(map(str, shape))}{',' if len(shape) == 1 else ''})"


def _at(path: str) -> str:
    return path or "<root>"


def _structure_mismatch(out: Sequence[Leaf], ref: Sequence[Leaf]) -> str | None:
    """Why the two leaf lists cannot be compared element by element, or None."""
    out_paths, ref_by_path = {leaf.path for leaf in out}, {leaf.path: leaf for leaf in ref}
    problems = []
    if len(out) != len(ref):
        problems.append(f"leaf count {len(out)} vs {len(ref)}")
    missing = [_at(leaf.path) for leaf in ref if leaf.path not in out_paths]
    extra = [_at(leaf.path) for leaf in out if leaf.path not in ref_by_path]
    if missing:
        problems.append(f"missing from output: {', '.join(missing[:5])}")
    if extra:
        problems.append(f"not in reference: {', '.join(extra[:5])}")
    if problems:
        return "; ".join(problems)
    for leaf in out:
        other = ref_by_path[leaf.path].array
        if leaf.array.shape != other.shape:
            return f"shape {_shape(leaf.array.shape)} vs {_shape(other.shape)} at {_at(leaf.path)}"
    return None


# --- the record -----------------------------------------------------------------------------


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _errors(sums: _Sums) -> tuple[dict[str, float | None], str | None]:
    """(rmse, max_error, relative_error) with inf kept, and the note on relative_error."""
    if sums.compared == 0:
        why = "no finite elements to compare" if sums.elements else "no elements to compare"
        return {"rmse": None, "max_error": None, "relative_error": None}, why
    errors: dict[str, float | None] = {"rmse": sums.diff.rms(sums.compared),
                                       "max_error": sums.max_error}
    note: str | None = None
    if sums.ref.value() == 0.0:
        errors["relative_error"] = 0.0 if sums.diff.value() == 0.0 else math.inf
        note = None if sums.diff.value() == 0.0 else "reference norm is zero"
    else:
        errors["relative_error"] = sums.diff.ratio(sums.ref)
    return errors, note


def _exceeded(errors: Mapping[str, float | None], limits: Mapping[str, float]) -> list[str]:
    """Names of the tolerances exceeded (an infinite error exceeds; an undefined one does not)."""
    exceeded = []
    for name in TOLERANCE_NAMES:
        value = errors.get(name)
        if name in limits and value is not None and value > limits[name]:
            exceeded.append(name)
    return exceeded


def _reason(sums: _Sums, errors: Mapping[str, float | None], limits: Mapping[str, float],
            exceeded: Sequence[str]) -> str | None:
    """Why a compared output failed, in one line; None when it passed."""
    parts = []
    if sums.nan_count:
        parts.append(f"{sums.nan_count} NaN/inf in the output where the reference is finite")
    if sums.nonfinite_mismatch:
        parts.append(f"{sums.nonfinite_mismatch} positions where the reference is NaN/inf "
                     "and the output differs")
    for name in exceeded:
        parts.append(f"{name} {errors[name]:.3g} > {limits[name]:.3g}")
    return "; ".join(parts) or None


def _dtypes(out: Sequence[Leaf], ref: Sequence[Leaf]) -> dict[str, Any]:
    """The dtype fields: each side's original dtypes, and whether same-path leaves differ."""
    ref_dtypes = {leaf.path: leaf.dtype for leaf in ref}
    return {
        "dtype": {"output": [leaf.dtype for leaf in out],
                  "reference": [leaf.dtype for leaf in ref]},
        "dtype_mismatch": any(ref_dtypes.get(leaf.path, leaf.dtype) != leaf.dtype
                              for leaf in out),
    }


def _unmatched(limits: dict[str, float], out: Sequence[Leaf], ref: Sequence[Leaf],
               mismatch: str) -> dict[str, Any]:
    """The record of an output that could not be compared with its reference."""
    return {
        "passed": False, "reason": mismatch, "mismatch": mismatch,
        "rmse": None, "max_error": None, "relative_error": None, "relative_error_note": None,
        "nan_count": None, "nonfinite_mismatch": None, "elements": None, "leaves": None,
        **_dtypes(out, ref), "tolerances": limits, "exceeded": [],
    }


def _matched(limits: dict[str, float], out: Sequence[Leaf], ref: Sequence[Leaf],
             sums: _Sums) -> dict[str, Any]:
    """The record of an output compared element by element with its reference."""
    errors, note = _errors(sums)
    exceeded = _exceeded(errors, limits)
    reason = _reason(sums, errors, limits, exceeded)
    return {
        "passed": reason is None, "reason": reason, "mismatch": None,
        "rmse": _finite(errors["rmse"]),
        "max_error": _finite(errors["max_error"]),
        "relative_error": _finite(errors["relative_error"]),
        "relative_error_note": note,
        "nan_count": sums.nan_count, "nonfinite_mismatch": sums.nonfinite_mismatch,
        "elements": sums.elements, "leaves": len(out),
        **_dtypes(out, ref), "tolerances": limits, "exceeded": exceeded,
    }


def _leaves(value: object, side: str) -> tuple[list[Leaf], str | None]:
    """(leaves, None), or ([], why) when `value` is not a numeric tree."""
    try:
        return flatten_leaves(value), None
    except (TypeError, ValueError) as exc:
        return [], f"{side}: {exc}"


def compute_accuracy(output: object, reference: object, precision: str,
                     tolerances: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Compare `output` with `reference` and check the tolerances for `precision`.

    `tolerances` is bench.yaml's `tolerances` mapping (see :func:`resolve_tolerances`). The
    record has: ``passed``; ``reason`` (why it failed, else None); ``mismatch`` (why the two
    could not be compared: different leaf paths, leaf count or shapes, or a leaf that is not
    numeric; else None); ``rmse``, ``max_error``, ``relative_error`` and
    ``relative_error_note``; ``nan_count``, ``nonfinite_mismatch``, ``elements``, ``leaves``;
    ``dtype`` ({"output": [...], "reference": [...]}, original dtype names in leaf order) and
    ``dtype_mismatch`` (recorded, never a failure: an fp16 output against an fp64 reference is
    the point); ``tolerances`` (the resolved ones) and ``exceeded`` (their names, in the order
    rmse, relative_error, max_error). On a mismatch the numeric fields are None.

    Fails when the structures mismatch, ``nan_count`` or ``nonfinite_mismatch`` is above zero,
    or a tolerance is exceeded. Dict leaves match by key, whatever their order. Tolerances
    that are malformed raise ValueError; outputs never raise.
    """
    limits = resolve_tolerances(precision, tolerances)
    out, out_problem = _leaves(output, "output")
    ref, ref_problem = _leaves(reference, "reference")
    mismatch = out_problem or ref_problem or _structure_mismatch(out, ref)
    if mismatch is not None:
        return _unmatched(limits, out, ref, mismatch)
    ref_by_path = {leaf.path: leaf.array for leaf in ref}
    sums = _Sums()
    for leaf in out:
        sums = sums.plus(_compare_leaf(leaf.array, ref_by_path[leaf.path]))
    return _matched(limits, out, ref, sums)
