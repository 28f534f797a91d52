"""Baseline vs candidate: a verdict per case from the raw samples.

Cases are matched on (kernel, backend, precision, problem size). For each pair the samples are
split into their worker-process groups and compared with :func:`kernbench.analysis.stats_compare.
compare_groups`; the p-values of all compared cases go through Benjamini-Hochberg together, and
:func:`kernbench.analysis.verdicts.verdict` claims a change only when it is both significant
and beyond the practical threshold (global, per kernel in bench.yaml, per metric). Accuracy drift
between the two runs is flagged separately.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from kernbench.analysis import process_modes
from kernbench.analysis.gpu_summary import MIXED_MODE, timing_mode
from kernbench.analysis.stats import percentile
from kernbench.analysis.stats_compare import Comparison, compare_groups, compare_paired
from kernbench.analysis.verdicts import benjamini_hochberg, short_of_significance, verdict
from kernbench.errors import KernbenchError
from kernbench.results.model import IMPL_PREFIX, NATIVE, CaseResult, case_id_of
from kernbench.results.vocabulary import has_ab, knob

VERDICTS = ("regressed", "improved", "unchanged", "inconclusive", "new", "missing")
DEFAULT_THRESHOLD = 0.10
DEFAULT_ACCURACY_DRIFT = 1e-3
DEFAULT_ALPHA = 0.05
ADVICE = ("for a trustworthy answer run an interleaved A/B (`--ab REF`), or both runs again on "
          "a quiet machine with `--processes 3` or more, interleaved (the default)")
"""What an inconclusive verdict advises a ``kernbench run`` user (:func:`inconclusive_advice`)."""


def inconclusive_advice(entry_point: str | None = None) -> str:
    """How to get a trustworthy answer, in the knobs of the entry point that measured the
    candidate (None: ``kernbench run``; ``pytest``; ``kernbench.bench``): only the CLI has
    an interleaved A/B."""
    if has_ab(entry_point):
        return ADVICE
    again = "both sessions" if entry_point == "pytest" else "both functions"
    return (f"for a trustworthy answer measure {again} again on a quiet machine with "
            f"{knob('processes', entry_point, 3)} or more")


@dataclass(frozen=True)
class Thresholds:
    """Practical thresholds: `latency` is a relative change of the median (0.10 = 10%),
    `accuracy_drift` an absolute change of the relative error; `per_kernel` overrides both."""

    latency: float = DEFAULT_THRESHOLD
    accuracy_drift: float = DEFAULT_ACCURACY_DRIFT
    per_kernel: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def for_kernel(self, kernel: str) -> tuple[float, float]:
        own = self.per_kernel.get(kernel, {})
        return (float(own.get("latency", self.latency)),
                float(own.get("accuracy_drift", self.accuracy_drift)))


@dataclass(frozen=True)
class CaseComparison:
    """One case's verdict with the figures behind it."""

    key: str
    """Matching key: the case id plus its problem size."""
    kernel_name: str
    backend: str
    precision: str
    verdict: str
    threshold: float
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    q_value: float | None = None
    method: str | None = None
    baseline_p50_ms: float | None = None
    candidate_p50_ms: float | None = None
    processes: tuple[int, int] = (0, 0)
    accuracy_drift: Mapping[str, Any] | None = None
    note: str | None = None
    point: str | None = None
    """The bench.yaml sweep point (its label is part of the case id); None without a sweep."""
    implementation: str | None = None
    """The implementation, for a kernel with several (part of the case id)."""
    claimed: str | None = None
    """What the statistics alone said, when the machine made the verdict inconclusive."""
    gpu_mode: str | None = None
    """The GPU timing mode both sides' figures were taken in (None: a CPU case)."""

    @property
    def label(self) -> str:
        return case_id_of(self.kernel_name, self.backend, self.precision, self.point,
                          self.implementation)

    @property
    def impact(self) -> float:
        """How big the change is, for sorting: |log ratio|."""
        return abs(math.log(self.ratio)) if self.ratio and self.ratio > 0 else 0.0


def case_key(result: CaseResult, precision: str | None = None) -> str:
    """kernel[backend,precision] (with `,impl=NAME` for one of several implementations) and
    the problem size as JSON: the same case in two runs has the same key. `precision` stands
    in for the record's own (``*``: any)."""
    size = "" if result.problem_size is None else json.dumps(result.problem_size,
                                                             sort_keys=True)
    impl = f",{IMPL_PREFIX}{result.implementation}" if result.implementation else ""
    return f"{result.kernel_name}[{result.backend},{precision or result.precision}{impl}]{size}"


def process_groups(result: CaseResult) -> list[list[float]]:
    """The samples split by the worker process that took them (processes without any left
    out)."""
    return [g for g in process_modes.by_process(result) if g]


def _p50(result: CaseResult) -> float | None:
    return percentile(result.samples_ms, 50) if result.samples_ms else None


def _drift(base: CaseResult, cand: CaseResult, limit: float) -> dict[str, Any] | None:
    """Change of the relative error against the reference; a newly failing check too."""
    before, after = base.accuracy.get("relative_error"), cand.accuracy.get("relative_error")
    newly_failing = base.accuracy.get("passed") is True and cand.accuracy.get("passed") is False
    if not isinstance(before, (int, float)) or not isinstance(after, (int, float)):
        return {"metric": "accuracy.passed", "flagged": True} if newly_failing else None
    delta = float(after) - float(before)
    return {"metric": "relative_error", "baseline": before, "candidate": after, "delta": delta,
            "threshold": limit, "flagged": newly_failing or abs(delta) > limit}


def _unpaired(key: str, result: CaseResult, verdict_name: str, threshold: float,
              note: str | None = None) -> CaseComparison:
    p50 = _p50(result) if result.status == "ok" else None
    ran = len(process_groups(result)) if result.samples_ms else 0
    side = ({"baseline_p50_ms": p50, "processes": (ran, 0)} if verdict_name == "missing"
            else {"candidate_p50_ms": p50, "processes": (0, ran)})
    return CaseComparison(key=key, kernel_name=result.kernel_name, backend=result.backend,
                          precision=result.precision, verdict=verdict_name, threshold=threshold,
                          note=note, point=result.point, implementation=result.implementation,
                          **side)  # type: ignore[arg-type]


def _status_verdict(key: str, base: CaseResult, cand: CaseResult,
                    threshold: float) -> CaseComparison | None:
    """Verdicts that need no statistics: a case that stopped or started running."""
    if base.status == "ok" and cand.status == "ok":
        return None
    if base.status == "ok":  # the baseline's figure stays beside the verdict
        return replace(_unpaired(key, cand, "regressed", threshold,
                                 f"the candidate no longer runs: {cand.status}: {cand.reason}"),
                       baseline_p50_ms=_p50(base))
    if cand.status == "ok":
        return _unpaired(key, cand, "new", threshold,
                         f"the baseline did not run ({base.status}): nothing to compare with")
    return _unpaired(key, cand, "inconclusive", threshold,
                     f"neither side ran (baseline {base.status}: {base.reason}; "
                     f"candidate {cand.status}: {cand.reason})")


def _mode_verdict(key: str, base: CaseResult, cand: CaseResult, threshold: float,
                  entry_point: str | None = None) -> CaseComparison | None:
    """Figures taken in different GPU timing modes measure different things (a per-call
    synchronise, a warm or a cold L2): they are never compared."""
    before, after = timing_mode(base.gpu_timing), timing_mode(cand.gpu_timing)
    if before == after != MIXED_MODE:
        return None
    mixed = [side for side, mode in (("baseline", before), ("candidate", after))
             if mode == MIXED_MODE]
    why = (f"the {' and the '.join(mixed)}'s processes measured in different GPU modes (a "
           "fallback in some of them, see the mode's reason)" if mixed else
           f"timed in different GPU modes (baseline {before}, candidate {after}); run both "
           f"with the same {knob('gpu_timing', entry_point)}")
    return replace(_unpaired(key, cand, "inconclusive", threshold, f"not compared: {why}"),
                   baseline_p50_ms=_p50(base))


def _pair_native(base_by_key: dict[str, CaseResult], cand_by_key: dict[str, CaseResult]) -> None:
    """Re-key, in place, a case of a kernel without precisions that did not run on one side.
    Such a case is named after its output's precision (``k[cpu,fp64]``), and a run that
    produced no output leaves it ``native``: it is the other side's case of the same kernel,
    backend, point and size, where that case is the only one, under the other side's name."""
    for mine, other in ((base_by_key, cand_by_key), (cand_by_key, base_by_key)):
        native = [key for key, result in mine.items()
                  if result.precision == NATIVE and key not in other]
        if not native:  # the common case: nothing to index
            continue
        unmatched: dict[str, list[str]] = {}
        for key, result in other.items():
            if key not in mine:
                unmatched.setdefault(case_key(result, "*"), []).append(key)
        for key in native:
            found = unmatched.get(case_key(mine[key], "*"), [])
            if len(found) == 1:
                mine[found[0]] = replace(mine.pop(key), precision=other[found[0]].precision)


def check_one_machine(results: Sequence[CaseResult], side: str) -> None:
    """KernbenchError when `results` (one side of a comparison) came from more than one machine
    (a merge with --allow-mixed): cases are never compared across machines."""
    machines = sorted({(r.testbed or "?", r.fingerprint or "?") for r in results
                       if r.fingerprint is not None})
    if len({fingerprint for _, fingerprint in machines}) > 1:
        named = ", ".join(f"{testbed} ({fingerprint})" for testbed, fingerprint in machines)
        raise KernbenchError(f"the {side} holds cases of several machines ({named}): a "
                             "merge with --allow-mixed is never compared as one run; compare "
                             "each machine's shards apart")


def compare_results(baseline: Sequence[CaseResult], candidate: Sequence[CaseResult],
                    thresholds: Thresholds | None = None, alpha: float = DEFAULT_ALPHA,
                    confidence: float = 0.95, paired: bool = False,
                    entry_point: str | None = None) -> list[CaseComparison]:
    """A verdict for every case present on either side. `paired`: the k-th process of each
    side ran in the same interleaved round (``--ab``), so rounds are compared pairwise.
    `entry_point` names the knobs the notes advise (:func:`inconclusive_advice`)."""
    compare = compare_paired if paired else compare_groups
    thresholds = thresholds or Thresholds()
    for side, results in (("baseline", baseline), ("candidate", candidate)):
        check_one_machine(results, side)
    base_by_key = {case_key(r): r for r in baseline if r.status != "invalid"}
    cand_by_key = {case_key(r): r for r in candidate if r.status != "invalid"}
    for key in skipped_on_both_sides(baseline, candidate):
        del base_by_key[key], cand_by_key[key]
    _pair_native(base_by_key, cand_by_key)
    typical = None if paired else process_modes.typical_probe_us(baseline, candidate)
    invalid = {r.kernel_name: r for r in candidate if r.status == "invalid"}
    decided: list[CaseComparison] = []
    pending: list[tuple[str, CaseResult, CaseResult, Comparison, str | None]] = []
    for key in sorted(set(base_by_key) | set(cand_by_key)):
        base, cand = base_by_key.get(key), cand_by_key.get(key)
        if cand is None and base is not None and base.kernel_name in invalid:
            # the candidate broke the kernel itself (syntax error, bad bench.yaml): each of
            # its cases stopped running, which is a regression, not a case gone missing
            cand = replace(base, status="invalid", reason=invalid[base.kernel_name].reason)
        if base is None or cand is None:
            only = cand or base
            assert only is not None
            limit = thresholds.for_kernel(only.kernel_name)[0]
            decided.append(_unpaired(key, only, "new" if base is None else "missing", limit))
            continue
        limit = thresholds.for_kernel(cand.kernel_name)[0]
        status = (_status_verdict(key, base, cand, limit)
                  or _mode_verdict(key, base, cand, limit, entry_point))
        if status is not None:
            decided.append(status)
            continue
        steady = process_modes.steady_sides(base, cand, typical)
        comparison = compare(steady.baseline, steady.candidate, confidence)
        left_out = process_modes.steady_note(
            steady, (comparison.n_baseline, comparison.n_candidate))
        pending.append((key, base, cand, comparison, left_out))
    q_values = benjamini_hochberg([c.p_value for *_, c, _ in pending])
    for (key, base, cand, comparison, left_out), q_value in zip(pending, q_values, strict=True):
        latency, drift_limit = thresholds.for_kernel(cand.kernel_name)
        decided.append(CaseComparison(
            key=key, kernel_name=cand.kernel_name, backend=cand.backend,
            precision=cand.precision, verdict=verdict(comparison, q_value, latency, alpha),
            threshold=latency, ratio=comparison.ratio, ci_low=comparison.ci_low,
            ci_high=comparison.ci_high, p_value=comparison.p_value, q_value=q_value,
            method=comparison.method, baseline_p50_ms=_p50(base), candidate_p50_ms=_p50(cand),
            processes=(comparison.n_baseline, comparison.n_candidate),
            accuracy_drift=_drift(base, cand, drift_limit),
            note=_note(comparison, q_value, latency, alpha, left_out, len(pending),
                       entry_point),
            point=cand.point, implementation=cand.implementation,
            gpu_mode=timing_mode(cand.gpu_timing)))
    return sorted(decided, key=lambda c: c.key)


def _note(comparison: Comparison, q_value: float | None, threshold: float, alpha: float,
          left_out: str | None, family: int, entry_point: str | None) -> str | None:
    parts = [process_modes.note(comparison, threshold, left_out,
                                inconclusive_advice(entry_point)),
             short_of_significance(comparison, q_value, threshold, alpha, family, entry_point)]
    return "; ".join(p for p in parts if p) or None


def skipped_on_both_sides(baseline: Sequence[CaseResult],
                          candidate: Sequence[CaseResult]) -> list[str]:
    """Cases neither run measured (e.g. CUDA cases on a CPU machine): nothing to judge."""
    skipped_before = {case_key(r) for r in baseline if r.status == "skipped"}
    return sorted(case_key(r) for r in candidate
                  if r.status == "skipped" and case_key(r) in skipped_before)


def tally(cases: Sequence[CaseComparison]) -> dict[str, int]:
    counts = dict.fromkeys(VERDICTS, 0)
    for case in cases:
        counts[case.verdict] += 1
    return counts


def regressions_found(cases: Sequence[CaseComparison]) -> bool:
    """A latency regression, or a flagged accuracy drift."""
    return any(c.verdict == "regressed" or (c.accuracy_drift or {}).get("flagged")
               for c in cases)


def case_dict(case: CaseComparison) -> dict[str, Any]:
    data = asdict(case)
    data["label"] = case.label
    data["processes"] = {"baseline": case.processes[0], "candidate": case.processes[1]}
    return data
