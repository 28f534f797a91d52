"""A report of two machines (a merge with --allow-mixed) is one report per machine: no finding,
leaderboard or table ranks one machine's cases against the other's, each machine shows its
own environment, and a merge that lost nothing says nothing about being incomplete."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from kernbench.execution.merging import merge_summaries
from kernbench.reporting.bundle import ReportInputs
from kernbench.reporting.comment import render_comment
from kernbench.reporting.formats import write_formats
from kernbench.reporting.html_machines import html_pages
from kernbench.reporting.markdown import render_summary
from kernbench.results.schema import migrate
from support.reports import load_fixture

CPU, GPU = "cpu0cpu0cpu0cpu0", "9f00deadbeef0001"


def shard(kernels: tuple[str, ...], fingerprint: str, testbed: str,
          cpu: str) -> dict[str, Any]:
    """The fixture run's cases of `kernels`, as machine `fingerprint` ran them."""
    fixture = load_fixture(comparison=False, history=False)
    document = migrate(copy.deepcopy(dict(fixture.summary)), "fixture")
    environment = {**copy.deepcopy(dict(fixture.environment)), "fingerprint": fingerprint,
                   "testbed": testbed, "hostname": f"{testbed}-1",
                   "cpu": {"model": cpu, "logical_cores": 8}}
    document["environment"] = environment
    document["results"] = [{**r, "fingerprint": fingerprint, "testbed": testbed}
                           for r in document["results"] if r["kernel_name"] in kernels]
    return document


@pytest.fixture(scope="module")
def mixed() -> ReportInputs:
    """gemm and softmax on a CPU pool, rmsnorm on a GPU node: across both, the fastest case is
    the pool's and the slowest the node's."""
    parts = [("pool", shard(("gemm", "softmax"), CPU, "cpu-pool", "AMD EPYC 7763")),
             ("node", shard(("rmsnorm",), GPU, "h100", "Intel Xeon 8480"))]
    environments = {d["environment"]["fingerprint"]: d["environment"] for _, d in parts}
    merged = merge_summaries(parts, allow_mixed=True)
    for machine in merged["machines"]:  # as `kernbench merge` keeps each machine's env.json
        machine["environment"] = environments[machine["fingerprint"]]
    return ReportInputs(merged, {"fingerprint": None, "mixed": ["cpu-pool", "h100"]})


def sections(markdown: str) -> dict[str, str]:
    """The `## <machine>` sections of summary.md, by heading."""
    found = re.split(r"^## (.+)$", markdown, flags=re.M)
    return {title: body for title, body in zip(found[1::2], found[2::2], strict=True)}


def test_summary_md_ranks_and_finds_within_each_machine_only(mixed: ReportInputs) -> None:
    text = render_summary(mixed.summary, mixed.environment)
    parts = sections(text)
    pool = parts["cpu-pool (fingerprint cpu0cpu0cpu0cpu0)"]
    node = parts["h100 (fingerprint 9f00deadbeef0001)"]
    assert "**Fastest**: softmax\\[cpu,bf16\\]" in pool
    assert "**Slowest**: softmax\\[cpu,fp32\\]" in pool and "rmsnorm" not in pool
    assert "**Fastest**: rmsnorm\\[cpu,fp32\\]" in node
    assert "**Slowest**: rmsnorm\\[cpu,bf16\\]" in node and "softmax" not in node
    assert not re.search(r"^## Key Findings", text, re.M)
    assert text.count("### Key Findings") == 2
    assert text.count("### Performance Leaderboard") == 2
    # each machine's own environment, in full
    assert "| CPU | AMD EPYC 7763, 8 logical cores |" in pool
    assert "| CPU | Intel Xeon 8480, 8 logical cores |" in node
    assert "Incomplete" not in text


def test_a_merge_missing_a_shard_says_so_not_interrupted(mixed: ReportInputs) -> None:
    summary = {**mixed.summary, "complete": False, "completeness": {
        **mixed.summary["completeness"], "complete": False,
        "missing_shards": [{"shard": "2/2", "suite": "s", "fingerprints": [CPU],
                            "cases": 3}]}}
    text = render_summary(summary, mixed.environment)
    assert "**Incomplete merge**: not every case of the suite came back once (1 shards " \
           "never came back" in text
    assert "interrupted" not in text
    assert text.count("Incomplete") == 1  # said once, at the top


def test_index_html_is_an_overview_with_one_dashboard_per_machine(mixed: ReportInputs) -> None:
    pages = html_pages(mixed)
    index = pages.pop("index.html")
    assert sorted(pages) == ["machines/cpu-pool-cpu0cpu0cpu0cpu0/index.html",
                             "machines/h100-9f00deadbeef0001/index.html"]
    assert "leaderboard-table" not in index  # no board of both machines
    assert index.count('class="machine"') == 2
    assert "AMD EPYC 7763, 8 logical cores" in index and "Intel Xeon 8480" in index
    assert 'href="machines/h100-9f00deadbeef0001/index.html"' in index
    node = pages["machines/h100-9f00deadbeef0001/index.html"]
    assert "rmsnorm[cpu,fp32]" in node and "softmax" not in node and "gemm[" not in node
    assert "Intel Xeon 8480" in node and "AMD EPYC" not in node
    assert 'href="../../index.html"' in node


def test_the_pr_comment_names_each_row_machine_and_each_machine_hardware(
        mixed: ReportInputs) -> None:
    body = render_comment(mixed)
    assert "| Machine | Case | Status |" in body
    rows = [line for line in body.splitlines() if "rmsnorm\\[cpu" in line]
    assert rows and all(line.startswith("| h100 `9f00deadbeef0001` |") for line in rows)
    assert "| cpu-pool | `cpu0cpu0cpu0cpu0` | AMD EPYC 7763; GPUs: none |" in body
    assert "| h100 | `9f00deadbeef0001` | Intel Xeon 8480; GPUs: none |" in body
    assert "unknown CPU" not in body and "Fingerprint | n/a" not in body


def test_export_formats_are_written_once_per_machine(mixed: ReportInputs,
                                                     tmp_path: Path) -> None:
    """CSV, JUnit, Bencher, ... files of one machine each: a case of one machine never lands
    beside (or, keyed by name, over) the same case of the other."""
    written = write_formats(mixed, tmp_path, ["md", "csv", "bmf", "junit"])
    names = sorted(str(p.relative_to(tmp_path)) for p in written)
    assert names == ["machines/cpu-pool-cpu0cpu0cpu0cpu0/bmf.json",
                     "machines/cpu-pool-cpu0cpu0cpu0cpu0/junit.xml",
                     "machines/cpu-pool-cpu0cpu0cpu0cpu0/results.csv",
                     "machines/h100-9f00deadbeef0001/bmf.json",
                     "machines/h100-9f00deadbeef0001/junit.xml",
                     "machines/h100-9f00deadbeef0001/results.csv", "summary.md"]
    node = (tmp_path / "machines/h100-9f00deadbeef0001/results.csv").read_text(encoding="utf-8")
    assert "rmsnorm" in node and "softmax" not in node and "gemm" not in node


def shard_dirs(tmp_path: Path, ab: bool = False) -> list[Path]:
    """The two machines' shards as report directories, each env.json saying more than its
    summary.json's environment; with `ab`, each an --ab shard (its baseline: the same run)."""
    from kernbench.results.files import write_json_atomic

    dirs = []
    for name, document in (("pool", shard(("gemm", "softmax"), CPU, "cpu-pool", "AMD EPYC")),
                           ("node", shard(("rmsnorm",), GPU, "h100", "Intel Xeon 8480"))):
        for where in (tmp_path / name, tmp_path / name / "baseline") if ab else (tmp_path / name,):
            write_json_atomic(where / "summary.json", document)
            write_json_atomic(where / "env.json", {**document["environment"], "probe": name})
        if ab:
            write_json_atomic(tmp_path / name / "comparison.json",
                              {"settings": {"threshold": 0.05, "alpha": 0.05, "paired": False}})
        dirs.append(tmp_path / name)
    return dirs


def test_the_streamed_merge_writes_each_machine_summary_from_its_own_records(
        tmp_path: Path) -> None:
    """merge_shards keeps no record in memory, yet its summary.md is the one the whole merged
    document gives: a section per machine, each with that machine's full env.json."""
    import json

    from kernbench.api import merge_shards

    header, _ = merge_shards(shard_dirs(tmp_path), tmp_path / "out", allow_mixed=True)
    assert "results" not in header
    assert [m["environment"]["probe"] for m in header["machines"]] == ["pool", "node"]
    text = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    whole = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    env = json.loads((tmp_path / "out" / "env.json").read_text(encoding="utf-8"))
    assert text == render_summary(whole, env)
    parts = sections(text)
    assert "**Fastest**: softmax\\[cpu,bf16\\]" in parts["cpu-pool (fingerprint cpu0cpu0cpu0cpu0)"]
    assert "rmsnorm" not in parts["cpu-pool (fingerprint cpu0cpu0cpu0cpu0)"]
    assert "softmax" not in parts["h100 (fingerprint 9f00deadbeef0001)"]
    assert "Incomplete" not in text


def test_streamed_ab_shards_of_two_machines_are_compared_per_machine(tmp_path: Path) -> None:
    from kernbench.api import merge_shards

    _, comparison = merge_shards(shard_dirs(tmp_path, ab=True), tmp_path / "out",
                                 allow_mixed=True)
    assert comparison is not None
    assert [m["fingerprint"] for m in comparison["machines"]] == [CPU, GPU]
    for machine, kernels in ((CPU, {"gemm", "softmax"}), (GPU, {"rmsnorm"})):
        mine = [c for c in comparison["cases"] if c["fingerprint"] == machine]
        assert mine and {c["label"].split("[")[0] for c in mine} == kernels
    regressions = (tmp_path / "out" / "regressions.md").read_text(encoding="utf-8")
    assert "## cpu-pool (fingerprint cpu0cpu0cpu0cpu0)" in regressions
    text = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert text.count("\n### Regressions\n") == 2  # each machine's, in its own section


def _comparison_settings(directory: Path, **settings: Any) -> None:
    from kernbench.results.files import write_json_atomic

    write_json_atomic(directory / "comparison.json", {"settings": {
        "threshold": 0.05, "alpha": 0.05, "paired": False, **settings}})


@pytest.mark.parametrize(("key", "value", "flag"), [
    ("threshold", 0.1, "--threshold"), ("alpha", 0.01, "--alpha"),
    ("accuracy_drift", 0.2, "--accuracy-drift")])
def test_ab_shards_compared_with_different_settings_are_refused(
        tmp_path: Path, key: str, value: float, flag: str) -> None:
    """The merge compares every case again with one set of settings: a shard run with another
    --threshold (or --alpha, --accuracy-drift) is refused, naming it, before anything is
    written, not judged by the first shard's settings without a word."""
    from kernbench.api import merge_shards
    from kernbench.errors import KernbenchError

    pool, node = shard_dirs(tmp_path, ab=True)
    _comparison_settings(node, **{key: value})
    with pytest.raises(KernbenchError) as caught:
        merge_shards([pool, node], tmp_path / "out", allow_mixed=True)
    message = str(caught.value)
    assert str(node / "comparison.json") in message and f"settings.{key}" in message
    assert flag in message and str(value) in message
    assert not (tmp_path / "out").exists()


def test_ab_shards_bench_yaml_thresholds_are_joined_and_a_conflict_refused(
        tmp_path: Path) -> None:
    from kernbench.api import merge_shards
    from kernbench.errors import KernbenchError

    pool, node = shard_dirs(tmp_path, ab=True)
    _comparison_settings(pool, per_kernel={"gemm": {"latency": 0.2}})
    _comparison_settings(node, per_kernel={"rmsnorm": {"latency": 0.3}})
    _, comparison = merge_shards([pool, node], tmp_path / "out", allow_mixed=True)
    assert comparison is not None
    assert comparison["settings"]["per_kernel"] == {"gemm": {"latency": 0.2},
                                                    "rmsnorm": {"latency": 0.3}}
    _comparison_settings(node, per_kernel={"gemm": {"latency": 0.1}})
    with pytest.raises(KernbenchError, match=r"per_kernel\.gemm"):
        merge_shards([pool, node], tmp_path / "again", allow_mixed=True)


def test_a_setting_given_to_the_merge_replaces_the_shards(tmp_path: Path) -> None:
    from kernbench.api import merge_shards

    pool, node = shard_dirs(tmp_path, ab=True)
    _comparison_settings(node, threshold=0.1)
    _, comparison = merge_shards([pool, node], tmp_path / "out", allow_mixed=True,
                                 compare={"threshold": 0.5})
    assert comparison is not None and comparison["settings"]["threshold"] == 0.5


@pytest.mark.parametrize(("flags", "threshold"), [([], 0.05), (["--threshold", "0.5"], 0.5)])
def test_kernbench_merge_of_ab_shards_compares_as_they_did_or_as_told(
        tmp_path: Path, flags: list[str], threshold: float) -> None:
    """Without --threshold the merge keeps the shards' own (0.05 here), not merge's default
    (0.10); with it, the flag's."""
    import json

    from kernbench.cli.main import main

    out = tmp_path / "out"
    code = main(["merge", str(out), *map(str, shard_dirs(tmp_path, ab=True)), "--allow-mixed",
                 "--format", "json", *flags])
    assert code == 0
    written = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert written["settings"]["threshold"] == threshold


def test_a_mixed_merge_does_not_claim_the_first_machines_selection_for_all() -> None:
    """The CPU pool ran `--backends cpu`, the GPU node `--backends cuda`: the merged settings
    say neither for both (null), and each shard's entry says its own."""
    pool = shard(("gemm", "softmax"), CPU, "cpu-pool", "AMD EPYC 7763")
    node = shard(("rmsnorm",), GPU, "h100", "Intel Xeon 8480")
    pool["settings"] = {**pool["settings"], "backends": ["cpu"]}
    node["settings"] = {**node["settings"], "backends": ["cuda"]}
    settings = merge_summaries([("pool", pool), ("node", node)], allow_mixed=True)["settings"]
    assert settings["backends"] is None
    assert settings["filters"] == pool["settings"].get("filters")  # alike: kept
    assert [e["selection"]["backends"] for e in settings["shards"]] == [["cpu"], ["cuda"]]
    node["settings"] = {**node["settings"], "backends": ["cpu"]}
    alike = merge_summaries([("pool", pool), ("node", node)], allow_mixed=True)["settings"]
    assert alike["backends"] == ["cpu"] and "selection" not in alike["shards"][0]


def test_a_refused_merge_of_ab_shards_leaves_an_existing_report_set_as_it_was(
        tmp_path: Path) -> None:
    """The shards' settings are checked before anything is written: a merge into a folder
    that holds an earlier merge (or into a shard itself) that is refused leaves it whole."""
    from kernbench.api import merge_shards
    from kernbench.errors import KernbenchError

    pool, node = shard_dirs(tmp_path, ab=True)
    out = tmp_path / "out"
    merge_shards([pool, node], out, allow_mixed=True)
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    shard_before = {p: p.read_bytes() for p in sorted(pool.rglob("*")) if p.is_file()}
    _comparison_settings(node, threshold=0.1)
    for target, why in ((out, r"settings\.threshold"),
                        (pool, r"the merge's output folder is one of its shards")):
        with pytest.raises(KernbenchError, match=why):
            merge_shards([pool, node], target, allow_mixed=True)
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before
    assert {p: p.read_bytes() for p in sorted(pool.rglob("*")) if p.is_file()} == shard_before


@pytest.mark.parametrize(("pool_paired", "accepted"), [(None, True), (True, False)])
def test_a_shard_that_does_not_record_pairing_compared_unpaired(
        tmp_path: Path, pool_paired: bool | None, accepted: bool) -> None:
    """Shards of versions before `paired` was recorded compared unpaired: alike with a shard
    that says False, and told apart, with the version named as the cause, from one that
    says True."""
    from kernbench.api import merge_shards
    from kernbench.errors import KernbenchError
    from kernbench.results.files import write_json_atomic

    pool, node = shard_dirs(tmp_path, ab=True)
    settings = {"threshold": 0.05, "alpha": 0.05}
    write_json_atomic(pool / "comparison.json", {"settings": {
        **settings, **({} if pool_paired is None else {"paired": pool_paired})}})
    write_json_atomic(node / "comparison.json", {"settings": settings})
    if accepted:
        merge_shards([pool, node], tmp_path / "out", allow_mixed=True)
        return
    with pytest.raises(KernbenchError, match=r"settings\.paired is False.*one version"):
        merge_shards([pool, node], tmp_path / "out", allow_mixed=True)


def test_a_merge_of_several_machines_is_not_merged_again() -> None:
    """Its records would be filed under one machine (its own has no fingerprint): the merge
    names it and says to merge the shards it was made of."""
    from kernbench.errors import KernbenchError

    pool = shard(("gemm", "softmax"), CPU, "cpu-pool", "AMD EPYC 7763")
    node = shard(("rmsnorm",), GPU, "h100", "Intel Xeon 8480")
    both = merge_summaries([("pool", pool), ("node", node)], allow_mixed=True)
    other = shard(("drifty",), "ab" * 8, "arm", "Neoverse V2")
    with pytest.raises(KernbenchError, match=r"both is itself a merge of 2 machines \(cpu-pool"
                                             r", h100\).*Merge the shards it was made of"):
        merge_summaries([("both", both), ("other", other)], allow_mixed=True)


def test_a_merge_of_one_machines_shards_can_be_merged_again() -> None:
    one = [shard((name,), CPU, "cpu-pool", "AMD EPYC 7763") for name in ("gemm", "softmax",
                                                                        "rmsnorm")]
    first = merge_summaries([("a", one[0]), ("b", one[1])])
    again = merge_summaries([("ab", first), ("c", one[2])])
    assert sorted({r["kernel_name"] for r in again["results"]}) == ["gemm", "rmsnorm",
                                                                    "softmax"]
    assert [e["source"] for e in again["settings"]["shards"]] == ["a", "b", "c"]
    assert "machines" not in again
