"""merge_shards on disk: shard by shard, the same merged summary as the in-memory merge, kernel
files linked, and records streamed through a spool."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from kernbench.api import merge_shards
from kernbench.api.merge import html_written, merge_report_sets
from kernbench.api.merge_reads import workers_for
from kernbench.api.merge_spool import CHUNK, Spool
from kernbench.errors import KernbenchError
from kernbench.execution.completeness import plan_record
from kernbench.execution.merging import merge_summaries
from kernbench.reporting.bundle import load_report_inputs
from kernbench.reporting.html_machines import html_pages
from kernbench.reporting.html_view import HTML_MAX_CASES
from support.reports import large_summary, load_fixture
from support.summaries import result, summary

SUITE = ["a[cpu,fp32]", "b[cpu,fp32]", "b[cpu,fp16]", "c[cpu,fp32]"]


def shard_set(directory: Path, document: dict[str, Any]) -> Path:
    """A shard's report directory: summary.json, env.json and one kernel file per kernel."""
    (directory / "kernels").mkdir(parents=True)
    (directory / "summary.json").write_text(json.dumps(document, indent=1), encoding="utf-8")
    (directory / "env.json").write_text(json.dumps(document["environment"]), encoding="utf-8")
    for name in {r["kernel_name"] for r in document["results"]}:
        (directory / "kernels" / f"{name}.json").write_text(json.dumps(
            {"kernel_name": name, "results": [r for r in document["results"]
                                              if r["kernel_name"] == name]}), encoding="utf-8")
    return directory


def shards() -> list[tuple[str, dict[str, Any]]]:
    two = summary(result("c"), result("b", precision="fp16"), result("b", status="failed"))
    one = summary(result("a"), started="2024-01-01T09:00:00Z")
    del one["results"][0]["testbed"]  # an older record: it takes the shard's machine
    for index, (document, ids) in enumerate(((two, SUITE[1:]), (one, SUITE[:1])), start=1):
        document["settings"].update(shard=[index, 2], plan=plan_record(SUITE, ids))
    return [("s1", two), ("s2", one)]


def test_the_merge_on_disk_is_the_merge_in_memory(tmp_path: Path) -> None:
    parts = shards()
    dirs = [shard_set(tmp_path / name, document) for name, document in parts]
    header, comparison = merge_shards(dirs, tmp_path / "out", markdown=False)
    written = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    expected = merge_summaries([(str(d), doc) for d, (_, doc) in zip(dirs, parts, strict=True)])
    assert written == expected
    assert list(written)[-1] == "results"
    assert comparison is None and "results" not in header
    assert header == {k: v for k, v in expected.items() if k != "results"}
    assert [r["case_id"] for r in written["results"]] == [
        "a[cpu,fp32]", "b[cpu,fp16]", "b[cpu,fp32]", "c[cpu,fp32]"]
    assert written["results"][0]["testbed"] == "a"
    assert written["completeness"]["complete"] is True
    linked = tmp_path / "out" / "kernels" / "a.json"
    assert os.path.samefile(linked, dirs[1] / "kernels" / "a.json")
    merge_shards(dirs, tmp_path / "out", markdown=False)  # again: the files are replaced
    assert sorted(p.name for p in (tmp_path / "out" / "kernels").iterdir()) == [
        "a.json", "b.json", "c.json"]
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]


def test_a_case_in_two_shards_is_refused_naming_both(tmp_path: Path) -> None:
    parts = shards()
    first = shard_set(tmp_path / "first", parts[0][1])
    again = shard_set(tmp_path / "again", parts[0][1])
    with pytest.raises(KernbenchError, match=f"in two shard summaries: {first} and {again}"):
        merge_shards([first, again], tmp_path / "out", markdown=False)
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_shard_of_another_machine_is_refused_before_the_rest_is_read(tmp_path: Path) -> None:
    one = shard_set(tmp_path / "one", summary(result("a"), fingerprint="f1"))
    other = shard_set(tmp_path / "other", summary(result("b"), fingerprint="f2"))
    (tmp_path / "broken").mkdir()
    with pytest.raises(KernbenchError, match="different machines"):
        merge_shards([one, other, tmp_path / "broken"], tmp_path / "out", markdown=False)


def test_the_spool_gives_back_entries_larger_than_its_reads() -> None:
    entries = [(("k", "cpu", "fp32"), f"k{i}", "x" * size)
               for i, size in enumerate((10, CHUNK * 3, 1, CHUNK - 7, 0))]
    with tempfile.TemporaryFile() as handle:
        spool = Spool(handle)
        spool.write(entries[:2])
        spool.write(entries[2:])
        spool.write([])
        assert list(spool.read(1)) == entries[2:]
        assert list(spool.read(0)) == entries[:2]
        assert list(spool.read(2)) == []



def test_a_merge_that_fails_removes_the_output_directory_it_made(tmp_path: Path) -> None:
    one = shard_set(tmp_path / "one", summary(result("a"), fingerprint="f1"))
    other = shard_set(tmp_path / "other", summary(result("b"), fingerprint="f2"))
    with pytest.raises(KernbenchError, match="different machines"):
        merge_shards([one, other], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    (tmp_path / "kept").mkdir()
    with pytest.raises(KernbenchError, match="different machines"):
        merge_shards([one, other], tmp_path / "kept")
    assert (tmp_path / "kept").is_dir() and not list((tmp_path / "kept").iterdir())


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_shard_of_another_run_is_refused_before_the_rest_is_read_or_anything_written(
        tmp_path: Path, jobs: int) -> None:
    """s1 and s2 are shards of one fake-clock run; o4 is a run of another tree, measured on
    the real clock with fewer iterations: no merged report may say how all were measured."""
    parts = shards()
    s1, s2 = (shard_set(tmp_path / name, document) for name, document in parts)
    other = summary(result("x"), result("y"), result("z"))
    other["settings"].update(iterations=1, fake_call_ms=None,
                             plan=plan_record(["x", "y", "z"], ["x", "y", "z"]))
    o4 = shard_set(tmp_path / "o4", other)
    (tmp_path / "broken").mkdir()
    out = tmp_path / "out"
    with pytest.raises(KernbenchError) as info:
        merge_report_sets([s1, o4, s2, tmp_path / "broken"], out, jobs=jobs)
    assert str(info.value).startswith(f"{s1} and {o4} are not shards of one run")
    assert "iterations (" in str(info.value) and "suite (" in str(info.value)
    assert not list(out.iterdir())
    with pytest.raises(KernbenchError, match="not shards of one run"):
        merge_shards([s1, o4, s2], tmp_path / "made", allow_mixed=True)
    assert not (tmp_path / "made").exists()


def large_shards(top: Path, mixed: bool, shards: int = 3) -> list[Path]:
    """The fixture's records as a large run split into `shards` shard sets (on two machines
    when `mixed`), past the bound of the whole index.html together; every 25th case fails."""
    count = HTML_MAX_CASES // 2 + 20
    whole = large_summary(count * shards)
    for index, record in enumerate(whole["results"]):
        if index % 25 == 0:
            record.update(status="failed", reason="boom")
    dirs = []
    for index in range(shards):
        machine = f"{index % 2 if mixed else 0}"
        environment = {**load_fixture().environment, "fingerprint": f"f{machine}",
                       "hostname": f"h{machine}", "testbed": f"h{machine}"}
        document = {**whole, "environment": environment,
                    "results": whole["results"][index * count:(index + 1) * count]}
        document["counts"] = {"total": count}
        dirs.append(shard_set(top / f"s{index}", document))
    return dirs


@pytest.mark.parametrize("mixed", [False, True], ids=["one-machine", "two-machines"])
def test_a_large_merge_writes_the_bounded_page_its_merged_documents_give(
        tmp_path: Path, mixed: bool) -> None:
    dirs = large_shards(tmp_path, mixed)
    out = tmp_path / "out"
    header, _ = merge_shards(dirs, out, allow_mixed=mixed, markdown=False, html=True)
    assert html_written(header, True) and not html_written(header, False)
    written = {str(p.relative_to(out)): p.read_text(encoding="utf-8")
               for p in out.glob("**/index.html")}
    assert written == html_pages(load_report_inputs(out))  # one page, however it is made
    pages = [text for name, text in written.items() if name != "index.html" or not mixed]
    assert len(pages) == (2 if mixed else 1)
    assert all('id="bounded"' in page for page in pages)
    assert all(page.count('<td class="case">') <= HTML_MAX_CASES for page in pages)


def test_a_small_merge_leaves_index_html_to_the_formats(tmp_path: Path) -> None:
    dirs = [shard_set(tmp_path / name, document) for name, document in shards()]
    header, _ = merge_shards(dirs, tmp_path / "out", markdown=False, html=True)
    assert not html_written(header, True) and not (tmp_path / "out" / "index.html").exists()


@pytest.mark.parametrize("mixed", [False, True], ids=["one-machine", "two-machines"])
def test_workers_write_what_one_process_writes(tmp_path: Path, mixed: bool) -> None:
    if threading.active_count() > 1:  # another test's library (JAX, torch) left a thread
        pytest.skip("this process has threads, so a merge reads here rather than fork workers")
    dirs = large_shards(tmp_path, mixed, shards=5)
    assert workers_for(5, 2) == 2  # forked workers here, not a fallback to one process
    written = []
    for jobs in (1, 2, 3):  # read here; then by two and three worker processes
        out = tmp_path / f"out-{jobs}"
        merge_report_sets(dirs, out, allow_mixed=mixed, html=True, jobs=jobs)
        written.append({str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*")
                        if p.is_file() and p.parent.name != "kernels"})
    assert written[0] == written[1] == written[2]
    assert {"summary.json", "summary.md", "index.html"} <= set(written[0])
    assert not [name for name in written[0] if name.startswith(".")]  # no spool left


def test_a_shard_a_worker_cannot_read_is_named_when_its_turn_comes(tmp_path: Path) -> None:
    good = [shard_set(tmp_path / f"s{i}", summary(result(f"k{i}"))) for i in range(3)]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "summary.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(KernbenchError, match=r"bad/summary\.json: cannot read shard summary"):
        merge_report_sets([*good, bad], tmp_path / "out", jobs=2)
    other = shard_set(tmp_path / "other", summary(result("x"), fingerprint="f2"))
    with pytest.raises(KernbenchError, match="different machines"):  # before bad's turn
        merge_report_sets([good[0], other, bad], tmp_path / "out", jobs=2)
    assert not list((tmp_path / "out").iterdir())


def test_workers_cut_each_machines_view_by_its_own_bounds(tmp_path: Path) -> None:
    """Tables such as noise advice keep their rows under no machine in each machine's view: a
    worker must cut a shard's view by its own machine's bounds, never another's. Here h0 has
    few, moderately noisy cases and h1 many very noisy ones."""
    whole = large_summary(10 * 250)
    dirs, start = [], 0
    for index in range(10):  # shard 6 (h0) is sent once h1's view has bounds (2 workers)
        machine = index % 2
        count, width = (20, 0.5) if machine == 0 else (250, 5.0)
        document = {**whole, "results": [dict(r, timing=dict(r["timing"])) for r in
                                         whole["results"][start:start + count]]}
        start += count
        document["environment"] = {**load_fixture().environment, "fingerprint": f"f{machine}",
                                   "hostname": f"h{machine}", "testbed": f"h{machine}"}
        document["counts"] = {"total": count}
        for record in document["results"]:
            p50 = record["timing"]["latency_ms_p50"]
            record.update(fingerprint=f"f{machine}", testbed=f"h{machine}")
            record["timing"]["latency_ms_p50_ci95"] = [p50 * (1 - width / 2),
                                                       p50 * (1 + width / 2)]
        dirs.append(shard_set(tmp_path / f"s{index}", document))
    written = []
    for jobs in (1, 2):
        out = tmp_path / f"out-{jobs}"
        merge_report_sets(dirs, out, allow_mixed=True, jobs=jobs)
        written.append((out / "summary.md").read_text(encoding="utf-8"))
    assert "Reduce measurement noise" in written[0]
    assert written[0] == written[1]


def test_a_killed_shard_gives_the_cases_its_kernel_files_hold(tmp_path: Path) -> None:
    """A killed run's summary.json lists none of its finished cases (it was written at the
    start); its kernels/*.json do, except a file an earlier run left in the folder."""
    from dataclasses import replace

    two, one = shards()
    killed = shard_set(tmp_path / "s2", one[1])
    kept = json.loads((killed / "summary.json").read_text(encoding="utf-8"))
    earlier = summary(replace(result("z"), started_at="2023-12-31T10:00:00Z"))
    (killed / "kernels" / "z.json").write_text(json.dumps(
        {"kernel_name": "z", "results": earlier["results"]}), encoding="utf-8")
    (killed / "summary.json").write_text(json.dumps({**kept, "results": [],
                                                     "complete": False}), encoding="utf-8")
    header, _ = merge_shards([shard_set(tmp_path / "s1", two[1]), killed], tmp_path / "out",
                             markdown=False)
    written = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert sorted(r["case_id"] for r in written["results"]) == sorted(SUITE)
    assert header["complete"] is False  # the shard did not finish, though nothing is missing
    assert header["completeness"]["missing_cases"] == []


def test_a_merge_into_a_folder_another_run_is_writing_is_refused(tmp_path: Path) -> None:
    """It linked its kernel files into the live run's kernels/ (a foreign record replaced
    the run's own) and both exited 0."""
    import fcntl

    from kernbench.results.files import LOCK_NAME

    dirs = [shard_set(tmp_path / name, document) for name, document in shards()]
    out = tmp_path / "live"
    out.mkdir()
    fd = os.open(out / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.pwrite(fd, b"4242", 0)
        with pytest.raises(KernbenchError, match=r"another kernbench run \(pid 4242\)"):
            merge_shards(dirs, out, markdown=False)
        assert not (out / "summary.json").exists()
    finally:
        os.close(fd)
    merge_shards(dirs, out, markdown=False)  # free again
    assert (out / "summary.json").is_file() and not (out / LOCK_NAME).exists()


def test_the_merge_has_the_kernel_manifest_its_shards_have(tmp_path: Path) -> None:
    dirs = [shard_set(tmp_path / name, document) for name, document in shards()]
    manifest = {"schema_version": 1, "root": "/repo", "paths": ["kernels"], "kernels": []}
    for folder in dirs:
        (folder / "kernel_manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    merge_shards(dirs, tmp_path / "out", markdown=False)
    assert json.loads((tmp_path / "out" / "kernel_manifest.json").read_text()) == manifest
    other = {**manifest, "root": "/elsewhere"}  # another machine's tree: no one manifest
    (dirs[0] / "kernel_manifest.json").write_text(json.dumps(other), encoding="utf-8")
    merge_shards(dirs, tmp_path / "out", markdown=False)
    assert not (tmp_path / "out" / "kernel_manifest.json").exists(), "the stale one stays"
    for folder in dirs:  # shards of an older kernbench had none: the merge has none either
        (folder / "kernel_manifest.json").unlink(missing_ok=True)
    merge_shards(dirs, tmp_path / "older", markdown=False)
    assert not (tmp_path / "older" / "kernel_manifest.json").exists()
