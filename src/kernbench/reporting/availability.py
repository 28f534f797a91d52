"""Which backends this machine has: the reports show a backend it lacks as one line, not a row per
case ("skipped: CUDA not available on this machine (42 cases of rmsnorm, softmax)").

This is presentation only: summary.json, the kernel files and every export keep each skipped
case as it was recorded, and the counts still include them.

The rule: a backend other than ``cpu`` is *absent* when every one of the run's cases on it was
skipped and the run's environment lists no GPU of its vendor (``cuda``: NVIDIA, ``rocm``: AMD)
in ``gpus``. A document without a ``gpus`` list says nothing about the machine, so nothing is
summarised; a GPU that is present keeps each of its skipped cases as a row, since its reason
is then not the missing device.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernbench.reporting.views import Record, mappings

__all__ = ["AbsentBackend", "BackendCases", "absent_backends", "absent_case_ids", "has_gpu",
           "present_only", "skip_reason"]

GPU_VENDORS: Mapping[str, tuple[str, ...]] = {
    "cuda": ("nvidia",),
    "rocm": ("amd", "radeon", "instinct"),
}
"""Per GPU backend, words that name its vendor in a `gpus` entry's vendor or name."""

LABELS: Mapping[str, str] = {"cuda": "CUDA", "rocm": "ROCm"}


@dataclass(frozen=True)
class AbsentBackend:
    """A backend the machine lacks and the cases of the run that asked for it."""

    backend: str
    case_ids: tuple[str, ...]
    kernels: tuple[str, ...]
    reasons: tuple[tuple[str, int], ...]
    """The skip reasons as recorded, most frequent first, with how many cases gave each."""
    cases: int | None = None
    """How many cases, where `case_ids` does not list them all (a large run's summary)."""
    more_kernels: int = 0
    """Kernels beyond `kernels`, where it does not list them all."""

    @property
    def line(self) -> str:
        count = len(self.case_ids) if self.cases is None else self.cases
        more = f" and {self.more_kernels} more" if self.more_kernels else ""
        return (f"skipped: {LABELS.get(self.backend, self.backend)} not available on this "
                f"machine ({count} case{'' if count == 1 else 's'} of "
                f"{', '.join(self.kernels)}{more})")


def absent_backends(results: Sequence[Record],
                    environment: Mapping[str, Any]) -> list[AbsentBackend]:
    """The backends of `results` this machine lacks (see the module's rule), in first-seen
    order."""
    gpus = environment.get("gpus")
    if not isinstance(gpus, list):
        return []
    by_backend: dict[str, list[Record]] = {}
    for record in results:
        by_backend.setdefault(str(record.get("backend")), []).append(record)
    found = []
    for backend, records in by_backend.items():
        if backend in ("cpu", "n/a", "None") or has_gpu(backend, mappings(gpus)):
            continue
        if all(r.get("status") == "skipped" for r in records):
            reasons = Counter(skip_reason(r) for r in records)
            found.append(AbsentBackend(
                backend, tuple(str(r.get("case_id")) for r in records),
                tuple(dict.fromkeys(str(r.get("kernel_name")) for r in records)),
                tuple(reasons.most_common())))
    return found


def has_gpu(backend: str, gpus: Sequence[Record]) -> bool:
    words = GPU_VENDORS.get(backend)
    if words is None:  # a backend named nowhere here: any GPU may be it
        return bool(gpus)
    text = " ".join(f"{g.get('vendor') or ''} {g.get('name') or ''}".lower() for g in gpus)
    return any(word in text for word in words)


def skip_reason(record: Record) -> str:
    """The skip reason without the "process 1 of N: " prefix that replicates add."""
    reason = str(record.get("reason") or "no reason recorded")
    head, sep, rest = reason.partition(": ")
    return rest if sep and head.startswith("process ") and " of " in head else reason


def absent_case_ids(absent: Sequence[AbsentBackend]) -> set[str]:
    return {case for backend in absent for case in backend.case_ids}


def present_only(results: Sequence[Record], absent: Sequence[AbsentBackend]) -> list[Record]:
    """`results` less the cases of absent backends."""
    names = {a.backend for a in absent}
    return [r for r in results if str(r.get("backend")) not in names]


class BackendCases:
    """One backend's cases as a summary view takes them: how many, and while every one was
    skipped, their reasons and kernels (whether the machine lacks it is decided at the end,
    by :meth:`kernbench.reporting.summary_view.SummaryView.absent`)."""

    __slots__ = ("cases", "first", "kernels", "reasons", "skipped_only")

    def __init__(self, first: tuple[Hashable, Any]) -> None:
        self.first = first
        self.cases = 0
        self.skipped_only = True
        self.reasons: Counter[str] = Counter()
        self.kernels: dict[str, tuple[Hashable, Any]] = {}

    def add(self, machine: Hashable, position: Any, record: Record) -> None:
        self.cases += 1
        if not self.skipped_only:
            return
        if record.get("status") != "skipped":
            self._ran()
            return
        self.reasons[skip_reason(record)] += 1
        self.kernels.setdefault(str(record.get("kernel_name")), (machine, position))

    def _ran(self) -> None:
        self.skipped_only = False
        self.reasons.clear()
        self.kernels.clear()

    def absorb(self, other: BackendCases) -> None:
        """Take in the cases of later records (`other`)."""
        self.cases += other.cases
        if not self.skipped_only:
            return
        if not other.skipped_only:
            self._ran()
            return
        self.reasons.update(other.reasons)
        for kernel, first in other.kernels.items():
            self.kernels.setdefault(kernel, first)
