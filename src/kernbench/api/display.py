"""What ``kernbench.bench`` and ``kernbench.compare`` return: frozen objects that keep the raw
samples and show themselves in a terminal (``repr``) and a notebook (``_repr_html_``).

Every figure shown is derived from the samples when asked (:mod:`kernbench.analysis.stats`,
:mod:`kernbench.analysis.compare`), in a unit chosen for its size (ns, µs, ms or s).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernbench.results.model import CaseResult

if TYPE_CHECKING:
    from kernbench.analysis.compare import CaseComparison

__all__ = ["BenchComparison", "BenchResult", "format_ms"]

_UNITS = ((1e-3, "ns", 1e6), (1.0, "µs", 1e3), (1e3, "ms", 1.0))


def unit_for(ms: float) -> tuple[str, float]:
    """(unit, factor from ms) for showing a duration of `ms` milliseconds."""
    for below, unit, factor in _UNITS:
        if abs(ms) < below:
            return unit, factor
    return "s", 1e-3


def format_ms(ms: float | None, unit: tuple[str, float] | None = None) -> str:
    """`ms` in its own unit (or `unit`), four significant digits: ``1.234 µs``."""
    if ms is None:
        return "n/a"
    name, factor = unit or unit_for(ms)
    return f"{ms * factor:.4g} {name}"


def _rows_html(title: str, rows: Sequence[tuple[str, str]]) -> str:
    cells = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                    f"<td style='text-align:left'>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table><caption>{html.escape(title)}</caption>{cells}</table>"


@dataclass(frozen=True, repr=False)
class BenchResult:
    """One measured function: its record (:class:`CaseResult`, raw samples in ms per call)."""

    case: CaseResult

    @property
    def name(self) -> str:
        return self.case.case_id

    @property
    def samples_ms(self) -> tuple[float, ...]:
        return self.case.samples_ms

    @property
    def n(self) -> int:
        return len(self.case.samples_ms)

    @property
    def timing(self) -> dict[str, Any]:
        """The record's ``timing`` block: percentiles, mean, std, min, max, the median's 95%
        interval (``latency_ms_p50_ci95``), throughput, from the samples."""
        from kernbench.analysis.stats import summarize_ms

        return summarize_ms(self.case.samples_ms)

    @property
    def median_ms(self) -> float | None:
        value = self.timing["latency_ms_p50"]
        return None if value is None else float(value)

    @property
    def iqr_ms(self) -> float | None:
        from kernbench.analysis.stats import iqr

        return iqr(self.case.samples_ms) if self.case.samples_ms else None

    @property
    def gpu_timing_mode(self) -> str | None:
        """The GPU timing mode the samples hold (``cold``, ``hot``, …), None on the CPU."""
        primary = (self.case.gpu_timing or {}).get("primary")
        return None if primary is None else str(primary)

    def record(self) -> dict[str, Any]:
        """The case's record exactly as ``kernels/<name>.json`` and summary.json hold it."""
        from kernbench.analysis.summary import record_dict

        return record_dict(self.case)

    def _figures(self) -> list[tuple[str, str]]:
        timing, median = self.timing, self.median_ms
        unit = unit_for(median) if median is not None else None
        ci = timing["latency_ms_p50_ci95"]
        rows = [("median", format_ms(median, unit)), ("IQR", format_ms(self.iqr_ms, unit)),
                ("95% CI of the median", "n/a (too few samples)" if ci is None else
                 f"{format_ms(ci[0], unit)} – {format_ms(ci[1], unit)}"),
                ("min", format_ms(timing["latency_ms_min"], unit)),
                ("mean ± std", f"{format_ms(timing['latency_ms_mean'], unit)} ± "
                               f"{format_ms(timing['latency_ms_std'], unit)}"),
                ("samples", f"{self.n} × {self.case.inner_loops} calls"),
                ("processes", str(len(self.case.process_sample_counts) or 1))]
        if self.gpu_timing_mode is not None:
            rows.insert(0, ("GPU timing mode", self.gpu_timing_mode))
        from kernbench.analysis.summary import record_warnings

        rows += [("warning", w["message"]) for w in record_warnings(self.case)]
        return rows

    def __repr__(self) -> str:
        median = self.median_ms
        unit = unit_for(median) if median is not None else None
        mode = f" ({self.gpu_timing_mode})" if self.gpu_timing_mode is not None else ""
        return (f"<BenchResult {self.name}: median {format_ms(median, unit)}{mode}, "
                f"IQR {format_ms(self.iqr_ms)}, n={self.n} × "
                f"{self.case.inner_loops} calls>")

    def _repr_html_(self) -> str:
        return _rows_html(self.name, self._figures())


@dataclass(frozen=True, repr=False)
class BenchComparison:
    """`candidate` against `baseline`: the ratio of medians (candidate / baseline, > 1 is
    slower), its confidence interval and the verdict of kernbench's comparison statistics."""

    baseline: BenchResult
    candidate: BenchResult
    comparison: CaseComparison

    @property
    def ratio(self) -> float | None:
        return self.comparison.ratio

    @property
    def speedup(self) -> float | None:
        """baseline / candidate: how many times faster the candidate is."""
        ratio = self.comparison.ratio
        return 1.0 / ratio if ratio else None

    @property
    def verdict(self) -> str:
        return self.comparison.verdict

    def _ratio_text(self) -> str:
        ratio, case = self.comparison.ratio, self.comparison
        if ratio is None:
            return "no ratio"
        ci = "" if case.ci_low is None or case.ci_high is None else \
            f" (95% CI {case.ci_low:.4g}–{case.ci_high:.4g})"
        way = (f"{1 / ratio:.3g}x faster" if ratio < 1 else
               f"{ratio:.3g}x slower" if ratio > 1 else "the same")
        return f"{ratio:.4g}x the baseline's time{ci}, {way}"

    def _rows(self) -> list[tuple[str, str]]:
        case = self.comparison
        p_value = "n/a" if case.p_value is None else f"{case.p_value:.3g}"
        rows = [("baseline", repr(self.baseline)), ("candidate", repr(self.candidate)),
                ("ratio", self._ratio_text()),
                ("verdict", f"{case.verdict} (threshold {case.threshold:.0%})"),
                ("p-value", f"{p_value} ({case.method or 'no test'})")]
        if case.note:
            rows.append(("note", case.note))
        return rows

    def __repr__(self) -> str:
        return (f"<BenchComparison {self.candidate.name} vs {self.baseline.name}: "
                f"{self._ratio_text()}; {self.comparison.verdict}>")

    def _repr_html_(self) -> str:
        title = f"{self.candidate.name} vs {self.baseline.name}"
        return _rows_html(title, self._rows())
