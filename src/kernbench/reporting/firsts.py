"""The first rows of a table, kept while the records go by: what bounds summary.md's memory."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

__all__ = ["MAX_ROWS", "Firsts"]

MAX_ROWS = 200
"""The most rows a table of summary.md lists; the rest are counted, and every case stays in
summary.json."""


class Firsts:
    """The first `limit` items by key, per machine, and how many were added."""

    __slots__ = ("bound", "count", "kept", "limit")

    def __init__(self, limit: int = MAX_ROWS) -> None:
        self.limit = limit
        self.count = 0
        self.kept: dict[Hashable, list[tuple[Any, Any]]] = {}
        self.bound: dict[Hashable, Any] = {}
        """Per machine, the last key kept at the last trim: a later key past it is not kept."""

    def add(self, key: Any, item: Any, machine: Hashable = None) -> None:
        self.count += 1
        if machine in self.bound and not key < self.bound[machine]:
            return  # `limit` items that come first are kept already
        self._keep(key, item, machine)

    def add_made(self, key: Any, make: Callable[[], Any], machine: Hashable = None) -> None:
        """:meth:`add` the item `make` gives, made only when it would be kept."""
        self.count += 1
        if machine not in self.bound or key < self.bound[machine]:
            self._keep(key, make(), machine)

    def _keep(self, key: Any, item: Any, machine: Hashable) -> None:
        kept = self.kept.get(machine)
        if kept is None:
            kept = self.kept[machine] = []
        kept.append((key, item))
        if len(kept) > 2 * self.limit + 8:
            self._trim(kept, machine)

    def _trim(self, kept: list[tuple[Any, Any]], machine: Hashable) -> None:
        kept.sort(key=lambda entry: entry[0])  # stable: of equal keys, the first added first
        del kept[self.limit:]
        if len(kept) == self.limit:
            self.bound[machine] = kept[-1][0]

    def absorb(self, other: Firsts) -> None:
        """Take in the items of `other`, all added after this one's."""
        self.count += other.count
        for machine, kept in other.kept.items():
            for key, item in sorted(kept, key=lambda entry: entry[0]):  # stable
                if machine in self.bound and not key < self.bound[machine]:
                    break
                self._keep(key, item, machine)

    def compact(self, bound: Mapping[Hashable, Any] | None = None) -> None:
        """Keep only the first `limit` items of each machine, and of them only those before
        the machine's `bound` (another Firsts' :attr:`bound`, which absorbing this one into
        it would pass over)."""
        for machine, kept in self.kept.items():
            if bound and machine in bound:
                kept[:] = [entry for entry in kept if entry[0] < bound[machine]]
            self._trim(kept, machine)

    def entries(self, machines: Sequence[Hashable] = (None,)) -> list[tuple[int, Any, Any]]:
        """(machine rank, key, item) of the first `limit`, machines in the order given (any
        other after them)."""
        order = [*machines, *(m for m in self.kept if m not in machines)]
        found: list[tuple[int, Any, Any]] = []
        for rank, machine in enumerate(order):
            kept = self.kept.get(machine, [])
            self._trim(kept, machine)
            found.extend((rank, key, item) for key, item in kept[:self.limit - len(found)])
        return found

    def items(self, machines: Sequence[Hashable] = (None,)) -> list[Any]:
        return [item for _, _, item in self.entries(machines)]

    @property
    def more(self) -> int:
        """How many were added beyond the `limit` kept."""
        return max(0, self.count - self.limit)
