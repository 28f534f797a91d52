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
* **caveats**: what a successful case's figure may not mean (:mod:`kernbench.reporting.caveats`).

"Timed" cases are those with a median, whatever their status (a case that failed only its
accuracy check was still timed). "Clearly slower" means a larger median whose 95% CI lies
wholly above the other's; when either CI is unknown, a larger median.

The advice these findings call for is :mod:`kernbench.reporting.recommendations`; the helpers
below that judge one record or a pair (``clearly_slower``, ``slower_pairs``, ...) serve both.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kernbench.reporting.caveats import caveats
from kernbench.reporting.finding import Finding
from kernbench.reporting.gpu_modes import mode_suffix
from kernbench.reporting.implementations import ImplementationTable, implementation_tables
from kernbench.reporting.views import (
    PROBLEM_STATUSES,
    Record,
    case_id,
    ci95_ms,
    dig,
    fmt_num,
    mappings,
    number,
    p50_ms,
)
from kernbench.results.vocabulary import (
    NARROW_PRECISIONS,
)

__all__ = [
    "MEMORY_GROWTH_RATIO", "NARROW_PRECISIONS", "NOISY_CI_RATIO", "TAIL_RATIO", "Finding",
    "accuracy_detail", "accuracy_failed", "accuracy_finding", "best_implementations",
    "clearly_slower", "exceeded_tolerances", "extreme_finding", "failure_finding",
    "group_findings", "grown_pairs", "growth_findings", "is_failure", "key_findings",
    "miss_factor", "narrow_findings", "narrow_pairs", "ok_cases", "p50_ratio", "shape_key",
    "slower_pairs", "tail_finding", "unstable_finding", "unstable_order",
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

# --- reading records ----------------------------------------------------------------------


def _timed(results: Iterable[Record]) -> list[Record]:
    return [r for r in results if p50_ms(r) is not None]


def ok_cases(results: Iterable[Record]) -> list[Record]:
    ok = [r for r in _timed(results) if r.get("status") == "ok"]
    return sorted(ok, key=lambda r: (p50_ms(r), str(r.get("case_id"))))


def _ci_text(record: Record) -> str:
    ci = ci95_ms(record)
    return f" (95% CI {fmt_num(ci[0])} – {fmt_num(ci[1])} ms)" if ci else ""


def clearly_slower(slow: Record, fast: Record) -> bool:
    slow_p50, fast_p50 = p50_ms(slow), p50_ms(fast)
    if slow_p50 is None or not fast_p50 or slow_p50 <= fast_p50:
        return False
    slow_ci, fast_ci = ci95_ms(slow), ci95_ms(fast)
    return slow_ci is None or fast_ci is None or slow_ci[0] > fast_ci[1]


def p50_ratio(slow: Record, fast: Record) -> float:
    return (p50_ms(slow) or 0.0) / (p50_ms(fast) or math.inf)


def shape_key(record: Record) -> str:
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
            *_memory_growth(results), *caveats(results)]


def group_findings(findings: Iterable[Finding]) -> list[tuple[str, list[Finding]]]:
    """(group title, findings) in first-seen order, for rendering."""
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.group, []).append(finding)
    return list(groups.items())


def _extremes(results: Sequence[Record]) -> list[Finding]:
    ok = ok_cases(results)
    ends = [("fastest", ok[0])] if ok else []
    if len(ok) > 1:
        ends.append(("slowest", ok[-1]))
    return [extreme_finding(kind, r) for kind, r in ends]


def extreme_finding(kind: str, record: Record) -> Finding:
    """The fastest (or slowest) case, with its p50 (and the GPU mode it was timed in) and
    interval."""
    return Finding(kind, case_id(record), f"{case_id(record)}: {fmt_num(p50_ms(record))} ms p50"
                   f"{mode_suffix(record)}{_ci_text(record)}", p50_ms(record))


def _best_implementations(document: Mapping[str, Any]) -> list[Finding]:
    return best_implementations(implementation_tables(document))


def best_implementations(tables: Iterable[ImplementationTable]) -> list[Finding]:
    """Per kernel with several implementations: the one with the highest geometric-mean
    speedup over the reference (the reference itself when none beats it)."""
    found = []
    for table in tables:
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
    found = [f for f in map(unstable_finding, _timed(results)) if f is not None]
    return sorted(found, key=unstable_order)


def unstable_order(finding: Finding) -> tuple[float, str]:
    """Unstable cases are listed widest interval (or spread) first."""
    return -(finding.value or 0.0), finding.case_id


def unstable_finding(record: Record) -> Finding | None:
    """The finding of a timed case whose median is too imprecise, else None."""
    p50, ci, spread = p50_ms(record), ci95_ms(record), _spread_warning(record)
    iqr = f"; IQR is {spread:.0%} of the median" if spread is not None else ""
    name = case_id(record)
    if ci is not None and p50 and (ci[1] - ci[0]) / p50 > NOISY_CI_RATIO:
        width = (ci[1] - ci[0]) / p50
        return Finding("unstable", name, f"{name}: the 95% CI of the median, "
                       f"{fmt_num(ci[0])} – {fmt_num(ci[1])} ms, spans {width:.0%} "
                       f"of its p50 {fmt_num(p50)} ms{iqr}", width)
    if ci is None and spread is not None:
        return Finding("unstable", name, f"{name}: too few samples for a CI of the median{iqr}",
                       spread)
    return None


def exceeded_tolerances(record: Record) -> list[tuple[str, float | None, float | None]]:
    """(metric, value, tolerance) for each tolerance the case's accuracy exceeded."""
    accuracy = record.get("accuracy") or {}
    tolerances = accuracy.get("tolerances") or {}
    return [(str(m), number(accuracy.get(m)), number(tolerances.get(m)))
            for m in accuracy.get("exceeded") or []]


def accuracy_detail(record: Record) -> str:
    accuracy = record.get("accuracy") or {}
    parts = [f"{m} {fmt_num(v)} > {fmt_num(t)}" for m, v, t in exceeded_tolerances(record)]
    if accuracy.get("nan_count"):
        parts.append(f"{accuracy['nan_count']} NaN/inf values")
    if accuracy.get("mismatch"):
        parts.append(str(accuracy["mismatch"]))
    return ", ".join(parts) or str(accuracy.get("reason") or "the check failed")


def miss_factor(record: Record) -> float | None:
    factors = [v / t for _, v, t in exceeded_tolerances(record) if v is not None and t]
    return max(factors) if factors else None


def accuracy_failed(record: Record) -> bool:
    return (record.get("accuracy") or {}).get("passed") is False


def _accuracy_failures(results: Sequence[Record]) -> list[Finding]:
    return [accuracy_finding(r) for r in results if accuracy_failed(r)]


def accuracy_finding(record: Record) -> Finding:
    return Finding("accuracy_failure", case_id(record),
                   f"{case_id(record)}: {accuracy_detail(record)}", miss_factor(record))


def _reason(record: Record, limit: int = 160) -> str:
    lines = str(record.get("reason") or "no reason recorded").strip().splitlines()
    text = lines[0] if lines else "no reason recorded"
    return text if len(text) <= limit else text[:limit - 1] + "…"


def is_failure(record: Record) -> bool:
    """A failed, timed-out or invalid case, other than an accuracy failure."""
    return record.get("status") in PROBLEM_STATUSES and not accuracy_failed(record)


def failure_finding(record: Record) -> Finding:
    verbs = {"failed": "failed", "timeout": "timed out", "invalid": "is invalid"}
    return Finding("failure", case_id(record),
                   f"{case_id(record)} {verbs[str(record['status'])]}: {_reason(record)}")


def _failures(results: Sequence[Record]) -> list[Finding]:
    return [failure_finding(r) for r in results if is_failure(r)]


def narrow_pairs(results: Sequence[Record], ok: Sequence[Record] | None = None,
                 shape: Callable[[Record], str] = shape_key) -> list[tuple[Record, Record]]:
    """(narrow, fp32) successful cases of the same kernel, backend and problem size, in case
    id order. `ok`: ``ok_cases(results)`` when the caller has it; `shape`: shape_key, or the
    same cached."""
    ok = [r for r in (ok_cases(results) if ok is None else ok)
          if r.get("precision") in NARROW_PRECISIONS or r.get("precision") == "fp32"]
    fp32 = {(r.get("kernel_name"), r.get("backend"), shape(r)): r
            for r in ok if r.get("precision") == "fp32"}
    if not fp32:
        return []
    pairs = []
    for record in sorted(ok, key=case_id):
        if record.get("precision") not in NARROW_PRECISIONS:
            continue
        wide = fp32.get((record.get("kernel_name"), record.get("backend"), shape(record)))
        if wide is not None:
            pairs.append((record, wide))
    return pairs


def slower_pairs(results: Sequence[Record],
                 pairs: Sequence[tuple[Record, Record]] | None = None
                 ) -> list[tuple[Record, Record]]:
    """The narrow pairs (of `results`, unless given) whose narrow case is clearly slower."""
    found = narrow_pairs(results) if pairs is None else pairs
    return [(n, w) for n, w in found if clearly_slower(n, w)]


def narrow_findings(slower: Iterable[tuple[Record, Record]]) -> list[Finding]:
    return [Finding("narrow_slower", case_id(n), f"{case_id(n)} is {p50_ratio(n, w):.2f}x slower "
                    f"than {case_id(w)} ({fmt_num(p50_ms(n))} vs "
                    f"{fmt_num(p50_ms(w))} ms p50)", p50_ratio(n, w))
            for n, w in slower]


def _narrow_slower(results: Sequence[Record]) -> list[Finding]:
    return narrow_findings(slower_pairs(results))


def tail_finding(record: Record) -> Finding | None:
    """The finding of a timed case whose p99 is far above its p50, else None."""
    p50, p99 = p50_ms(record), number(dig(record, "timing", "latency_ms_p99"))
    if not (p50 and p99 is not None and p99 / p50 > TAIL_RATIO):
        return None
    return Finding("tail_latency", case_id(record), f"{case_id(record)}: p99 "
                   f"{fmt_num(p99)} ms is {p99 / p50:.1f}x its p50 {fmt_num(p50)} ms", p99 / p50)


def _tails(results: Sequence[Record]) -> list[Finding]:
    return [f for f in map(tail_finding, _timed(results)) if f is not None]


def _growth(record: Record) -> float | None:
    return number(dig(record, "memory", "allocated_mb"))


def grown_pairs(results: Sequence[Record],
                pairs: Sequence[tuple[Record, Record]] | None = None
                ) -> list[tuple[Record, Record, float]]:
    """The narrow pairs (of `results`, unless given) whose narrow case grew clearly more."""
    found = []
    for narrow, wide in narrow_pairs(results) if pairs is None else pairs:
        grown, base = _growth(narrow), _growth(wide)
        if grown is not None and base and base > 0 and grown > MEMORY_GROWTH_RATIO * base:
            found.append((narrow, wide, grown / base))
    return found


def growth_findings(grown: Iterable[tuple[Record, Record, float]]) -> list[Finding]:
    return [Finding("memory_growth", case_id(n), f"{case_id(n)} grew {fmt_num(_growth(n))} MB, "
                    f"{ratio:.2f}x the {fmt_num(_growth(w))} MB of {case_id(w)}, though its "
                    "elements are half the size or less", ratio)
            for n, w, ratio in grown]


def _memory_growth(results: Sequence[Record]) -> list[Finding]:
    return growth_findings(grown_pairs(results))
