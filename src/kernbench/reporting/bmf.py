"""bmf.json: the Bencher Metric Format, which ``bencher run --adapter json`` reads.

One JSON object: each ok case (by its case id, the compact problem size appended where an id
repeats) maps to its measures, each ``{value, lower_value?, upper_value?}``:

* ``latency``: Bencher's built-in Latency measure, in **nanoseconds**: ``value`` is the median
  per-call latency of the run's samples (``timing.latency_ms_p50`` x 1e6), ``lower_value`` /
  ``upper_value`` the ends of the median's distribution-free 95% confidence interval (left out
  when the record has none: too few samples);
* ``throughput``: Bencher's built-in Throughput measure, **operations per second**: calls per
  second, 1000 / the mean latency in ms (``timing.throughput_ops_per_sec``).

Failed, skipped, timed-out and invalid cases have no figures and are left out. The renderer is
pure: the same documents give the same bytes.
"""

from __future__ import annotations

import json
from typing import Any

from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.views import case_names, ci95_ms, dig, finite, mappings

__all__ = ["NS_PER_MS", "render_bmf"]

NS_PER_MS = 1e6


def _latency(record: Any, p50_ms: float) -> dict[str, float]:
    measure = {"value": p50_ms * NS_PER_MS}
    ci = ci95_ms(record)
    if ci is not None:
        measure["lower_value"], measure["upper_value"] = ci[0] * NS_PER_MS, ci[1] * NS_PER_MS
    return measure


def render_bmf(inputs: ReportInputs) -> str:
    """bmf.json (see the module's text): ``{case: {latency: ns, throughput: ops/s}}``."""
    document: dict[str, dict[str, Any]] = {}
    results = mappings(inputs.results)
    for record, name in zip(results, case_names(results), strict=True):
        p50 = finite(dig(record, "timing", "latency_ms_p50"))
        if record.get("status") != "ok" or p50 is None:
            continue
        measures: dict[str, Any] = {"latency": _latency(record, float(p50))}
        throughput = finite(dig(record, "timing", "throughput_ops_per_sec"))
        if throughput is not None:
            measures["throughput"] = {"value": float(throughput)}
        document[name] = measures
    return json.dumps(document, indent=2) + "\n"
