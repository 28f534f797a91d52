"""The jinja2 environment every report renders with, its compiled templates cached on disk.

Compiling a report template costs 0.1-0.2 s (summary.md's and index.html's each), once per
process. jinja2's own bytecode cache keeps the compiled code under the user's cache folder
(``$XDG_CACHE_HOME/kernbench/templates``), keyed by the template's source, so a changed
template is compiled again and an unchanged one loads in about a millisecond. Where that folder
cannot be made (a read-only home), templates are compiled as before.
"""

from __future__ import annotations

from typing import Any

import jinja2

from kernbench.results.files import default_cache_dir


def bytecode_cache() -> jinja2.BytecodeCache | None:
    """The on-disk cache of compiled templates, or None where its folder cannot be made."""
    folder = default_cache_dir() / "templates"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(folder))


def environment(**options: Any) -> jinja2.Environment:
    """A fresh environment over ``kernbench/reporting/templates`` with `options`."""
    return jinja2.Environment(loader=jinja2.PackageLoader("kernbench", "reporting/templates"),
                              bytecode_cache=bytecode_cache(),
                              undefined=jinja2.StrictUndefined, **options)
