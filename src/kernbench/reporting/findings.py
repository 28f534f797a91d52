"""Key findings and recommendations of a run, as data (the regression digest: :mod:`digest`).

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

from kernbench.reporting.digest import Change, RegressionDigest, regression_digest  # re-exported
from kernbench.reporting.implementations import implementation_tables
from kernbench.reporting.views import (
    PROBLEM_STATUSES,
    Record,
    case_id,
    ci95_ms,
    comparison_label,
    dig,
    fmt_num,
    mappings,
    number,
    p50_ms,
)
from kernbench.results.files import safe_filename

__all__ = [
    "ACCURACY_BUG_FACTOR", "LOW_PCT_PEAK", "MEMORY_GROWTH_RATIO", "NARROW_PRECISIONS",
    "NOISY_CI_RATIO", "NO_RECOMMENDATIONS", "TAIL_RATIO", "Change", "Finding",
    "Recommendation", "RegressionDigest", "group_findings", "key_findings", "recommendations",
    "regression_digest",
]  # fmt: skip

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

FINDING_GROUPS = {
    "fastest": "Fastest", "slowest": "Slowest", "implementations": "Implementations",
    "unstable": "Unstable",
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


# --- reading records ----------------------------------------------------------------------


def _timed(results: Iterable[Record]) -> list[Record]:
    return [r for r in results if p50_ms(r) is not None]


def _ok(results: Iterable[Record]) -> list[Record]:
    ok = [r for r in _timed(results) if r.get("status") == "ok"]
    return sorted(ok, key=lambda r: (p50_ms(r), str(r.get("case_id"))))


def _ci_text(record: Record) -> str:
    ci = ci95_ms(record)
    return f" (95% CI {fmt_num(ci[0])} – {fmt_num(ci[1])} ms)" if ci else ""


def _clearly_slower(slow: Record, fast: Record) -> bool:
    slow_p50, fast_p50 = p50_ms(slow), p50_ms(fast)
    if slow_p50 is None or not fast_p50 or slow_p50 <= fast_p50:
        return False
    slow_ci, fast_ci = ci95_ms(slow), ci95_ms(fast)
    return slow_ci is None or fast_ci is None or slow_ci[0] > fast_ci[1]


def _ratio(slow: Record, fast: Record) -> float:
    return (p50_ms(slow) or 0.0) / (p50_ms(fast) or math.inf)


def _shape(record: Record) -> str:
    """The problem size as a sort key (None is "null", unlike :func:`views.size_json`), with
    the implementation for a kernel that has several: cases pair up within one."""
    size = json.dumps(record.get("problem_size"), sort_keys=True, default=str)
    impl = record.get("implementation")
    return f"{size} impl={impl}" if impl else size


# --- findings -----------------------------------------------------------------------------


def key_findings(document: Mapping[str, Any]) -> list[Finding]:
    """Every finding of the run, grouped in the order of the module docstring."""
    results = mappings(document.get("results"))
    return [*_extremes(results), *_best_implementations(document), *_unstable(results),
            *_accuracy_failures(results),
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
    return [Finding(kind, case_id(r), f"{case_id(r)}: {fmt_num(p50_ms(r))} ms p50"
                    f"{_ci_text(r)}", p50_ms(r)) for kind, r in ends]


def _best_implementations(document: Mapping[str, Any]) -> list[Finding]:
    """Per kernel with several implementations: the one with the highest geometric-mean
    speedup over the reference (the reference itself when none beats it)."""
    found = []
    for table in implementation_tables(document):
        ranked = sorted(((g, n) for n, g in table.geomean_speedup.items() if g is not None),
                        reverse=True)
        if not ranked:
            continue
        best, name = ranked[0]
        rows = table.geomean_rows[name]
        message = (f"{table.kernel}: {name} is the reference and none beats it" if
                   name == table.reference else
                   f"{table.kernel}: {name} is fastest, {best:.2f}x the reference "
                   f"{table.reference} (geometric mean over {rows} shape{'s' * (rows != 1)})")
        found.append(Finding("implementations", f"{table.kernel}[impl={name}]", message, best))
    return found


def _spread_warning(record: Record) -> float | None:
    for warning in record.get("warnings") or []:
        if isinstance(warning, Mapping) and warning.get("code") == "high_spread":
            return number(warning.get("value"))
    return None


def _unstable(results: Sequence[Record]) -> list[Finding]:
    found = []
    for record in _timed(results):
        p50, ci, spread = p50_ms(record), ci95_ms(record), _spread_warning(record)
        iqr = f"; IQR is {spread:.0%} of the median" if spread is not None else ""
        name = case_id(record)
        if ci is not None and p50 and (ci[1] - ci[0]) / p50 > NOISY_CI_RATIO:
            width = (ci[1] - ci[0]) / p50
            found.append(Finding("unstable", name, f"{name}: the 95% CI of the median, "
                                 f"{fmt_num(ci[0])} – {fmt_num(ci[1])} ms, spans {width:.0%} "
                                 f"of its p50 {fmt_num(p50)} ms{iqr}", width))
        elif ci is None and spread is not None:
            found.append(Finding("unstable", name, f"{name}: too few samples "
                                 f"for a CI of the median{iqr}", spread))
    return sorted(found, key=lambda f: (-(f.value or 0.0), f.case_id))


def _exceeded(record: Record) -> list[tuple[str, float | None, float | None]]:
    """(metric, value, tolerance) for each tolerance the case's accuracy exceeded."""
    accuracy = record.get("accuracy") or {}
    tolerances = accuracy.get("tolerances") or {}
    return [(str(m), number(accuracy.get(m)), number(tolerances.get(m)))
            for m in accuracy.get("exceeded") or []]


def _accuracy_detail(record: Record) -> str:
    accuracy = record.get("accuracy") or {}
    parts = [f"{m} {fmt_num(v)} > {fmt_num(t)}" for m, v, t in _exceeded(record)]
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
    return [Finding("accuracy_failure", case_id(r), f"{case_id(r)}: {_accuracy_detail(r)}",
                    _miss_factor(r)) for r in results if _accuracy_failed(r)]


def _reason(record: Record, limit: int = 160) -> str:
    lines = str(record.get("reason") or "no reason recorded").strip().splitlines()
    text = lines[0] if lines else "no reason recorded"
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _failures(results: Sequence[Record]) -> list[Finding]:
    verbs = {"failed": "failed", "timeout": "timed out", "invalid": "is invalid"}
    return [Finding("failure", case_id(r), f"{case_id(r)} {verbs[str(r['status'])]}: {_reason(r)}")
            for r in results
            if r.get("status") in PROBLEM_STATUSES and not _accuracy_failed(r)]


def _narrow_pairs(results: Sequence[Record]) -> list[tuple[Record, Record]]:
    """(narrow, fp32) successful cases of the same kernel, backend and problem size."""
    fp32 = {(r.get("kernel_name"), r.get("backend"), _shape(r)): r
            for r in _ok(results) if r.get("precision") == "fp32"}
    pairs = []
    for record in sorted(_ok(results), key=case_id):
        wide = fp32.get((record.get("kernel_name"), record.get("backend"), _shape(record)))
        if wide is not None and record.get("precision") in NARROW_PRECISIONS:
            pairs.append((record, wide))
    return pairs


def _slower_pairs(results: Sequence[Record]) -> list[tuple[Record, Record]]:
    return [(n, w) for n, w in _narrow_pairs(results) if _clearly_slower(n, w)]


def _narrow_slower(results: Sequence[Record]) -> list[Finding]:
    return [Finding("narrow_slower", case_id(n), f"{case_id(n)} is {_ratio(n, w):.2f}x slower than "
                    f"{case_id(w)} ({fmt_num(p50_ms(n))} vs "
                    f"{fmt_num(p50_ms(w))} ms p50)", _ratio(n, w))
            for n, w in _slower_pairs(results)]


def _tails(results: Sequence[Record]) -> list[Finding]:
    found = []
    for record in _timed(results):
        p50, p99 = p50_ms(record), number(dig(record, "timing", "latency_ms_p99"))
        if p50 and p99 is not None and p99 / p50 > TAIL_RATIO:
            found.append(Finding("tail_latency", case_id(record), f"{case_id(record)}: p99 "
                                 f"{fmt_num(p99)} ms is {p99 / p50:.1f}x its p50 {fmt_num(p50)} ms",
                                 p99 / p50))
    return found


def _growth(record: Record) -> float | None:
    return number(dig(record, "memory", "allocated_mb"))


def _grown_pairs(results: Sequence[Record]) -> list[tuple[Record, Record, float]]:
    pairs = []
    for narrow, wide in _narrow_pairs(results):
        grown, base = _growth(narrow), _growth(wide)
        if grown is not None and base and base > 0 and grown > MEMORY_GROWTH_RATIO * base:
            pairs.append((narrow, wide, grown / base))
    return pairs


def _memory_growth(results: Sequence[Record]) -> list[Finding]:
    return [Finding("memory_growth", case_id(n), f"{case_id(n)} grew {fmt_num(_growth(n))} MB, "
                    f"{ratio:.2f}x the {fmt_num(_growth(w))} MB of {case_id(w)}, though its "
                    "elements are half the size or less", ratio)
            for n, w, ratio in _grown_pairs(results)]


# --- recommendations ----------------------------------------------------------------------


def recommendations(document: Mapping[str, Any],
                    comparison: Mapping[str, Any] | None = None) -> list[Recommendation]:
    """Advice generated from the data, each tied to the cases that called for it.

    Correctness first (accuracy, failures, regressions), then measurement quality, then
    performance. Empty when nothing calls for advice; show `NO_RECOMMENDATIONS` then.
    """
    results, settings = mappings(document.get("results")), document.get("settings") or {}
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
                 f"{metric} (now {fmt_num(tolerance)})")
    else:
        text += "Fix the output's shape, dtype or non-finite values"
    text += f"; otherwise run it at {wider}." if wider else "."
    return Recommendation("accuracy", (case_id(record),), text)


def _failure_advice(results: Sequence[Record],
                    settings: Mapping[str, Any]) -> list[Recommendation]:
    def ids(status: str) -> tuple[str, ...]:
        return tuple(case_id(r) for r in results
                     if r.get("status") == status and not _accuracy_failed(r))

    files = sorted({f"kernels/{safe_filename(str(r.get('kernel_name')))}.json" for r in results
                    if r.get("status") == "failed" and not _accuracy_failed(r)})
    timeout = settings.get("timeout_s")
    advice = {
        "failure": f"the traceback is in worker.traceback of {', '.join(files)}. If a case "
                   "cannot run on this machine, declare it in bench.yaml skip_conditions so it "
                   "is reported as skipped.",
        "timeout": "raise --timeout" + (f" (now {fmt_num(number(timeout))} s)" if timeout else "")
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
    return [Recommendation("narrow_slower", tuple(case_id(r) for r in cases), (
        f"on {backend}, {kernel} is slower at "
        f"{' and '.join(dict.fromkeys(str(r.get('precision')) for r in cases))} than at fp32: "
        "the backend probably lacks native arithmetic for them and converts on every call. "
        f"Use fp32 for {kernel} on {backend}, or run the narrow precisions on a device with "
        "native support."))
        for (kernel, backend), cases in grouped.items()]


def _memory_advice(results: Sequence[Record]) -> list[Recommendation]:
    grouped: dict[str, list[tuple[Record, float]]] = {}
    for narrow, wide, ratio in _grown_pairs(results):
        grouped.setdefault(case_id(wide), []).append((narrow, ratio))
    return [Recommendation("memory_growth", tuple(case_id(n) for n, _ in cases), (
        f"more memory than {wide} ({', '.join(f'{r:.2f}x' for _, r in cases)}) with smaller "
        "elements: look for copies of the inputs upcast to a wider type; convert in chunks or "
        "compute in the narrow type."))
        for wide, cases in grouped.items()]


def _peak_pct(record: Record) -> tuple[str, float] | None:
    """('compute' | 'bandwidth', % of peak) on the resource that bounds the case."""
    work = record.get("work") or {}
    compute = number(work.get("pct_peak_compute"))
    bandwidth = number(work.get("pct_peak_bandwidth"))
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
            low[found[0]].append((case_id(record), found[1]))
    advice = {
        "compute": "compute-bound, yet under {limit}% of peak compute ({cases}): check that "
                   "the inner loop vectorises or calls the vendor BLAS, on contiguous data.",
        "bandwidth": "under {limit}% of peak bandwidth, which bounds them or is the only "
                     "peak known ({cases}): look at memory access (strided or scattered reads, "
                     "copies, type conversions) and fuse passes so each element is read and "
                     "written once.",
    }  # fmt: skip
    return [Recommendation(f"low_peak_{kind}", tuple(c for c, _ in cases), advice[kind].format(
        limit=fmt_num(LOW_PCT_PEAK), cases=", ".join(f"{c} {fmt_num(p, 3)}%" for c, p in cases)))
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
    ids = tuple(dict.fromkeys(case_id(slow[k]) for k in shared))  # ids omit the problem size
    return [Recommendation("backend_slower", ids, (
        f"{kernel} is slower on {slow_name} than on {fast_name} for every shape and precision "
        f"run on both ({len(shared)}; geometric mean {mean:.2f}x). Prefer {fast_name} for "
        f"{kernel}."))]


def _comparison_advice(comparison: Mapping[str, Any] | None
                       ) -> tuple[list[Recommendation], list[Recommendation]]:
    """(advice on regressed cases, advice on inconclusive ones)."""
    if not comparison or comparison.get("baseline_note"):
        return [], []
    cases = mappings(comparison.get("cases"))
    commit = dig(comparison, "baseline", "commit")
    regressed = tuple(comparison_label(c) for c in cases
                      if c.get("verdict") == "regressed"
                      or (c.get("accuracy_drift") or {}).get("flagged"))
    undecided = tuple(comparison_label(c) for c in cases
                      if c.get("verdict") == "inconclusive" and number(c.get("ratio")))
    worse = [Recommendation("regression", regressed, (
        f"slower or less accurate than the baseline: look at the changes"
        f"{f' since {commit}' if commit else ''}, and confirm on one machine with an "
        "interleaved A/B run (--ab REF) before reverting."))] if regressed else []
    unsure = [Recommendation("inconclusive", undecided, (
        "measured on both sides, but the interval of the ratio is too wide to decide. "
        "Compare with more worker processes per case (--processes) or with an interleaved "
        "A/B run (--ab REF)."))] if undecided else []
    return worse, unsure
