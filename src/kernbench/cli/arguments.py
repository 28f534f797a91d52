"""argparse value types: how the text of each kind of option (:data:`kernbench.config.options.Kind`)
becomes its value, with the error argparse prints (exit 2) when it cannot. The numeric ones come
from :mod:`kernbench.config.values`, which the pytest plugin uses too."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kernbench.config.options import Option
from kernbench.config.values import non_negative_float, positive_float, positive_int, probability
from kernbench.errors import KernbenchError

Parse = Callable[[str], Any]


def non_empty(text: str) -> str:
    """A text value that says something: `--ab "$(git merge-base ...)"` whose command failed
    gives "", which must not turn the comparison off and pass."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a value, got an empty string")
    return text


def nearest(value: str, choices: Sequence[str]) -> str:
    """` (did you mean 'fp16'?)` for a near miss, spelling case aside; else ""."""
    import difflib

    lowered = {c.lower(): c for c in choices}
    hint = difflib.get_close_matches(value.lower(), list(lowered), n=1)
    return f" (did you mean {lowered[hint[0]]!r}?)" if hint else ""


def comma_list(choices: Sequence[str] | None = None) -> Parse:
    """argparse type for `a,b,c`, checked against `choices` when given."""
    def parse(text: str) -> tuple[str, ...]:
        items = tuple(dict.fromkeys(i.strip() for i in text.split(",") if i.strip()))
        if not items:
            raise argparse.ArgumentTypeError("expected a comma-separated list")
        bad = [i for i in items if choices is not None and i not in choices]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown value {bad[0]!r}{nearest(bad[0], choices or ())}; expected a comma "
                f"list of {', '.join(choices or ())}")
        return items
    return parse


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
    "text": non_empty, "choice": None, "int": int, "path": Path,
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
