"""Golden latencies per GPU SKU: is this case still as fast as it was on this kind of machine?

A bench.yaml may hold a ``golden`` table (SKU -> expected median latency) and a list of
``ignore_skus``, after the model benchmark suite's ``golden_time_ms``,
``golden_time_tolerance_multiplier``, ``golden_size`` and ``specific_chip_to_ignore``::

    golden:
      mi300: {time_ms: 1.20, tolerance_multiplier: 1.1, size_bytes: 1048576}
      h100:  {time_ms: 0.85}          # tolerance_multiplier: 1.1 (the default)
    ignore_skus: [mi250]

Rules, all in the small pure functions below:

* **SKU names** (:func:`normalise_sku`) are compared lower case with blanks, ``-`` and ``_``
  removed: ``"MI300X"``, ``"mi300x"`` and ``"RTX 4090"`` -> ``"mi300x"``, ``"rtx4090"``.
* **Detection** (:func:`detect_sku`) reads the device name a backend reports and returns a
  family token: ``"NVIDIA H100 80GB HBM3"`` -> ``"h100"``, ``"AMD Instinct MI300X"`` ->
  ``"mi300x"``, ``"NVIDIA GeForce RTX 4090"`` -> ``"rtx4090"``.  The CPU backend gives None:
  CPU SKUs are not standardised, so users name theirs with ``--sku``.
* **Matching** (:func:`sku_matches`): a configured SKU matches the same name, or names that
  extend it with letters only — ``mi300`` matches ``mi300x`` and ``mi300a``, ``a10`` matches
  ``a10g``, but ``a10`` does not match ``a100`` and ``l4`` does not match ``l40s``.  In a
  golden table an exact key wins over a family key (and a longer family key over a shorter
  one); ``ignore_skus`` entries match the same way.
* **Check** (:func:`golden_check`): the case's *median* latency (p50) must be at most
  ``time_ms * tolerance_multiplier``.  ``tolerance_multiplier`` defaults to
  :data:`DEFAULT_TOLERANCE_MULTIPLIER` (1.1: ten per cent headroom for run-to-run noise).
  When ``size_bytes`` is given and the caller knows the output's size, they must be equal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kernbench.config.schema import GOLDEN_SCHEMA, IGNORE_SKUS_SCHEMA
from kernbench.errors import KernbenchError

__all__ = [
    "DEFAULT_TOLERANCE_MULTIPLIER",
    "GOLDEN_SCHEMA",
    "IGNORE_SKUS_SCHEMA",
    "detect_sku",
    "find_golden",
    "golden_check",
    "ignored_by",
    "normalise_sku",
    "sku_matches",
]

DEFAULT_TOLERANCE_MULTIPLIER = 1.1
"""Multiplier used when a golden entry gives none: the limit is 10% above the golden time."""

_PCT_DIGITS = 6
"""``ratio`` and ``exceeded_by_pct`` are rounded to this many decimals (float noise)."""

_SKU_REGEXES = (
    r"mi\d{2,3}[a-z]?",                                   # AMD Instinct: mi300x, mi250, mi210
    r"(?:gh|gb|h|b|a|l|t|v|p|k)\d{1,3}[a-z]?",            # NVIDIA data centre: h100, l40s, t4
    r"(?:rtx|gtx) ?a?\d{3,4}(?: ?(?:ti|super|ada))?",     # NVIDIA GeForce / RTX: rtx4090
    r"rx ?\d{4}(?: ?(?:xtx|xt|gre))?",                    # AMD Radeon: rx7900xtx
)
_SKU_PATTERNS = tuple(re.compile(rf"(?<![a-z0-9]){regex}(?![a-z0-9])") for regex in _SKU_REGEXES)
"""Whole-word SKU tokens in a normalised device name (see :func:`detect_sku`)."""


def normalise_sku(text: str) -> str:
    """Lower case without blanks, ``-`` or ``_``: ``"RTX 4090"`` -> ``"rtx4090"``."""
    return re.sub(r"[\s_-]+", "", text.lower())


def _sku_tokens(device_name: str) -> list[str]:
    """Every SKU token in a device name, normalised, in order of appearance, without repeats."""
    name = " ".join(re.sub(r"[-_/,()]", " ", device_name.lower()).split())
    found: list[tuple[int, str]] = []
    for pattern in _SKU_PATTERNS:
        found.extend((m.start(), normalise_sku(m.group())) for m in pattern.finditer(name))
    tokens: list[str] = []
    for _, token in sorted(found):
        if token not in tokens:
            tokens.append(token)
    return tokens


def detect_sku(device_name: str | None, backend: str) -> str | None:
    """The SKU family token of a device name, or None (CPU backend, no name, not recognised).

    Tokens: AMD Instinct ``mi`` + digits + one optional letter (``mi300x``, ``mi250``); NVIDIA
    data-centre letter(s) + 1-3 digits + one optional letter (``h100``, ``gh200``, ``a10g``,
    ``l40s``, ``t4``); GeForce/RTX ``rtx``/``gtx`` + model (+ ``ti``/``super``/``ada``)
    (``rtx4090``, ``rtxa6000``); Radeon ``rx`` + model (``rx7900xtx``).  Memory sizes and
    form factors (``80gb``, ``sxm4``, ``hbm3``, ``pcie``) are not tokens.  When a name holds
    several tokens (ROCm's ``"AMD Instinct MI250X/MI250"``), the one that is a family prefix of
    all the others is returned (``mi250``); if there is none the name is ambiguous -> None.
    """
    if backend.lower() == "cpu" or not device_name:
        return None
    tokens = _sku_tokens(device_name)
    if len(tokens) == 1:
        return tokens[0]
    families = [t for t in tokens if all(sku_matches(t, other) for other in tokens)]
    return families[0] if families else None


def sku_matches(configured: str, sku: str) -> bool:
    """Whether a configured SKU name covers ``sku``: equal after :func:`normalise_sku`, or a
    family prefix of it followed by letters only (``mi300`` covers ``mi300x``, not ``mi3000``).
    """
    want, have = normalise_sku(configured), normalise_sku(sku)
    if not want or not have:
        return False
    if want == have:
        return True
    rest = have[len(want):]
    return have.startswith(want) and rest.isalpha() and rest.isascii()


def find_golden(golden: Mapping[str, Any], sku: str) -> str | None:
    """The key of ``golden`` that applies to ``sku``: the longest matching one, so an exact key
    (``mi300x``) wins over a family key (``mi300``); the first given wins a tie."""
    matching = [key for key in golden if sku_matches(key, sku)]
    return max(matching, key=lambda key: len(normalise_sku(key))) if matching else None


def ignored_by(ignore_skus: Sequence[str], sku: str) -> str | None:
    """The ``ignore_skus`` entry that covers ``sku``, or None."""
    return next((entry for entry in ignore_skus if sku_matches(entry, sku)), None)


def _number(entry: Mapping[str, Any], key: str, default: float | None) -> float | None:
    value = entry.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise KernbenchError(f"golden entry {key} must be a number (got {value!r})")
    return float(value)


def _entry_values(key: str, entry: Mapping[str, Any]) -> tuple[float, float, int | None]:
    """(time_ms, tolerance_multiplier, size_bytes) of one golden entry, checked."""
    time_ms = _number(entry, "time_ms", None)
    multiplier = _number(entry, "tolerance_multiplier", DEFAULT_TOLERANCE_MULTIPLIER)
    size = entry.get("size_bytes")
    if time_ms is None or time_ms <= 0:
        raise KernbenchError(f"golden.{key}.time_ms must be a number > 0 (got {time_ms!r})")
    if multiplier is None or multiplier < 1:
        raise KernbenchError(f"golden.{key}.tolerance_multiplier must be >= 1 "
                             f"(got {multiplier!r})")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
        raise KernbenchError(f"golden.{key}.size_bytes must be an integer >= 0 (got {size!r})")
    return time_ms, multiplier, size


def _record(sku: str | None, reason: str | None, *, passed: bool | None = None,
            **values: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "sku": sku, "golden_sku": None, "golden_time_ms": None, "tolerance_multiplier": None,
        "limit_ms": None, "measured_ms": None, "ratio": None, "exceeded_by_pct": None,
        "golden_size_bytes": None, "output_bytes": None, "passed": passed, "reason": reason,
    }
    record.update(values)
    return record


def entry_for_point(entry: Mapping[str, Any], point: str | None) -> Mapping[str, Any] | None:
    """The values that apply to a case: its point's entry under ``points`` (taking the SKU's
    ``tolerance_multiplier`` and ``size_bytes`` where it gives none), else the SKU's own
    ``time_ms``; None when neither exists."""
    points = entry.get("points") or {}
    if point is not None and point in points:
        inherited = {k: entry[k] for k in ("tolerance_multiplier", "size_bytes") if k in entry}
        return {**inherited, **points[point]}
    return entry if "time_ms" in entry else None


def golden_check(golden: Mapping[str, Mapping[str, Any]] | None, ignore_skus: Sequence[str],
                 sku: str | None, latency_ms: float | None,
                 output_bytes: int | None = None, point: str | None = None
                 ) -> dict[str, Any] | None:
    """Compare a case's median latency (``latency_ms``, the p50) with its SKU's golden value.

    Returns None when there is no golden table (None or empty).  Otherwise a record with
    ``sku``, ``golden_sku`` (the table key used), ``golden_time_ms``, ``tolerance_multiplier``,
    ``limit_ms`` (golden x multiplier), ``measured_ms``, ``ratio`` (measured / golden),
    ``exceeded_by_pct`` (how far the median is beyond the limit, in per cent of the limit;
    None within it), ``golden_size_bytes``, ``output_bytes``, ``passed`` and ``reason``.

    ``point`` (what the case id holds after backend and precision) selects a per-point value
    from the SKU's ``points`` (see :func:`entry_for_point`); ``golden_point`` then names it.

    ``passed`` is None, with a reason, when the SKU is unknown, ignored, has no golden entry
    (for this point) or there is no latency (the case did not run); False when the median is
    over the limit or the output size differs from ``size_bytes``; True otherwise.
    """
    if not golden:
        return None
    if sku is None:
        return _record(None, "SKU unknown: none detected from the device; pass --sku")
    ignored = ignored_by(ignore_skus, sku)
    if ignored is not None:
        return _record(sku, f"SKU {sku} is ignored (ignore_skus: {ignored})")
    key = find_golden(golden, sku)
    if key is None:
        return _record(sku, f"no golden value for SKU {sku} (golden values exist for: "
                            f"{', '.join(sorted(golden))})")
    entry = entry_for_point(golden[key], point)
    if entry is None:
        known = ", ".join(sorted(golden[key].get("points") or {}))
        return _record(sku, f"no golden value for {point or 'this case'} on SKU {sku} (golden "
                            f"points: {known})", golden_sku=key)
    time_ms, multiplier, size = _entry_values(key, entry)
    limit = time_ms * multiplier
    base: dict[str, Any] = {
        "golden_sku": key, "golden_time_ms": time_ms, "tolerance_multiplier": multiplier,
        "limit_ms": limit, "golden_size_bytes": size, "output_bytes": output_bytes,
    }
    if point is not None and point in (golden[key].get("points") or {}):
        base["golden_point"] = point
    if latency_ms is None:
        return _record(sku, "no median latency to compare (the case did not run)", **base)
    failures: list[str] = []
    exceeded = None
    if latency_ms > limit:
        exceeded = round((latency_ms - limit) / limit * 100.0, _PCT_DIGITS)
        failures.append(f"median {latency_ms:g} ms is over the limit {limit:g} ms "
                        f"(golden {time_ms:g} ms x {multiplier:g}) by {exceeded:g}%")
    if size is not None and output_bytes is not None and output_bytes != size:
        failures.append(f"output size {output_bytes} bytes, golden {size}")
    return _record(sku, "; ".join(failures) or None, passed=not failures, **base,
                   measured_ms=latency_ms, ratio=round(latency_ms / time_ms, _PCT_DIGITS),
                   exceeded_by_pct=exceeded)
