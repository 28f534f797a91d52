"""regressions.md and comparison.json from a list of case comparisons."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernbench.analysis.compare import (
    CaseComparison,
    case_dict,
    regressions_found,
    tally,
)
from kernbench.analysis.machine_caveats import CALIBRATIONS
from kernbench.reporting.markdown import md_escape, template_environment
from kernbench.reporting.views import split_significant
from kernbench.results.files import write_json_atomic, write_text_atomic
from kernbench.results.schema import SCHEMA_VERSION


def headline(cases: Sequence[CaseComparison], baseline_note: str | None) -> str:
    """The verdict line."""
    if baseline_note is not None:
        return f"No comparison: {baseline_note}"
    counts = tally(cases)
    if cases and counts["new"] + counts["missing"] == len(cases):
        return (f"No comparison: no case ran in both runs ({counts['new']} only in the "
                f"candidate, {counts['missing']} only in the baseline)")
    drifted = sum(1 for c in cases if (c.accuracy_drift or {}).get("flagged"))
    if regressions_found(cases):
        parts = []
        if counts["regressed"]:
            parts.append(f"{counts['regressed']} regressed")
        if drifted:
            parts.append(f"{drifted} with accuracy drift")
        return "Regression: " + ", ".join(parts)
    doubted = sum(1 for c in cases if c.claimed)
    machine = (f"; {doubted} change{'' if doubted == 1 else 's'} inconclusive because the "
               f"machine was busy or changed" if doubted else "")
    if counts["improved"]:
        return f"No regression; {counts['improved']} improved{machine}"
    return f"No regression{machine}"


def comparison_document(cases: Sequence[CaseComparison], baseline: Mapping[str, Any],
                        candidate: Mapping[str, Any], settings: Mapping[str, Any],
                        baseline_note: str | None = None,
                        skipped_both: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "skipped_both": list(skipped_both),
        "schema_version": SCHEMA_VERSION, "kind": "kernbench-comparison",
        "verdict": headline(cases, baseline_note), "regression": regressions_found(cases),
        "baseline_note": baseline_note, "baseline": _side(baseline),
        "candidate": _side(candidate), "settings": dict(settings), "counts": tally(cases),
        "cases": [case_dict(c) for c in cases],
    }


def _side(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A run's header facts, with its calibration (start -> end) as text for the table."""
    side = dict(meta)
    state = side.get("machine_state") or {}
    parts = []
    for metric, name in CALIBRATIONS.items():
        values = [((state.get(moment) or {}).get("calibration") or {}).get(metric)
                  for moment in ("before", "after")]
        shown = [f"{v:.4g}" for v in values if isinstance(v, (int, float))]
        if shown:
            unit = metric.rsplit("_", 1)[-1]
            parts.append(f"{' -> '.join(shown)} {unit} ({name})")
    side["calibration"] = "; ".join(parts) or None
    return side


def render_regressions(document: Mapping[str, Any]) -> str:
    """regressions.md; a comparison of several machines (``machines``: a merged A/B that kept
    them apart) is each machine's own, one section each, never one table of all."""
    machines = [m for m in document.get("machines") or [] if isinstance(m, Mapping)]
    if machines:
        from kernbench.reporting.machines import demote
        from kernbench.results.machines import machine_label, split_comparison

        parts = [(m, split_comparison(document, m)) for m in machines]
        sections = [f"## {md_escape(machine_label(m))}\n\n" + demote(render_regressions(part))
                    for m, part in parts if part is not None]
        return "\n".join([f"# kernbench regressions\n\n**{md_escape(document['verdict'])}**\n",
                          "Each machine is compared only with its own baseline (with --ab, "
                          "its own A and B rounds); no case is compared across machines.\n",
                          *sections])
    significant, rest = split_significant(list(document["cases"]))
    template = template_environment().get_template("regressions.md.j2")
    return template.render(doc=document, significant=significant, rest=rest)


def write_comparison(output_dir: Path, document: Mapping[str, Any]) -> list[Path]:
    """comparison.json and regressions.md under `output_dir`."""
    return [write_json_atomic(output_dir / "comparison.json", dict(document)),
            write_text_atomic(output_dir / "regressions.md", render_regressions(document))]
