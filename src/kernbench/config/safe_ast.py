"""The shared front end of kernbench's two small expression languages (skip conditions and
work formulas): checks on the raw text, then ``ast.parse`` in eval mode. Nothing is compiled
or evaluated here; each language walks the returned tree over its own whitelist."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from kernbench.errors import ConfigError


def parse_expression(text: object, source: str, key: str, what: str, grammar: str,
                     max_length: int) -> tuple[str, ast.Expression]:
    """(stripped text, tree) of `text`, or a ConfigError naming `source` and `key`.

    `what` names the language in messages ("condition", "formula"); `grammar` says what is
    allowed."""
    if not isinstance(text, str):
        raise ConfigError(source, key, f"a {what} string", text)
    if len(text) > max_length:
        raise ConfigError(source, key, f"a {what} of at most {max_length} characters",
                          f"{len(text)} characters")
    stripped = text.strip()  # leading blanks are an IndentationError in eval mode
    if not stripped:
        raise ConfigError(source, key, f"a non-empty {what}: {grammar}", text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. invalid escape sequences in string literals
            return stripped, ast.parse(stripped, filename=source, mode="eval")
    except SyntaxError as exc:
        got = f"syntax error: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        got = f"unparsable text: {type(exc).__name__}"
    raise ConfigError(source, key, f"a valid expression: {grammar}", got)


@dataclass(frozen=True)
class WhitelistParser:
    """Base of each language's tree walker: where the text came from, and how a rejected
    construct is reported (its kind and the offending snippet). Subclasses set `NODE_NAMES`
    and `grammar()`."""

    text: str
    source: str
    key: str

    NODE_NAMES: ClassVar[Mapping[type, str]] = {}

    def grammar(self) -> str:
        raise NotImplementedError

    def reject(self, node: ast.AST, what: str | None = None,
               expected: str | None = None) -> ConfigError:
        label = what or self.NODE_NAMES.get(type(node), type(node).__name__)
        return ConfigError(self.source, self.key, expected or self.grammar(),
                           f"{label} `{self.snippet(node)}`")

    def snippet(self, node: ast.AST) -> str:
        text = ast.get_source_segment(self.text, node) or ast.unparse(node)
        return text if len(text) <= 80 else text[:77] + "..."
