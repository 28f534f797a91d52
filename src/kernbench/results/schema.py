"""The versioned result JSON: its version and the migrations that bring older files to it.

Result files carry ``schema_version``. Readers accept the current version and migrate older ones
step by step through :data:`MIGRATIONS`; a newer version is refused with a clear message.
This module imports nothing else of the package but :mod:`kernbench.errors`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernbench.errors import KernbenchError

SCHEMA_VERSION = 2
"""Version of summary.json, kernels/<name>.json, kernel_manifest.json, env.json and history
records. 2: every record names its machine (``fingerprint``, ``testbed``), the environment its
``testbed``, ``settings.shards`` lists each shard's identity instead of its path, and a
history record's results keep ``inner_loops`` (0 where a version 1 record did not say)."""


# --- versioned result JSON -------------------------------------------------------------

Migration = Callable[[dict[str, Any]], dict[str, Any]]


def _v1_to_v2(document: dict[str, Any]) -> dict[str, Any]:
    """Version 1 had no testbed: the host name stands for it (the default of version 2), and
    each record takes its machine from the document's environment (a summary, env.json) or
    the record's own fingerprint (a history record); merged summaries listed shard paths."""
    env = document.get("environment")
    env = env if isinstance(env, dict) else document
    if "hostname" in env or "fingerprint" in env:
        env.setdefault("testbed", env.get("hostname"))
    machine = {"fingerprint": env.get("fingerprint") or document.get("fingerprint"),
               "testbed": env.get("testbed")}
    results = document.get("results")
    history = document.get("kind") == "kernbench-history"
    for record in results if isinstance(results, list) else []:
        if isinstance(record, dict):
            for key, value in machine.items():
                record.setdefault(key, value)
            if history:
                record.setdefault("inner_loops", 0)
    settings = document.get("settings")
    if isinstance(settings, dict) and isinstance(settings.get("shards"), list):
        settings["shards"] = [
            entry if isinstance(entry, dict) else
            {"source": str(entry), "shard": None, "host": None, "testbed": None,
             "fingerprint": None, "scheduler": {}}
            for entry in settings["shards"]]
    return document


MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2}
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
