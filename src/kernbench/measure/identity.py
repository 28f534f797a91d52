"""Who ran a shard: the testbed name of this machine and the scheduler's ids for the process.

A *testbed* names a machine (or a kind of machine) in merged reports: ``--testbed NAME`` sets it
and persists it for this host in the user's cache folder, so later runs on the host keep it
without the flag; without either, it is the host name. The machine fingerprint
(:mod:`kernbench.results.fingerprint`) says what hardware ran a case; the testbed says which
named machine the user meant, and a merge keeps records of different machines apart by both.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernbench.errors import KernbenchError
from kernbench.results.files import read_json_object, safe_filename, write_json_atomic

__all__ = [
    "SCHEDULER_VARIABLES",
    "check_testbed",
    "kept_testbed_file",
    "resolve_testbed",
    "scheduler_ids",
    "shard_identity",
]

SCHEDULER_VARIABLES = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID",
                       "SLURMD_NODENAME", "JOB_COMPLETION_INDEX", "RUNNER_NAME",
                       "GITHUB_RUN_ID", "RAY_NODE_ID")
"""Environment variables a scheduler sets that identify a shard's job, task or node."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,63}")
UNKNOWN_HOST = "unknown-host"


def check_testbed(name: str, source: str = "--testbed") -> str:
    """`name` when it is a valid testbed name, else a KernbenchError naming `source`."""
    if not _NAME.fullmatch(name):
        raise KernbenchError(f"{source} {name!r}: expected 1 to 64 characters of letters, "
                             "digits and . _ : @ + -, starting with a letter or digit "
                             "(e.g. --testbed h100-node)")
    return name


def kept_testbed_file(cache_dir: Path, hostname: str | None) -> Path:
    """Where the testbed of host `hostname` is kept (one file per host: a shared home folder
    on a cluster holds every node's name apart)."""
    return cache_dir / f"testbed-{safe_filename(hostname or UNKNOWN_HOST)}.json"


def resolve_testbed(requested: str | None, cache_dir: Path, hostname: str | None) -> str:
    """The testbed of this run: `requested` (then kept for this host), else the one kept for
    this host, else the host name."""
    path = kept_testbed_file(cache_dir, hostname)
    if requested is not None:
        name = check_testbed(requested)
        kept = read_json_object(path) or {}
        if kept.get("testbed") != name:
            try:
                write_json_atomic(path, {"testbed": name, "hostname": hostname})
            except OSError as exc:
                raise KernbenchError(f"{path}: cannot keep the testbed name: {exc}") from exc
        return name
    kept_name = (read_json_object(path) or {}).get("testbed")
    if isinstance(kept_name, str) and _NAME.fullmatch(kept_name):
        return kept_name
    return hostname or UNKNOWN_HOST


def scheduler_ids(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The :data:`SCHEDULER_VARIABLES` that are set (and not empty), by name."""
    env = os.environ if environ is None else environ
    return {name: env[name] for name in SCHEDULER_VARIABLES if env.get(name)}


def shard_identity(environment: Mapping[str, Any], shard: tuple[int, int] | None,
                   environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One entry of ``settings.shards``: the shard (``K/N`` or None), host, testbed,
    fingerprint and the scheduler's ids, as summary.json keeps them."""
    return {"shard": f"{shard[0]}/{shard[1]}" if shard else None,
            "host": environment.get("hostname"), "testbed": environment.get("testbed"),
            "fingerprint": environment.get("fingerprint"),
            "scheduler": scheduler_ids(environ)}
