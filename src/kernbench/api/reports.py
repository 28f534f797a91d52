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
               "pytest_benchmark.json", "kernel_manifest.json")
OWNED_DIRS: dict[str, tuple[str, ...]] = {
    "plots": ("*.png",), "machines": ("*/index.html",),
    "profiles": ("*.prof", "*.txt", "*.torch.json", "*.jax")}
"""Folders a run writes into, with the names of what it writes there: only those are removed
(a file of the user's there stays, and so does its folder)."""


def clear_previous_reports(output_dir: Path, kernels: bool = True,
                           resumed: bool = False) -> None:
    """Remove report files an earlier run left in `output_dir` (only kernbench's own names),
    and with `kernels` its kernels/*.json (kernbench's kernel files only: a folder of the
    user's called kernels keeps what kernbench did not write): a run or merge writes its own,
    and an earlier run's left there would be read back as this one's (by --resume, and by the
    report of a run that did not finish). A resumed run has read the records it keeps before
    this, and keeps the profiles/ they name (`resumed`)."""
    for name in OWNED_FILES:
        (output_dir / name).unlink(missing_ok=True)
    for name, patterns in OWNED_DIRS.items():
        if not (resumed and name == "profiles"):
            _remove_owned(output_dir / name, patterns)
    if kernels:
        _remove_owned(output_dir / "kernels", (), kernel_files=True)


def _remove_owned(folder: Path, patterns: Sequence[str], kernel_files: bool = False) -> None:
    """The entries of `folder` matching `patterns` (and with `kernel_files`, its kernbench
    kernel files), then each folder that left empty, `folder` included."""
    import contextlib
    import shutil

    if not folder.is_dir() or folder.is_symlink():
        return
    found = [p for pattern in patterns for p in folder.glob(pattern)]
    if kernel_files:
        found += [p for p in folder.glob("*.json") if is_kernel_file(p)]
    for path in found:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    for parent in sorted({p.parent for p in found} | {folder}, key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):  # only when empty
            parent.rmdir()


def is_kernel_file(path: Path) -> bool:
    """Whether `path` is a kernel file kernbench wrote (kernels/NAME.json: its JSON begins with
    ``schema_version`` and ``kernel_name``), read no further than its first bytes."""
    try:
        with path.open("rb") as handle:
            head = handle.read(256)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"schema_version"' in head \
        and b'"kernel_name"' in head


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
    same = source.resolve() == output_dir.resolve()
    wanted = [f for f in formats if not (same and f == "json")]
    if not wanted and (source / "summary.json").is_file():  # no need to read a large run
        return []
    inputs = load_report_inputs(source, history_root)
    written = write_formats(inputs, output_dir, wanted)
    if "json" in wanted:  # another folder: the records the reports point to go along
        written += _copy_records(source, output_dir)
    return written


def _copy_records(source: Path, output_dir: Path) -> list[Path]:
    """kernel_manifest.json and kernels/*.json (which hold each case's traceback, named in
    summary.md's advice) of the report set in `source`, copied into `output_dir`."""
    import shutil

    copied = []
    for path in [source / "kernel_manifest.json", *sorted((source / "kernels").glob("*.json"))]:
        if path.is_file():
            target = output_dir / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            copied.append(Path(shutil.copyfile(path, target)))
    return copied


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
                 markdown: bool = True, html: bool = False, history_root: Path | None = None,
                 compare: Mapping[str, float] | None = None
                 ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Join shard outputs (each a report directory) into one report set under `output_dir`.

    Shards of an `--ab` run also hold `baseline/` and comparison.json: their baselines are
    merged into `output_dir/baseline` and the comparison is made again over all cases at once,
    with the shards' settings, so Benjamini-Hochberg control covers the whole suite; with
    several machines (`allow_mixed`), once per machine over that machine's cases (its A and B
    ran on it), never across machines. The shards must have compared alike (the same
    threshold, accuracy drift and alpha; a KernbenchError names the one that did not), unless
    `compare` (``threshold``, ``accuracy_drift``, ``alpha``: what the merge was asked for)
    gives the value; each bench.yaml threshold still overrides its own kernel.
    Shards of different machines are refused unless `allow_mixed`
    (:func:`kernbench.execution.merging.merge_summaries`), before anything is written; a merge
    that fails later removes the `output_dir` it created.
    Without `markdown`, summary.md is left to the caller (who renders the ``md`` format next,
    after a comparison of its own); an `--ab` merge's carries the comparison. With `html`, a
    merge of plain shards too large for the whole dashboard writes its bounded index.html
    (with the trends of the history under `history_root`;
    :func:`kernbench.api.merge.html_written` tells whether it did); else the caller renders it.
    The merge reads one shard at a time and never holds every record
    (:func:`kernbench.api.merge.merge_report_sets`).
    Returns the merged summary without its ``results`` (they are in
    `output_dir/summary.json`: :func:`kernbench.results.inputs.load_run` reads them) and that
    comparison (None for plain shards).
    """
    from kernbench.api.merge import merge_report_sets

    for shard in shard_dirs:  # the merge would overwrite the shard it reads
        if shard.resolve() == output_dir.resolve():
            raise KernbenchError(f"{output_dir}: the merge's output folder is one of its shards "
                                 f"({shard}): give the merge a folder of its own")
    has_baseline = [(d / "baseline" / "summary.json").is_file() for d in shard_dirs]
    if any(has_baseline) and not all(has_baseline):
        with_one = shard_dirs[has_baseline.index(True)]
        without = shard_dirs[has_baseline.index(False)]
        raise KernbenchError(f"{with_one} holds an --ab baseline (baseline/summary.json) and "
                             f"{without} does not: merge the shards of one run")
    compared = (_ab_shards_comparison(shard_dirs, compare or {}) if any(has_baseline)
                else None)  # checked before anything is written
    created = not output_dir.exists()
    try:
        merged = merge_report_sets(shard_dirs, output_dir, allow_mixed, markdown,
                                   html and not any(has_baseline), history_root)
        if compared is None:
            return merged, None
        baseline = merge_report_sets([d / "baseline" for d in shard_dirs],
                                     output_dir / "baseline", allow_mixed)
        comparison = _ab_comparison(output_dir, compared, baseline, merged)
        if markdown:  # again, with the comparison's Regressions section
            render_reports(output_dir, ["md"])
        return merged, comparison
    except BaseException:
        if created:  # never leave a partial report set behind
            import shutil

            shutil.rmtree(output_dir, ignore_errors=True)
        raise


_COMPARED_ALIKE = {
    "threshold": (DEFAULT_THRESHOLD, "run them with the same --threshold, or give merge one"),
    "accuracy_drift": (DEFAULT_ACCURACY_DRIFT,
                       "run them with the same --accuracy-drift, or give merge one"),
    "alpha": (DEFAULT_ALPHA, "run them with the same --alpha, or give merge one"),
    "paired": (False, "kernbench versions that compare --ab rounds otherwise made them; run "
                      "every shard with one version"),
}
"""comparison.json ``settings`` that every shard of a merged --ab run must share: the value
a shard that does not record one (an older version's) compared with, and how to agree."""


def _ab_shards_comparison(shard_dirs: Sequence[Path],
                          given: Mapping[str, float]) -> dict[str, Any]:
    """The settings the merge compares --ab shards with (:func:`_shards_comparison`), from
    the shards that compared their sides: one interrupted before its last round wrote both
    sides' finished rounds but no comparison.json, and joins the merge as it is (the merge
    is then incomplete, and its comparison says so)."""
    found = [(d, read_json_object(d / "comparison.json")) for d in shard_dirs]
    for directory, comparison in found:
        if comparison is None and (read_json_object(directory / "summary.json") or {}).get(
                "complete") is not False:
            raise KernbenchError(f"{directory}: an --ab shard that finished has no "
                                 "comparison.json: run it again")
    compared = [(d, c) for d, c in found if c is not None]
    if not compared:  # every shard was interrupted: compare as --ab does
        return {"settings": {"paired": True, **given}}
    return _shards_comparison([d for d, _ in compared], [c for _, c in compared], given)


def _shards_comparison(shard_dirs: Sequence[Path],
                            comparisons: Sequence[Mapping[str, Any]],
                            given: Mapping[str, float]) -> dict[str, Any]:
    """The comparison.json of the first shard, with every shard's bench.yaml thresholds
    (``settings.per_kernel``) joined and the settings `given` to the merge in place of the
    shards', after checking that the shards compared alike where nothing is given: the same
    ``--threshold``, ``--accuracy-drift``, ``--alpha`` and pairing, and no kernel given two
    thresholds. The merge compares all their cases again with these settings, so shards run
    with different ones would be judged by the first shard's without a word."""
    first = comparisons[0]
    settings = {**{key: default for key, (default, _) in _COMPARED_ALIKE.items()},
                **(first.get("settings") or {})}
    per_kernel: dict[str, Any] = {}
    for directory, comparison in zip(shard_dirs, comparisons, strict=True):
        theirs = comparison.get("settings") or {}
        for key, (default, how) in _COMPARED_ALIKE.items():
            if key not in given and theirs.get(key, default) != settings[key]:
                raise KernbenchError(
                    f"{directory / 'comparison.json'}: settings.{key} is "
                    f"{theirs.get(key, default)!r}, but {shard_dirs[0] / 'comparison.json'} "
                    f"has {settings[key]!r}: the shards of one --ab run must compare alike "
                    f"({how})")
        for kernel, value in (theirs.get("per_kernel") or {}).items():
            if per_kernel.setdefault(kernel, value) != value:
                raise KernbenchError(
                    f"{directory / 'comparison.json'}: settings.per_kernel.{kernel} is "
                    f"{value!r}, another shard's is {per_kernel[kernel]!r}: the shards ran "
                    f"from different bench.yaml files")
    return {**first, "settings": {**settings, **given, "per_kernel": per_kernel}}


def _ab_comparison(output_dir: Path, first: Mapping[str, Any], baseline: Mapping[str, Any],
                   merged: Mapping[str, Any]) -> dict[str, Any]:
    """comparison.json and regressions.md of merged --ab shards (`baseline` and `merged`: the
    merged summaries without their records, which are read back from disk): one comparison
    of all their cases, or one per machine joined
    (:func:`kernbench.reporting.machines.machines_comparison`)."""
    from kernbench.api.compare import run_comparison
    from kernbench.reporting.machines import machines_comparison
    from kernbench.reporting.regressions import write_comparison
    from kernbench.results.inputs import load_run
    from kernbench.results.machines import machine_runs

    settings = first.get("settings") or {}
    thresholds = Thresholds(float(settings.get("threshold", DEFAULT_THRESHOLD)),
                            float(settings.get("accuracy_drift", DEFAULT_ACCURACY_DRIFT)),
                            dict(settings.get("per_kernel") or {}))
    alpha, paired = float(settings.get("alpha", DEFAULT_ALPHA)), bool(settings.get("paired"))
    sources = [(first.get(side) or {}).get("source") for side in ("baseline", "candidate")]
    base, cand = load_run(output_dir / "baseline"), load_run(output_dir)
    if not merged.get("machines"):
        for run, source in ((base, sources[0]), (cand, sources[1])):
            run.meta["source"] = source or run.meta.get("source")
        document = run_comparison(base, cand, thresholds, alpha, paired=paired)
    else:  # each machine's A against its own B, never across machines
        machines = machine_runs(cand, merged, str(sources[1] or output_dir))
        bases = machine_runs(base, baseline, str(sources[0] or output_dir / "baseline"),
                             [machine.get("fingerprint") for machine, _ in machines])
        document = machines_comparison([
            (machine, run_comparison(base_part, part, thresholds, alpha, paired=paired))
            for (machine, part), (_, base_part) in zip(machines, bases, strict=True)])
    write_comparison(output_dir, document)
    return document
