"""pytest_benchmark.json: the JSON that pytest-benchmark saves (``--benchmark-json``), so its
``pytest-benchmark compare`` and the tools that read that file can show kernbench's cases.

The document: ``machine_info`` (from env.json: node, processor, machine, python_*, system,
release, cpu), ``commit_info`` (id, branch, dirty, project; from env.json's git facts),
``benchmarks`` (one per ok case that has samples), ``datetime`` (when the run finished) and
``version`` (the kernbench version that rendered it: kernbench, not pytest-benchmark, made
the file).

Each benchmark: ``group`` (the kernel), ``name`` (the case id, the compact problem size
appended where an id repeats), ``fullname`` (the test's node id for a
pytest plugin's case, else kernel file ``::`` name), ``params`` (the problem
size as a mapping, or null), ``param`` (the sweep point), ``extra_info`` (backend, precision,
framework, worker processes), ``options`` (timer, warmup calls, the sample count) and
``stats`` in **seconds per call**, computed from the run's samples as pytest-benchmark
computes them from its rounds: one kernbench sample (the mean of ``inner_loops`` back-to-back
calls) is one pytest-benchmark round of ``iterations`` = ``inner_loops`` calls. ``data``
holds the samples themselves, in order; ``q1`` / ``q3`` follow pytest-benchmark's quartile
method (so they can differ from kernbench's interpolated percentiles), and ``outliers`` is its
``"<stddev outliers>;<iqr outliers>"`` text.
"""

from __future__ import annotations

import bisect
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from kernbench import __version__
from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.views import case_names, dig, finite, mappings

__all__ = ["render_pytest_benchmark", "round_stats"]


def _quartiles(data: Sequence[float]) -> tuple[float, float]:
    """pytest-benchmark's q1 and q3 of sorted `data` (method 2 for even counts, 3 for odd)."""
    n = len(data)
    if n == 1:
        return data[0], data[0]
    if n % 2 == 0:
        return statistics.median(data[:n // 2]), statistics.median(data[n // 2:])
    k, r = n // 4, n % 4
    if r == 1:
        return (0.25 * data[k - 1] + 0.75 * data[k],
                0.75 * data[3 * k] + 0.25 * data[3 * k + 1])
    return 0.75 * data[k] + 0.25 * data[k + 1], 0.25 * data[3 * k + 1] + 0.75 * data[3 * k + 2]


def round_stats(rounds_s: Sequence[float]) -> dict[str, Any]:
    """pytest-benchmark's ``stats`` of per-call round times in seconds (at least one)."""
    data = sorted(rounds_s)
    n = len(data)
    mean = statistics.fmean(data)
    stddev = statistics.stdev(data) if n > 1 else 0.0
    q1, q3 = _quartiles(data)
    iqr = q3 - q1
    iqr_outliers = sum(1 for v in data if v < q1 - 1.5 * iqr or v > q3 + 1.5 * iqr)
    stddev_outliers = sum(1 for v in data if v < mean - stddev or v > mean + stddev)
    low = data[bisect.bisect_left(data, q1 - 1.5 * iqr)] if n > 1 else data[0]
    high = data[bisect.bisect_right(data, q3 + 1.5 * iqr) - 1]
    return {"min": data[0], "max": data[-1], "mean": mean, "stddev": stddev, "rounds": n,
            "median": statistics.median(data), "iqr": iqr, "q1": q1, "q3": q3,
            "iqr_outliers": iqr_outliers, "stddev_outliers": stddev_outliers,
            "outliers": f"{stddev_outliers};{iqr_outliers}", "ld15iqr": low, "hd15iqr": high,
            "ops": 1.0 / mean if mean > 0 else None,
            "total": math.fsum(rounds_s)}  # exactly rounded: sum() differs from Python 3.12


def _machine_info(environment: Mapping[str, Any]) -> dict[str, Any]:
    return {"node": environment.get("hostname"),
            "processor": dig(environment, "cpu", "model"),
            "machine": dig(environment, "os", "machine"),
            "python_implementation": dig(environment, "python", "implementation"),
            "python_version": dig(environment, "python", "version"),
            "system": dig(environment, "os", "system"),
            "release": dig(environment, "os", "release"),
            "cpu": {"brand_raw": dig(environment, "cpu", "model"),
                    "count": dig(environment, "cpu", "logical_cores")},
            "kernbench_fingerprint": environment.get("fingerprint")}


def _commit_info(environment: Mapping[str, Any]) -> dict[str, Any]:
    git = dig(environment, "git") or {}
    return {"id": git.get("commit"), "branch": git.get("branch"), "dirty": git.get("dirty"),
            "project": None}


def _benchmark(record: Mapping[str, Any], name: str, samples_ms: list[float]) -> dict[str, Any]:
    size = record.get("problem_size")
    inner = finite(dig(record, "timing", "inner_loops")) or 1
    stats = round_stats([v / 1000.0 for v in samples_ms])
    stats.update(data=[v / 1000.0 for v in samples_ms], iterations=inner)
    counts = dig(record, "timing", "process_sample_counts")
    return {
        "group": record.get("kernel_name"), "name": name,
        "fullname": dig(record, "worker", "node_id")  # a pytest plugin's case: its test
        or f"{record.get('kernel_path') or record.get('kernel_name')}::{name}",
        "params": dict(size) if isinstance(size, Mapping) else
        (None if size is None else {"problem_size": size}),
        "param": record.get("point") or _point(record),
        "extra_info": {"backend": record.get("backend"), "precision": record.get("precision"),
                       "framework": record.get("framework"),
                       "processes": len(counts) if isinstance(counts, list) and counts else 1,
                       "unit": "seconds per call"},
        "options": {"timer": dig(record, "timing", "timer"),
                    "warmup": dig(record, "timing", "warmup_iterations"),
                    "min_rounds": len(samples_ms), "disable_gc": False},
        "stats": stats,
    }


def _point(record: Mapping[str, Any]) -> str | None:
    """The sweep point a case id names after backend and precision, if any."""
    case = str(record.get("case_id") or "")
    inside = case[case.find("[") + 1:-1] if case.endswith("]") else ""
    parts = inside.split(",", 2)
    return parts[2] if len(parts) == 3 else None


def render_pytest_benchmark(inputs: ReportInputs) -> str:
    """pytest_benchmark.json (see the module's text)."""
    benchmarks = []
    results = mappings(inputs.results)
    for record, name in zip(results, case_names(results), strict=True):
        samples = dig(record, "timing", "samples_ms")
        values = [float(v) for v in samples if finite(v) is not None] \
            if isinstance(samples, list) else []
        if record.get("status") == "ok" and values:
            benchmarks.append(_benchmark(record, name, values))
    summary = inputs.summary
    document = {"machine_info": _machine_info(inputs.environment),
                "commit_info": _commit_info(inputs.environment), "benchmarks": benchmarks,
                "datetime": summary.get("finished_at") or summary.get("started_at"),
                "version": __version__}
    return json.dumps(document, indent=2) + "\n"
