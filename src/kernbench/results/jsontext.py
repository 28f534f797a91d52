"""A summary.json read record by record: each record with the exact JSON text it came from.

A merge of shards writes every record of every shard into the merged summary.json. Parsing a
shard with :func:`json.loads` and encoding each record again with :func:`json.dumps` costs
about as much again as the parse; :func:`split_records` walks the document with the json
module's own C scanner, one value at a time, so each record comes with its text, which the
merge writes back as it is. The values are those :func:`json.loads` gives; a document the walk
does not expect (not an object, a ``results`` that is not a list) is handed to
:func:`json.loads`, which parses it (records then get their text from :func:`json.dumps`) or
raises its usual error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["one_line", "split_records"]

_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_SPACE = re.compile(r"[ \t\n\r]*")
_ITEM_BREAK = re.compile(r",[ \t\r]*\n[ \t\r\n]*")
_BREAK = re.compile(r"[ \t\r]*\n[ \t\r\n]*")


def one_line(text: str) -> str:
    """A JSON text on one line: the line breaks and indentation of an indented value gone (a
    JSON string holds no raw line break, so every one is between tokens). The text of
    ``json.dumps(value, indent=N)`` becomes that of ``json.dumps(value)``."""
    if "\n" not in text:
        return text
    return _BREAK.sub("", _ITEM_BREAK.sub(", ", text))


def split_records(text: str, key: str = "results"
                  ) -> tuple[dict[str, Any], list[tuple[Any, str]] | None]:
    """(the document without `key`, each item of its `key` list with its JSON text); the
    items are None when the document has no `key`. ValueError for text that is not JSON."""
    try:
        return _walk(text, key)
    except (StopIteration, IndexError, _Unexpected):
        pass
    document = json.loads(text)  # raises for bad JSON; else a shape the walk does not take
    if not isinstance(document, dict):
        raise ValueError("not a JSON object")
    items = document.pop(key, None)
    if items is None:
        return document, None
    if not isinstance(items, list):
        raise ValueError(f"{key!r} is not a list")
    return document, [(item, json.dumps(item)) for item in items]


class _Unexpected(Exception):
    """The text is not an object with a list under the key (or not JSON at all)."""


def _expect(text: str, index: int, char: str) -> int:
    """The index after `char` at `index` (and the spaces after it)."""
    if text[index] != char:
        raise _Unexpected
    return _SPACE.match(text, index + 1).end()  # type: ignore[union-attr]


def _walk(text: str, key: str) -> tuple[dict[str, Any], list[tuple[Any, str]] | None]:
    space = _SPACE.match
    header: dict[str, Any] = {}
    items: list[tuple[Any, str]] | None = None
    index = _expect(text, space(text, 0).end(), "{")  # type: ignore[union-attr]
    if text[index] == "}":
        return _end(text, index, header, items)
    while True:
        name, index = _SCAN(text, index)
        if not isinstance(name, str):
            raise _Unexpected
        index = _expect(text, space(text, index).end(), ":")  # type: ignore[union-attr]
        if name == key:
            items, index = _items(text, index)
        else:
            header[name], index = _SCAN(text, index)
        index = space(text, index).end()  # type: ignore[union-attr]
        if text[index] == "}":
            return _end(text, index, header, items)
        index = _expect(text, index, ",")


def _items(text: str, index: int) -> tuple[list[tuple[Any, str]], int]:
    """The values of the list at `index` with their texts, and the index after it."""
    space = _SPACE.match
    index = _expect(text, index, "[")
    found: list[tuple[Any, str]] = []
    if text[index] == "]":
        return found, index + 1
    while True:
        value, end = _SCAN(text, index)
        found.append((value, text[index:end]))
        index = space(text, end).end()  # type: ignore[union-attr]
        if text[index] == "]":
            return found, index + 1
        index = _expect(text, index, ",")


def _end(text: str, index: int, header: dict[str, Any], items: list[tuple[Any, str]] | None
         ) -> tuple[dict[str, Any], list[tuple[Any, str]] | None]:
    if text[_SPACE.match(text, index + 1).end():]:  # type: ignore[union-attr]
        raise _Unexpected  # something after the object: json.loads says what
    return header, items
