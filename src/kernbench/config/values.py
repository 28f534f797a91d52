"""How the text of a numeric option becomes its value: the argparse `type`s of the CLI
(:mod:`kernbench.cli.arguments`) and of the pytest plugin, which may not import the cli room.
An :class:`argparse.ArgumentTypeError` says why not (exit 2; a usage error under pytest).
Standard library only: the plugin loads in every pytest session."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["MAX_ITERATIONS", "non_negative_float", "positive_float", "positive_int",
           "probability"]

MAX_ITERATIONS = 100_000
"""The most timed samples per case and process (``--iters``, suite-file ``iterations``,
``--kernbench-iterations``, ``kernbench.bench(iterations=)``): ample for any percentile, and
every raw sample is kept in the reports; more only runs into the timeout. Here, not in
:mod:`kernbench.config.options`, so that the pytest plugin, which loads in every pytest
session, reads it without that table (~6 ms)."""


def positive_int(minimum: int, maximum: float | None = None) -> Callable[[str], int]:
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
                f"expected an integer from {minimum} to {maximum:.0f}, got {value}")
        return value
    return parse


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _finite(low_ok: bool, maximum: float | None) -> Callable[[str], float]:
    """argparse type for a finite number above 0 (or at 0 when `low_ok`), at most `maximum`:
    `--timeout inf` or `1e400` (float infinity) would overflow the waits for the worker; a NaN
    threshold made every comparison inconclusive (the gate passed a 2.7x slowdown)."""
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


def non_negative_float(maximum: float | None = None) -> Callable[[str], float]:
    """argparse type for a finite number >= 0 (and <= `maximum`)."""
    return _finite(True, maximum)


def positive_float(maximum: float | None = None) -> Callable[[str], float]:
    """argparse type for a finite number > 0 (and <= `maximum`)."""
    return _finite(False, maximum)


def probability(text: str) -> float:
    """argparse type for a number strictly between 0 and 1 (`--alpha`: a false discovery rate;
    at 1 or above every change would be significant)."""
    value = _number(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number > 0 and < 1, got {text}")
    return value
