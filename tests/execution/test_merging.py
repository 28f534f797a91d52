"""Merges keep machines apart: shards of different fingerprints are refused unless
--allow-mixed, then grouped by testbed and never compared across; a missing shard is named."""

from __future__ import annotations

import heapq
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.analysis.compare import compare_results
from kernbench.errors import KernbenchError
from kernbench.execution.completeness import plan_record, problems
from kernbench.execution.merging import merge_sorted, merge_summaries
from kernbench.results.serialize import results_from_summary
from support.summaries import result, summary

CPU = {"host": "runner-7", "fingerprint": "cpu0cpu0cpu0cpu0"}
GPU = {"host": "gpu-node-1", "fingerprint": "9f00deadbeef0001"}


def shard(host: str, fingerprint: str, *kernels: str, testbed: str | None = None,
          index: tuple[int, int] | None = None, plan: dict[str, Any] | None = None
          ) -> dict[str, Any]:
    document = summary(*(result(k) for k in kernels), host=host, fingerprint=fingerprint,
                       testbed=testbed)
    if index is not None:
        document["settings"]["shard"] = list(index)
    if plan is not None:
        document["settings"]["plan"] = plan
    return document


def test_shards_of_different_machines_are_refused_naming_both_and_the_flag() -> None:
    cpu, gpu = shard(**CPU, testbed="cpu-pool"), shard("x", GPU["fingerprint"], "gemm",
                                                      testbed="h100")
    with pytest.raises(KernbenchError) as info:
        merge_summaries([("cpu-shard", cpu), ("gpu-shard", gpu)])
    message = str(info.value)
    for part in ("cpu-shard", "cpu-pool", CPU["fingerprint"], "gpu-shard", "h100",
                 GPU["fingerprint"], "--allow-mixed"):
        assert part in message


def test_allow_mixed_keeps_machines_apart_grouped_by_testbed() -> None:
    gpu = shard(GPU["host"], GPU["fingerprint"], "gemm", "axpy", testbed="h100")
    cpu = shard(CPU["host"], CPU["fingerprint"], "gemm", testbed="cpu-pool")
    merged = merge_summaries([("gpu", gpu), ("cpu", cpu)], allow_mixed=True)
    # the same case on two machines is two records, each naming its machine
    assert [(r["testbed"], r["kernel_name"]) for r in merged["results"]] == [
        ("cpu-pool", "gemm"), ("h100", "axpy"), ("h100", "gemm")]
    assert [r["fingerprint"] for r in merged["results"]] == [
        CPU["fingerprint"], GPU["fingerprint"], GPU["fingerprint"]]
    assert [(m["testbed"], m["fingerprint"], m["cases"], m["shards"])
            for m in merged["machines"]] == [
        ("cpu-pool", CPU["fingerprint"], 1, ["cpu"]), ("h100", GPU["fingerprint"], 2, ["gpu"])]
    assert merged["machines"][1]["environment"]["hostname"] == GPU["host"]
    # no one machine's environment stands for the report
    assert merged["environment"]["fingerprint"] is None
    assert merged["environment"]["mixed"] == ["cpu-pool", "h100"]
    assert [(s["source"], s["testbed"]) for s in merged["settings"]["shards"]] == [
        ("gpu", "h100"), ("cpu", "cpu-pool")]


def test_a_mixed_report_is_never_compared_as_one_run() -> None:
    gpu = shard(GPU["host"], GPU["fingerprint"], "gemm", testbed="h100")
    cpu = shard(CPU["host"], CPU["fingerprint"], "gemm", testbed="cpu-pool")
    mixed = results_from_summary(merge_summaries([("g", gpu), ("c", cpu)], allow_mixed=True),
                                 "merged")
    single = results_from_summary(cpu, "cpu")
    with pytest.raises(KernbenchError, match=r"several machines.*cpu-pool.*h100"):
        compare_results(single, mixed)
    with pytest.raises(KernbenchError, match="the baseline holds"):
        compare_results(mixed, single)
    assert [c.key for c in compare_results(single, single)] == ["gemm[cpu,fp32]{\"n\": 8}"]


def test_same_machine_under_two_testbeds_merges_and_names_both() -> None:
    one = shard("node1", "f00d", "a", testbed="node1")
    two = shard("node2", "f00d", "b", testbed="node2")
    merged = merge_summaries([("1", one), ("2", two)])
    assert "machines" not in merged
    assert {r["testbed"] for r in merged["results"]} == {"node1", "node2"}


def test_one_case_twice_on_one_machine_is_refused() -> None:
    with pytest.raises(KernbenchError, match="in two shard summaries: a and b"):
        merge_summaries([("a", shard("h", "f", "gemm")), ("b", shard("h", "f", "gemm"))],
                        allow_mixed=True)


SUITE = ["a[cpu,fp32]", "b[cpu,fp32]", "c[cpu,fp32]", "d[cpu,fp32]"]


def planned(index: int, ids: list[str], *kernels: str) -> dict[str, Any]:
    return shard("h", "f", *kernels, index=(index, 3), plan=plan_record(SUITE, ids))


def test_a_shard_that_never_came_back_is_named_with_its_case_count() -> None:
    merged = merge_summaries([("s1", planned(1, SUITE[:1], "a")),
                              ("s3", planned(3, SUITE[1:2], "b"))])
    found = merged["completeness"]
    assert merged["complete"] is False and found["complete"] is False
    assert [(m["shard"], m["cases"]) for m in found["missing_shards"]] == [("2/3", 2)]
    assert found["missing_cases"] == [] and found["unchecked"] == []
    assert problems(found)[0].startswith("missing: shard 2/3 of suite ")
    assert "2 cases" in problems(found)[0]


def test_a_case_a_shard_planned_but_never_recorded_is_named() -> None:
    merged = merge_summaries([("s1", planned(1, SUITE[:2], "a")),
                              ("s2", planned(2, SUITE[2:3], "c")),
                              ("s3", planned(3, SUITE[3:], "d"))])
    assert merged["completeness"]["missing_cases"] == [
        {"case_id": "b[cpu,fp32]", "source": "s1", "fingerprint": "f"}]
    assert problems(merged["completeness"]) == [
        "missing: case b[cpu,fp32] (planned by s1, no record)"]


def test_every_case_once_is_complete_and_an_empty_shard_given_twice_is_named() -> None:
    parts = [("s1", planned(1, SUITE[:2], "a", "b")), ("s2", planned(2, [], )),
             ("s3", planned(3, SUITE[2:], "c", "d"))]
    assert merge_summaries(parts)["completeness"]["complete"] is True
    twice = merge_summaries([*parts, ("s2-again", planned(2, []))])["completeness"]
    assert twice["duplicated_shards"][0]["sources"] == ["s2", "s2-again"]
    assert "duplicated: shard 2/3" in problems(twice)[0]


def on(machine: str, index: int, ids: list[str], *kernels: str) -> dict[str, Any]:
    return shard(machine, machine, *kernels, index=(index, 3), plan=plan_record(SUITE, ids),
                 testbed="hosted")


def test_a_suite_split_over_two_machines_is_complete_when_every_shard_came_back() -> None:
    """Two hosted runners of different CPUs (one testbed, two fingerprints) ran the shards of
    one suite: every case is there, once, on one machine or the other; nothing is missing."""
    merged = merge_summaries([("s1", on("epyc", 1, SUITE[:2], "a", "b")),
                              ("s2", on("xeon", 2, SUITE[2:3], "c")),
                              ("s3", on("epyc", 3, SUITE[3:], "d"))], allow_mixed=True)
    assert merged["completeness"]["complete"] is True and merged["complete"] is True
    assert problems(merged["completeness"]) == []
    assert [m["fingerprint"] for m in merged["machines"]] == ["epyc", "xeon"]


def test_a_shard_run_on_two_machines_is_measured_twice_not_duplicated() -> None:
    parts = [("s1", on("epyc", 1, SUITE[:2], "a", "b")), ("s2", on("epyc", 2, [])),
             ("s3", on("epyc", 3, SUITE[2:], "c", "d")),
             ("s3-xeon", on("xeon", 3, SUITE[2:], "c", "d"))]
    assert merge_summaries(parts, allow_mixed=True)["completeness"]["complete"] is True
    # the same shard twice from one machine holds its cases twice there: refused outright
    with pytest.raises(KernbenchError, match="in two shard summaries"):
        merge_summaries([*parts, ("s3-again", on("xeon", 3, SUITE[2:], "c", "d"))],
                        allow_mixed=True)


def test_a_shard_no_machine_brought_back_names_the_machines_that_ran_the_others() -> None:
    found = merge_summaries([("s1", on("epyc", 1, SUITE[:1], "a")),
                             ("s3", on("xeon", 3, SUITE[1:2], "b"))],
                            allow_mixed=True)["completeness"]
    assert [m["shard"] for m in found["missing_shards"]] == ["2/3"]
    assert problems(found) == [f"missing: shard 2/3 of suite {found['missing_shards'][0]['suite']} "
                               "never came back from any machine, 2 cases (its other shards "
                               "ran on epyc, xeon)"]


def test_shards_that_split_the_suite_differently_are_named() -> None:
    # every shard came back, but no shard planned d: they were balanced by different histories
    found = merge_summaries([("s1", planned(1, SUITE[:1], "a")),
                             ("s2", planned(2, SUITE[1:2], "b")),
                             ("s3", planned(3, SUITE[2:3], "c"))])["completeness"]
    assert found["complete"] is False
    assert [(m["planned"], m["suite_cases"]) for m in found["plan_mismatches"]] == [(3, 4)]
    assert problems(found)[0].startswith("mismatch: the shards of suite ")
    assert "planned 3 of its 4 cases" in problems(found)[0]


def test_summaries_without_a_plan_are_unchecked_not_complete_by_default() -> None:
    found = merge_summaries([("old", shard("h", "f", "a"))])["completeness"]
    assert found["unchecked"] == ["old"] and found["complete"] is True


def test_old_version_1_shards_still_merge() -> None:
    old = shard("h", "f", "a")
    old["schema_version"] = 1
    for record in old["results"]:
        del record["fingerprint"], record["testbed"]
    del old["environment"]["testbed"]
    merged = merge_summaries([("v1", json.loads(json.dumps(old)))])
    assert merged["results"][0]["testbed"] == "h"
    assert merged["results"][0]["fingerprint"] == "f"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), max_size=12), max_size=7))
def test_merge_sorted_gives_what_heapq_merge_gives(values: list[list[int]]) -> None:
    """Runs of (value, run index): equal values of two runs are told apart by the run, as
    merged_order's entries are by their shard."""
    runs = [[(v, index) for v in sorted(run)] for index, run in enumerate(values)]
    assert list(merge_sorted([iter(run) for run in runs])) == list(heapq.merge(*runs))


def test_merge_sorted_takes_a_run_that_stays_ahead_without_the_heap() -> None:
    """Shards of different kernels: each run is taken whole once it is first."""
    taken: list[int] = []

    def run(index: int, values: range) -> Any:
        for value in values:
            taken.append(index)
            yield (value, index)

    merged = list(merge_sorted([run(1, range(10, 20)), run(0, range(0, 10))]))
    assert [v for v, _ in merged] == list(range(20))
    assert taken == [1, 0] + [0] * 9 + [1] * 9  # each run's first, then each run to its end
