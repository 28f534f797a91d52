"""Rows of an HTML table, read with the standard library's parser (no browser)."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any


class TableParser(HTMLParser):
    """The body rows of the table with id `table_id`: per cell, its attributes and text."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id, self.depth, self.in_body = table_id, 0, False
        self.rows: list[list[dict[str, Any]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.depth += 1 if self.depth or dict(attrs).get("id") == self.table_id else 0
        elif self.depth and tag == "tbody":
            self.in_body = True
        elif self.in_body and tag == "tr":
            self.rows.append([])
        elif self.in_body and tag == "td":
            self.rows[-1].append({**dict(attrs), "text": ""})

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self.depth:
            self.depth -= 1
            self.in_body = False

    def handle_data(self, data: str) -> None:
        if self.in_body and self.rows and self.rows[-1]:
            self.rows[-1][-1]["text"] += data


def table_rows(page: str, table_id: str) -> list[list[dict[str, Any]]]:
    parser = TableParser(table_id)
    parser.feed(page)
    return [[{**cell, "text": " ".join(cell["text"].split())} for cell in row]
            for row in parser.rows]
