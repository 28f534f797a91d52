"""Compare two runs: verdicts per case (:mod:`kernbench.analysis.compare`) with the machine's
caveats, written as comparison.json and regressions.md."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernbench.analysis.compare import (
    DEFAULT_ACCURACY_DRIFT,
    DEFAULT_ALPHA,
    DEFAULT_THRESHOLD,
    Thresholds,
    compare_results,
    skipped_on_both_sides,
)
from kernbench.analysis.machine_caveats import (
    calibration_change,
    comparison_warnings,
    machine_caveats,
)
from kernbench.errors import KernbenchError
from kernbench.results.inputs import LoadedRun, load_run


def compare_files(baseline: Path, candidate: Path, output_dir: Path,
                  threshold: float = DEFAULT_THRESHOLD,
                  accuracy_drift: float = DEFAULT_ACCURACY_DRIFT,
                  alpha: float = DEFAULT_ALPHA) -> dict[str, Any]:
    """Compare two result files; write comparison.json and regressions.md; return the
    comparison document."""
    base, cand = load_run(baseline), load_run(candidate)
    per_kernel = cand.meta.get("regression_thresholds") or {}
    return write_run_comparison(base, cand, output_dir,
                                Thresholds(threshold, accuracy_drift, per_kernel), alpha)


def write_run_comparison(base: LoadedRun, cand: LoadedRun, output_dir: Path,
                         thresholds: Thresholds, alpha: float = DEFAULT_ALPHA,
                         note: str | None = None, paired: bool = False) -> dict[str, Any]:
    """Compare `base` with `cand`, write comparison.json and regressions.md to `output_dir` and
    return the document (:func:`run_comparison`)."""
    from kernbench.reporting.regressions import write_comparison

    document = run_comparison(base, cand, thresholds, alpha, note, paired)
    write_comparison(output_dir, document)
    return document


def run_comparison(base: LoadedRun, cand: LoadedRun, thresholds: Thresholds,
                   alpha: float = DEFAULT_ALPHA, note: str | None = None,
                   paired: bool = False) -> dict[str, Any]:
    """The comparison document of `base` and `cand`. `paired` (an interleaved A/B) compares
    round by round and skips the machine-change caveats: both sides shared the machine's
    changes."""
    from kernbench.reporting.regressions import comparison_document

    if base.results and cand.results:  # an empty side (no baseline found) has no clock
        check_same_clock(base.meta, cand.meta)
    runner = cand.meta.get("runner")  # whose knobs the advice names
    cases = compare_results(base.results, cand.results, thresholds, alpha, paired=paired,
                            entry_point=runner)
    changed = None
    if not paired:  # an interleaved A/B shares the machine's changes between its two sides
        changed = calibration_change(base.meta.get("machine_state"),
                                     cand.meta.get("machine_state"))
        cases = machine_caveats(cases, base.results, cand.results, changed, runner)
    settings = {"threshold": thresholds.latency, "accuracy_drift": thresholds.accuracy_drift,
                "alpha": alpha, "per_kernel": dict(thresholds.per_kernel), "paired": paired}
    document = comparison_document(cases, base.meta, cand.meta, settings, note,
                                   skipped_on_both_sides(base.results, cand.results))
    warnings = [*incomplete_warnings(base.meta, cand.meta),
                *comparison_warnings(base.meta, cand.meta, changed, runner)]
    if warnings:
        document["warnings"] = warnings
    return document


def incomplete_warnings(base_meta: dict[str, Any], cand_meta: dict[str, Any]) -> list[str]:
    """A side that did not finish (an interrupted run, a merge missing shards): its missing
    cases were not compared, which a verdict of "no regression" must not hide."""
    from kernbench.reporting.machines import incomplete_text

    found = []
    for side, meta in (("candidate", cand_meta), ("baseline", base_meta)):
        if meta.get("complete") is False:
            title, sentence = incomplete_text(meta)
            found.append(f"{title.lower()} on the {side} side: {sentence}; the cases it lacks "
                         "were not compared, so this verdict is not a pass for them")
    return found


def check_same_clock(base_meta: Mapping[str, Any], cand_meta: Mapping[str, Any]) -> None:
    """KernbenchError when one side ran on the fake clock (``--debug-fake-timer``: every call
    takes exactly MS) and the other was measured: no verdict can come of those two."""
    fake = {side: meta.get("fake_call_ms") for side, meta in
            (("baseline", base_meta), ("candidate", cand_meta))}
    if (fake["baseline"] is None) == (fake["candidate"] is None):
        return
    side = "baseline" if fake["baseline"] is not None else "candidate"
    meta = base_meta if side == "baseline" else cand_meta
    other = "candidate" if side == "baseline" else "baseline"
    raise KernbenchError(
        f"the {side} ({meta.get('source') or 'this run'}) ran on the fake clock "
        f"(--debug-fake-timer {fake[side]}: every call takes exactly that many ms) and the "
        f"{other} was measured: a made-up figure against a measured one says nothing; compare "
        "runs made on the same clock")
