"""Read the benchmark history as it is at a git ref, without touching the work tree.

Only read-only plumbing runs (``rev-parse``, ``ls-tree``, ``cat-file --batch``) with
``GIT_OPTIONAL_LOCKS=0``: nothing is checked out and neither the index nor the work tree
changes. The machine fingerprint in each record's file name picks this machine's files from
the tree listing, so other machines' blobs are never read; the blobs that are needed come
from one ``git cat-file --batch`` process, newest first, until one holds a usable record.
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from kernbench.results.history import parse_record_bytes
from kernbench.results.history_names import (
    HISTORY_DIR,
    SUFFIX,
    HistoryName,
    name_fingerprint,
    parse_history_name,
)

__all__ = ["TreeEntry", "check_ref", "history_at_ref", "is_repository", "list_history",
           "resolve_ref"]

GIT_TIMEOUT_S = 30.0


def _git_env() -> dict[str, str]:
    return {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    """Run a read-only git command in `root`; None when git cannot be started."""
    try:
        return subprocess.run(["git", "-C", str(root), *args], env=_git_env(),
                              capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None


def is_repository(root: Path) -> bool:
    """Whether `root` is inside a git repository (work tree or bare)."""
    proc = _git(root, "rev-parse", "--git-dir")
    return proc is not None and proc.returncode == 0


def resolve_ref(root: Path, ref: str) -> str | None:
    """The commit sha `ref` names in `root`'s repository, or None."""
    if not ref or ref.startswith("-") or any(c in ref for c in "\n\r\0"):
        return None
    proc = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if proc is None or proc.returncode != 0:
        return None
    sha = proc.stdout.decode("ascii", "replace").strip()
    return sha or None


def prefix_in_repository(root: Path) -> str:
    """Where `root` lies inside its repository's work tree: ``sub/dir/`` (with the slash),
    or "" at the top (git's ``--show-prefix``)."""
    proc = _git(root, "rev-parse", "--show-prefix")
    if proc is None or proc.returncode != 0:
        return ""
    return proc.stdout.decode("utf-8", "surrogateescape").strip()


def is_shallow(root: Path) -> bool:
    """Whether `root`'s repository is a shallow clone (CI checkouts often are)."""
    proc = _git(root, "rev-parse", "--is-shallow-repository")
    return proc is not None and proc.stdout.strip() == b"true"


def check_ref(root: Path, ref: str, option: str = "--compare-to") -> str:
    """The commit `ref` names, or a KernbenchError (exit 2) that says why there is none: git
    missing, no repository, or an unknown ref (with the fix for a shallow clone). Called before
    any kernel runs, so a typo costs nothing."""
    from kernbench.errors import KernbenchError

    root = Path(root)
    if shutil.which("git") is None:
        raise KernbenchError(f"{option} {ref}: git is not on PATH")
    if not is_repository(root):
        raise KernbenchError(f"{option} {ref}: {root} is not in a git repository")
    commit = resolve_ref(root, ref)
    if commit is not None:
        return commit
    kind = _git(root, "cat-file", "-t", ref) if ref and not ref.startswith("-") else None
    if kind is not None and kind.returncode == 0:  # HEAD:README names a file, say
        named = kind.stdout.decode("ascii", "replace").strip()
        raise KernbenchError(f"{option} {ref}: names a {named} in {root}, not a commit")
    hint = f"; this is a shallow clone, {shallow_fetch_hint(ref)}" if is_shallow(root) else ""
    raise KernbenchError(f"{option} {ref}: no such commit, branch or tag in {root}{hint}")


def shallow_fetch_hint(ref: str) -> str:
    """The git command that brings `ref` into a shallow clone, as a command that works for it:
    a plain `git fetch origin main` only sets FETCH_HEAD (the ref still does not resolve),
    and neither `origin/main` nor `HEAD~1` is a name the remote knows."""
    if "~" in ref or "^" in ref:
        return ("deepen it first (`git fetch --deepen=N` with N the commits you go back), or "
                "check out with `fetch-depth: 0`")
    if re.fullmatch(r"[0-9a-f]{40}", ref):
        return f"fetch the commit first (`git fetch --depth=1 origin {ref}`), or check out " \
               "with `fetch-depth: 0`"
    if re.fullmatch(r"[0-9a-f]{7,39}", ref):
        return ("fetch the commit first by its full 40-character sha (`git fetch --depth=1 "
                "origin <sha>`: a remote does not expand an abbreviated one), or check out "
                "with `fetch-depth: 0`")
    branch = ref.removeprefix("origin/")
    return (f"fetch the ref first (`git fetch --depth=1 origin {branch}:refs/remotes/origin/"
            f"{branch}`, then use origin/{branch}), or check out with `fetch-depth: 0`")


@dataclass(frozen=True)
class TreeEntry:
    """A record file in a commit's tree."""

    path: str
    """Path from the repository's top, with forward slashes."""
    oid: str
    name: HistoryName | None
    """What the file name says (None for a name the history module did not make)."""


def list_history(root: Path, commit: str, directory: str = HISTORY_DIR) -> list[TreeEntry] | None:
    """The record files under `directory` (relative to `root`) in `commit`; None if ls-tree
    fails."""
    proc = _git(root, "ls-tree", "-r", "-z", "--full-name", commit, "--", directory)
    if proc is None or proc.returncode != 0:
        return None
    entries: list[TreeEntry] = []
    for item in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        meta, tab, path = item.partition("\t")
        fields = meta.split()
        if not tab or len(fields) != 3 or fields[1] != "blob":
            continue
        base = posixpath.basename(path)
        if base.endswith(SUFFIX) and not base.startswith("."):
            entries.append(TreeEntry(path, fields[2], parse_history_name(base)))
    return entries


class _BlobReader:
    """One `git cat-file --batch` process, asked for one blob at a time."""

    def __init__(self, root: Path) -> None:
        self._proc = subprocess.Popen(["git", "-C", str(root), "cat-file", "--batch"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, env=_git_env())

    def __enter__(self) -> _BlobReader:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def read(self, oid: str) -> bytes | None:
        """The blob's bytes, or None when git has no such object."""
        stdin, stdout = self._pipes()
        stdin.write(oid.encode("ascii") + b"\n")
        stdin.flush()
        header = stdout.readline().split()
        if len(header) != 3 or header[1] == b"missing":
            return None
        size = int(header[2])
        data = stdout.read(size)
        stdout.read(1)  # the newline after the contents
        return data

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        return self._proc.stdin, self._proc.stdout

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=GIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _newest_first(entries: Iterable[TreeEntry]) -> list[TreeEntry]:
    """Named entries newest first, then unnamed ones (whose dates are unknown)."""
    named = sorted((e for e in entries if e.name is not None),
                   key=lambda e: (e.name.sort_key if e.name else ("", 0), e.path), reverse=True)
    return named + [e for e in entries if e.name is None]


@dataclass
class _Search:
    """Reads candidate blobs until the newest usable record for the fingerprint is found."""

    fingerprint: str | None
    errors: list[str]
    fake_clock: bool | None = None
    """Prefer records made on the fake clock (``--debug-fake-timer``), or measured ones (None:
    either); the newest on the other clock is taken only where there is none."""
    other_clock: list[str] = field(default_factory=list)
    """When each record of the machine on the other clock was created."""

    def matches(self, record: dict[str, Any]) -> bool:
        return self.fingerprint is None or record.get("fingerprint") == self.fingerprint

    def on_clock(self, record: dict[str, Any]) -> bool:
        return self.fake_clock is None or self.fake_clock == (
            (record.get("settings") or {}).get("fake_call_ms") is not None)

    def newest(self, reader: _BlobReader, ref: str,
               entries: list[TreeEntry]) -> tuple[dict[str, Any] | None, TreeEntry | None]:
        best: tuple[dict[str, Any] | None, TreeEntry | None] = (None, None)
        other: tuple[dict[str, Any] | None, TreeEntry | None] = (None, None)
        for entry in _newest_first(entries):
            if entry.name is not None and best[0] is not None:
                continue  # an older named file cannot beat the record already found
            for record in self._records(reader, ref, entry):
                if not self.on_clock(record):
                    self.other_clock.append(str(record.get("created_at")))
                    other = _newer((record, entry), other)
                else:
                    best = _newer((record, entry), best)
        return best if best[0] is not None else other

    def _records(self, reader: _BlobReader, ref: str,
                 entry: TreeEntry) -> list[dict[str, Any]]:
        source = f"{ref}:{entry.path}"
        data = reader.read(entry.oid)
        if data is None:
            self.errors.append(f"{source}: blob {entry.oid} is missing")
            return []
        return [r for r in parse_record_bytes(data, source, self.errors.append)
                if self.matches(r)]


def _newer(found: tuple[dict[str, Any], TreeEntry],
           best: tuple[dict[str, Any] | None, TreeEntry | None]
           ) -> tuple[dict[str, Any] | None, TreeEntry | None]:
    """`found` where it was created after `best`'s record (or there is none), else `best`."""
    return found if best[0] is None or found[0]["created_at"] > best[0]["created_at"] else best


def _may_match(entry: TreeEntry, fingerprint: str | None) -> bool:
    if fingerprint is None or entry.name is None:
        return True
    return entry.name.fingerprint == name_fingerprint(fingerprint)


def _machines(entries: list[TreeEntry]) -> str:
    counts = Counter(e.name.fingerprint if e.name else "unnamed" for e in entries)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{fp} ({count})" for fp, count in ranked)


def _who(fingerprint: str | None) -> str:
    return "any machine" if fingerprint is None else f"this machine (fingerprint {fingerprint})"


def _found_message(ref: str, record: dict[str, Any], entry: TreeEntry, candidates: int,
                   fingerprint: str | None, errors: list[str]) -> str:
    commit = (record.get("git") or {}).get("short_commit") or "no commit"
    skipped = f"; newer ones skipped, unreadable: {_problems(errors)}" if errors else ""
    return (f"found the newest of {_plural(candidates, 'record')} for {_who(fingerprint)} at "
            f"{ref}: {entry.path} (created {record['created_at']}, measured at {commit})"
            f"{skipped}")


def _problems(errors: list[str]) -> str:
    more = len(errors) - 1
    return errors[0] + (f" (and {_plural(more, 'more problem')})" if more else "")


def _not_found_message(ref: str, entries: list[TreeEntry], candidates: int,
                       fingerprint: str | None, errors: list[str]) -> str:
    """Why no record at `ref` is this machine's; a KernbenchError (exit 2) when its records
    are there but none can be read: a corrupt history is an error, not "no baseline"."""
    total = _plural(len(entries), "record")
    if candidates and errors:
        from kernbench.errors import KernbenchError

        raise KernbenchError(f"history at {ref} has {total}, {candidates} possibly for "
                             f"{_who(fingerprint)}, but none can be read: {_problems(errors)}")
    return (f"history at {ref} has {total}, none for {_who(fingerprint)}; "
            f"machines there: {_machines(entries)}")


def history_at_ref(root: Path, ref: str, fingerprint: str | None,
                   directory: str = HISTORY_DIR, commit: str | None = None,
                   fake_clock: bool | None = None) -> tuple[dict[str, Any] | None, str]:
    """The newest record at `ref` for the machine `fingerprint` (None: any), and what happened.
    `commit` is the commit `ref` named when a run began (:func:`check_ref`), read instead of
    what `ref` names now (None: that). `fake_clock` (where not None) prefers the newest
    record made on the same clock as the run to compare, fake (``--debug-fake-timer``) or
    measured: a fake-clock record saved after a measured one does not hide it. Where the ref
    has only records on the other clock, the newest of them is returned (the comparison
    refuses it, :func:`kernbench.api.compare.check_same_clock`).

    The message says what was found (and which newer records were skipped as unreadable), or
    why nothing was: no repository, unknown ref, no history there, or only other machines'
    records (listed with their counts). Records that may be the machine's but of which none
    can be read are a KernbenchError naming the first.
    """
    root = Path(root)
    if shutil.which("git") is None:
        return None, f"no git repository at {root} (git is not on PATH)"
    if not is_repository(root):
        return None, f"no git repository at {root}"
    commit = commit or resolve_ref(root, ref)
    if commit is None:
        return None, f"ref {ref!r} does not exist"
    entries = list_history(root, commit, directory)
    if entries is None:
        return None, f"cannot list {directory} at {ref}"
    if not entries:
        return None, f"no benchmark history at {ref} ({directory} is empty there)"
    candidates = [e for e in entries if _may_match(e, fingerprint)]
    search = _Search(fingerprint, [], fake_clock)
    with _BlobReader(root) as reader:
        record, entry = search.newest(reader, ref, candidates)
    if record is None or entry is None:
        return None, _not_found_message(ref, entries, len(candidates), fingerprint, search.errors)
    count = sum(1 for e in candidates if e.name is not None)
    found = _found_message(ref, record, entry, count or len(candidates), fingerprint,
                           search.errors)
    newer = sum(created > record["created_at"] for created in search.other_clock)
    if newer:
        clock = "measured" if fake_clock is False else "on the fake clock"
        found += (f"; the newest {clock}, as this run is: {_plural(newer, 'newer record')} "
                  f"made on the other clock passed over")
    return record, found
