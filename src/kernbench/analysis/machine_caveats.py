"""Claimed changes that the machine, not the code, may explain.

A stored comparison's two runs ran at different times on a shared machine. Each run records
what it can of the machine (kernbench.measure.machine): a calibration kernel timed before and
after the suite, the cores other processes kept busy and the hypervisor's steal during each
case's samples, and each worker's speed on a fixed Python loop. :func:`machine_caveats` turns a
claimed regression or improvement into "inconclusive" where these say the machine changed, was
busy, or ran the case's processes at another speed that accounts for the change; the figures'
own claim stays in ``claimed``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from kernbench.analysis import process_modes
from kernbench.analysis.compare import CaseComparison, case_key, inconclusive_advice
from kernbench.results.model import CaseResult

BUSY_OTHER_CORES = 0.5
"""Other processes keeping at least this many cores busy during a case's samples: busy."""
BUSY_STEAL_SHARE = 0.05
"""The hypervisor stealing at least this share of the CPU time during the samples: busy."""
CALIBRATION_TOLERANCE = 1.25
"""Calibrations differing by more than this factor: the machine changed. Repeated calibrations
of a quiet machine here agree within about 5%; one CPU hog on two cores makes the all-cores
kernel 1.5-2x slower."""
CALIBRATIONS = {"all_cores_hash_ms": "all-cores hash"}
SPEED_TOLERANCE = 1.10
"""Worker speed probes (a fixed Python loop, median over a case's processes) differing by more
than this factor: the case's processes ran at another speed. Repeated probes of one process
here agree within about 3%; a process in the VM's slow mode takes 1.3-1.7x as long."""


def calibration_change(baseline: Mapping[str, Any] | None,
                       candidate: Mapping[str, Any] | None) -> str | None:
    """How the machine changed between or during two runs, from the calibrations in their
    `machine_state` (kernbench.measure.machine); None when it did not (or was not measured)."""
    worst: tuple[float, str] | None = None
    for metric, name in CALIBRATIONS.items():
        base, cand = _calibration(baseline, metric), _calibration(candidate, metric)
        factors = []
        if base and cand:
            between = statistics.median(cand) / statistics.median(base)
            factors.append((between, f"calibration {_factor(between)} in the candidate run "
                                     f"than in the baseline's ({name})"))
        for side, values in (("baseline", base), ("candidate", cand)):
            if len(values) == 2:
                during = values[1] / values[0]
                factors.append((during, f"calibration {_factor(during)} at the end of the "
                                        f"{side} run than at its start ({name})"))
        for factor, text in factors:
            if worst is None or abs(math.log(factor)) > abs(math.log(worst[0])):
                worst = (factor, text)
    if worst is None or abs(math.log(worst[0])) <= math.log(CALIBRATION_TOLERANCE):
        return None
    return worst[1]


def _calibration(state: Mapping[str, Any] | None, metric: str) -> list[float]:
    """[before, after] (what was measured of them) of one calibration kernel."""
    values = []
    for moment in ("before", "after"):
        found = ((state or {}).get(moment) or {}).get("calibration") or {}
        value = found.get(metric) if isinstance(found, Mapping) else None
        if isinstance(value, (int, float)) and value > 0:
            values.append(float(value))
    return values


def _factor(ratio: float) -> str:
    return f"{ratio:.2f}x slower" if ratio >= 1 else f"{1 / ratio:.2f}x faster"


def busy(machine: Mapping[str, Any] | None) -> str | None:
    """Why a case's samples were taken on a busy machine (kernbench.measure.machine's activity)."""
    if not machine:
        return None
    other, steal = machine.get("other_cpu_cores") or 0.0, machine.get("steal_share") or 0.0
    if other >= BUSY_OTHER_CORES:
        cpus = machine.get("cpus")
        return f"other processes kept {other:.1f}{f' of {cpus}' if cpus else ''} CPUs busy"
    if steal >= BUSY_STEAL_SHARE:
        return f"the hypervisor stole {steal:.0%} of the CPU time"
    return None


def speed_change(baseline: Mapping[str, Any] | None,
                 candidate: Mapping[str, Any] | None) -> float | None:
    """candidate / baseline of the workers' speed probe (`speed_probe_us`, above 1: the
    candidate's processes ran slower), or None when either is missing or they agree within
    :data:`SPEED_TOLERANCE`."""
    before = (baseline or {}).get("speed_probe_us")
    after = (candidate or {}).get("speed_probe_us")
    if not before or not after:
        return None
    ratio = float(after) / float(before)
    return ratio if max(ratio, 1 / ratio) > SPEED_TOLERANCE else None


def explained_by_speed(case: CaseComparison, speed: float) -> bool:
    """Whether the workers' own change of speed accounts for a claimed change: it moved the
    same way, and the ratio divided by it is no longer beyond the case's threshold."""
    if case.ratio is None or (case.verdict == "regressed") != (speed > 1):
        return False
    left, limit = case.ratio / speed, 1 + case.threshold
    return left <= limit if case.verdict == "regressed" else left >= 1 / limit


def machine_caveats(cases: Sequence[CaseComparison], baseline: Sequence[CaseResult],
                    candidate: Sequence[CaseResult], changed: str | None,
                    entry_point: str | None = None) -> list[CaseComparison]:
    """Claimed changes that the machine, not the code, may explain, made inconclusive: every
    regressed or improved case when the calibration `changed` between or during the runs
    (:func:`calibration_change`), a case whose samples (on either side) were taken while
    other processes were busy, and a case whose processes ran a fixed loop at another speed
    that accounts for the change (:func:`speed_change`). The advice names `entry_point`'s
    knobs (:func:`~kernbench.analysis.compare.inconclusive_advice`)."""
    base_by_key = {case_key(r): r for r in baseline}
    cand_by_key = {case_key(r): r for r in candidate}
    typical = process_modes.typical_probe_us(baseline, candidate)
    judged = []
    for case in cases:
        if case.verdict not in ("regressed", "improved") or case.method is None:
            judged.append(case)
            continue
        reasons = [f"the machine changed ({changed})"] if changed else []
        machines = {side: None if (found := results.get(case.key)) is None else found.machine
                    for side, results in (("baseline", base_by_key), ("candidate", cand_by_key))}
        for side, machine in machines.items():
            why = busy(machine)
            if why:
                reasons.append(f"the machine was busy during the {side}'s samples ({why})")
        speed = speed_change(*process_modes.kept_machines(
            (machines["baseline"], machines["candidate"]), base_by_key.get(case.key),
            cand_by_key.get(case.key), typical))
        if speed is not None and explained_by_speed(case, speed):
            reasons.append(f"the case's processes ran a fixed Python loop {speed:.2f}x as long "
                           "in the candidate, which accounts for the change")
        if not reasons:
            judged.append(case)
            continue
        note = (f"inconclusive: {'; '.join(reasons)}. The figures alone say {case.verdict}"
                f"{f' ({case.ratio:.2f}x)' if case.ratio else ''}; "
                f"{inconclusive_advice(entry_point)}"
                f"{f'. Also: {case.note}' if case.note else ''}")
        judged.append(replace(case, verdict="inconclusive", claimed=case.verdict, note=note))
    return judged


def comparison_warnings(baseline_meta: Mapping[str, Any], candidate_meta: Mapping[str, Any],
                        changed: str | None, entry_point: str | None = None) -> list[str]:
    """What makes the whole comparison doubtful: two different machines (the ratios mix code
    and hardware), or one machine whose calibration `changed` between the runs."""
    warnings = []
    prints = (baseline_meta.get("fingerprint"), candidate_meta.get("fingerprint"))
    if all(prints) and prints[0] != prints[1]:
        warnings.append(f"baseline and candidate ran on different machines "
                        f"({prints[0]} vs {prints[1]}): the ratios mix code and hardware")
    if changed:
        warnings.append(f"the machine changed: {changed}; claimed changes are inconclusive, "
                        f"{inconclusive_advice(entry_point)}")
    return warnings
