"""Baselines for a run: append it to the history store (``--save-history``, ``history --add``), or
compare it with a stored run (``--baseline FILE``) or with the newest history record for this
machine at a git ref (``--compare-to REF``). Reading git and choosing the record is
:mod:`kernbench.analysis.gitref`'s and :mod:`kernbench.analysis.baselines`'s; here the files are
read and written."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernbench.analysis.baselines import baseline_from_history
from kernbench.analysis.compare import Thresholds
from kernbench.analysis.gitref import history_at_ref
from kernbench.analysis.summary import summary_dict
from kernbench.api.compare import run_comparison, write_run_comparison
from kernbench.errors import KernbenchError
from kernbench.results.files import read_json_object
from kernbench.results.history import append_record
from kernbench.results.history_record import history_record
from kernbench.results.inputs import LoadedRun, run_from_document
from kernbench.results.model import RunResult
from kernbench.results.schema import migrate


def save_history(root: Path, run: RunResult) -> Path:
    """Append the run's compact record under `root`/benchmarks/history; never rewrites."""
    return append_record(root, history_record(summary_dict(run), run.environment))


def save_history_of_dir(root: Path, run_dir: Path, added: bool = False) -> list[Path]:
    """Append the record of the run whose report set is in `run_dir` (e.g. merged shards);
    a merge of several machines (``--allow-mixed``) gets one record per machine, each under
    its own fingerprint. The paths written. `added`: ``history --add``, which also refuses
    a run that recorded no commit (a run's own --save-history, or a merge's of shards run
    where git is not, keeps such a record, as a plain run's does)."""
    from kernbench.results.machines import split_summary

    summary, environment = _documents(run_dir)
    if summary.get("complete") is False:
        raise KernbenchError(f"{run_dir / 'summary.json'}: the run did not finish (complete: "
                             f"false), so its record would be a baseline with cases left out; "
                             f"finish it first ({_how_to_finish(run_dir, summary)})")
    if (summary.get("settings") or {}).get("inject_slowdown"):
        raise KernbenchError(f"{run_dir / 'summary.json'}: the run slowed kernels down on "
                             "purpose (settings.inject_slowdown, --debug-inject-slowdown): a "
                             "testing aid's figures must not become a baseline")
    parts = [(summary, environment)] if not (split := split_summary(summary)) else \
        [(part, part["environment"]) for _, part in split]
    for _, env in parts:
        _refuse_foreign(root, run_dir, env, added)
    records = [history_record(part, env, created_at=part.get("finished_at") or None)
               for part, env in parts]
    for record in records:
        _refuse_stored(root, run_dir, record)
    return [append_record(root, record) for record in records]


def _refuse_foreign(root: Path, run_dir: Path, environment: Mapping[str, Any],
                    need_commit: bool) -> None:
    """KernbenchError when the run measured a commit that the repository at `root` does not
    hold, or (`need_commit`) no commit at all: its kernels and figures would join a history
    they cannot be placed in. Nothing to check where `root` is in no repository."""
    from kernbench.analysis.gitref import (
        is_repository,
        is_shallow,
        resolve_ref,
        shallow_fetch_hint,
    )

    git = environment.get("git") or {}
    commit = git.get("commit")
    if not is_repository(root):
        return
    if not isinstance(commit, str):
        if not need_commit:
            return
        why = git.get("reason") or "env.json has no git.commit"
        raise KernbenchError(
            f"{run_dir}: the run recorded no git commit ({why}), so its record cannot be "
            f"placed in the history of the repository at {root}: nothing added (a run of "
            f"its kernels made in a clone of it, with git on PATH and a commit, is)")
    if resolve_ref(root, commit):
        return
    fix = (f"this is a shallow clone: {shallow_fetch_hint(commit)}" if is_shallow(root) else
           f"if the run is of this repository, fetch that commit first (`git fetch origin "
           f"{commit}`)")
    raise KernbenchError(
        f"{run_dir}: the run measured commit {commit[:12]}, which the repository at {root} "
        f"does not hold: it is another repository's run, or a commit this clone lacks, and "
        f"a record must name a commit its history can be compared at; nothing added ({fix})")


def _refuse_stored(root: Path, run_dir: Path, record: Mapping[str, Any]) -> None:
    """KernbenchError when the history under `root` holds this run of this machine already
    (the same fingerprint and start): a second copy would count twice in every trend and
    look like a newer run."""
    from kernbench.results.history import load_records

    started = record["run"].get("started_at")
    if not isinstance(started, str):
        return
    stored = load_records(root, fingerprint=record["fingerprint"], since=started[:10],
                          on_error=lambda _: None)
    if any((r.get("run") or {}).get("started_at") == started for r in stored):
        raise KernbenchError(
            f"{run_dir}: the run that started at {started} on machine {record['fingerprint']} "
            f"is in {root / 'benchmarks' / 'history'} already; nothing added")


def _how_to_finish(run_dir: Path, summary: Mapping[str, Any]) -> str:
    from kernbench.execution.resume import merged_sources

    if merged_sources(summary):
        return (f"a merge: its summary.md names the missing shards or cases; resume or run "
                f"them, then kernbench merge {run_dir} again with them")
    return f"kernbench run --resume {run_dir}"


def _documents(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """summary.json (migrated to the current schema) and env.json of the report set in
    `run_dir`; the summary's own environment stands in for a missing env.json."""
    summary = read_json_object(run_dir / "summary.json")
    if summary is None:
        raise KernbenchError(f"{run_dir / 'summary.json'}: missing or not a JSON object")
    summary = migrate(summary, str(run_dir / "summary.json"))
    environment = read_json_object(run_dir / "env.json") or dict(summary.get("environment") or {})
    return summary, environment


def compare_to_ref(root: Path, ref: str, run: RunResult, output_dir: Path,
                   thresholds: Thresholds, alpha: float) -> dict[str, Any]:
    """Compare `run` with the newest record for this machine at `ref`. Without one, the
    comparison document says why in plain words (no baseline is not a pass)."""
    return compare_document_to_ref(root, ref, summary_dict(run), run.environment, output_dir,
                                   thresholds, alpha)


def compare_to_stored(baseline: LoadedRun, run: RunResult, output_dir: Path,
                      thresholds: Thresholds, alpha: float,
                      note: str | None = None) -> dict[str, Any]:
    """Compare `run` with a baseline loaded before it ran (`run --baseline FILE`, or
    :func:`ref_baseline` for ``--compare-to``, whose `note` says why it may be empty)."""
    candidate = run_from_document(summary_dict(run), "this run")
    return write_run_comparison(baseline, candidate, output_dir, thresholds, alpha, note=note)


def compare_dir_to_ref(root: Path, ref: str, run_dir: Path, thresholds: Thresholds,
                       alpha: float, commit: str | None = None) -> dict[str, Any]:
    """:func:`compare_to_ref` for a run already on disk in `run_dir` (written there too). A
    merge of several machines (``--allow-mixed``) compares each machine with its own newest
    record at `ref`, never one machine with another's
    (:func:`kernbench.reporting.machines.machines_comparison`). `commit`: the one `ref`
    named when the run began, read instead of what it names now."""
    from kernbench.reporting.machines import machines_comparison
    from kernbench.reporting.regressions import write_comparison
    from kernbench.results.machines import split_summary

    summary, environment = _documents(run_dir)
    parts = split_summary(summary)
    if not parts:
        return compare_document_to_ref(root, ref, summary, environment, run_dir, thresholds,
                                       alpha, commit)
    document = machines_comparison([(machine, _ref_comparison(
        root, ref, part, part["environment"], thresholds, alpha, commit))
        for machine, part in parts])
    write_comparison(run_dir, document)
    return document


def ref_baseline(root: Path, ref: str, commit: str | None = None,
                 fake_clock: bool = False) -> tuple[LoadedRun, str | None]:
    """Before a ``run --compare-to REF``: this machine's newest record at `ref` as the
    baseline, and the note a comparison without one carries (why nothing was found: the run
    goes on without); a KernbenchError (exit 2) when the machine's records there cannot be
    read. Read once, before any kernel runs, and compared with after the run
    (:func:`compare_to_stored`): a ref that moves during the run changes nothing. `commit`:
    the one `ref` names, where the caller resolved it already; `fake_clock`: the run will
    be on the fake clock (``--debug-fake-timer``), so a record on it is preferred, as a
    measured one is for a measured run."""
    from kernbench.measure.environment import this_machine_fingerprint

    return _baseline_at(root, ref, this_machine_fingerprint(), commit, fake_clock)


def compare_document_to_ref(root: Path, ref: str, summary: Mapping[str, Any],
                            environment: Mapping[str, Any], output_dir: Path,
                            thresholds: Thresholds, alpha: float,
                            commit: str | None = None) -> dict[str, Any]:
    """Compare the run `summary` describes with its machine's newest record at `ref` (at
    `commit`, where given); write and return the comparison document."""
    from kernbench.reporting.regressions import write_comparison

    document = _ref_comparison(root, ref, summary, environment, thresholds, alpha, commit)
    write_comparison(output_dir, document)
    return document


def _ref_comparison(root: Path, ref: str, summary: Mapping[str, Any],
                    environment: Mapping[str, Any], thresholds: Thresholds,
                    alpha: float, commit: str | None = None) -> dict[str, Any]:
    fake = (summary.get("settings") or {}).get("fake_call_ms") is not None
    baseline, note = _baseline_at(root, ref, environment.get("fingerprint"), commit, fake)
    candidate = run_from_document(summary, "this run")
    return run_comparison(baseline, candidate, thresholds, alpha, note=note)


def _baseline_at(root: Path, ref: str, fingerprint: str | None, commit: str | None,
                 fake_clock: bool) -> tuple[LoadedRun, str | None]:
    """The machine `fingerprint`'s newest record at `ref` (at `commit`, where given) on the
    run's clock (`fake_clock`) as a baseline, and the note a comparison without one
    carries."""
    record, message = history_at_ref(root, ref, fingerprint, commit=commit,
                                     fake_clock=fake_clock)
    return baseline_from_history(record, message, ref, fingerprint)
