"""Are the shards of a merge one run? A merged summary has one ``settings`` for all its cases.

A merge writes the first shard's ``settings`` for every case (each shard's identity is listed
in ``settings.shards``; a selection key the machines of a mixed merge differ in is null there,
each entry giving its own), so every shard must have been measured the same way, from the same
tree: the shards of one ``--shard K/N`` run (by hand, by ``--shards N`` on any executor, or of
an ``--ab`` run), on one machine or on several (``--allow-mixed``). :class:`OneRun` refuses a
shard that is not, naming it, the shard it differs from and what differs. ``--allow-mixed``
does not lift this: it keeps machines apart, but their cases share the run's one protocol, and
a report that measured some cases one way and some another would misstate how either was.

What must be equal (:func:`run_identity`):

* in every shard: the settings that say how a case was measured (:data:`MEASURED_SETTINGS`:
  those a resume must repeat but the root, the shard and the selection, and the ``--ab``
  reference, commit and rounds; a key a shard does not record counts as null), and the git
  commit of the tree, where both shards record one;
* in the shards of one machine: the suite (the digest of its case ids in ``settings.plan``,
  where both record a plan), what selected it (:data:`SELECTION_SETTINGS`), and the root the
  tree was checked out at. Machines may differ there: each may run its own rows of a matrix
  (bench.yml runs the CPU rows on hosted runners and the CUDA rows on a GPU runner; each
  suite's completeness is checked on its own), in its own checkout folder.

What may differ: where each shard wrote its reports (``output_dir``, ``formats``), which shard
it was (``shard``, ``plan``'s case ids and balance), a resume, a profile, the suite file's path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernbench.errors import KernbenchError
from kernbench.execution.resume import COMPARED_SETTINGS

__all__ = ["MEASURED_SETTINGS", "SELECTION_SETTINGS", "OneRun", "RunIdentity", "run_identity"]

SELECTION_SETTINGS = ("backends", "precisions", "filters", "paths", "sweeps")
"""summary.json ``settings`` keys that select the suite's cases: one per machine."""

MEASURED_SETTINGS: tuple[str, ...] = (*(
    key for key in COMPARED_SETTINGS
    if key not in ("root", "shard", *SELECTION_SETTINGS)), "ab")
"""summary.json ``settings`` keys every shard of a merge must share."""

_PER_MACHINE = ("root", "suite", *SELECTION_SETTINGS)
"""What shards of one machine must share, and shards of different machines need not."""


@dataclass(frozen=True)
class RunIdentity:
    """What must be equal in every shard of a merge (:func:`run_identity`)."""

    source: str
    machine: str
    values: dict[str, Any]
    """Setting key (or ``suite``, ``commit``) -> its value; ``suite`` and ``commit`` only
    where the shard records them."""


def run_identity(source: str, document: Mapping[str, Any], suite: str | None,
                 machine: str) -> RunIdentity:
    """The identity of the shard `source` from its summary `document` (its ``settings`` and
    ``environment``), its suite digest (None: no plan recorded) and its machine."""
    settings = document.get("settings") or {}
    values = {key: settings.get(key)
              for key in (*MEASURED_SETTINGS, *SELECTION_SETTINGS, "root")}
    if suite is not None:
        values["suite"] = suite
    git = (document.get("environment") or {}).get("git")
    commit = git.get("commit") if isinstance(git, Mapping) else None
    if commit:
        values["commit"] = commit
    return RunIdentity(source, machine, values)


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _differences(first: RunIdentity, other: RunIdentity, keys: tuple[str, ...] | None
                 ) -> list[str]:
    """`first` and `other`'s values that differ (of `keys`; None: every key both hold); of
    two mappings, the entries that differ (``ab.rounds``), so a long value is not cut off
    before the part that differs."""
    found = []
    for key, value in first.values.items():
        if (keys is not None and key not in keys) or key not in other.values:
            continue
        theirs = other.values[key]
        pairs = ([(f"{key}.{sub}", value.get(sub), theirs.get(sub))
                  for sub in sorted({*value, *theirs}, key=str)]
                 if isinstance(value, Mapping) and isinstance(theirs, Mapping)
                 else [(key, value, theirs)])
        found += [f"{name} ({first.source}: {_shown(mine)}, {other.source}: {_shown(its)})"
                  for name, mine, its in pairs if mine != its]
    return found


class OneRun:
    """Checks shards one at a time: each against the first shard, and against the first
    shard of its machine for what machines need not share (:data:`_PER_MACHINE`)."""

    def __init__(self) -> None:
        self.first: RunIdentity | None = None
        self.machines: dict[str, RunIdentity] = {}

    def add(self, shard: RunIdentity) -> None:
        """KernbenchError when `shard` is not of the run of the shards added before."""
        first = self.first = self.first or shard
        own = self.machines.setdefault(shard.machine, shard)
        shared = None if shard.machine == first.machine else tuple(
            key for key in first.values if key not in _PER_MACHINE)
        differ = _differences(first, shard, shared)
        if not differ:
            first, differ = own, _differences(own, shard, _PER_MACHINE)
        if differ:
            raise KernbenchError(
                f"{first.source} and {shard.source} are not shards of one run: they differ "
                f"in {'; '.join(differ)}. A merged report has one set of settings for all "
                "its cases: one protocol and tree, one suite per machine (--allow-mixed "
                "keeps machines apart, not runs). Merge each run's shards apart")
