"""Worker processes that ran in another mode than their siblings, as small pure functions.

On a shared VM a worker process can run Python 1.3-1.7x slower than its siblings, for its
whole life or a spell of it (a busy SMT sibling, another tenant), with nothing in /proc/stat to
show it. Every worker times a fixed Python loop right after its samples
(``machine.speed_probe_us``, see :mod:`kernbench.measure.machine`), and a case of several
processes keeps each process's probe (``machine.process_speed_probes_us``). Measured here,
ten processes of a 0.85 ms Python loop: the two processes whose probe took 202 and 203 µs
against the run's typical 140 µs had medians of 1,313 and 1,304 µs against 770-940 µs for the
other 58.

A process whose probe is beyond :data:`SLOW_PROCESS` times the typical probe (the lower
quartile over every process of both runs compared) is left out of the comparison, which says
so: its samples measure the VM, not the kernel. Both sides are filtered or neither (a side
filtered alone would bias the ratio). A side that ran mostly slow leaves too few processes to
leave out, and is the business of the comparison's speed and calibration checks
(:func:`kernbench.analysis.machine_caveats.machine_caveats`), which then compare the probes of the
processes kept. A kernel cannot slow the probe of its own
process down, other than by leaving work running after its samples.

Process medians can also differ with no probe to show it (the layout of a nanosecond kernel):
then the Hodges-Lehmann ratio of :mod:`kernbench.analysis.stats_compare` keeps a few such
processes from passing for a change of the kernel (:func:`note`).

Processes are independent replicates only when each drew its own layout. ``kernbench.bench``
and the pytest plugin fork every replicate from the calling Python session
(``worker.forked_from``), so they share its one layout and hash seed: compared with a side
that did not come from that same session, their spread is not the spread between sessions,
and both sides' samples are compared pooled, with the note that says so
(:func:`one_session_note`).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernbench.analysis.stats_compare import Comparison
from kernbench.analysis.verdicts import moved_by_few
from kernbench.results.model import CaseResult

SLOW_PROCESS = 1.25
"""A process's speed probe beyond this factor of the typical probe: it ran in the VM's
slow mode. Probes of the processes of one quiet run here lie within about 10% of their
median; a process in the slow mode takes 1.3-1.7x as long."""
PROBES = "process_speed_probes_us"


def process_probes(result: CaseResult) -> list[float | None]:
    """Each process's speed probe, in process order (None where one was not taken); the
    case's one probe for a single process; [] when there are none."""
    machine = result.machine or {}
    probes = machine.get(PROBES)
    if isinstance(probes, list):
        return [float(p) if isinstance(p, (int, float)) and p > 0 else None for p in probes]
    single = machine.get("speed_probe_us")
    return [float(single)] if isinstance(single, (int, float)) and single > 0 else []


def probe_kind(result: CaseResult) -> str | None:
    """Which probe a record's `speed_probe_us` is: "after" the samples (with
    `speed_probe_before_us` beside it), the "faster" of the probes before and after (records
    of kernbench before 2026-11-26), or None without a probe. The two do not compare: the
    one after is never the faster."""
    if not process_probes(result):
        return None
    return "after" if (result.machine or {}).get("speed_probe_before_us") else "faster"


def typical_probe_us(*sides: Sequence[CaseResult]) -> float | None:
    """The probe of a process in the normal mode: the lower quartile over every process of
    every measured case given. The slow mode is only ever slower, so the lower quartile stays
    in the normal mode while fewer than three processes in four ran slow (a median would land
    between the modes once about half did). None when the sides' probes are of different
    kinds (:func:`probe_kind`): no process is then left out."""
    results = [r for side in sides for r in side if r.status == "ok"]
    if len({kind for r in results if (kind := probe_kind(r))}) > 1:
        return None
    probes = sorted(p for r in results for p in process_probes(r) if p is not None)
    if len(probes) < 2:
        return probes[0] if probes else None
    return statistics.quantiles(probes, n=4, method="inclusive")[0]


@dataclass(frozen=True)
class Steady:
    """One case's process groups on both sides, without the processes in the slow mode."""

    baseline: list[list[float]]
    candidate: list[list[float]]
    left_out: tuple[int, int] = (0, 0)
    pooled: str | None = None
    """Why each side's processes were pooled into one group (:func:`one_session_note`)."""
    probes_us: tuple[float | None, float | None] = (None, None)
    """The median probe of each side's kept processes, where processes were left out (the
    speed check then compares these, not the case's median over every process)."""


def by_process(result: CaseResult) -> list[list[float]]:
    """The samples split by the worker process that took them, in process order."""
    counts = result.process_sample_counts or (len(result.samples_ms),)
    groups, start = [], 0
    for count in counts:
        groups.append(list(result.samples_ms[start:start + count]))
        start += count
    return groups


def _kept(groups: list[list[float]], probes: list[float | None],
          limit: float) -> list[int] | None:
    """Indices of the processes with samples whose probe is at or below `limit`; None without
    a probe for each process."""
    if len(probes) != len(groups) or None in probes:
        return None
    return [i for i, (g, p) in enumerate(zip(groups, probes, strict=True))
            if g and p is not None and p <= limit]


def steady_sides(base: CaseResult, cand: CaseResult, typical_us: float | None,
                 min_groups: int = 3) -> Steady:
    """Both sides' process groups (empty ones dropped) without the processes that ran in the
    slow mode. Both sides are filtered or neither: nothing is left out when a side has no probe
    for every process (a record stored before the probes were kept), or when fewer than
    `min_groups` processes would remain on a side (most of it ran slow: the speed check's
    business, see :func:`kernbench.analysis.machine_caveats.machine_caveats`)."""
    pooled = one_session_note(base, cand)
    if pooled is not None:
        return Steady([list(base.samples_ms)] if base.samples_ms else [],
                      [list(cand.samples_ms)] if cand.samples_ms else [], pooled=pooled)
    groups = (by_process(base), by_process(cand))
    whole = Steady([g for g in groups[0] if g], [g for g in groups[1] if g])
    if typical_us is None:
        return whole
    probes = (process_probes(base), process_probes(cand))
    index_a, index_b = (_kept(g, p, typical_us * SLOW_PROCESS)
                        for g, p in zip(groups, probes, strict=True))
    if index_a is None or index_b is None or min(len(index_a), len(index_b)) < min_groups:
        return whole
    left_out = (len(whole.baseline) - len(index_a), len(whole.candidate) - len(index_b))
    if left_out == (0, 0):
        return whole
    kept_a = statistics.median(probes[0][i] or 0.0 for i in index_a)
    kept_b = statistics.median(probes[1][i] or 0.0 for i in index_b)
    return Steady([groups[0][i] for i in index_a], [groups[1][i] for i in index_b],
                  left_out, probes_us=(kept_a, kept_b))


def kept_machines(machines: tuple[Mapping[str, Any] | None, Mapping[str, Any] | None],
                  base: CaseResult | None, cand: CaseResult | None, typical_us: float | None
                  ) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """Both sides' machine records, with the median probe of the processes a comparison kept
    in place of every process's where it left some out (:func:`steady_sides`): a speed check
    must not correct again for processes already left out."""
    if base is None or cand is None:
        return machines
    if probe_kind(base) != probe_kind(cand):  # the speed check cannot compare them
        first, second = ({k: v for k, v in (m or {}).items() if k != "speed_probe_us"}
                         for m in machines)
        return first, second
    probes = steady_sides(base, cand, typical_us).probes_us
    before, after = ({**(m or {}), "speed_probe_us": p} if p is not None else m
                     for m, p in zip(machines, probes, strict=True))
    return before, after


def one_session_note(base: CaseResult, cand: CaseResult) -> str | None:
    """Why the two sides' processes cannot be compared as independent replicates: a side of
    several processes forked from one Python session (``worker.forked_from``) that the other
    side did not share. None when they can."""
    sessions = [(r.worker or {}).get("forked_from") for r in (base, cand)]
    if sessions[0] == sessions[1]:
        return None
    forked = [bool(s) and len(r.process_sample_counts or ()) > 1
              for s, r in zip(sessions, (base, cand), strict=True)]
    if all(forked):
        whose = "each side's processes were forked from one Python session of its own"
    elif any(forked):
        side, other = ("baseline", "candidate") if forked[0] else ("candidate", "baseline")
        whose = (f"the {side}'s processes were forked from one Python session, which the "
                 f"{other} did not share")
    else:
        return None
    return (f"{whose} (kernbench.bench, the pytest plugin): they share its address-space "
            "layout and hash seed, so their spread is not the spread between sessions, and "
            "each side's samples were compared pooled, as one group a side")


def steady_note(steady: Steady, processes: tuple[int, int]) -> str | None:
    """What a comparison did to the processes before testing them, or None."""
    return steady.pooled or left_out_note(steady.left_out, processes)


def left_out_note(left_out: tuple[int, int], processes: tuple[int, int]) -> str | None:
    """Which processes a comparison left out, or None when it left none."""
    parts = [f"{dropped} of {dropped + kept} {side} processes"
             for side, dropped, kept in zip(("baseline", "candidate"), left_out, processes,
                                            strict=True) if dropped]
    if not parts:
        return None
    return (f"left out {' and '.join(parts)}: their own fixed Python loop ran more than "
            f"{SLOW_PROCESS:.2f}x as long as in the typical process (the VM's slow mode)")


def note(comparison: Comparison, threshold: float, left_out: str | None,
         advice: str) -> str | None:
    """The comparison's note: its own, which processes were left out, and why a significant
    change of the mean was not claimed when a few processes made it."""
    parts = [p for p in (comparison.note, left_out) if p]
    if moved_by_few(comparison, threshold):
        parts.append(f"the mean of the process medians moved {comparison.ratio:.2f}x but the "
                     f"typical process {comparison.typical_ratio:.2f}x (median of the pairwise "
                     "ratios): a few processes ran in another mode (layout, a busy core), not "
                     f"the whole kernel; {advice}")
    return "; ".join(parts) or None
