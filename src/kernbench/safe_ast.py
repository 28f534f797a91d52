"""The shared front end of kernbench's two small expression languages (skip conditions and
work formulas): checks on the raw text, then ``ast.parse`` in eval mode. Nothing is compiled
or evaluated here; each language walks the returned tree over its own whitelist."""

from __future__ import annotations

import ast
import warnings

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
