"""Read-only mappings and lists for frozen result objects (:class:`~kernbench.results.model.
CaseResult`): a frozen dataclass whose dicts could still be changed in place was not frozen."""

from __future__ import annotations

from typing import Any, NoReturn


class ReadOnlyDict(dict[str, Any]):
    """A dict that refuses changes, as a frozen result's mappings must (its sequences are
    tuples): one result's `memory` or `energy` changed in place changed its record, and every
    result sharing the dict. Its values are read-only too, at any depth (:func:`frozen`).
    Still a dict to json, orjson, pickle and copy; `dict(it)` is a mutable (shallow) copy."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for key, value in dict.items(self):
            dict.__setitem__(self, key, frozen(value))

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("a result's mappings are read-only: change a copy, dict(mapping)")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[type[ReadOnlyDict], tuple[dict[str, Any]]]:
        return type(self), (dict(self),)


class ReadOnlyList(list[Any]):
    """A list inside a result's mapping, refusing changes as :class:`ReadOnlyDict` does; equal
    to a list of the same items, and a list to json, orjson, pickle and copy."""

    def __init__(self, items: Any = ()) -> None:
        items = list(items)
        super().__init__(items if _plain(items) else [frozen(item) for item in items])

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("a result's lists are read-only: change a copy, list(items)")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self) -> tuple[type[ReadOnlyList], tuple[list[Any]]]:
        return type(self), (list(self),)


def frozen(value: Any) -> Any:
    """`value` with every dict and list in it read-only (already read-only ones as they are)."""
    kind = type(value)
    if kind is ReadOnlyDict or kind is ReadOnlyList:
        return value
    if isinstance(value, dict):
        return ReadOnlyDict(value)
    if isinstance(value, list):
        return ReadOnlyList(value)
    if kind is tuple and not _plain(value):
        return tuple(frozen(item) for item in value)
    return value


_SCALARS = frozenset({float, int, str, bool, type(None)})


def _plain(items: list[Any] | tuple[Any, ...]) -> bool:
    """Whether `items` holds nothing to freeze: a GPU record's thousands of per-call times
    are checked at C speed (freezing them one by one cost ~135 ns each, ~3 ms a record)."""
    return _SCALARS.issuperset(map(type, items))
