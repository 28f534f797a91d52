"""A summary.json read record by record: each record with a JSON text of it on one line.

A merge of shards writes every record of every shard into the merged summary.json.
:func:`split_records` parses a shard with orjson (about half the time of :func:`json.loads`
for a summary of 1,000 records) and encodes each record again with it (a few microseconds
each), so the merge writes records it never encodes itself. JSON that orjson refuses and the
json module takes (NaN, ±Infinity, integers beyond 64 bits, lone surrogates) is parsed and
encoded by the json module instead; text that neither takes raises ValueError.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["split_records"]

_DIGITS = bytes(ord("0") if 48 <= i <= 57 else ord(".") if i == 46 else ord(" ")
                for i in range(256))
"""Digits as 0, the decimal point kept, every other byte a space."""
_LONG_INTEGER = b" " + b"0" * 19
"""19 digits in a row after something that is neither a digit nor a point: perhaps an integer
beyond orjson's 64 bits (it reads those as floats, losing digits), which the json module reads
exactly. A fraction's digits follow a point, so long fractions stay on orjson's way (a string
or an exponent of 19 digits takes the json module's, which is only slower)."""


def split_records(text: str | bytes, key: str = "results"
                  ) -> tuple[dict[str, Any], list[tuple[Any, str]] | None]:
    """(the document without `key`, each item of its `key` list with a JSON text of it on one
    line); the items are None when the document has no `key`. ValueError for text that is not
    JSON, or not an object, or whose `key` is not a list."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    encode: Callable[[Any], str] = _orjson_text
    try:
        if _LONG_INTEGER in data.translate(_DIGITS):
            raise orjson.JSONDecodeError("an integer orjson may read as a float", "", 0)
        document = orjson.loads(data)
    except orjson.JSONDecodeError:  # perhaps JSON only the json module takes; else it raises
        document = json.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
        encode = json.dumps
    if not isinstance(document, dict):
        raise ValueError("not a JSON object")
    items = document.pop(key, None)
    if items is None:
        return document, None
    if not isinstance(items, list):
        raise ValueError(f"{key!r} is not a list")
    return document, [(item, encode(item)) for item in items]


def _orjson_text(value: Any) -> str:
    try:
        return orjson.dumps(value).decode("utf-8")
    except orjson.JSONEncodeError:  # nested deeper than orjson writes (254 levels)
        return json.dumps(value)
