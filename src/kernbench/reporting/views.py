"""Views of a run's documents shared by the renderers: small pure functions, no rendering.

They read summary.json records, comparison.json cases and history rows defensively: a field
that is missing, of the wrong type or not finite reads as None (or an empty mapping or list),
never as an error, so records of older or failed runs render too.

Speedup baseline: within one kernel and problem size, the fp32 case of the first backend (in
the order of the summary), else the first case; speedup = baseline p50 / case p50.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeGuard

from kernbench.results.model import IMPL_PREFIX, record_case_id

Record = Mapping[str, Any]
"""A result record, a comparison case or a history row, as read from JSON."""

PROBLEM_STATUSES = ("failed", "timeout", "invalid")
CHANGED = ("regressed", "improved")
"""The verdicts that claim a significant change."""

# --- reading fields -------------------------------------------------------------------------


def is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """isinstance(value, Mapping), quick for the dicts JSON gives (an ABC check is slow)."""
    return type(value) is dict or isinstance(value, Mapping)


def dig(data: Any, *path: str) -> Any:
    """``data[path[0]][path[1]]...``, or None as soon as a level is missing or not a mapping."""
    for key in path:
        if not is_mapping(data):
            return None
        data = data.get(key)
    return data


def section(record: Record, name: str) -> Mapping[str, Any]:
    """The block `name` of `record` (timing, work, ...); empty when absent or not a mapping."""
    value = record.get(name)
    return value if is_mapping(value) else {}


def mappings(value: object) -> list[Record]:
    """The entries of a JSON list that are objects; empty when `value` is not a list."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, (list, tuple)) else []


def finite(value: object) -> int | float | None:
    """`value` when it is a finite int or float (never a bool), else None; ints stay ints."""
    if type(value) is float:  # the usual case, first
        return value if math.isfinite(value) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def number(value: object) -> float | None:
    """`value` as a float when it is a finite int or float (never a bool), else None."""
    found = finite(value)
    return None if found is None else float(found)


def p50_ms(record: Record) -> float | None:
    """The median latency: ``timing.latency_ms_p50``, or ``latency_ms_p50`` of a flat history
    row (one without a timing block)."""
    timing = record.get("timing")
    return number((timing if is_mapping(timing) else record).get("latency_ms_p50"))


def ci95_bounds(record: Record) -> tuple[Any, Any]:
    """(low, high) of the median's 95% interval as the record holds them, or (None, None)."""
    interval = dig(record, "timing", "latency_ms_p50_ci95")
    if isinstance(interval, Sequence) and not isinstance(interval, str) and len(interval) == 2:
        return interval[0], interval[1]
    return None, None


def ci95_ms(record: Record) -> tuple[float, float] | None:
    """The median's 95% interval, when both ends are finite numbers."""
    low, high = (number(v) for v in ci95_bounds(record))
    return (low, high) if low is not None and high is not None else None


# --- naming cases ---------------------------------------------------------------------------


def size_label(problem_size: object) -> str:
    """bench.yaml's problem size as short text: "rows=4096, cols=1024", "1024" or "default"."""
    if problem_size is None:
        return "default"
    if isinstance(problem_size, Mapping):
        return ", ".join(f"{k}={v}" for k, v in problem_size.items())
    return str(problem_size)


def human_label(record: Record) -> str:
    """A case named for people, as plot axes and legends show it: "softmax · numpy · cpu · fp32
    · rows=1024, cols=256" (kernel, implementation, backend, precision, problem size; no JSON).
    Works for result records, history rows and comparison cases (which name their sweep
    point instead of the problem size) alike."""
    size = record.get("problem_size")
    where = record.get("point") if size is None else _size_text(size)  # comparison cases
    parts = [record.get("kernel_name"), record.get("implementation"), record.get("backend"),
             record.get("precision"), where]
    text = " · ".join(str(part) for part in parts if part not in (None, ""))
    return text or str(record.get("label") or record.get("case_id") or "?")


def _size_text(problem_size: object) -> str:
    """`size_label` with list values written as 64x64x64."""
    if not isinstance(problem_size, Mapping):
        return size_label(problem_size)
    return ", ".join(f"{k}=" + ("x".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v))
                     for k, v in problem_size.items())


def size_json(problem_size: object) -> str:
    """The problem size as the comparison's case key writes it: sorted JSON, "" for None."""
    return "" if problem_size is None else json.dumps(problem_size, sort_keys=True)


def compact_json(value: object) -> str:
    """`value` as sorted JSON without spaces (anything JSON lacks as its text)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def variant(record: Record) -> str:
    """The case's backend and precision as "backend/precision", with the implementation after
    a space for a kernel that has several ("cpu/fp32 jax")."""
    impl = record.get("implementation")
    base = f"{record.get('backend')}/{record.get('precision')}"
    return f"{base} {impl}" if impl else base


def case_id(record: Record) -> str:
    """The record's case id, else "kernel[backend,precision]"."""
    return record_case_id(record)


def case_key(record: Record) -> str:
    """The comparison's case key, as :func:`kernbench.analysis.compare.case_key` builds it:
    kernel[backend,precision] plus the problem size as JSON."""
    impl = record.get("implementation")
    inside = f"{record.get('backend')},{record.get('precision')}" + (
        f",{IMPL_PREFIX}{impl}" if impl else "")
    return f"{record.get('kernel_name')}[{inside}]{size_json(record.get('problem_size'))}"


def case_names(results: Sequence[Record]) -> list[str]:
    """Case ids, with the compact problem size appended where a case id occurs twice."""
    ids = [case_id(record) for record in results]
    repeated = {name for name, count in Counter(ids).items() if count > 1}
    return [name + compact_json(record.get("problem_size")) if name in repeated else name
            for name, record in zip(ids, results, strict=True)]


def comparison_label(case: Record) -> str:
    """A comparison case's label (its case id), else its key."""
    return str(case.get("label") or case.get("key"))


def matched_cases(results: Sequence[Record],
                  comparison: Mapping[str, Any] | None) -> list[Record | None]:
    """The comparison case of each result (aligned with `results`), or None: matched by
    ``key`` == :func:`case_key`, else by ``label`` == :func:`case_id` when that label is
    unique."""
    cases = mappings(dig(comparison, "cases"))
    by_key = {c["key"]: c for c in cases if isinstance(c.get("key"), str)}
    labels = Counter(c.get("label") for c in cases)
    by_label = {c["label"]: c for c in cases
                if isinstance(c.get("label"), str) and labels[c["label"]] == 1}
    return [by_key.get(case_key(r)) or by_label.get(case_id(r)) for r in results]


# --- speedup over a baseline case -----------------------------------------------------------


def kernel_groups(records: Iterable[Record], size: Callable[[object], str]
                  ) -> dict[tuple[str, str], list[Record]]:
    """`records` by (kernel name, `size` of the problem size), both in first-seen order."""
    groups: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        key = (str(record.get("kernel_name")), size(record.get("problem_size")))
        groups.setdefault(key, []).append(record)
    return groups


def speedup_baseline(cases: Sequence[Record]) -> Record:
    """The fp32 case of the first backend among `cases`, else the first case."""
    first_backend = cases[0].get("backend")
    return next((c for c in cases if c.get("backend") == first_backend
                 and c.get("precision") == "fp32"), cases[0])


# --- comparison cases -----------------------------------------------------------------------


def ratio_impact(ratio: object) -> float:
    """|log ratio|: a 2x slowdown and a 2x speedup weigh the same; no ratio weighs most."""
    return abs(math.log(ratio)) if isinstance(ratio, (int, float)) and ratio > 0 else math.inf


def impact(case: Record) -> float:
    """:func:`ratio_impact` of a comparison case's ratio."""
    return ratio_impact(case.get("ratio"))


def significant(case: Record) -> bool:
    """Regressed or improved, or so by the statistics alone before the machine checks made it
    inconclusive (``claimed``), or its accuracy drift is flagged."""
    return (case.get("verdict") in CHANGED or case.get("claimed") in CHANGED
            or bool(section(case, "accuracy_drift").get("flagged")))


RATIO_NOTE = ("Ratio is candidate / baseline latency (above 1 is slower), taken from each "
              "worker process's median (with --ab, the median of the rounds' ratios); the p50 "
              "columns pool every sample and differ from it when processes disagree.")
"""What the Ratio column of a comparison is, in every report that shows one."""


def verdict_text(case: Record) -> str:
    """The verdict, and for one the machine checks demoted, what the statistics alone said:
    `inconclusive (statistics alone: regressed)`."""
    claimed = case.get("claimed")
    suffix = f" (statistics alone: {claimed})" if claimed in CHANGED else ""
    return f"{case.get('verdict')}{suffix}"


def split_significant(cases: Sequence[Record]) -> tuple[list[Record], list[Record]]:
    """(the significant cases, largest impact first; the others, in order)."""
    found = sorted((c for c in cases if significant(c)), key=impact, reverse=True)
    return found, [c for c in cases if c not in found]


# --- % of peak ------------------------------------------------------------------------------

OVER_PEAK_NOTE = ("above 100% of the device's peak, which no kernel can reach: the peak used "
                  "or the kernel's work formula (flops or bytes per call) is likely wrong, so "
                  "this figure says nothing about the kernel's efficiency")
"""Why a % of peak above 100 is flagged instead of shown as is."""


def over_peak(value: object) -> bool:
    """True for a % of peak above 100 (a wrong peak or work formula, not a fast kernel)."""
    found = number(value)
    return found is not None and found > 100.0


# --- figures as text ------------------------------------------------------------------------


def fmt_num(value: object, digits: int = 4) -> str:
    """A number with `digits` significant digits; "n/a" for None."""
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if value == 0:
        return "0"
    text = f"{value:.{digits}g}"
    return f"{value:,.0f}" if "e+" in text else text  # 9999.5 rounds up to "1e+04": use digits


def exact_text(value: object) -> str | None:
    """A document value as text for the exports: floats with repr precision (never rounded),
    booleans lower case, mappings and lists as compact JSON; None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    return compact_json(value)


def chart_record(record: Record, p50: float) -> Record:
    """What index.html's speedup and bandwidth charts read of a record, and no more (no
    samples): a view keeps a few kernels' records to draw."""
    kept = {key: record.get(key) for key in (
        "case_id", "kernel_name", "backend", "precision", "implementation", "problem_size")}
    work = record.get("work")
    return {**kept, "timing": {"latency_ms_p50": p50},
            "work": {"gb_per_s": work.get("gb_per_s")} if isinstance(work, Mapping) else work}
