"""Kernel functions defined in another module: bench.yaml ``function_name: module:Class.method``
(or ``module:function``), the module importable from the kernel's folder, the repository root
or a bench.yaml ``sys_path`` folder, as the worker will import it. Discovery reads that
module's source (never imports it) for the function's parameters and framework."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from kernbench.discovery.source import find_function, spec_from_tree
from kernbench.results.model import KernelSpec


def split_module(name: str) -> tuple[str | None, str]:
    """(`module`, `Class.method`) of ``module:Class.method``; (None, `name`) without a module."""
    module, colon, attribute = name.partition(":")
    return (module, attribute) if colon else (None, name)


def module_file(module: str, folders: Sequence[Path]) -> Path | None:
    """The source of `module` (dotted) in the first of `folders` that holds it."""
    parts = module.split(".")
    for folder in folders:
        for candidate in (folder.joinpath(*parts).with_suffix(".py"),
                          folder.joinpath(*parts, "__init__.py")):
            if candidate.is_file():
                return candidate
    return None


def spec_elsewhere(rel: str, name: str, folders: Sequence[Path]) -> KernelSpec | str:
    """The spec of kernel file `rel` whose function `name` (``module:attr``) lives in another
    module, looked up in `folders`; an error message when it cannot be found or parsed."""
    module, attribute = split_module(name)
    assert module is not None
    path = module_file(module, folders)
    if path is None:
        where = ", ".join(str(folder) for folder in folders)
        return (f"{rel}: function_name {name}: no module {module!r} in the kernel's folder, "
                f"the root or sys_path ({where})")
    from kernbench.config.loading import read_source

    try:
        tree = ast.parse(read_source(path), filename=str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        return f"{rel}: function_name {name}: cannot read {path}: {exc}"
    definition = find_function(tree, attribute)
    if definition is None:
        return f"{rel}: function_name {name}: {attribute} is not defined in {path}"
    return replace(spec_from_tree(rel, tree, attribute, definition), function_name=name)
