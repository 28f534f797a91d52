"""Worker processes that ran in another mode than their siblings, as small pure functions.

On a shared VM a whole worker process can run Python 1.3-1.7x slower for its whole life (a
busy SMT sibling, another tenant), with nothing in /proc/stat to show it. Every worker times a
fixed Python loop just before and just after its samples (``machine.speed_probe_us``, see
:mod:`kernbench.measure.machine`), and a case of several processes keeps each process's probe
(``machine.process_speed_probes_us``). Measured here, ten processes of a 0.85 ms Python loop:
the two processes whose probe took 202 and 203 µs against the run's typical 140 µs had
medians of 1,313 and 1,304 µs against 770-940 µs for the other 58.

A process whose probe is beyond :data:`SLOW_PROCESS` times the typical probe (the median over
every process of every case of both runs compared) is left out of the comparison, which says
so: its samples measure the VM, not the kernel. A whole run that ran slow leaves too few
processes to leave out, and is the business of the comparison's speed and calibration checks
(:func:`kernbench.analysis.compare.machine_caveats`). A kernel cannot slow the probe of its own
process down, other than by leaving work running after its samples.

Process medians can also differ with no probe to show it (the layout of a nanosecond kernel):
then the Hodges-Lehmann ratio of :mod:`kernbench.analysis.stats_compare` keeps a few such
processes from passing for a change of the kernel (:func:`note`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from kernbench.analysis.stats_compare import Comparison, moved_by_few
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


def typical_probe_us(results: Sequence[CaseResult]) -> float | None:
    """The median speed probe over every process of every case given."""
    probes = [p for r in results for p in process_probes(r) if p is not None]
    return statistics.median(probes) if probes else None


def steady_groups(groups: Sequence[Sequence[float]], result: CaseResult,
                  typical_us: float | None, min_groups: int = 3) -> tuple[list[list[float]], int]:
    """`groups` (the case's samples by process) without the processes that ran in the slow
    mode, and how many were left out. Nothing is left out without a probe for every process,
    or when fewer than `min_groups` processes would remain."""
    probes = process_probes(result)
    if typical_us is None or len(probes) != len(groups) or None in probes:
        return [list(g) for g in groups], 0
    limit = typical_us * SLOW_PROCESS
    kept = [list(g) for g, p in zip(groups, probes, strict=True) if p is not None and p <= limit]
    if len(kept) < min_groups:
        return [list(g) for g in groups], 0
    return kept, len(groups) - len(kept)


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
