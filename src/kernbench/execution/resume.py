"""`kernbench run --resume DIR`: finish an interrupted run without redoing its finished cases.

What a resume reads: DIR/summary.json (written when a run starts and again when it stops, so
even a killed run has one) for the run's settings, and DIR/kernels/*.json for the finished
cases (rewritten after every case, so they hold the last case that finished even when the
summary was never rewritten). The rules:

* the settings that decide which cases run and what their figures mean (iterations, warmup,
  seed, processes, protocol, backends, precisions, filters, timeout, root, paths, the fake
  timer, the memory limit, the shard, --trace-memory, --no-l2-flush) must equal the
  interrupted run's, else the resume is
  refused with the differences: a report that mixed two protocols would be wrong;
* the machine fingerprint must match: figures from two machines do not mix either;
* a case is finished when a record with its case id exists; it is kept as it is (started_at,
  worker pid and samples unchanged) and only the other planned cases run;
* except an ok record of fewer worker processes than the run asks for (a run stopped between
  its interleaved rounds saves such a partial case): that case is planned again, runs only the
  processes it lacks (the output directory's ``processes/`` holds the finished ones,
  :mod:`kernbench.execution.held`; without them it runs in full) and its new record replaces
  the partial one, so every ok record of the finished run has all its processes (whether the
  run's processes were interleaved is not compared: it changes the order of the processes, not
  what a record means);
* records of cases the plan no longer holds (a kernel deleted since) are dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernbench.errors import KernbenchError
from kernbench.results.model import NATIVE, Case, CaseResult, KernelSpec, case_id_of
from kernbench.results.schema import read_document, started_before_run

COMPARED_SETTINGS = ("iterations", "warmup", "warmup_time_s", "seed", "processes", "protocol",
                     "isolation", "backends",
                     "precisions", "filters", "timeout_s", "root", "paths", "fake_call_ms",
                     "max_memory_bytes", "shard", "sku", "compile_mode", "sweeps", "gpu_timing",
                     "trace_memory", "no_l2_flush", "inject_slowdown")
"""summary.json `settings` keys a resumed run must share with the interrupted one."""

RECORDED_SINCE: dict[str, Any] = {"trace_memory": False, "no_l2_flush": False,
                                  "inject_slowdown": None}
"""Compared keys that runs of older versions did not record, and the value they then ran
with: a resume of such a run compares against that."""


RESUMED_FLAGS: dict[str, str] = {
    "iterations": "iters", "warmup": "warmup", "warmup_time_s": "warmup_time", "seed": "seed",
    "processes": "processes", "isolation": "isolation",
    "backends": "backends", "precisions": "precision", "filters": "filter",
    "timeout_s": "timeout", "root": "root", "paths": "paths", "fake_call_ms": "debug_fake_timer",
    "max_memory_bytes": "max_memory", "shard": "shard", "sku": "sku",
    "compile_mode": "compile_mode", "profile": "profile", "profile_iters": "profile_iters",
    "formats": "format", "gpu_timing": "gpu_timing", "interleave": "interleave",
    "trace_memory": "trace_memory", "no_l2_flush": "no_l2_flush",
}
"""summary.json `settings` key -> the run parser's dest it becomes a default for."""


def recorded_settings(directory: Path) -> Mapping[str, Any]:
    """The `settings` of the run in `directory`; {} when it holds no readable summary (the
    resume itself then says why it cannot start)."""
    try:
        settings = read_document(directory / "summary.json").get("settings")
    except KernbenchError:
        return {}
    return settings if isinstance(settings, Mapping) else {}


def recorded_suite(settings: Mapping[str, Any]) -> Path | None:
    """The suite file (`--config`) a run used, if it still exists: a resume reads it again,
    for the keys no flag stands for (`sweeps`)."""
    config = settings.get("config")
    path = config.get("path") if isinstance(config, Mapping) else None
    return Path(path) if isinstance(path, str) and Path(path).is_file() else None


def resume_defaults(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A run's recorded settings as run-parser defaults (dest -> value), so `--resume DIR`
    alone repeats them."""
    defaults: dict[str, Any] = {}
    for key, dest in RESUMED_FLAGS.items():
        value = settings.get(key)
        if value is None:  # not recorded, or recorded as the parser's own default
            continue
        if key == "root":
            value = Path(value)
        elif isinstance(value, list):
            value = tuple(value)
        defaults[dest] = value
    return defaults


@dataclass(frozen=True)
class PreviousRun:
    """What an interrupted run left in its output directory."""

    directory: Path
    summary: Mapping[str, Any]
    records: tuple[CaseResult, ...]

    @property
    def complete(self) -> bool:
        return self.summary.get("complete") is True


def records_of(document: Mapping[str, Any], path: Path) -> list[CaseResult]:
    """The `results` of a summary.json or kernels/<name>.json, as records."""
    from kernbench.results.inputs import records_from_entries

    return records_from_entries(document.get("results"), str(path))


def load_previous(directory: Path) -> PreviousRun:
    """The interrupted run in `directory`; KernbenchError when there is none to resume."""
    summary_path = directory / "summary.json"
    if not summary_path.is_file():
        raise KernbenchError(f"--resume {directory}: no run to resume there (no summary.json); "
                             "start a new run with --output-dir instead")
    summary = read_document(summary_path)
    if not isinstance(summary.get("settings", {}), Mapping):
        raise KernbenchError(f"{summary_path}: key 'settings': expected an object of the run's "
                             f"settings, got {type(summary['settings']).__name__}")
    merged = merged_sources(summary)
    if merged:
        raise KernbenchError(
            f"--resume {directory}: this is a merge of shards ({', '.join(merged)}), not a run "
            "to resume; resume an interrupted shard in its own output directory (kernbench run "
            "--resume SHARD_DIR) or run a missing one (--shard K/N), then merge again")
    found: dict[str, CaseResult] = {r.case_id: r for r in records_of(summary, summary_path)}
    for path in sorted((directory / "kernels").glob("*.json")):
        for record in records_of(read_document(path), path):
            if not started_before_run(record.started_at, summary.get("started_at")):
                found.setdefault(record.case_id, record)
    return PreviousRun(directory, summary, tuple(found.values()))


def merged_sources(summary: Mapping[str, Any]) -> list[str]:
    """The shard outputs a merged summary was joined from (``settings.shards[].source``); []
    for a run's own summary."""
    settings = summary.get("settings")
    shards = settings.get("shards") if isinstance(settings, Mapping) else None
    return [str(entry["source"]) for entry in (shards if isinstance(shards, list) else [])
            if isinstance(entry, Mapping) and entry.get("source") is not None]


def check_compatible(previous: PreviousRun, settings: Mapping[str, Any],
                     fingerprint: object) -> None:
    """Refuse a resume whose settings or machine differ from the run's (the interrupted one,
    or a finished one: nothing runs then, but flags that would change nothing are refused,
    not ignored)."""
    recorded = previous.summary.get("settings") or {}
    now = json.loads(json.dumps(dict(settings)))  # tuples as lists, as they were recorded
    then = {key: recorded.get(key, RECORDED_SINCE.get(key)) for key in COMPARED_SETTINGS}
    differ = [f"{key}: the run used {json.dumps(then[key])}, this command "
              f"{json.dumps(now.get(key))}" for key in COMPARED_SETTINGS
              if then[key] != now.get(key)]
    if differ:
        which = "finished" if previous.complete else "interrupted"
        raise KernbenchError(f"--resume {previous.directory}: the settings differ from the "
                             f"{which} run's; repeat its flags: {'; '.join(differ)}")
    before = (previous.summary.get("environment") or {}).get("fingerprint")
    if before and fingerprint and before != fingerprint:
        raise KernbenchError(f"--resume {previous.directory}: the run was made on machine "
                             f"{before}, this is {fingerprint}; its figures would not mix")


def plan_id(item: Case | KernelSpec) -> str:
    """The id a planned item is known by in ``settings.plan``: its case id, with ``*`` for
    the precision of a native-precision case (its record names its output's precision)."""
    return _plan_keys(item)[-1]


def _plan_keys(item: Case | KernelSpec) -> tuple[str, ...]:
    """Ids a finished record of this planned item can carry. A native-precision case's record
    is labelled with the precision of its output, so it is also matched without it."""
    if isinstance(item, KernelSpec):
        return (f"{item.name}[n/a,n/a]",)
    if item.precision == NATIVE:
        implementation = item.implementation.name if item.implementation else None
        return (item.case_id, case_id_of(item.kernel.name, item.backend, "*", item.point,
                                         implementation))
    return (item.case_id,)


def record_processes(record: CaseResult) -> int:
    """How many worker processes took a record's samples."""
    recorded = record.worker.get("processes")
    if isinstance(recorded, int) and not isinstance(recorded, bool):
        return recorded
    return len(record.process_sample_counts) or 1


def split_plan(planned: Sequence[Case | KernelSpec], records: Sequence[CaseResult],
               processes: int = 1) -> tuple[list[CaseResult], list[Case | KernelSpec]]:
    """(finished records to keep, in plan order; planned items still to run). An ok record of
    fewer than `processes` worker processes is not finished: its case runs again (only the
    processes it lacks, where the run's held processes have the others)."""
    by_key: dict[str, CaseResult] = {}
    for record in records:
        if record.status == "ok" and record_processes(record) < processes:
            continue
        by_key.setdefault(record.case_id, record)
        by_key.setdefault(case_id_of(record.kernel_name, record.backend, "*", record.point,
                                     record.implementation), record)
    kept: list[CaseResult] = []
    todo: list[Case | KernelSpec] = []
    seen: set[int] = set()
    for item in planned:
        match = next((by_key[k] for k in _plan_keys(item) if k in by_key), None)
        if match is None:
            todo.append(item)
        elif id(match) not in seen:
            seen.add(id(match))
            kept.append(match)
    return kept, todo
