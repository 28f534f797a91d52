"""``--shard K/N``: run shard K of N of a suite, one machine each.

The split itself is by measured wall time or by count (:mod:`kernbench.execution.balancing`,
:func:`kernbench.api.run.shard_split`; for ``--ab``, :func:`kernbench.execution.ab.shard_sides`):
the same on every machine that sees the same suite, so it needs no coordination. Each machine
writes its own summary.json; :mod:`kernbench.execution.merging` joins them into one.
"""

from __future__ import annotations

import re

from kernbench.errors import KernbenchError

__all__ = ["parse_shard"]

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
