"""Recommendations: advice generated from a run's data, each tied to the cases that called for it.

Pure functions over the summary document (summary.json), the findings of
:mod:`kernbench.reporting.findings` and, when the run was compared with a baseline, the
comparison document. Correctness first (accuracy, failures, regressions), then measurement
quality, then performance; see :func:`recommendations`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kernbench.reporting.findings import (
    NOISY_CI_RATIO,
    TAIL_RATIO,
    Finding,
    accuracy_detail,
    accuracy_failed,
    clearly_slower,
    exceeded_tolerances,
    grown_pairs,
    key_findings,
    miss_factor,
    narrow_pairs,
    ok_cases,
    p50_ratio,
    shape_key,
    slower_pairs,
)
from kernbench.reporting.views import (
    Record,
    case_id,
    comparison_label,
    dig,
    fmt_num,
    mappings,
    number,
)
from kernbench.results.files import safe_filename
from kernbench.results.vocabulary import has_ab, knob

__all__ = ["ACCURACY_BUG_FACTOR", "LOW_PCT_PEAK", "NO_RECOMMENDATIONS", "Recommendation",
           "accuracy_recommendation", "backend_advice", "capped", "comparison_advice",
           "failure_advice", "failure_file", "memory_advice", "narrow_advice", "noise_advice",
           "peak_advice", "peak_pct", "recommendations", "tail_advice"]

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
WIDER_PRECISION = {"fp8": "fp16", "fp8_e4m3": "fp16", "fp8_e5m2": "fp16", "int8": "fp16",
                   "bf16": "fp32", "fp16": "fp32", "fp32": "fp64"}
NO_RECOMMENDATIONS = ("Nothing to recommend: no failures, no accuracy problems, no noisy "
                      "measurements and no performance anomalies were found.")

RECOMMENDATION_TITLES = {
    "noise": "Reduce measurement noise", "tail_latency": "Find the slow calls",
    "accuracy": "Fix accuracy", "failure": "Fix failing cases", "timeout": "Fix timeouts",
    "invalid": "Fix invalid kernels", "narrow_slower": "Precision choice",
    "memory_growth": "Memory use", "low_peak_compute": "Low % of peak compute",
    "low_peak_bandwidth": "Low % of peak bandwidth", "backend_slower": "Backend choice",
    "regression": "Regressions", "inconclusive": "Inconclusive comparisons",
}  # fmt: skip




@dataclass(frozen=True)
class Recommendation:
    """Advice, with the cases whose data called for it."""

    kind: str
    case_ids: tuple[str, ...]
    message: str
    more: int = 0
    """Cases that called for it too, beyond `case_ids` (a large run lists the first only)."""

    @property
    def title(self) -> str:
        return RECOMMENDATION_TITLES.get(self.kind, self.kind)



def recommendations(document: Mapping[str, Any],
                    comparison: Mapping[str, Any] | None = None) -> list[Recommendation]:
    """Advice generated from the data, each tied to the cases that called for it.

    Correctness first (accuracy, failures, regressions), then measurement quality, then
    performance. Empty when nothing calls for advice; show `NO_RECOMMENDATIONS` then.
    """
    results, settings = mappings(document.get("results")), document.get("settings") or {}
    findings = key_findings(document)
    regressed, inconclusive = comparison_advice(comparison, settings.get("runner"))
    pairs = narrow_pairs(results)
    return [*map(accuracy_recommendation, filter(accuracy_failed, results)),
            *_failure_advice(results), *regressed,
            *noise_advice(_ids(findings, "unstable"), settings),
            *tail_advice(_ids(findings, "tail_latency"), settings),
            *narrow_advice(slower_pairs(results, pairs)),
            *memory_advice(grown_pairs(results, pairs)),
            *_peak_advice(results), *backend_advice(results), *inconclusive]


def _ids(findings: Iterable[Finding], kind: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f.case_id for f in findings if f.kind == kind))


def _knob(settings: Mapping[str, Any], key: str) -> str:
    """The knob of `key` for the report set's runner (``settings.runner``: ``pytest`` for the
    plugin's saved sets; absent for ``kernbench run``)."""
    return knob(key, settings.get("runner"))


def _setting(settings: Mapping[str, Any], key: str) -> str:
    value = settings.get(key)
    return "" if value is None else f", now {value}"


def noise_advice(ids: tuple[str, ...], settings: Mapping[str, Any],
                 more: int = 0) -> list[Recommendation]:
    """Advice on the unstable cases `ids` (and `more` not listed)."""
    if not ids:
        return []
    return [Recommendation("noise", ids, more=more, message=(
        f"these medians are too imprecise to show a {NOISY_CI_RATIO:.0%} change. Take more "
        f"samples ({_knob(settings, 'iterations')}{_setting(settings, 'iterations')}; "
        f"{_knob(settings, 'processes')}{_setting(settings, 'processes')}), pin the run to "
        "idle cores (taskset -c, "
        "isolcpus) and benchmark on a quiet machine: no other jobs, fixed CPU frequency."))]


def tail_advice(ids: tuple[str, ...], settings: Mapping[str, Any],
                more: int = 0) -> list[Recommendation]:
    """Advice on the cases `ids` (and `more` not listed) whose slow calls stand out."""
    if not ids:
        return []
    return [Recommendation("tail_latency", ids, more=more, message=(
        f"some calls take over {TAIL_RATIO:g}x the median. Look for interference (other "
        "processes, garbage collection, page faults, frequency changes) or a slow path that "
        f"some inputs take; if the slow calls come first, raise {_knob(settings, 'warmup')}"
        f"{_setting(settings, 'warmup')}."))]


def accuracy_recommendation(record: Record) -> Recommendation:
    """Advice on one case that failed its accuracy check."""
    precision = str(record.get("precision") or "this precision")
    exceeded = exceeded_tolerances(record)
    wider = WIDER_PRECISION.get(precision)
    factor = miss_factor(record)
    text = f"it fails its accuracy check at {precision} ({accuracy_detail(record)}). "
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


def _failure_advice(results: Sequence[Record]) -> list[Recommendation]:
    ids = {status: tuple(case_id(r) for r in results
                         if r.get("status") == status and not accuracy_failed(r))
           for status in FAILURE_KINDS}
    files = sorted({failure_file(r) for r in results
                    if r.get("status") == "failed" and not accuracy_failed(r)})
    return failure_advice(ids, files)


FAILURE_KINDS = {"failed": "failure", "timeout": "timeout", "invalid": "invalid"}
"""Status -> the kind of advice a case of that status calls for."""


def failure_file(record: Record) -> str:
    """The kernel file that holds a failed case's traceback."""
    return f"kernels/{safe_filename(str(record.get('kernel_name')))}.json"


def failure_advice(ids: Mapping[str, tuple[str, ...]], files: Sequence[str],
                   more: Mapping[str, int] | None = None,
                   more_files: int = 0) -> list[Recommendation]:
    """Advice on the failed, timed-out and invalid cases `ids` (by status; `more` of each
    not listed) and the kernel `files` holding the tracebacks (`more_files` not listed)."""
    also = f" and {more_files} more" if more_files else ""
    advice = {
        "failure": f"the traceback is in worker.traceback of {', '.join(files)}{also}. If a "
                   "case cannot run on this machine, declare it in bench.yaml skip_conditions "
                   "so it is reported as skipped.",
        "timeout": "raise the kernel's bench.yaml timeout_s, or --timeout where it has none "
                   "(each case's reason gives the limit it ran under), or shrink its "
                   "problem_size; a kernel that hangs needs fixing.",
        "invalid": "fix the kernel file or bench.yaml named in the reason.",
    }  # fmt: skip
    return [Recommendation(kind, ids[status], advice[kind], (more or {}).get(status, 0))
            for status, kind in FAILURE_KINDS.items() if ids.get(status)]


def narrow_advice(slower: Iterable[tuple[Record, Record]]) -> list[Recommendation]:
    """Advice per kernel and backend whose narrow precisions are clearly slower than fp32."""
    grouped: dict[tuple[str, str], list[Record]] = {}
    for narrow, _ in slower:
        key = (str(narrow.get("kernel_name")), str(narrow.get("backend")))
        grouped.setdefault(key, []).append(narrow)
    return [Recommendation("narrow_slower", tuple(case_id(r) for r in cases), (
        f"on {backend}, {kernel} is slower at "
        f"{' and '.join(dict.fromkeys(str(r.get('precision')) for r in cases))} than at fp32: "
        "the backend probably lacks native arithmetic for them and converts on every call. "
        f"Use fp32 for {kernel} on {backend}, or run the narrow precisions on a device with "
        "native support."))
        for (kernel, backend), cases in grouped.items()]


def memory_advice(grown: Iterable[tuple[Record, Record, float]]) -> list[Recommendation]:
    """Advice per fp32 case whose narrow precisions grew clearly more memory."""
    grouped: dict[str, list[tuple[Record, float]]] = {}
    for narrow, wide, ratio in grown:
        grouped.setdefault(case_id(wide), []).append((narrow, ratio))
    return [Recommendation("memory_growth", tuple(case_id(n) for n, _ in cases), (
        f"more memory than {wide} ({', '.join(f'{r:.2f}x' for _, r in cases)}) with smaller "
        "elements: look for copies of the inputs upcast to a wider type; convert in chunks or "
        "compute in the narrow type."))
        for wide, cases in grouped.items()]


def peak_pct(record: Record) -> tuple[str, float] | None:
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
    for record in ok_cases(results):
        found = peak_pct(record)
        if found is not None and found[1] < LOW_PCT_PEAK:
            low[found[0]].append((case_id(record), found[1]))
    return peak_advice(low)


def peak_advice(low: Mapping[str, Sequence[tuple[str, float]]],
                more: Mapping[str, int] | None = None) -> list[Recommendation]:
    """Advice on the cases far below peak, by resource: (case id, % of peak), fastest first
    (and `more` of each not listed)."""
    advice = {
        "compute": "compute-bound, yet under {limit}% of peak compute ({cases}): check that "
                   "the inner loop vectorises or calls the vendor BLAS, on contiguous data.",
        "bandwidth": "under {limit}% of peak bandwidth, which bounds them or is the only "
                     "peak known ({cases}): look at memory access (strided or scattered reads, "
                     "copies, type conversions) and fuse passes so each element is read and "
                     "written once.",
    }  # fmt: skip
    found = []
    for kind, cases in low.items():
        if not cases:
            continue
        extra = (more or {}).get(kind, 0)
        listed = ", ".join(f"{c} {fmt_num(p, 3)}%" for c, p in cases) + (
            f" and {extra} more" if extra else "")
        found.append(Recommendation(f"low_peak_{kind}", tuple(c for c, _ in cases),
                                    advice[kind].format(limit=fmt_num(LOW_PCT_PEAK),
                                                        cases=listed), extra))
    return found


def backend_advice(results: Sequence[Record], ok: Sequence[Record] | None = None,
                   shape: Callable[[Record], str] = shape_key) -> list[Recommendation]:
    """Advice per kernel that is clearly slower on one backend than on another everywhere
    (`ok` and `shape` as :func:`kernbench.reporting.findings.narrow_pairs` takes them)."""
    table: dict[str, dict[str, dict[tuple[str, str], Record]]] = {}
    for record in ok_cases(results) if ok is None else ok:
        by_backend = table.setdefault(str(record.get("kernel_name")), {})
        key = (str(record.get("precision")), shape(record))
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
    if not all(clearly_slower(slow[k], fast[k]) for k in shared):
        return []
    mean = math.exp(sum(math.log(p50_ratio(slow[k], fast[k])) for k in shared) / len(shared))
    ids = tuple(dict.fromkeys(case_id(slow[k]) for k in shared))  # ids omit the problem size
    return [Recommendation("backend_slower", ids, (
        f"{kernel} is slower on {slow_name} than on {fast_name} for every shape and precision "
        f"run on both ({len(shared)}; geometric mean {mean:.2f}x). Prefer {fast_name} for "
        f"{kernel}."))]


def comparison_advice(comparison: Mapping[str, Any] | None, runner: str | None = None
                      ) -> tuple[list[Recommendation], list[Recommendation]]:
    """(advice on regressed cases, advice on inconclusive ones), in the knobs of the run's
    entry point (`runner`: a report set's ``settings.runner``; only the CLI has ``--ab``)."""
    if not comparison or comparison.get("baseline_note"):
        return [], []
    cases = mappings(comparison.get("cases"))
    commit = dig(comparison, "baseline", "commit")
    regressed = tuple(comparison_label(c) for c in cases
                      if c.get("verdict") == "regressed"
                      or (c.get("accuracy_drift") or {}).get("flagged"))
    undecided = tuple(comparison_label(c) for c in cases
                      if c.get("verdict") == "inconclusive" and number(c.get("ratio")))
    cli = has_ab(runner)
    more = knob("processes", runner) if cli else f"{knob('processes', runner, 3)} or more"
    confirm = ("on one machine with an interleaved A/B run (--ab REF)" if cli else
               f"by measuring both again on a quiet machine with {more}")
    worse = [Recommendation("regression", regressed, (
        f"slower or less accurate than the baseline: look at the changes"
        f"{f' since {commit}' if commit else ''}, and confirm {confirm} before "
        "reverting."))] if regressed else []
    unsure = [Recommendation("inconclusive", undecided, (
        "measured on both sides, but the interval of the ratio is too wide to decide. "
        f"Compare with more worker processes per case ({more})"
        f"{' or with an interleaved A/B run (--ab REF)' if cli else ''}."))] \
        if undecided else []
    return worse, unsure


def capped(limit: int, found: Iterable[Recommendation]) -> list[Recommendation]:
    """`found`, each naming at most `limit` case ids (the rest counted in ``more``)."""
    return [advice if len(advice.case_ids) <= limit else
            replace(advice, case_ids=advice.case_ids[:limit],
                    more=advice.more + len(advice.case_ids) - limit) for advice in found]
