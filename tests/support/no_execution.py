"""The guard the expression-language property tests share: while it is active, evaluating,
executing, compiling to code or importing anything raises :class:`ExecutionAttempted`, so a
test proves that arbitrary bench.yaml text is parsed and walked as data only."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import strategies as st


class ExecutionAttempted(BaseException):
    """Raised by the patched builtins; a BaseException so nothing can swallow it."""


@contextmanager
def forbid_code_execution(text: str) -> Iterator[None]:
    """Patch eval/exec/compile/__import__ for the duration; `text` is named on a violation."""
    real_compile, real_import = builtins.compile, builtins.__import__
    saved = (builtins.eval, builtins.exec, builtins.compile, builtins.__import__)

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise ExecutionAttempted(text)

    def ast_only(source: Any, filename: Any, mode: Any, flags: int = 0,
                 *args: Any, **kwargs: Any) -> Any:
        if not flags & ast.PyCF_ONLY_AST:
            raise ExecutionAttempted(text)
        return real_compile(source, filename, mode, flags, *args, **kwargs)

    def parser_imports_only(name: str, *args: Any, **kwargs: Any) -> Any:
        # CPython's parser imports unicodedata to normalise non-ASCII identifiers.
        if name != "unicodedata":
            raise ExecutionAttempted(f"import {name} while handling {text!r}")
        return real_import(name, *args, **kwargs)

    builtins.eval, builtins.exec, builtins.compile, builtins.__import__ = (
        forbidden, forbidden, ast_only, parser_imports_only)
    try:
        yield
    finally:
        builtins.eval, builtins.exec, builtins.compile, builtins.__import__ = saved


def called_builtins(module_file: str | None) -> set[str]:
    """Names called as plain functions in a module's source (to find eval/exec/compile)."""
    assert module_file is not None
    tree = ast.parse(Path(module_file).read_text(encoding="utf-8"))
    return {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }


def hostile_texts(tokens: list[str], max_tokens: int) -> st.SearchStrategy[str]:
    """Arbitrary text, and runs of a language's tokens joined with and without blanks."""
    runs = st.lists(st.sampled_from(tokens), max_size=max_tokens)
    return st.one_of(st.text(max_size=120), runs.map(" ".join), runs.map("".join))
