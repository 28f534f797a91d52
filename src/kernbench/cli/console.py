"""Console output: the only place kernbench prints. Results and manifests go to stdout (they
are what a command is for, and pipe into other tools); status, warnings and errors go to
stderr, so ``kernbench list --json | jq`` and ``kernbench comment DIR > body.md`` stay clean."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Verbosity:
    """What stderr gets, set once per command from its -q/-v (every command has both)."""

    quiet: bool = False
    verbose: bool = False


VERBOSITY = Verbosity()


def configure(quiet: bool, verbose: bool) -> None:
    """Set what stderr gets for the command about to run (-q wins over -v)."""
    VERBOSITY.quiet, VERBOSITY.verbose = quiet, verbose and not quiet


def output(text: str) -> None:
    """What the command produces, on stdout."""
    print(text)


def result(data: object, text: str | None, as_json: bool) -> None:
    """The command's result on stdout: `data` as JSON with --json, else `text` (if any)."""
    if as_json:
        output(json.dumps(data, indent=2, default=str))
    elif text is not None:
        output(text)


def status(message: str) -> None:
    """A line about what happened, on stderr; nothing with -q."""
    if not VERBOSITY.quiet:
        _line(message)


def error(message: str) -> None:
    """An error, on stderr, whatever -q says."""
    _line(message)


_STDERR = threading.Lock()


def _line(message: str) -> None:
    """One whole line on stderr: the shards' threads of `run --shards` report at once, and
    print() writes a line and its newline apart ("shard 1/3: ...shard 2/3: ...")."""
    with _STDERR:
        sys.stderr.write(f"{message}\n")
        sys.stderr.flush()


def log(enabled: bool = True) -> Callable[[str], None] | None:
    """The `log` callback the API takes: status lines with -v (and `enabled`), else None."""
    return status if enabled and VERBOSITY.verbose else None


def render_manifest(specs: Sequence[Any], root: str, paths: Sequence[str],
                    picked: Mapping[str, Any] | None = None) -> str:
    """The kernels, one line each; with `picked` (``run --list --backends/--precision``)
    the backends and precisions each would run, or why it would run nothing."""
    lines = [f"{count(len(specs), 'kernel')} under {root} (paths: {', '.join(paths)})"]
    width = max((len(s.name) for s in specs), default=4)
    for spec in specs:
        chosen = None if picked is None else picked.get(spec.name)
        if spec.status == "invalid":
            lines.append(f"  {spec.name:<{width}}  INVALID  {spec.error}")
            continue
        if isinstance(chosen, str):
            lines.append(f"  {spec.name:<{width}}  NOT RUN  {chosen}")
            continue
        backends, precisions = chosen or (spec.backends, _declared_precisions(spec))
        lines.append(f"  {spec.name:<{width}}  {spec.framework:<8} {','.join(backends):<14} "
                     f"{','.join(precisions):<20} {spec.path}{_variants_note(spec)}")
    return "\n".join(lines)


def _declared_precisions(spec: Any) -> list[str]:
    if spec.config and spec.config.precisions:
        return list(spec.config.precisions)
    if spec.precision_unread:  # declares `precision`, never reads it: one native case
        return ["native (precision unread)"]
    return ["fp32" if spec.takes_precision else "native"]


def _variants_note(spec: Any) -> str:
    """`  (3 points)`, `  (4 implementations: numpy*, eager, compiled, jax; 3 points)`: what a
    kernel expands to besides backends and precisions (* marks the reference)."""
    config = spec.config
    points = len(config.sweep) if config else 0
    parts = [f"{points} point{'s' * (points != 1)}"] if points else []
    if config is not None and config.implementations:
        names = [i.name + ("*" if i.name == config.reference_implementation else "")
                 for i in config.implementations]
        parts.insert(0, f"{len(names)} implementations: {', '.join(names)}")
    return f"  ({'; '.join(parts)})" if parts else ""


def report_comparison(document: Mapping[str, Any], output_dir: Path, fail: bool) -> int:
    """Print the verdict and counts, with the warnings that qualify it (an incomplete side,
    two machines, a machine that changed); the exit code the comparison asks for."""
    counts = ", ".join(f"{n} {v}" for v, n in document["counts"].items() if n)
    detail = "" if document.get("baseline_note") else f" ({counts or 'no cases'})"
    # A verdict is what a comparison found, not chatter: printed under -q too, like an error,
    # and so are its warnings: a CI log holds the terminal, not regressions.md.
    error(f"{document['verdict']}{detail}. See {output_dir}/regressions.md")
    for warning in document.get("warnings") or ():
        error(f"  warning: {warning}")
    return 1 if fail and document["regression"] else 0


def run_tally(results: Sequence[Any], output_dir: Path, written: Sequence[str]) -> str:
    """`5 cases: 4 ok, 1 failed. Reports in out/ (summary.json, ...)`."""
    counts = {s: sum(1 for r in results if r.status == s) for s in STATUS_ORDER}
    return (f"{count(len(results), 'case')}: {status_tally(counts)}. Reports in {output_dir}/ "
            f"({', '.join(written)})")


STATUS_ORDER = ("ok", "failed", "timeout", "skipped", "invalid")


def status_tally(counts: Mapping[str, int]) -> str:
    """`4 ok, 1 failed`: the statuses a run or merge has, in one order ("none" for none)."""
    return ", ".join(f"{counts[s]} {s}" for s in STATUS_ORDER if counts.get(s)) or "none"


def count(n: int, noun: str) -> str:
    """`1 case`, `2 cases`."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def history_listing(records: Sequence[Mapping[str, Any]], root: Path) -> str:
    """The `kernbench history` table: one line per record, newest first."""
    lines = [f"{count(len(records), 'history record')} under {root}/benchmarks/history"]
    for record in records:
        git = record.get("git") or {}
        fake = (record.get("settings") or {}).get("fake_call_ms")
        clock = "" if fake is None else f"  (fake clock, --debug-fake-timer {fake})"
        lines.append(f"  {record.get('created_at')}  {git.get('short_commit') or 'nogit':<12} "
                     f"{(git.get('branch') or '-'):<16} {record.get('fingerprint')}  "
                     f"{record.get('testbed') or '-'}  {len(record.get('results', []))} cases"
                     f"{clock}")
    return "\n".join(lines)


def warnings(messages: Iterable[object]) -> None:
    for message in messages:
        status(f"kernbench: warning: {message}")


def text_block(text: str) -> None:
    """`text` on stdout, ending in exactly one newline it may already have."""
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
