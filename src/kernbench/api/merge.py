"""Join shard report sets on disk, one shard at a time, in memory that does not grow with them.

:func:`merge_report_sets` reads each shard's summary.json once. Of its records it keeps what
summary.md shows (:class:`kernbench.reporting.summary_view.SummaryView` keeps the first rows
of each table; one view per machine, so a merge that keeps machines apart gives each machine
its own section, ranked and judged on its own) and writes the rest to a spool file beside
the output: each record's JSON text as the read gave it
(:func:`kernbench.results.jsontext.split_records`), in merge order, with its sort key. Then
it writes the merged summary.json by joining the shards' spooled runs
(:func:`kernbench.execution.merging.merged_order`), so at most one record per shard is in
memory; what grows with the number of shards is each shard's head (its environment, settings
and plan facts) and a read buffer. The shards are read, and their views taken, in worker
processes (:mod:`kernbench.api.merge_reads`). The kernel files are linked into the output
(copied across file systems): kernbench replaces a report file, never writes into it, so a link
never sees a later change to the shard's copy.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernbench.api.merge_reads import read_shards
from kernbench.api.merge_spool import Spool
from kernbench.errors import KernbenchError
from kernbench.execution.merging import (
    ShardHead,
    check_one_machine,
    machines,
    merged_header,
    merged_order,
)
from kernbench.execution.run_identity import OneRun
from kernbench.reporting.summary_view import SummaryView
from kernbench.results.files import read_json_object, write_json_atomic, write_json_items_atomic

__all__ = ["html_written", "merge_report_sets"]

def merge_report_sets(shard_dirs: Sequence[Path], output_dir: Path, allow_mixed: bool = False,
                      markdown: bool = True, html: bool = False,
                      history_root: Path | None = None, jobs: int | None = None
                      ) -> dict[str, Any]:
    """Write the merged summary.json, env.json, summary.md (unless not `markdown`) and kernel
    files of the shard report sets `shard_dirs` into `output_dir`; the merged summary without
    its results (they are in `output_dir/summary.json`). With `html`, a merge of more than
    :data:`kernbench.reporting.html_view.HTML_MAX_CASES` cases also writes its bounded
    index.html (and each machine's page) from the same views, with the trends of the history
    records of its machine under `history_root`; a smaller one leaves index.html to the
    caller (:func:`html_written` tells). The shards are read by `jobs` worker processes
    (default: one per core; :mod:`kernbench.api.merge_reads`), the output the same however
    many. See
    :func:`kernbench.execution.merging.merge_summaries` for what the merge checks (shards of
    other machines, of another run), before anything is written."""
    if not shard_dirs:
        raise KernbenchError("no shard summaries to merge")
    from kernbench.results.files import check_output_dir, output_lock

    check_output_dir(output_dir)
    collecting = gc.isenabled()
    gc.disable()  # records are trees, never cycles; collecting as they pile up costs a third
    try:
        with output_lock(output_dir):  # a run or merge writing there at once is refused
            return _merge(shard_dirs, output_dir, allow_mixed, markdown, html, history_root,
                          jobs)
    finally:
        if collecting:
            gc.enable()


def html_written(document: Mapping[str, Any], html: bool) -> bool:
    """Whether a merge asked for `html` wrote index.html itself: a merge of `document`'s size
    gets the bounded page (:mod:`kernbench.reporting.html_view`), from the merge's views."""
    if not html:
        return False
    from kernbench.reporting.html_view import bounded

    return bounded(int((document.get("counts") or {}).get("total") or 0))


def _merge(shard_dirs: Sequence[Path], output_dir: Path, allow_mixed: bool,
           markdown: bool, html: bool, history_root: Path | None,
           jobs: int | None) -> dict[str, Any]:
    from kernbench.api.reports import clear_previous_reports

    output_dir.mkdir(parents=True, exist_ok=True)
    manifest = _shared_manifest(shard_dirs)  # before the output (maybe a shard) is cleared
    views: dict[str, SummaryView] | None = {} if markdown or html else None
    with tempfile.TemporaryFile(dir=output_dir, prefix=".merge-spool-") as handle:
        spool = Spool(handle)
        heads = _gather(shard_dirs, spool, views, allow_mixed, jobs)
        found = machines(heads)
        if len(found) > 1:
            _machine_environments(found)
        header = merged_header(heads, found)
        into_a_shard = output_dir.resolve() in {d.resolve() for d in shard_dirs}
        clear_previous_reports(output_dir, kernels=not into_a_shard)
        runs = [spool.read(index) for index in range(len(heads))]
        write_json_items_atomic(output_dir / "summary.json", header,
                                {"results": merged_order(runs, heads, found)})
    environment = _environment(header, shard_dirs[0])
    write_json_atomic(output_dir / "env.json", environment)
    if manifest is not None:
        write_json_atomic(output_dir / "kernel_manifest.json", manifest)
    if views is not None:
        tallies = _tallies(heads)
        if markdown:
            _write_markdown(views, tallies, header, environment, output_dir)
        if html_written(header, html):
            _write_html(views, tallies, header, environment, output_dir, history_root)
    _link_kernel_files(shard_dirs, output_dir / "kernels")
    del header["results"]
    return header


def _gather(shard_dirs: Sequence[Path], spool: Spool, views: dict[str, SummaryView] | None,
            allow_mixed: bool, jobs: int | None) -> list[ShardHead]:
    """Each shard's head, in order; its records into the `spool` and its view into its
    machine's of `views` (none without summary.md or index.html to write): one view per
    machine, so nothing is ranked across machines."""
    heads: list[ShardHead] = []
    one_run = OneRun()
    with contextlib.closing(read_shards(shard_dirs, spool, views, jobs)) as reads:
        for head in reads:
            heads.append(head)
            if not allow_mixed:  # the first shard of another machine stops the merge
                check_one_machine([(h.source, h.environment) for h in (heads[0], heads[-1])])
            one_run.add(head.identity)  # so does the first shard of another run
    return heads


def _shared_manifest(shard_dirs: Sequence[Path]) -> dict[str, Any] | None:
    """The kernel_manifest.json every shard has, the same in each (the shards of one run on
    one machine discovered the same kernels), for the merge to have the file a run's report
    set has; None where a shard has none (an older kernbench) or they differ (a merge of
    machines, `--allow-mixed`, whose roots and paths may differ: no one manifest is theirs)."""
    manifests = [read_json_object(folder / "kernel_manifest.json") for folder in shard_dirs]
    first = manifests[0]
    return first if first is not None and all(m == first for m in manifests) else None


def _environment(header: dict[str, Any], first: Path) -> dict[str, Any]:
    """Several machines: no shard's env.json stands for the report; each is in `machines`."""
    if header.get("machines"):
        return {"schema_version": header["schema_version"], **header["environment"]}
    return read_json_object(first / "env.json") or header.get("environment") or {}


def _machine_environments(found: Sequence[dict[str, Any]]) -> None:
    """Each machine's report shows all its env.json (its first shard's), not only the part of
    it a summary.json keeps; a file of another machine (or none) leaves the summary's."""
    from kernbench.execution.merging import machine_key

    for machine in found:
        env = read_json_object(Path(machine["shards"][0]) / "env.json")
        if env and machine_key(env) == machine_key(machine["environment"]):
            machine["environment"] = env


def _tallies(heads: Sequence[ShardHead]) -> dict[str, dict[str, int]]:
    """Each machine's case counts by status."""
    tallies: dict[str, dict[str, int]] = {}
    for head in heads:
        tally = tallies.setdefault(head.machine, dict.fromkeys(head.tally, 0))
        for status, count in head.tally.items():
            tally[status] += count
    return tallies


def _write_html(views: dict[str, SummaryView], tallies: dict[str, dict[str, int]],
                header: dict[str, Any], environment: dict[str, Any], output_dir: Path,
                history_root: Path | None) -> None:
    """The bounded index.html (and each machine's page) from the merge's views."""
    from kernbench.reporting.bundle import ReportInputs, machine_history
    from kernbench.reporting.html_view import html_view_pages
    from kernbench.results.files import write_text_atomic

    history = () if history_root is None or header.get("machines") else tuple(
        machine_history(history_root, environment))
    pages = html_view_pages(views, tallies, ReportInputs(header, environment, None, history))
    for name, text in pages.items():
        (output_dir / name).parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(output_dir / name, text)


def _write_markdown(views: dict[str, SummaryView], tallies: dict[str, dict[str, int]],
                    header: dict[str, Any], environment: dict[str, Any],
                    output_dir: Path) -> None:
    """summary.md: one machine's view, or each machine's as its own section
    (:func:`kernbench.reporting.markdown.render_machine_views`)."""
    from kernbench.reporting.markdown import render_machine_views, render_view
    from kernbench.results.files import write_text_atomic

    if not header.get("machines"):
        view = next(iter(views.values()), SummaryView())
        view.machines = list(views)[:1] or [None]
        text = render_view(view, header, environment)
    else:
        text = render_machine_views(views, tallies, header, environment)
    write_text_atomic(output_dir / "summary.md", text)


def _link_kernel_files(shard_dirs: Sequence[Path], kernels: Path) -> None:
    """Each shard's kernels/*.json into `kernels` (a later shard's file of the same name
    replaces an earlier one's): a hard link where the file system allows, else a copy."""
    kernels.mkdir(parents=True, exist_ok=True)
    link = True
    for directory in shard_dirs:
        for kernel_file in sorted((directory / "kernels").glob("*.json")):
            target = kernels / kernel_file.name
            if link:
                try:
                    os.link(kernel_file, target)
                    continue
                except FileExistsError:  # an earlier shard's, or an earlier merge's
                    if os.path.samefile(kernel_file, target):
                        continue  # renaming a link over its twin would do nothing
                except OSError:  # another file system, or one without links
                    link = False
            temporary = kernels / f".{kernel_file.name}.tmp{os.getpid()}"
            temporary.unlink(missing_ok=True)
            if link:
                os.link(kernel_file, temporary)
            else:
                shutil.copyfile(kernel_file, temporary)
            os.replace(temporary, target)
