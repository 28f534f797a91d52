"""Standard export formats: CSV, PyTorch OSS benchmark database v3, github-action-benchmark and
JUnit XML, each rendered as text from a run's documents (:class:`ReportInputs`).

The renderers are pure: the same documents give byte-identical output (nothing comes from the
clock or the host the renderer runs on). A figure appears only when a document holds it; a
missing one is an empty CSV cell, ``null`` in JSON or an absent key. Records from older or
failed runs (missing blocks, ``timing: None``) render without error.

Comparison cases (comparison.json) are matched to results by their ``key`` (case id plus
problem size, as :func:`kernbench.compare.case_key` builds it), else by ``label`` == the
record's ``case_id`` when that label is unique.

Where a run holds two cases with the same case id (one kernel at several problem sizes), the
case names used by the GitHub and JUnit exports get the compact problem size appended.

:data:`FILES` maps each format name to its file name and renderer.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kernbench.reporting.bundle import ReportInputs

__all__ = [
    "CSV_COLUMNS",
    "FILES",
    "render_csv",
    "render_github_benchmark",
    "render_junit",
    "render_pytorch_v3",
]

Record = Mapping[str, Any]

# --------------------------------------------------------------------------- shared helpers


def _dig(data: Any, *path: str) -> Any:
    """``data[path[0]][path[1]]...``, or None as soon as a level is missing or not a mapping."""
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _number(value: Any) -> int | float | None:
    """A finite int or float (never a bool), else None: what JSON and XML may carry."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def _compact_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _text(value: Any) -> str | None:
    """A document value as text: floats with repr precision, booleans lower case, mappings and
    lists as compact JSON; None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    return _compact_json(value)


def _case_id(record: Record) -> str:
    found = record.get("case_id")
    if isinstance(found, str) and found:
        return found
    return f"{record.get('kernel_name')}[{record.get('backend')},{record.get('precision')}]"


def _case_names(results: Sequence[Record]) -> list[str]:
    """Case ids, with the compact problem size appended where a case id occurs twice."""
    ids = [_case_id(record) for record in results]
    repeated = {name for name, count in Counter(ids).items() if count > 1}
    return [name + _compact_json(record.get("problem_size")) if name in repeated else name
            for name, record in zip(ids, results, strict=True)]


def _comparison_key(record: Record) -> str:
    """The comparison's matching key: see :func:`kernbench.compare.case_key`."""
    size = record.get("problem_size")
    suffix = "" if size is None else json.dumps(size, sort_keys=True)
    return f"{record.get('kernel_name')}[{record.get('backend')},{record.get('precision')}]" \
           f"{suffix}"


def _results(inputs: ReportInputs) -> list[Record]:
    """The summary's result records, in order; an entry that is not an object is dropped."""
    return [record for record in inputs.results if isinstance(record, Mapping)]


def _matched_cases(inputs: ReportInputs) -> list[Record | None]:
    """The comparison case of each result (aligned with :func:`_results`), or None."""
    found = _dig(inputs.comparison, "cases")
    cases = [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []
    by_key = {c["key"]: c for c in cases if isinstance(c.get("key"), str)}
    labels = Counter(c.get("label") for c in cases)
    by_label = {c["label"]: c for c in cases
                if isinstance(c.get("label"), str) and labels[c["label"]] == 1}
    return [by_key.get(_comparison_key(r)) or by_label.get(_case_id(r)) for r in _results(inputs)]


def _ci95(record: Record) -> tuple[Any, Any]:
    """(low, high) of the median's 95% interval, or (None, None)."""
    interval = _dig(record, "timing", "latency_ms_p50_ci95")
    if isinstance(interval, Sequence) and not isinstance(interval, str) and len(interval) == 2:
        return interval[0], interval[1]
    return None, None


def _processes(record: Record) -> Any:
    """How many worker processes took the samples, when a document says so."""
    found = _dig(record, "worker", "processes")
    if found is not None:
        return found
    counts = _dig(record, "timing", "process_sample_counts")
    return len(counts) if isinstance(counts, Sequence) and counts else None


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
    low, high = _ci95(record)
    values: dict[str, Any] = {
        "kernel_name": record.get("kernel_name"), "case_id": _case_id(record),
        "backend": record.get("backend"), "precision": record.get("precision"),
        "problem_size": None if size is None else _compact_json(size),
        "status": record.get("status"), "reason": record.get("reason"),
        "latency_ms_p50_ci95_low": low, "latency_ms_p50_ci95_high": high,
        "processes": _processes(record), "duration_s": record.get("duration_s"),
    }
    values.update({name: _dig(record, "timing", name) for name in _TIMING_COLUMNS})
    values.update({name: _dig(record, *path) for name, path in _BLOCK_COLUMNS.items()})
    values.update({name: _dig(case, key) for name, key in _COMPARISON_COLUMNS.items()})
    return {name: _text(values[name]) or "" for name in CSV_COLUMNS}


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
    ``comparison_ratio_ci_low`` / ``_high`` and ``comparison_q_value``.

    Cells: empty for a missing value, floats with repr precision (never rounded), booleans
    ``true`` / ``false``.
    """
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for record, case in zip(_results(inputs), _matched_cases(inputs), strict=True):
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
    return {key: text for key, value in values.items() if (text := _text(value)) is not None}


def _v3_benchmark(inputs: ReportInputs, record: Record) -> dict[str, Any]:
    summary, git = inputs.summary, _dig(inputs.environment, "git")
    info = {
        "kernbench_version": summary.get("kernbench_version"),
        "started_at": summary.get("started_at"), "finished_at": summary.get("finished_at"),
        **{f"settings.{key}": _dig(summary, "settings", key)
           for key in ("iterations", "warmup", "processes", "seed")},
        "commit": _dig(git, "commit"), "branch": _dig(git, "branch"), "dirty": _dig(git, "dirty"),
    }
    return {"name": "kernbench", "mode": "inference", "dtype": record.get("precision"),
            "extra_info": _string_map(info)}


def _v3_model(record: Record) -> dict[str, Any]:
    info = {"case_id": _case_id(record), "problem_size": record.get("problem_size"),
            "framework": record.get("framework"), "device": record.get("device"),
            "kernel_path": record.get("kernel_path")}
    return {"name": record.get("kernel_name"), "type": "kernel", "backend": record.get("backend"),
            "origins": ["kernbench"], "extra_info": _string_map(info)}


def _gigabytes(megabytes: Any) -> int | None:
    found = _number(megabytes)
    return None if found is None else int(found // 1024)


def _gpu_fields(gpus: Sequence[Any]) -> dict[str, Any]:
    """gpu_info / gpu_count / avail_gpu_mem_in_gb; nothing when no GPU was listed."""
    found = [g for g in gpus if isinstance(g, Mapping)]
    if not found:
        return {}
    names = list(dict.fromkeys(str(g.get("name")) for g in found))
    memory = [_number(g.get("memory_total_mb")) for g in found]
    fields: dict[str, Any] = {"gpu_info": ", ".join(names), "gpu_count": len(found)}
    if all(m is not None for m in memory):
        fields["avail_gpu_mem_in_gb"] = _gigabytes(sum(m for m in memory if m is not None))
    return fields


def _v3_runner(environment: Mapping[str, Any], record: Record) -> dict[str, Any]:
    gpus = environment.get("gpus")
    runner: dict[str, Any] = {
        "name": environment.get("hostname") or environment.get("fingerprint") or "unknown",
        "type": record.get("backend"), "cpu_info": _dig(environment, "cpu", "model"),
        "cpu_count": _number(_dig(environment, "cpu", "logical_cores")),
        "avail_mem_in_gb": _gigabytes(_dig(environment, "memory", "total_mb")),
        **_gpu_fields(gpus if isinstance(gpus, Sequence) else []),
    }
    info = {"hostname": environment.get("hostname"), "fingerprint": environment.get("fingerprint"),
            "platform": _dig(environment, "os", "platform"),
            "memory_total_mb": _dig(environment, "memory", "total_mb"),
            "python": _dig(environment, "python", "version"),
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
    timing_info = {"iterations": _dig(record, "timing", "iterations"),
                   "inner_loops": _dig(record, "timing", "inner_loops"),
                   "processes": _processes(record), "timer": _dig(record, "timing", "timer")}
    metrics: list[dict[str, Any]] = []
    samples = _dig(record, "timing", "samples_ms")
    values = [v for v in samples or [] if _number(v) is not None] \
        if isinstance(samples, Sequence) else []
    if values:
        info = {**timing_info, "unit": "ms",
                "statistic": "raw samples in order, all processes; each the mean per call of "
                             "one sample's inner loop; their median is latency_ms_p50"}
        metrics.append({"name": "latency_ms", "benchmark_values": values,
                        "target_value": None, "extra_info": _string_map(info)})
    for name, path, description, source in _V3_METRICS:
        value = _number(_dig(record, *path))
        if value is not None:
            info = {"statistic": description,
                    "source": _dig(record, path[0], source) if source else None}
            metrics.append(_v3_single(record, name, value, info, timing_info))
    return metrics


def _v3_single(record: Record, name: str, value: float, info: dict[str, Any],
               timing_info: Mapping[str, Any]) -> dict[str, Any]:
    target = None
    if name == "latency_ms_p50":
        low, high = _ci95(record)
        golden = record.get("golden")
        target = _number(_dig(golden, "golden_time_ms"))
        info.update(timing_info, ci95_low=low, ci95_high=high,
                    golden_limit_ms=_dig(golden, "limit_ms"),
                    golden_passed=_dig(golden, "passed"))
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
    for record in _results(inputs):
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
    low, high = _ci95(record)
    git = _dig(inputs.environment, "git")
    commit = _dig(git, "short_commit") or _dig(git, "commit")
    lines = [f"backend: {record.get('backend')}", f"precision: {record.get('precision')}",
             f"problem size: {'none' if size is None else _compact_json(size)}",
             f"samples: {_text(_dig(record, 'timing', 'iterations')) or '?'} x "
             f"{_text(_dig(record, 'timing', 'inner_loops')) or '?'} call(s) each",
             f"processes: {_text(_processes(record)) or '?'}"]
    if low is not None and high is not None:
        lines.append(f"p50 95% CI: [{_text(low)}, {_text(high)}] ms")
    if commit:
        dirty = " (dirty)" if _dig(git, "dirty") else ""
        lines.append(f"commit: {commit}{dirty}")
    return "\n".join(lines)


def _github_range(record: Record) -> str | None:
    """'± h', h the half-width of the median's 95% interval; None without an interval."""
    low, high = (_number(v) for v in _ci95(record))
    if low is None or high is None:
        return None
    return f"± {(high - low) / 2:.6g}"


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
    for record, name in zip(_results(inputs), _case_names(_results(inputs)), strict=True):
        p50 = _number(_dig(record, "timing", "latency_ms_p50"))
        if record.get("status") != "ok" or p50 is None:
            continue
        entry: dict[str, Any] = {"name": name, "unit": "ms", "value": p50}
        spread = _github_range(record)
        if spread is not None:
            entry["range"] = spread
        entry["extra"] = _github_extra(inputs, record)
        entries.append(entry)
    return json.dumps(entries, indent=2) + "\n"


# --------------------------------------------------------------------------- junit.xml

_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(value: Any) -> str:
    """Text XML 1.0 can carry: characters it forbids (ANSI escapes, NUL) become \\xNN."""
    text = _text(value) or ""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _seconds(value: Any) -> str:
    found = _number(value)
    return f"{found if found is not None and found > 0 else 0:.6f}"


def _failure_text(record: Record) -> str:
    """The reason, then the worker's traceback and stderr tail when they hold anything."""
    parts = [str(record.get("reason") or record.get("status"))]
    for title, key in (("traceback", "traceback"), ("stderr (tail)", "stderr_tail")):
        found = _dig(record, "worker", key)
        if isinstance(found, str) and found.strip():
            parts.append(f"--- {title} ---\n{found.rstrip()}")
    return "\n\n".join(parts)


def _lines(block: Any, keys: Iterable[str]) -> str:
    """``key: value`` lines for the keys of `block` that hold a value."""
    found = ((key, _text(_dig(block, key))) for key in keys)
    return "\n".join(f"{key}: {text}" for key, text in found if text is not None)


def _golden_failure(record: Record) -> tuple[str, str, str] | None:
    golden = record.get("golden")
    if _dig(golden, "passed") is not False:
        return None
    message = str(_dig(golden, "reason") or "over the golden limit")
    details = _lines(golden, ("sku", "golden_sku", "golden_time_ms", "tolerance_multiplier",
                              "limit_ms", "measured_ms", "exceeded_by_pct"))
    return "golden", message, f"{message}\n{details}".rstrip()


def _regression(case: Record | None) -> tuple[str, str, str] | None:
    if _dig(case, "verdict") != "regressed":
        return None
    message = (f"regressed: ratio {_text(_dig(case, 'ratio'))} (candidate / baseline), "
               f"interval [{_text(_dig(case, 'ci_low'))}, {_text(_dig(case, 'ci_high'))}], "
               f"q {_text(_dig(case, 'q_value'))}")
    details = _lines(case, ("threshold", "method", "baseline_p50_ms", "candidate_p50_ms",
                            "p_value", "note"))
    return "regression", message, f"{message}\n{details}".rstrip()


def _outcome(record: Record, case: Record | None) -> tuple[str, str, str, str] | None:
    """(element, type, message, text) of a case that did not pass, or None."""
    status = str(record.get("status"))
    reason = str(record.get("reason") or status)
    if status == "skipped":
        return "skipped", "skipped", reason, ""
    if status in ("failed", "timeout"):
        golden = _golden_failure(record) if status == "failed" else None
        if golden is not None:
            return "failure", golden[0], reason, f"{golden[2]}\n\n{_failure_text(record)}"
        return "failure", status, reason, _failure_text(record)
    if status != "ok":
        return "error", status, reason, _failure_text(record)
    found = _golden_failure(record) or _regression(case)
    return None if found is None else ("failure", *found)


def _properties(parent: ET.Element, values: Mapping[str, Any]) -> None:
    present = {key: value for key, value in values.items() if value is not None}
    if present:
        block = ET.SubElement(parent, "properties")
        for key, value in present.items():
            ET.SubElement(block, "property", name=key, value=_xml_text(value))


def _case_facts(record: Record, case: Record | None) -> dict[str, Any]:
    low, high = _ci95(record)
    size = record.get("problem_size")
    return {"status": record.get("status"), "backend": record.get("backend"),
            "precision": record.get("precision"),
            "problem_size": None if size is None else _compact_json(size),
            "latency_ms_p50": _dig(record, "timing", "latency_ms_p50"),
            "latency_ms_p50_ci95_low": low, "latency_ms_p50_ci95_high": high,
            "comparison_verdict": _dig(case, "verdict"), "comparison_ratio": _dig(case, "ratio"),
            "comparison_q_value": _dig(case, "q_value")}


def _testcase(record: Record, name: str, case: Record | None) -> tuple[ET.Element, str | None]:
    element = ET.Element("testcase", classname=_xml_text(f"kernbench.{record.get('kernel_name')}"),
                         name=_xml_text(name), time=_seconds(record.get("duration_s")))
    facts = _case_facts(record, case)
    _properties(element, facts)
    outcome = _outcome(record, case)
    if outcome is not None:
        tag, kind, message, text = outcome
        child = ET.SubElement(element, tag, message=_xml_text(message))
        if tag != "skipped":
            child.set("type", kind)
        child.text = _xml_text(text) or None
    summary = _lines(facts, ("status", "latency_ms_p50", "latency_ms_p50_ci95_low",
                             "latency_ms_p50_ci95_high", "comparison_verdict",
                             "comparison_ratio", "comparison_q_value"))
    ET.SubElement(element, "system-out").text = _xml_text(summary)
    return element, None if outcome is None else outcome[0]


def _suite_attributes(inputs: ReportInputs, tags: Iterable[str | None],
                      tests: int) -> dict[str, str]:
    counts = Counter(tags)
    total = sum(_number(r.get("duration_s")) or 0 for r in _results(inputs))
    return {"name": "kernbench", "tests": str(tests), "failures": str(counts["failure"]),
            "errors": str(counts["error"]), "skipped": str(counts["skipped"]),
            "time": _seconds(total)}


def render_junit(inputs: ReportInputs) -> str:
    """junit.xml: ``<testsuites>`` holding one ``<testsuite name="kernbench">``, one
    ``<testcase classname="kernbench.<kernel>" name="<case id>" time="<duration_s>">`` per case.

    Outcomes: failed -> ``<failure type="failed">``; a failed case whose golden check did not
    pass -> ``<failure type="golden">``; timeout -> ``<failure type="timeout">`` (the text holds
    the reason, the worker's traceback and stderr tail when present); skipped -> ``<skipped>``;
    invalid (or any other status) -> ``<error>``; an ok case whose comparison verdict is
    ``regressed`` -> ``<failure type="regression">`` with the ratio, its interval and q; an ok
    case over its golden limit -> ``<failure type="golden">``. Each testcase carries its
    median, interval and comparison verdict as ``<properties>`` (as pytest writes them) and in
    ``<system-out>``. Suite ``time`` is the sum of the cases' durations; ``timestamp`` is the
    run's ``started_at``.
    """
    names = _case_names(_results(inputs))
    built = [_testcase(record, name, case) for record, name, case
             in zip(_results(inputs), names, _matched_cases(inputs), strict=True)]
    attributes = _suite_attributes(inputs, (tag for _, tag in built), len(built))
    root = ET.Element("testsuites", attributes)
    suite = ET.SubElement(root, "testsuite", attributes)
    for key, value in (("timestamp", inputs.summary.get("started_at")),
                       ("hostname", inputs.environment.get("hostname"))):
        if value is not None:
            suite.set(key, _xml_text(value))
    _properties(suite, {"kernbench_version": inputs.summary.get("kernbench_version"),
                        "commit": _dig(inputs.environment, "git", "commit"),
                        "fingerprint": inputs.environment.get("fingerprint")})
    suite.extend(element for element, _ in built)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


# --------------------------------------------------------------------------- registry

FILES: dict[str, tuple[str, Callable[[ReportInputs], str]]] = {
    "csv": ("results.csv", render_csv),
    "pytorch_v3": ("pytorch_v3.json", render_pytorch_v3),
    "github": ("github_benchmark.json", render_github_benchmark),
    "junit": ("junit.xml", render_junit),
}
"""Format name -> (file name, renderer) for the format registry."""
