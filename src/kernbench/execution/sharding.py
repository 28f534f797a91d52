"""Spread a suite over machines (``--shard K/N``).

Every item goes to exactly one of N shards, chosen from a key alone with SHA-256
(:func:`shard_of`), so the split is the same on every machine, Python version and run (unlike
``hash()``, which is salted per process) and needs no coordination. The runner keys by kernel
name, so all cases of a kernel (and its bench.yaml reference case) share a shard.  Each machine runs
``--shard K/N`` and writes its own summary.json; :mod:`kernbench.execution.merging` joins
them into one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from kernbench.errors import KernbenchError

__all__ = ["parse_shard", "select_shard", "shard_of"]

T = TypeVar("T")

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")
_FORM = "expected K/N with 1 <= K <= N, e.g. --shard 2/4"


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``: shard K (1-based) of N.  Anything else is a KernbenchError."""
    match = _SHARD.fullmatch(text)
    if match is None:
        raise KernbenchError(f"--shard {text!r}: {_FORM}")
    index, total = int(match.group(1)), int(match.group(2))
    if total < 1:
        raise KernbenchError(f"--shard {text!r}: N must be at least 1; {_FORM}")
    if index < 1:
        raise KernbenchError(f"--shard {text!r}: K must be at least 1 (shards count from 1); "
                             f"{_FORM}")
    if index > total:
        raise KernbenchError(f"--shard {text!r}: K ({index}) is larger than N ({total}); {_FORM}")
    return index, total


def shard_of(case_id: str, total: int) -> int:
    """The shard (1..total) of a case: SHA-256 of its UTF-8 ``case_id``, as an integer, mod N."""
    if total < 1:
        raise ValueError(f"the number of shards must be at least 1 (got {total})")
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest, "big") % total + 1


def select_shard(items: Sequence[T], key: Callable[[T], str],
                 shard: tuple[int, int]) -> list[T]:
    """The items of shard ``(K, N)``, in their original order; ``key`` gives an item's case id."""
    index, total = shard
    if not 1 <= index <= total:
        raise ValueError(f"shard {index}/{total}: expected 1 <= K <= N")
    return [item for item in items if shard_of(key(item), total) == index]
