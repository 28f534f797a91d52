"""Standard export formats: CSV, PyTorch OSS benchmark database v3, github-action-benchmark,
JUnit XML (:mod:`kernbench.reporting.junit`), Bencher's BMF (:mod:`kernbench.reporting.bmf`) and
pytest-benchmark's JSON (:mod:`kernbench.reporting.pytestbench`), each rendered as text from a
run's documents (:class:`ReportInputs`).

The renderers are pure: the same documents give byte-identical output (nothing comes from the
clock or the host the renderer runs on). A figure appears only when a document holds it; a
missing one is an empty CSV cell, ``null`` in JSON or an absent key. Records from older or
failed runs (missing blocks, ``timing: None``) render without error.

Comparison cases (comparison.json) are matched to results by their ``key`` (case id plus
problem size, as :func:`kernbench.analysis.compare.case_key` builds it), else by ``label`` == the
record's ``case_id`` when that label is unique (:func:`views.matched_cases`).

Where a run holds two cases with the same case id (one kernel at several problem sizes), the
case names used by the GitHub and JUnit exports get the compact problem size appended.

:data:`FILES` maps each format name to its file name and renderer.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kernbench.reporting.bmf import render_bmf
from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.junit import render_junit  # re-exported: FILES, tests
from kernbench.reporting.pytestbench import render_pytest_benchmark
from kernbench.reporting.views import (
    Record,
    case_id,
    case_names,
    ci95_bounds,
    ci95_ms,
    compact_json,
    dig,
    exact_text,
    finite,
    mappings,
    matched_cases,
)

__all__ = [
    "CSV_COLUMNS",
    "FILES",
    "render_csv",
    "render_github_benchmark",
    "render_junit",
    "render_pytorch_v3",
]

# --------------------------------------------------------------------------- shared helpers
# The rest are in views. Exports read numbers with `finite` (an int stays an int in the JSON)
# and intervals with `ci95_bounds` (cells carry the values as recorded, never rounded).


def _processes(record: Record) -> Any:
    """How many worker processes took the samples, when a document says so."""
    found = dig(record, "worker", "processes")
    if found is not None:
        return found
    counts = dig(record, "timing", "process_sample_counts")
    if isinstance(counts, Sequence) and counts:
        return len(counts)
    samples = dig(record, "timing", "samples_ms")  # no counts: every sample from one process
    return 1 if isinstance(samples, Sequence) and samples else None


# --------------------------------------------------------------------------- results.csv

CSV_COLUMNS: tuple[str, ...] = (
    "kernel_name", "case_id", "backend", "precision", "problem_size", "status", "reason",
    "latency_ms_p50", "latency_ms_p90", "latency_ms_p99", "latency_ms_mean", "latency_ms_std",
    "latency_ms_min", "latency_ms_max", "latency_ms_p50_ci95_low", "latency_ms_p50_ci95_high",
    "throughput_ops_per_sec", "iterations", "inner_loops", "processes", "duration_s",
    "peak_memory_mb", "energy_j", "gflops_per_s", "gb_per_s",
    "accuracy_passed", "relative_error",
    "golden_passed", "golden_time_ms", "golden_limit_ms",
    "comparison_verdict", "comparison_ratio", "comparison_ratio_ci_low",
    "comparison_ratio_ci_high", "comparison_q_value",
    "implementation", "compile_first_call_s", "compile_recompiles_during_timing",
)
"""The columns of results.csv, in order (see :func:`render_csv`)."""

_TIMING_COLUMNS = ("latency_ms_p50", "latency_ms_p90", "latency_ms_p99", "latency_ms_mean",
                   "latency_ms_std", "latency_ms_min", "latency_ms_max",
                   "throughput_ops_per_sec", "iterations", "inner_loops")

_BLOCK_COLUMNS: dict[str, tuple[str, str]] = {
    "peak_memory_mb": ("memory", "peak_mb"),
    "energy_j": ("energy", "energy_j"),
    "gflops_per_s": ("work", "gflops_per_s"),
    "gb_per_s": ("work", "gb_per_s"),
    "accuracy_passed": ("accuracy", "passed"),
    "relative_error": ("accuracy", "relative_error"),
    "golden_passed": ("golden", "passed"),
    "golden_time_ms": ("golden", "golden_time_ms"),
    "golden_limit_ms": ("golden", "limit_ms"),
}

_COMPARISON_COLUMNS = {"comparison_verdict": "verdict", "comparison_ratio": "ratio",
                       "comparison_ratio_ci_low": "ci_low", "comparison_ratio_ci_high": "ci_high",
                       "comparison_q_value": "q_value"}


def _csv_row(record: Record, case: Record | None) -> dict[str, str]:
    size = record.get("problem_size")
    low, high = ci95_bounds(record)
    values: dict[str, Any] = {
        "kernel_name": record.get("kernel_name"), "case_id": case_id(record),
        "backend": record.get("backend"), "precision": record.get("precision"),
        "problem_size": None if size is None else compact_json(size),
        "status": record.get("status"), "reason": record.get("reason"),
        "latency_ms_p50_ci95_low": low, "latency_ms_p50_ci95_high": high,
        "processes": _processes(record), "duration_s": record.get("duration_s"),
        "implementation": record.get("implementation"),
        "compile_first_call_s": dig(record, "compile", "first_call_s"),
        "compile_recompiles_during_timing": dig(record, "compile", "recompiles_during_timing"),
    }
    values.update({name: dig(record, "timing", name) for name in _TIMING_COLUMNS})
    values.update({name: dig(record, *path) for name, path in _BLOCK_COLUMNS.items()})
    values.update({name: dig(case, key) for name, key in _COMPARISON_COLUMNS.items()})
    return {name: _inert(values[name]) if isinstance(values[name], str)
            else exact_text(values[name]) or "" for name in CSV_COLUMNS}


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet reads as the start of a formula in a text cell."""


def _inert(text: str) -> str:
    """A text cell a spreadsheet shows as text: one that starts like a formula (a kernel
    file named ``=HYPERLINK(...).py``, from a fork's pull request) gets a leading ``'``."""
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def render_csv(inputs: ReportInputs) -> str:
    """results.csv: a header row (:data:`CSV_COLUMNS`), then one row per case, every status,
    in the summary's order. Lines end with ``\\n``.

    Columns: ``kernel_name``, ``case_id``, ``backend``, ``precision``, ``problem_size``
    (compact JSON), ``status``, ``reason``; the timing figures ``latency_ms_p50`` / ``_p90`` /
    ``_p99`` / ``_mean`` / ``_std`` / ``_min`` / ``_max``, ``latency_ms_p50_ci95_low`` /
    ``_high`` (95% interval of the median), ``throughput_ops_per_sec``, ``iterations`` (timed
    samples, all processes), ``inner_loops`` (calls per sample), ``processes`` (worker
    processes), ``duration_s`` (wall time of the case); ``peak_memory_mb``, ``energy_j``,
    ``gflops_per_s``, ``gb_per_s``; ``accuracy_passed``, ``relative_error``; from the golden
    check ``golden_passed``, ``golden_time_ms``, ``golden_limit_ms``; from the baseline
    comparison ``comparison_verdict``, ``comparison_ratio`` (candidate / baseline),
    ``comparison_ratio_ci_low`` / ``_high`` and ``comparison_q_value``; for a kernel with
    several implementations, ``implementation`` and, for a torch.compile one,
    ``compile_first_call_s`` (compilation included) and ``compile_recompiles_during_timing``.

    Cells: empty for a missing value, floats with repr precision (never rounded), booleans
    ``true`` / ``false``; a text cell that starts like a formula (``=``, ``+``, ``-``, ``@``)
    starts with ``'``, so a spreadsheet shows it instead of evaluating it.
    """
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    results = mappings(inputs.results)
    for record, case in zip(results, matched_cases(results, inputs.comparison), strict=True):
        writer.writerow(_csv_row(record, case))
    return out.getvalue()


# --------------------------------------------------------------------------- pytorch_v3.json

_V3_METRICS: tuple[tuple[str, tuple[str, str], str, str | None], ...] = (
    ("latency_ms_p50", ("timing", "latency_ms_p50"), "median latency per call, ms", None),
    ("throughput_ops_per_sec", ("timing", "throughput_ops_per_sec"),
     "calls per second (1000 / mean latency)", None),
    ("peak_memory_mb", ("memory", "peak_mb"), "peak memory during the case, MB", "source"),
    ("energy_j", ("energy", "energy_j"), "energy per call, J", "source"),
    ("gflops_per_s", ("work", "gflops_per_s"), "GFLOP/s from the declared flop count",
     "flops_source"),
    ("gb_per_s", ("work", "gb_per_s"), "GB/s from the declared byte count", "bytes_source"),
)
"""One-value metrics: (metric name, where the record holds it, description, the key of its
source note in the same block)."""


def _string_map(values: Mapping[str, Any]) -> dict[str, str]:
    """An ``extra_info`` map: every value a string (the database column is Map(String,
    String)); None values are left out."""
    return {key: text for key, value in values.items() if (text := exact_text(value)) is not None}


def _v3_benchmark(inputs: ReportInputs, record: Record) -> dict[str, Any]:
    summary, git = inputs.summary, dig(inputs.environment, "git")
    info = {
        "kernbench_version": summary.get("kernbench_version"),
        "started_at": summary.get("started_at"), "finished_at": summary.get("finished_at"),
        **{f"settings.{key}": dig(summary, "settings", key)
           for key in ("iterations", "warmup", "processes", "seed")},
        "commit": dig(git, "commit"), "branch": dig(git, "branch"), "dirty": dig(git, "dirty"),
    }
    return {"name": "kernbench", "mode": "inference", "dtype": record.get("precision"),
            "extra_info": _string_map(info)}


def _v3_model(record: Record) -> dict[str, Any]:
    info = {"case_id": case_id(record), "problem_size": record.get("problem_size"),
            "framework": record.get("framework"), "device": record.get("device"),
            "kernel_path": record.get("kernel_path")}
    if record.get("implementation"):
        info["implementation"] = record["implementation"]
    return {"name": record.get("kernel_name"), "type": "kernel", "backend": record.get("backend"),
            "origins": ["kernbench"], "extra_info": _string_map(info)}


def _gigabytes(megabytes: Any) -> int | None:
    found = finite(megabytes)
    return None if found is None else int(found // 1024)


def _gpu_fields(gpus: Sequence[Any]) -> dict[str, Any]:
    """gpu_info / gpu_count / avail_gpu_mem_in_gb; nothing when no GPU was listed."""
    found = [g for g in gpus if isinstance(g, Mapping)]
    if not found:
        return {}
    names = list(dict.fromkeys(str(g.get("name")) for g in found))
    memory = [finite(g.get("memory_total_mb")) for g in found]
    fields: dict[str, Any] = {"gpu_info": ", ".join(names), "gpu_count": len(found)}
    if all(m is not None for m in memory):
        fields["avail_gpu_mem_in_gb"] = _gigabytes(sum(m for m in memory if m is not None))
    return fields


def _v3_runner(environment: Mapping[str, Any], record: Record) -> dict[str, Any]:
    gpus = environment.get("gpus")
    runner: dict[str, Any] = {
        "name": environment.get("hostname") or environment.get("fingerprint") or "unknown",
        "type": record.get("backend"), "cpu_info": dig(environment, "cpu", "model"),
        "cpu_count": finite(dig(environment, "cpu", "logical_cores")),
        "avail_mem_in_gb": _gigabytes(dig(environment, "memory", "total_mb")),
        **_gpu_fields(gpus if isinstance(gpus, Sequence) else []),
    }
    info = {"hostname": environment.get("hostname"), "fingerprint": environment.get("fingerprint"),
            "platform": dig(environment, "os", "platform"),
            "memory_total_mb": dig(environment, "memory", "total_mb"),
            "python": dig(environment, "python", "version"),
            "gpus_reason": environment.get("gpus_reason")}
    runner = {key: value for key, value in runner.items() if value is not None}
    runner["extra_info"] = _string_map(info)
    return runner


def _v3_dependencies(environment: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    libraries = environment.get("libraries")
    if not isinstance(libraries, Mapping):
        return {}
    return {str(name): {"version": version} for name, version in libraries.items()
            if isinstance(version, str) and version}


def _v3_metrics(record: Record) -> list[dict[str, Any]]:
    """The metric blocks of one ok case: raw latency samples, then each one-value metric."""
    timing_info = {"iterations": dig(record, "timing", "iterations"),
                   "inner_loops": dig(record, "timing", "inner_loops"),
                   "processes": _processes(record), "timer": dig(record, "timing", "timer")}
    metrics: list[dict[str, Any]] = []
    samples = dig(record, "timing", "samples_ms")
    values = [v for v in samples or [] if finite(v) is not None] \
        if isinstance(samples, Sequence) else []
    if values:
        info = {**timing_info, "unit": "ms",
                "statistic": "raw samples in order, all processes; each the mean per call of "
                             "one sample's inner loop; their median is latency_ms_p50"}
        metrics.append({"name": "latency_ms", "benchmark_values": values,
                        "target_value": None, "extra_info": _string_map(info)})
    for name, path, description, source in _V3_METRICS:
        value = finite(dig(record, *path))
        if value is not None:
            info = {"statistic": description,
                    "source": dig(record, path[0], source) if source else None}
            metrics.append(_v3_single(record, name, value, info, timing_info))
    return metrics


def _v3_single(record: Record, name: str, value: float, info: dict[str, Any],
               timing_info: Mapping[str, Any]) -> dict[str, Any]:
    target = None
    if name == "latency_ms_p50":
        low, high = ci95_bounds(record)
        golden = record.get("golden")
        target = finite(dig(golden, "golden_time_ms"))
        info.update(timing_info, ci95_low=low, ci95_high=high,
                    golden_limit_ms=dig(golden, "limit_ms"),
                    golden_passed=dig(golden, "passed"))
    return {"name": name, "benchmark_values": [value], "target_value": target,
            "extra_info": _string_map(info)}


def render_pytorch_v3(inputs: ReportInputs) -> str:
    """pytorch_v3.json: records for the PyTorch OSS benchmark database (schema v3), a JSON list.

    One record per (ok case, metric). Metrics, each only when measured:

    * ``latency_ms``: ``benchmark_values`` are the raw samples, ms per call (each the mean of
      one sample's inner loop; all worker processes, in order): the database takes a list
      because a benchmark is run many times, and the samples are the honest form of that
      (a summary of them hides the spread); no target value.
    * ``latency_ms_p50``: ``[median]`` -- the figure kernbench reports and compares;
      ``target_value`` is the golden time (``golden.golden_time_ms``) when the kernel has one
      for this SKU, else null; the median's 95% interval is in ``extra_info``.
    * ``throughput_ops_per_sec``, ``peak_memory_mb``, ``energy_j``, ``gflops_per_s``,
      ``gb_per_s``: ``[value]``.

    ``benchmark`` = kernbench, mode ``inference``, dtype = the case's precision, run settings
    and the repository's commit in ``extra_info``; ``model`` = the kernel (type ``kernel``,
    backend = the case's backend, origins ``["kernbench"]``); ``runners`` = this machine from
    env.json (GPU fields only when a GPU was listed; memory in whole GB, the exact MB in
    ``extra_info``); ``dependencies`` = the library versions in env.json. Every ``extra_info``
    value is a string.
    """
    environment = inputs.environment
    records: list[dict[str, Any]] = []
    for record in mappings(inputs.results):
        if record.get("status") != "ok":
            continue
        for metric in _v3_metrics(record):
            records.append({
                "benchmark": _v3_benchmark(inputs, record), "model": _v3_model(record),
                "metric": metric, "runners": [_v3_runner(environment, record)],
                "dependencies": _v3_dependencies(environment),
            })
    return json.dumps(records, indent=2) + "\n"


# --------------------------------------------------------------------------- github_benchmark.json


def _github_extra(inputs: ReportInputs, record: Record) -> str:
    size = record.get("problem_size")
    low, high = ci95_bounds(record)
    git = dig(inputs.environment, "git")
    commit = dig(git, "short_commit") or dig(git, "commit")
    lines = [f"backend: {record.get('backend')}", f"precision: {record.get('precision')}",
             f"problem size: {'none' if size is None else compact_json(size)}",
             f"samples: {exact_text(dig(record, 'timing', 'iterations')) or '?'} x "
             f"{exact_text(dig(record, 'timing', 'inner_loops')) or '?'} call(s) each",
             f"processes: {exact_text(_processes(record)) or '?'}"]
    if low is not None and high is not None:
        lines.append(f"p50 95% CI: [{exact_text(low)}, {exact_text(high)}] ms")
    if commit:
        dirty = " (dirty)" if dig(git, "dirty") else ""
        lines.append(f"commit: {commit}{dirty}")
    return "\n".join(lines)


def _github_range(record: Record) -> str | None:
    """'± h', h the half-width of the median's 95% interval; None without an interval."""
    ci = ci95_ms(record)
    return None if ci is None else f"± {(ci[1] - ci[0]) / 2:.6g}"


def render_github_benchmark(inputs: ReportInputs) -> str:
    """github_benchmark.json for github-action-benchmark's ``customSmallerIsBetter`` tool.

    A JSON list with one entry per ok case that has a median: ``name`` (the case id),
    ``unit`` ``"ms"``, ``value`` (the median latency, ``latency_ms_p50``, exactly), ``range``
    (``"± h"``: h is the half-width of the median's 95% confidence interval, 6 significant
    digits; left out when the record has no interval) and ``extra`` (backend, precision,
    problem size, samples x calls per sample, processes, the exact interval, the commit).
    Failed, skipped, timed-out and invalid cases have no value and are left out.
    """
    entries: list[dict[str, Any]] = []
    results = mappings(inputs.results)
    for record, name in zip(results, case_names(results), strict=True):
        p50 = finite(dig(record, "timing", "latency_ms_p50"))
        if record.get("status") != "ok" or p50 is None:
            continue
        entry: dict[str, Any] = {"name": name, "unit": "ms", "value": p50}
        spread = _github_range(record)
        if spread is not None:
            entry["range"] = spread
        entry["extra"] = _github_extra(inputs, record)
        entries.append(entry)
    return json.dumps(entries, indent=2) + "\n"


# --------------------------------------------------------------------------- registry

FILES: dict[str, tuple[str, Callable[[ReportInputs], str]]] = {
    "csv": ("results.csv", render_csv),
    "pytorch_v3": ("pytorch_v3.json", render_pytorch_v3),
    "github": ("github_benchmark.json", render_github_benchmark),
    "junit": ("junit.xml", render_junit),
    "bmf": ("bmf.json", render_bmf),
    "pytest-benchmark": ("pytest_benchmark.json", render_pytest_benchmark),
}
"""Format name -> (file name, renderer) for the format registry."""
