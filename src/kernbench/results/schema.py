"""The versioned result JSON: its version and the migrations that bring older files to it.

Result files carry ``schema_version``. Readers accept the current version and migrate older ones
step by step through :data:`MIGRATIONS`; a newer version is refused with a clear message.
This module imports nothing else of the package but :mod:`kernbench.errors`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernbench.errors import KernbenchError

SCHEMA_VERSION = 1
"""Version of summary.json, kernels/<name>.json and kernel_manifest.json."""


# --- versioned result JSON -------------------------------------------------------------

Migration = Callable[[dict[str, Any]], dict[str, Any]]
MIGRATIONS: dict[int, Migration] = {}
"""`MIGRATIONS[n]` turns a version-n document into version n+1."""


def migrate(document: dict[str, Any], source: str) -> dict[str, Any]:
    """Bring a result document to :data:`SCHEMA_VERSION`, or explain why it cannot be read."""
    version = document.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise KernbenchError(f"{source}: not a kernbench result file (no integer schema_version)")
    if version > SCHEMA_VERSION:
        raise KernbenchError(f"{source}: schema_version {version} is newer than this kernbench "
                             f"reads ({SCHEMA_VERSION}); upgrade kernbench")
    while version < SCHEMA_VERSION:
        document = MIGRATIONS[version](document)
        version += 1
        document["schema_version"] = version
    return document
