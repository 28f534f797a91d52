"""Key findings, recommendations and the regression digest of a run, as data.

Pure functions over the summary document (summary.json) and, when the run was compared with a
baseline, the comparison document (comparison.json). They return small frozen dataclasses that
summary.md lays out and other reports can reuse; nothing here renders Markdown or measures.

Findings, in this order:

* **fastest / slowest**: the successful cases with the lowest / highest median (p50).
* **unstable**: a timed case whose 95% CI of the median spans more than `NOISY_CI_RATIO` of its
  p50 or, when it has too few samples for a CI, that carries a ``high_spread`` warning.
* **accuracy failure**: ``accuracy.passed`` is False.
* **anomalies**: a failed, timed-out or invalid case (other than an accuracy failure); a
  narrow precision (bf16, fp16, fp8) clearly slower than fp32 of the same kernel, backend and
  problem size; p99 above `TAIL_RATIO` times p50; a narrow precision that grew more memory
  than `MEMORY_GROWTH_RATIO` times its fp32 case.

"Timed" cases are those with a median, whatever their status (a case that failed only its
accuracy check was still timed). "Clearly slower" means a larger median whose 95% CI lies
wholly above the other's; when either CI is unknown, a larger median.

Each recommendation names the cases that triggered it; see :func:`recommendations`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernbench.reporting import safe_filename

__all__ = [
    "ACCURACY_BUG_FACTOR", "LOW_PCT_PEAK", "MEMORY_GROWTH_RATIO", "NARROW_PRECISIONS",
    "NOISY_CI_RATIO", "NO_RECOMMENDATIONS", "TAIL_RATIO", "Change", "Finding",
    "Recommendation", "RegressionDigest", "group_findings", "key_findings", "recommendations",
    "regression_digest",
]  # fmt: skip

Record = Mapping[str, Any]

NOISY_CI_RATIO = 0.10
"""A 95% CI of the median wider than this fraction of p50 marks the case unstable.

10% is the default practical threshold of ``kernbench compare --threshold``: a median known
only to within ±5% cannot show a 10% change, so such a case cannot guard against regressions.
"""
TAIL_RATIO = 3.0
"""p99 above this multiple of p50 is a heavy tail.

Latency is right-skewed, and a p99 of 1.2-2x p50 is ordinary on a shared machine. Beyond 3x,
some calls take a different path: interference, garbage collection, page faults, a cold cache.
"""
MEMORY_GROWTH_RATIO = 1.2
"""A narrow precision that grew more than this multiple of its fp32 case's memory is flagged.

Its elements take half the bytes or fewer, so at the same problem size it should need less;
more suggests copies upcast to a wider type. The 20% leeway absorbs RSS page granularity and
allocator caching.
"""
LOW_PCT_PEAK = 10.0
"""Below this % of the device's peak on the resource that bounds a case, it is flagged.

The resource is compute or bandwidth as ``work.bound`` says, else whichever % is known (the
higher if both). On CPUs the peak is a measured *attainable* figure (NumPy matmul and copy),
so under a tenth of it leaves most of what the machine routinely does unused; access
patterns, extra passes over memory (no fusion) and missing vectorisation are the usual causes.
"""
ACCURACY_BUG_FACTOR = 100.0
"""An error more than this multiple of its tolerance is called out as more than rounding.

Tolerances are set per precision for rounding error; a hundredfold miss points to overflow, a
bug or a wrong reference, which loosening the tolerance would hide.
"""
NARROW_PRECISIONS = ("bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2")
"""Precisions expected to be no slower, and no bigger, than fp32 of the same case."""
WIDER_PRECISION = {"fp8": "fp16", "fp8_e4m3": "fp16", "fp8_e5m2": "fp16", "int8": "fp16",
                   "bf16": "fp32", "fp16": "fp32", "fp32": "fp64"}
NO_RECOMMENDATIONS = ("Nothing to recommend: no failures, no accuracy problems, no noisy "
                      "measurements and no performance anomalies were found.")
PROBLEM_STATUSES = ("failed", "timeout", "invalid")
VERDICTS = ("regressed", "improved", "unchanged", "inconclusive", "new", "missing")

FINDING_GROUPS = {
    "fastest": "Fastest", "slowest": "Slowest", "unstable": "Unstable",
    "accuracy_failure": "Accuracy failures", "failure": "Anomalies",
    "narrow_slower": "Anomalies", "tail_latency": "Anomalies", "memory_growth": "Anomalies",
}  # fmt: skip
RECOMMENDATION_TITLES = {
    "noise": "Reduce measurement noise", "tail_latency": "Find the slow calls",
    "accuracy": "Fix accuracy", "failure": "Fix failing cases", "timeout": "Fix timeouts",
    "invalid": "Fix invalid kernels", "narrow_slower": "Precision choice",
    "memory_growth": "Memory use", "low_peak_compute": "Low % of peak compute",
    "low_peak_bandwidth": "Low % of peak bandwidth", "backend_slower": "Backend choice",
    "regression": "Regressions", "inconclusive": "Inconclusive comparisons",
}  # fmt: skip


@dataclass(frozen=True)
class Finding:
    """One fact worth a reader's attention; `value` is its key number (p50, ratio, ...)."""

    kind: str
    case_id: str
    message: str
    value: float | None = None

    @property
    def group(self) -> str:
        return FINDING_GROUPS.get(self.kind, "Anomalies")


@dataclass(frozen=True)
class Recommendation:
    """Advice, with the cases whose data called for it."""

    kind: str
    case_ids: tuple[str, ...]
    message: str

    @property
    def title(self) -> str:
        return RECOMMENDATION_TITLES.get(self.kind, self.kind)


@dataclass(frozen=True)
class Change:
    """A significant change against the baseline (ratio = candidate / baseline p50)."""

    case_id: str
    verdict: str
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    q_value: float | None
    baseline_p50_ms: float | None
    candidate_p50_ms: float | None
    accuracy_drift: str | None = None


@dataclass(frozen=True)
class RegressionDigest:
    """What summary.md says about comparison.json; regressions.md has every case."""

    verdict: str
    regression: bool
    compared: bool
    counts: tuple[tuple[str, int], ...]
    changes: tuple[Change, ...]
    threshold: float | None
    alpha: float | None
    baseline_commit: str | None


# --- reading records ----------------------------------------------------------------------


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _timing(record: Record, key: str) -> float | None:
    return _number((record.get("timing") or {}).get(key))


def _ci(record: Record) -> tuple[float, float] | None:
    ci = (record.get("timing") or {}).get("latency_ms_p50_ci95")
    if not isinstance(ci, Sequence) or len(ci) != 2:
        return None
    low, high = _number(ci[0]), _number(ci[1])
    return (low, high) if low is not None and high is not None else None


def _results(document: Mapping[str, Any]) -> list[Record]:
    return [r for r in document.get("results") or [] if isinstance(r, Mapping)]


def _timed(results: Iterable[Record]) -> list[Record]:
    return [r for r in results if _timing(r, "latency_ms_p50") is not None]


def _ok(results: Iterable[Record]) -> list[Record]:
    ok = [r for r in _timed(results) if r.get("status") == "ok"]
    return sorted(ok, key=lambda r: (_timing(r, "latency_ms_p50"), str(r.get("case_id"))))


def _cid(record: Record) -> str:
    return str(record.get("case_id") or record.get("kernel_name") or "?")


def _num(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    text = f"{value:.{digits}g}"
    return f"{value:,.0f}" if "e+" in text else text


def _ci_text(record: Record) -> str:
    ci = _ci(record)
    return f" (95% CI {_num(ci[0])} – {_num(ci[1])} ms)" if ci else ""


def _clearly_slower(slow: Record, fast: Record) -> bool:
    slow_p50, fast_p50 = _timing(slow, "latency_ms_p50"), _timing(fast, "latency_ms_p50")
    if slow_p50 is None or not fast_p50 or slow_p50 <= fast_p50:
        return False
    slow_ci, fast_ci = _ci(slow), _ci(fast)
    return slow_ci is None or fast_ci is None or slow_ci[0] > fast_ci[1]


def _ratio(slow: Record, fast: Record, key: str = "latency_ms_p50") -> float:
    return (_timing(slow, key) or 0.0) / (_timing(fast, key) or math.inf)


def _shape(record: Record) -> str:
    return json.dumps(record.get("problem_size"), sort_keys=True, default=str)


# --- findings -----------------------------------------------------------------------------


def key_findings(document: Mapping[str, Any]) -> list[Finding]:
    """Every finding of the run, grouped in the order of the module docstring."""
    results = _results(document)
    return [*_extremes(results), *_unstable(results), *_accuracy_failures(results),
            *_failures(results), *_narrow_slower(results), *_tails(results),
            *_memory_growth(results)]


def group_findings(findings: Iterable[Finding]) -> list[tuple[str, list[Finding]]]:
    """(group title, findings) in first-seen order, for rendering."""
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.group, []).append(finding)
    return list(groups.items())


def _extremes(results: Sequence[Record]) -> list[Finding]:
    ok = _ok(results)
    ends = [("fastest", ok[0])] if ok else []
    if len(ok) > 1:
        ends.append(("slowest", ok[-1]))
    return [Finding(kind, _cid(r), f"{_cid(r)}: {_num(_timing(r, 'latency_ms_p50'))} ms p50"
                    f"{_ci_text(r)}", _timing(r, "latency_ms_p50")) for kind, r in ends]


def _spread_warning(record: Record) -> float | None:
    for warning in record.get("warnings") or []:
        if isinstance(warning, Mapping) and warning.get("code") == "high_spread":
            return _number(warning.get("value"))
    return None


def _unstable(results: Sequence[Record]) -> list[Finding]:
    found = []
    for record in _timed(results):
        p50, ci, spread = _timing(record, "latency_ms_p50"), _ci(record), _spread_warning(record)
        iqr = f"; IQR is {spread:.0%} of the median" if spread is not None else ""
        if ci is not None and p50 and (ci[1] - ci[0]) / p50 > NOISY_CI_RATIO:
            width = (ci[1] - ci[0]) / p50
            found.append(Finding("unstable", _cid(record), f"{_cid(record)}: the 95% CI of the "
                                 f"median, {_num(ci[0])} – {_num(ci[1])} ms, spans {width:.0%} "
                                 f"of its p50 {_num(p50)} ms{iqr}", width))
        elif ci is None and spread is not None:
            found.append(Finding("unstable", _cid(record), f"{_cid(record)}: too few samples "
                                 f"for a CI of the median{iqr}", spread))
    return sorted(found, key=lambda f: (-(f.value or 0.0), f.case_id))


def _exceeded(record: Record) -> list[tuple[str, float | None, float | None]]:
    """(metric, value, tolerance) for each tolerance the case's accuracy exceeded."""
    accuracy = record.get("accuracy") or {}
    tolerances = accuracy.get("tolerances") or {}
    return [(str(m), _number(accuracy.get(m)), _number(tolerances.get(m)))
            for m in accuracy.get("exceeded") or []]


def _accuracy_detail(record: Record) -> str:
    accuracy = record.get("accuracy") or {}
    parts = [f"{m} {_num(v)} > {_num(t)}" for m, v, t in _exceeded(record)]
    if accuracy.get("nan_count"):
        parts.append(f"{accuracy['nan_count']} NaN/inf values")
    if accuracy.get("mismatch"):
        parts.append(str(accuracy["mismatch"]))
    return ", ".join(parts) or str(accuracy.get("reason") or "the check failed")


def _miss_factor(record: Record) -> float | None:
    factors = [v / t for _, v, t in _exceeded(record) if v is not None and t]
    return max(factors) if factors else None


def _accuracy_failed(record: Record) -> bool:
    return (record.get("accuracy") or {}).get("passed") is False


def _accuracy_failures(results: Sequence[Record]) -> list[Finding]:
    return [Finding("accuracy_failure", _cid(r), f"{_cid(r)}: {_accuracy_detail(r)}",
                    _miss_factor(r)) for r in results if _accuracy_failed(r)]


def _reason(record: Record, limit: int = 160) -> str:
    lines = str(record.get("reason") or "no reason recorded").strip().splitlines()
    text = lines[0] if lines else "no reason recorded"
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _failures(results: Sequence[Record]) -> list[Finding]:
    verbs = {"failed": "failed", "timeout": "timed out", "invalid": "is invalid"}
    return [Finding("failure", _cid(r), f"{_cid(r)} {verbs[str(r['status'])]}: {_reason(r)}")
            for r in results
            if r.get("status") in PROBLEM_STATUSES and not _accuracy_failed(r)]


def _narrow_pairs(results: Sequence[Record]) -> list[tuple[Record, Record]]:
    """(narrow, fp32) successful cases of the same kernel, backend and problem size."""
    fp32 = {(r.get("kernel_name"), r.get("backend"), _shape(r)): r
            for r in _ok(results) if r.get("precision") == "fp32"}
    pairs = []
    for record in sorted(_ok(results), key=_cid):
        wide = fp32.get((record.get("kernel_name"), record.get("backend"), _shape(record)))
        if wide is not None and record.get("precision") in NARROW_PRECISIONS:
            pairs.append((record, wide))
    return pairs


def _slower_pairs(results: Sequence[Record]) -> list[tuple[Record, Record]]:
    return [(n, w) for n, w in _narrow_pairs(results) if _clearly_slower(n, w)]


def _narrow_slower(results: Sequence[Record]) -> list[Finding]:
    return [Finding("narrow_slower", _cid(n), f"{_cid(n)} is {_ratio(n, w):.2f}x slower than "
                    f"{_cid(w)} ({_num(_timing(n, 'latency_ms_p50'))} vs "
                    f"{_num(_timing(w, 'latency_ms_p50'))} ms p50)", _ratio(n, w))
            for n, w in _slower_pairs(results)]


def _tails(results: Sequence[Record]) -> list[Finding]:
    found = []
    for record in _timed(results):
        p50, p99 = _timing(record, "latency_ms_p50"), _timing(record, "latency_ms_p99")
        if p50 and p99 is not None and p99 / p50 > TAIL_RATIO:
            found.append(Finding("tail_latency", _cid(record), f"{_cid(record)}: p99 "
                                 f"{_num(p99)} ms is {p99 / p50:.1f}x its p50 {_num(p50)} ms",
                                 p99 / p50))
    return found


def _growth(record: Record) -> float | None:
    return _number((record.get("memory") or {}).get("allocated_mb"))


def _grown_pairs(results: Sequence[Record]) -> list[tuple[Record, Record, float]]:
    pairs = []
    for narrow, wide in _narrow_pairs(results):
        grown, base = _growth(narrow), _growth(wide)
        if grown is not None and base and base > 0 and grown > MEMORY_GROWTH_RATIO * base:
            pairs.append((narrow, wide, grown / base))
    return pairs


def _memory_growth(results: Sequence[Record]) -> list[Finding]:
    return [Finding("memory_growth", _cid(n), f"{_cid(n)} grew {_num(_growth(n))} MB, "
                    f"{ratio:.2f}x the {_num(_growth(w))} MB of {_cid(w)}, though its elements "
                    "are half the size or less", ratio)
            for n, w, ratio in _grown_pairs(results)]


# --- recommendations ----------------------------------------------------------------------


def recommendations(document: Mapping[str, Any],
                    comparison: Mapping[str, Any] | None = None) -> list[Recommendation]:
    """Advice generated from the data, each tied to the cases that called for it.

    Correctness first (accuracy, failures, regressions), then measurement quality, then
    performance. Empty when nothing calls for advice; show `NO_RECOMMENDATIONS` then.
    """
    results, settings = _results(document), document.get("settings") or {}
    findings = key_findings(document)
    regressed, inconclusive = _comparison_advice(comparison)
    return [*_accuracy_advice(results), *_failure_advice(results, settings), *regressed,
            *_noise_advice(findings, settings), *_tail_advice(findings, settings),
            *_narrow_advice(results), *_memory_advice(results), *_peak_advice(results),
            *_backend_advice(results), *inconclusive]


def _ids(findings: Iterable[Finding], kind: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f.case_id for f in findings if f.kind == kind))


def _setting(settings: Mapping[str, Any], key: str) -> str:
    value = settings.get(key)
    return "" if value is None else f", now {value}"


def _noise_advice(findings: Sequence[Finding],
                  settings: Mapping[str, Any]) -> list[Recommendation]:
    ids = _ids(findings, "unstable")
    if not ids:
        return []
    return [Recommendation("noise", ids, (
        f"these medians are too imprecise to show a {NOISY_CI_RATIO:.0%} change. Take more "
        f"samples (--iters{_setting(settings, 'iterations')}; --processes"
        f"{_setting(settings, 'processes')}), pin the run to idle cores (taskset -c, "
        "isolcpus) and benchmark on a quiet machine: no other jobs, fixed CPU frequency."))]


def _tail_advice(findings: Sequence[Finding],
                 settings: Mapping[str, Any]) -> list[Recommendation]:
    ids = _ids(findings, "tail_latency")
    if not ids:
        return []
    return [Recommendation("tail_latency", ids, (
        f"some calls take over {TAIL_RATIO:g}x the median. Look for interference (other "
        "processes, garbage collection, page faults, frequency changes) or a slow path that "
        f"some inputs take; if the slow calls come first, raise --warmup"
        f"{_setting(settings, 'warmup')}."))]


def _accuracy_advice(results: Sequence[Record]) -> list[Recommendation]:
    return [_accuracy_one(r) for r in results if _accuracy_failed(r)]


def _accuracy_one(record: Record) -> Recommendation:
    precision = str(record.get("precision") or "this precision")
    exceeded = _exceeded(record)
    wider = WIDER_PRECISION.get(precision)
    factor = _miss_factor(record)
    text = f"it fails its accuracy check at {precision} ({_accuracy_detail(record)}). "
    if factor is not None and factor > ACCURACY_BUG_FACTOR:
        text += (f"The error is {factor:,.0f}x the tolerance, more than rounding explains: "
                 "check for overflow, a bug or a wrong reference first. ")
    if exceeded:
        metric, _, tolerance = exceeded[0]
        text += (f"If that error is acceptable, loosen bench.yaml tolerances.{precision}."
                 f"{metric} (now {_num(tolerance)})")
    else:
        text += "Fix the output's shape, dtype or non-finite values"
    text += f"; otherwise run it at {wider}." if wider else "."
    return Recommendation("accuracy", (_cid(record),), text)


def _failure_advice(results: Sequence[Record],
                    settings: Mapping[str, Any]) -> list[Recommendation]:
    def ids(status: str) -> tuple[str, ...]:
        return tuple(_cid(r) for r in results
                     if r.get("status") == status and not _accuracy_failed(r))

    files = sorted({f"kernels/{safe_filename(str(r.get('kernel_name')))}.json" for r in results
                    if r.get("status") == "failed" and not _accuracy_failed(r)})
    timeout = settings.get("timeout_s")
    advice = {
        "failure": f"the traceback is in worker.traceback of {', '.join(files)}. If a case "
                   "cannot run on this machine, declare it in bench.yaml skip_conditions so it "
                   "is reported as skipped.",
        "timeout": "raise --timeout" + (f" (now {_num(_number(timeout))} s)" if timeout else "")
                   + " or the kernel's bench.yaml timeout_s, or shrink its problem_size; a "
                   "kernel that hangs needs fixing.",
        "invalid": "fix the kernel file or bench.yaml named in the reason.",
    }  # fmt: skip
    pairs = (("failure", ids("failed")), ("timeout", ids("timeout")),
             ("invalid", ids("invalid")))
    return [Recommendation(kind, found, advice[kind]) for kind, found in pairs if found]


def _narrow_advice(results: Sequence[Record]) -> list[Recommendation]:
    grouped: dict[tuple[str, str], list[Record]] = {}
    for narrow, _ in _slower_pairs(results):
        key = (str(narrow.get("kernel_name")), str(narrow.get("backend")))
        grouped.setdefault(key, []).append(narrow)
    return [Recommendation("narrow_slower", tuple(_cid(r) for r in cases), (
        f"on {backend}, {kernel} is slower at "
        f"{' and '.join(dict.fromkeys(str(r.get('precision')) for r in cases))} than at fp32: "
        "the backend probably lacks native arithmetic for them and converts on every call. "
        f"Use fp32 for {kernel} on {backend}, or run the narrow precisions on a device with "
        "native support."))
        for (kernel, backend), cases in grouped.items()]


def _memory_advice(results: Sequence[Record]) -> list[Recommendation]:
    grouped: dict[str, list[tuple[Record, float]]] = {}
    for narrow, wide, ratio in _grown_pairs(results):
        grouped.setdefault(_cid(wide), []).append((narrow, ratio))
    return [Recommendation("memory_growth", tuple(_cid(n) for n, _ in cases), (
        f"more memory than {wide} ({', '.join(f'{r:.2f}x' for _, r in cases)}) with smaller "
        "elements: look for copies of the inputs upcast to a wider type; convert in chunks or "
        "compute in the narrow type."))
        for wide, cases in grouped.items()]


def _peak_pct(record: Record) -> tuple[str, float] | None:
    """('compute' | 'bandwidth', % of peak) on the resource that bounds the case."""
    work = record.get("work") or {}
    compute = _number(work.get("pct_peak_compute"))
    bandwidth = _number(work.get("pct_peak_bandwidth"))
    if work.get("bound") == "compute" and compute is not None:
        return "compute", compute
    if work.get("bound") == "memory" and bandwidth is not None:
        return "bandwidth", bandwidth
    known = [(v, k) for k, v in (("compute", compute), ("bandwidth", bandwidth)) if v is not None]
    return (max(known)[1], max(known)[0]) if known else None


def _peak_advice(results: Sequence[Record]) -> list[Recommendation]:
    low: dict[str, list[tuple[str, float]]] = {"compute": [], "bandwidth": []}
    for record in _ok(results):
        found = _peak_pct(record)
        if found is not None and found[1] < LOW_PCT_PEAK:
            low[found[0]].append((_cid(record), found[1]))
    advice = {
        "compute": "compute-bound, yet under {limit}% of peak compute ({cases}): check that "
                   "the inner loop vectorises or calls the vendor BLAS, on contiguous data.",
        "bandwidth": "under {limit}% of peak bandwidth, which bounds them or is the only "
                     "peak known ({cases}): look at memory access (strided or scattered reads, "
                     "copies, type conversions) and fuse passes so each element is read and "
                     "written once.",
    }  # fmt: skip
    return [Recommendation(f"low_peak_{kind}", tuple(c for c, _ in cases), advice[kind].format(
        limit=_num(LOW_PCT_PEAK), cases=", ".join(f"{c} {_num(p, 3)}%" for c, p in cases)))
        for kind, cases in low.items() if cases]


def _backend_advice(results: Sequence[Record]) -> list[Recommendation]:
    table: dict[str, dict[str, dict[tuple[str, str], Record]]] = {}
    for record in _ok(results):
        by_backend = table.setdefault(str(record.get("kernel_name")), {})
        key = (str(record.get("precision")), _shape(record))
        by_backend.setdefault(str(record.get("backend")), {})[key] = record
    found = []
    for kernel, backends in sorted(table.items()):
        for slow in sorted(backends):
            for fast in sorted(backends):
                found.extend(_backend_pair(kernel, backends[slow], backends[fast], slow, fast))
    return found


def _backend_pair(kernel: str, slow: Mapping[tuple[str, str], Record],
                  fast: Mapping[tuple[str, str], Record], slow_name: str,
                  fast_name: str) -> list[Recommendation]:
    shared = sorted(set(slow) & set(fast))
    if slow_name == fast_name or not shared:
        return []
    if not all(_clearly_slower(slow[k], fast[k]) for k in shared):
        return []
    mean = math.exp(sum(math.log(_ratio(slow[k], fast[k])) for k in shared) / len(shared))
    ids = tuple(dict.fromkeys(_cid(slow[k]) for k in shared))  # ids omit the problem size
    return [Recommendation("backend_slower", ids, (
        f"{kernel} is slower on {slow_name} than on {fast_name} for every shape and precision "
        f"run on both ({len(shared)}; geometric mean {mean:.2f}x). Prefer {fast_name} for "
        f"{kernel}."))]


def _comparison_advice(comparison: Mapping[str, Any] | None
                       ) -> tuple[list[Recommendation], list[Recommendation]]:
    """(advice on regressed cases, advice on inconclusive ones)."""
    if not comparison or comparison.get("baseline_note"):
        return [], []
    cases = [c for c in comparison.get("cases") or [] if isinstance(c, Mapping)]
    commit = (comparison.get("baseline") or {}).get("commit")
    regressed = tuple(str(c.get("label") or c.get("key")) for c in cases
                      if c.get("verdict") == "regressed"
                      or (c.get("accuracy_drift") or {}).get("flagged"))
    undecided = tuple(str(c.get("label") or c.get("key")) for c in cases
                      if c.get("verdict") == "inconclusive" and _number(c.get("ratio")))
    worse = [Recommendation("regression", regressed, (
        f"slower or less accurate than the baseline: look at the changes"
        f"{f' since {commit}' if commit else ''}, and confirm on one machine with an "
        "interleaved A/B run (--ab REF) before reverting."))] if regressed else []
    unsure = [Recommendation("inconclusive", undecided, (
        "measured on both sides, but the interval of the ratio is too wide to decide. "
        "Compare with more worker processes per case (--processes) or with an interleaved "
        "A/B run (--ab REF)."))] if undecided else []
    return worse, unsure


# --- regressions --------------------------------------------------------------------------


def regression_digest(comparison: Mapping[str, Any] | None) -> RegressionDigest | None:
    """The verdict, counts and significant changes of a comparison; None without one."""
    if not comparison:
        return None
    settings = comparison.get("settings") or {}
    counts = comparison.get("counts") or {}
    changes = sorted((_change(c) for c in comparison.get("cases") or []
                      if isinstance(c, Mapping) and _significant(c)), key=_impact)
    return RegressionDigest(
        verdict=str(comparison.get("verdict") or "n/a"),
        regression=bool(comparison.get("regression")),
        compared=not comparison.get("baseline_note"),
        counts=tuple((v, int(counts.get(v) or 0)) for v in VERDICTS),
        changes=tuple(changes), threshold=_number(settings.get("threshold")),
        alpha=_number(settings.get("alpha")),
        baseline_commit=(comparison.get("baseline") or {}).get("commit"))


def _significant(case: Mapping[str, Any]) -> bool:
    return (case.get("verdict") in ("regressed", "improved")
            or bool((case.get("accuracy_drift") or {}).get("flagged")))


def _change(case: Mapping[str, Any]) -> Change:
    drift = case.get("accuracy_drift") or {}
    drift_text = (f"{drift.get('metric')} {_num(_number(drift.get('baseline')), 3)} → "
                  f"{_num(_number(drift.get('candidate')), 3)}") if drift.get("flagged") else None
    return Change(case_id=str(case.get("label") or case.get("key")),
                  verdict=str(case.get("verdict")), ratio=_number(case.get("ratio")),
                  ci_low=_number(case.get("ci_low")), ci_high=_number(case.get("ci_high")),
                  q_value=_number(case.get("q_value")),
                  baseline_p50_ms=_number(case.get("baseline_p50_ms")),
                  candidate_p50_ms=_number(case.get("candidate_p50_ms")),
                  accuracy_drift=drift_text)


def _impact(change: Change) -> tuple[float, str]:
    """Largest change first (|log ratio|); unknown ratios first, as regressions.md does."""
    ratio = change.ratio
    size = abs(math.log(ratio)) if ratio is not None and ratio > 0 else math.inf
    return -size, change.case_id
