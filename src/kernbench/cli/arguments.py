"""argparse value types: how the text of each kind of option (:data:`kernbench.config.options.Kind`)
becomes its value, with the error argparse prints (exit 2) when it cannot."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kernbench.config.options import Option
from kernbench.errors import KernbenchError

Parse = Callable[[str], Any]


def comma_list(choices: Sequence[str] | None = None) -> Parse:
    """argparse type for `a,b,c`, checked against `choices` when given."""
    def parse(text: str) -> tuple[str, ...]:
        items = tuple(dict.fromkeys(i.strip() for i in text.split(",") if i.strip()))
        if not items:
            raise argparse.ArgumentTypeError("expected a comma-separated list")
        bad = [i for i in items if choices is not None and i not in choices]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown value {bad[0]!r}; expected a comma list of {', '.join(choices or ())}")
        return items
    return parse


def positive_int(minimum: int, maximum: float | None = None) -> Parse:
    """argparse type for an integer >= `minimum` (and <= `maximum`)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(
                f"expected an integer from {minimum} to {maximum:g}, got {value}")
        return value
    return parse


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _finite(low_ok: bool, maximum: float | None) -> Parse:
    """argparse type for a finite number above 0 (or at 0 when `low_ok`), at most `maximum`:
    `--timeout inf` or `1e400` (float infinity) would overflow the waits for the worker."""
    relation = ">= 0" if low_ok else "> 0"
    bound = "" if maximum is None else f" and at most {maximum:g}"

    def parse(text: str) -> float:
        value = _number(text)
        above = value >= 0 if low_ok else value > 0
        if not (math.isfinite(value) and above and (maximum is None or value <= maximum)):
            raise argparse.ArgumentTypeError(
                f"expected a finite number {relation}{bound}, got {text}")
        return value
    return parse


def non_negative_float(maximum: float | None = None) -> Parse:
    """argparse type for a finite number >= 0 (and <= `maximum`)."""
    return _finite(True, maximum)


def positive_float(maximum: float | None = None) -> Parse:
    """argparse type for a finite number > 0 (and <= `maximum`)."""
    return _finite(False, maximum)


def probability(text: str) -> float:
    """argparse type for a number strictly between 0 and 1 (`--alpha`: a false discovery rate;
    at 1 or above every change would be significant)."""
    value = _number(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number > 0 and < 1, got {text}")
    return value


def slowdowns(text: str) -> tuple[tuple[str, float], ...]:
    """`GLOB=FACTOR[,...]` for --debug-inject-slowdown."""
    rules = []
    for item in text.split(","):
        pattern, _, factor = item.partition("=")
        try:
            value = float(factor)
        except ValueError:
            value = 0.0
        if not pattern or value < 1.0:
            raise argparse.ArgumentTypeError(f"expected GLOB=FACTOR with FACTOR >= 1, got {item!r}")
        rules.append((pattern.strip(), value))
    return tuple(rules)


def shard(text: str) -> tuple[int, int]:
    from kernbench.execution.sharding import parse_shard

    try:
        return parse_shard(text)
    except KernbenchError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def formats(text: str) -> tuple[str, ...]:
    from kernbench.reporting.formats import parse_formats

    try:
        return parse_formats(text)
    except KernbenchError as exc:
        raise argparse.ArgumentTypeError(exc.message.removeprefix("--format: ")) from None


def memory_size(text: str) -> int:
    from kernbench.config.sizes import parse_size

    try:
        return parse_size(text)
    except KernbenchError as exc:
        raise argparse.ArgumentTypeError(exc.message.removeprefix("--max-memory: ")) from None


_FIXED: dict[str, Parse | None] = {
    "text": None, "choice": None, "int": int, "path": Path,
    "probability": probability, "size": memory_size, "formats": formats, "shard": shard,
    "slowdowns": slowdowns,
}
_BOUNDED = {"positive_float": positive_float, "non_negative_float": non_negative_float}


def value_type(option: Option) -> Parse | None:
    """The argparse `type` of a valued option (None: the text as it is)."""
    if option.kind == "count":
        return positive_int(option.minimum, option.maximum)
    if option.kind == "list":
        return comma_list(option.choices or None)
    if option.kind in _BOUNDED:
        return _BOUNDED[option.kind](option.maximum)
    return _FIXED[option.kind]
