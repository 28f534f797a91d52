"""Report sets on disk: render formats from a run's JSON, write a finished run's files at once,
join shards into one set, and clear what an earlier run into the same directory left."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernbench.analysis.compare import (
    DEFAULT_ACCURACY_DRIFT,
    DEFAULT_ALPHA,
    DEFAULT_THRESHOLD,
    Thresholds,
)
from kernbench.errors import KernbenchError
from kernbench.reporting import ReportGenerator
from kernbench.results.files import read_json_object
from kernbench.results.model import CaseResult, RunResult
from kernbench.results.serialize import spec_dict

# Files a run owns in its output directory besides the JSON it writes as it goes. A new run
# removes them first, so no report of an earlier run into the same directory survives to be
# mistaken for this one's (comparison.json above all: every format reads it).
OWNED_FILES = ("comparison.json", "regressions.md", "index.html", "results.csv",
               "pytorch_v3.json", "github_benchmark.json", "junit.xml", "bmf.json",
               "pytest_benchmark.json")
OWNED_DIRS = ("plots", "profiles", "machines")


def clear_previous_reports(output_dir: Path) -> None:
    """Remove report files an earlier run left in `output_dir` (only kernbench's own names)."""
    import shutil

    for name in OWNED_FILES:
        (output_dir / name).unlink(missing_ok=True)
    for name in OWNED_DIRS:
        shutil.rmtree(output_dir / name, ignore_errors=True)


def render_reports(output_dir: Path, formats: Sequence[str], history_root: Path | None = None,
                   source_dir: Path | None = None) -> list[Path]:
    """Render `formats` from the JSON documents of the run in `source_dir` (default:
    `output_dir`) into `output_dir`; the paths written.

    summary.json, env.json and kernels/*.json are written by the run itself, so "json" only
    copies them when rendering into another directory. History records of the run's machine
    under `history_root` feed the trends.
    """
    from kernbench.reporting.bundle import load_report_inputs
    from kernbench.reporting.formats import write_formats

    source = source_dir or output_dir
    inputs = load_report_inputs(source, history_root)
    same = source.resolve() == output_dir.resolve()
    wanted = [f for f in formats if not (same and f == "json")]
    return write_formats(inputs, output_dir, wanted)


def write_report_set(output_dir: Path, run: RunResult, manifest: dict[str, Any]) -> None:
    """Every report file of a finished run at once (A/B sides; the normal run writes as it
    goes)."""
    reports = ReportGenerator(output_dir)
    reports.write_environment(run.environment)
    reports.write_manifest(manifest)
    entries = {s.name: spec_dict(s) for s in run.kernels}
    by_kernel: dict[str, list[CaseResult]] = {}
    for result in run.results:
        by_kernel.setdefault(result.kernel_name, []).append(result)
    for name, results in by_kernel.items():
        reports.write_kernel(name, entries.get(name), results)
    reports.write_summary(run)



def merge_shards(shard_dirs: Sequence[Path], output_dir: Path, allow_mixed: bool = False,
                 markdown: bool = True) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Join shard outputs (each a report directory) into one report set under `output_dir`.

    Shards of an `--ab` run also hold `baseline/` and comparison.json: their baselines are
    merged into `output_dir/baseline` and the comparison is made again over all cases at once,
    with the shards' settings, so Benjamini-Hochberg control covers the whole suite; with
    several machines (`allow_mixed`), once per machine over that machine's cases (its A and B
    ran on it), never across machines.
    Shards of different machines are refused unless `allow_mixed`
    (:func:`kernbench.execution.merging.merge_summaries`), before anything is written; a merge
    that fails later removes the `output_dir` it created.
    Without `markdown`, summary.md is left to the caller (who renders the ``md`` format next:
    rendering it for every case is half of a large merge).
    Returns the merged summary and that comparison (None for plain shards).
    """
    comparisons = [read_json_object(d / "comparison.json") for d in shard_dirs]
    has_baseline = [(d / "baseline" / "summary.json").is_file() for d in shard_dirs]
    if any(has_baseline) and not (all(has_baseline) and all(comparisons)):
        raise KernbenchError("some shards hold an --ab baseline (baseline/summary.json and "
                             "comparison.json) and some do not: merge shards of one run")
    created = not output_dir.exists()
    try:
        merged = _merge_report_sets(shard_dirs, output_dir, allow_mixed, markdown)
        if not any(has_baseline):
            return merged, None
        baseline = _merge_report_sets([d / "baseline" for d in shard_dirs],
                                      output_dir / "baseline", allow_mixed)
        return merged, _ab_comparison(output_dir, comparisons[0] or {}, baseline, merged)
    except BaseException:
        if created:  # never leave a partial report set behind
            import shutil

            shutil.rmtree(output_dir, ignore_errors=True)
        raise


def _ab_comparison(output_dir: Path, first: Mapping[str, Any], baseline: Mapping[str, Any],
                   merged: Mapping[str, Any]) -> dict[str, Any]:
    """comparison.json and regressions.md of merged --ab shards: one comparison of all their
    cases, or one per machine joined (:func:`kernbench.reporting.machines.machines_comparison`)."""
    from kernbench.api.compare import run_comparison
    from kernbench.reporting.machines import machines_comparison
    from kernbench.reporting.regressions import write_comparison
    from kernbench.results.inputs import run_from_document
    from kernbench.results.machines import split_summary

    settings = first.get("settings") or {}
    thresholds = Thresholds(float(settings.get("threshold", DEFAULT_THRESHOLD)),
                            float(settings.get("accuracy_drift", DEFAULT_ACCURACY_DRIFT)),
                            dict(settings.get("per_kernel") or {}))
    alpha, paired = float(settings.get("alpha", DEFAULT_ALPHA)), bool(settings.get("paired"))
    sources = [(first.get(side) or {}).get("source") for side in ("baseline", "candidate")]
    bases = {m.get("fingerprint"): part for m, part in split_summary(baseline)}
    pairs: list[tuple[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]]] = [
        (m, bases.get(m.get("fingerprint"), {"results": []}), part)
        for m, part in split_summary(merged)] or [({}, baseline, merged)]
    parts = []
    for machine, base_part, cand_part in pairs:
        base, cand = (run_from_document(doc, str(source or output_dir / where))
                      for doc, source, where in ((base_part, sources[0], "baseline"),
                                                 (cand_part, sources[1], ".")))
        parts.append((machine, run_comparison(base, cand, thresholds, alpha, paired=paired)))
    document = machines_comparison(parts) if merged.get("machines") else parts[0][1]
    write_comparison(output_dir, document)
    return document


def _merge_report_sets(shard_dirs: Sequence[Path], output_dir: Path,
                       allow_mixed: bool = False, markdown: bool = True) -> dict[str, Any]:
    import json

    from kernbench.execution.merging import merge_summaries
    from kernbench.reporting.markdown import render_summary
    from kernbench.results.files import write_json_atomic, write_text_atomic

    documents = []
    for directory in shard_dirs:
        path = directory / "summary.json"
        try:
            documents.append((str(directory), json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError) as exc:
            raise KernbenchError(f"{path}: cannot read shard summary: {exc}") from exc
    merged = merge_summaries(documents, allow_mixed, owned=True)
    del documents  # the records live on in `merged`; the rest of each shard's summary goes
    for machine in merged.get("machines") or []:  # each machine's report shows all its env.json
        machine["environment"] = (read_json_object(Path(machine["shards"][0]) / "env.json")
                                  or machine["environment"])
    # Several machines: no shard's env.json stands for the report; each is in `machines`.
    environment = ({"schema_version": merged["schema_version"], **merged["environment"]}
                   if merged.get("machines") else
                   read_json_object(shard_dirs[0] / "env.json") or merged.get("environment") or {})
    clear_previous_reports(output_dir)
    write_json_atomic(output_dir / "summary.json", merged, one_line_items=True)
    write_json_atomic(output_dir / "env.json", environment)
    if markdown:
        write_text_atomic(output_dir / "summary.md", render_summary(merged, environment))
    for directory in shard_dirs:
        for kernel_file in sorted((directory / "kernels").glob("*.json")):
            write_text_atomic(output_dir / "kernels" / kernel_file.name,  # copies: no fsync
                              kernel_file.read_text(encoding="utf-8"), durable=False)
    return merged
