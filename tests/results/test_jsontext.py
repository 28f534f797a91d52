"""split_records reads what json.loads reads, each record with a text of it; the merged summary's
writer writes those texts as write_json_atomic writes items."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernbench.results.files import write_json_atomic, write_json_items_atomic
from kernbench.results.jsontext import split_records

DOCUMENTS = [
    '{"schema_version": 3, "results": [{"a": 1, "b": [1.5, null]}, {"c": "x]\\"}"}], "z": {}}',
    ' {\n  "results" : [\n    {"a": NaN} ,\n    {"b": -Infinity}\n  ] ,\n'
    '  "k": {"n": "results"}\n} \n',
    '{"results": []}',
    '{"schema_version": 3}',
    "{}",
]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_the_records_and_the_rest_are_what_json_loads_reads(text: str) -> None:
    header, items = split_records(text)
    document = json.loads(text)
    records = document.pop("results", None)
    assert json.dumps(header) == json.dumps(document)
    if records is None:
        assert items is None
        return
    assert items is not None
    assert json.dumps([record for record, _ in items]) == json.dumps(records)
    assert [json.dumps(json.loads(raw)) for _, raw in items] == [
        json.dumps(record) for record, _ in items]
    assert not any("\n" in raw for _, raw in items)  # the merged summary: one record a line


@pytest.mark.parametrize(("text", "message"), [
    ("[1, 2]", "not a JSON object"), ('{"results": 3}', "'results' is not a list"),
    ('{"results": [1,', "Expecting value"), ('{"a": 1} x', "Extra data"), ("", "Expecting"),
])
def test_what_is_not_a_summary_is_a_value_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        split_records(text)


def test_the_texts_written_back_give_the_file_write_json_atomic_writes(tmp_path: Path) -> None:
    document = {"a": 1, "results": [{"x": 1}, {"y": [1, 2]}], "empty": [], "z": {"k": [1]}}
    write_json_atomic(tmp_path / "whole.json", document, one_line_items=True)
    text = (tmp_path / "whole.json").read_text(encoding="utf-8")
    header, items = split_records(text)
    assert items is not None
    write_json_items_atomic(tmp_path / "streamed.json", {**header, "results": None},
                            {"results": iter([raw for _, raw in items])})
    streamed = json.loads((tmp_path / "streamed.json").read_text(encoding="utf-8"))
    assert streamed == {**header, "results": document["results"]}
    write_json_items_atomic(tmp_path / "none.json", {"results": None}, {"results": iter(())})
    assert json.loads((tmp_path / "none.json").read_text(encoding="utf-8")) == {"results": []}


@pytest.mark.parametrize("number", ["18446744073709551616", "-9223372036854775809",
                                    "123456789012345678901234567890"])
def test_integers_beyond_64_bits_are_read_exactly(number: str) -> None:
    """orjson reads them as floats (losing digits); the json module reads them exactly."""
    header, items = split_records(f'{{"seed": {number}, "results": [{{"n": {number}}}]}}')
    assert header == {"seed": int(number)}
    assert items == [({"n": int(number)}, f'{{"n": {number}}}')]


def test_bytes_and_text_give_the_same_records() -> None:
    text = '{"results": [{"name": "caf\\u00e9 \u00e9", "x": [1.5, 1e-07, -0.0]}], "a": null}'
    assert split_records(text.encode("utf-8")) == split_records(text)
    _, items = split_records(text)
    assert items is not None and json.loads(items[0][1]) == items[0][0]
    with pytest.raises(ValueError):
        split_records(b'{"results": ["\xff"]}')  # not UTF-8


def test_long_fractions_stay_on_orjsons_way() -> None:
    """A float of 19 digits after its point (an accuracy error, a tiny sample) is no integer
    orjson could misread: its record is read and written by orjson (compact, no spaces)."""
    _, items = split_records('{"results": [{"rmse": 0.0023581100881501027, "n": 12}]}')
    assert items == [({"rmse": 0.0023581100881501027, "n": 12},
                      '{"rmse":0.0023581100881501027,"n":12}')]


def test_records_nested_deeper_than_orjson_writes_are_written_by_json() -> None:
    deep: dict[str, Any] = {"a": 1}
    for _ in range(300):
        deep = {"k": deep}
    _, items = split_records(json.dumps({"results": [deep]}))
    assert items is not None and items[0][0] == deep and json.loads(items[0][1]) == deep
