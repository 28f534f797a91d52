"""Sharding: --shard K/N parsing and merging shard summaries."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kernbench.errors import KernbenchError
from kernbench.execution.merging import merge_summaries
from kernbench.execution.sharding import parse_shard
from kernbench.results.schema import SCHEMA_VERSION
from kernbench.results.serialize import counts, results_from_summary
from support.summaries import result, summary

# --- parse_shard ---------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("2/4", (2, 4)), ("1/1", (1, 1)), ("4/4", (4, 4)), (" 3 / 8 ", (3, 8)),
])
def test_parse_shard_accepts_k_of_n(text: str, expected: tuple[int, int]) -> None:
    assert parse_shard(text) == expected


@pytest.mark.parametrize(("text", "detail"), [
    ("0/4", "K must be at least 1"),
    ("5/4", "K (5) is larger than N (4)"),
    ("1/0", "N must be at least 1"),
    ("a/b", "expected K/N"),
    ("3", "expected K/N"),
    ("-1/4", "expected K/N"),
    ("", "expected K/N"),
])
def test_parse_shard_refuses_with_a_clear_message(text: str, detail: str) -> None:
    with pytest.raises(KernbenchError) as caught:
        parse_shard(text)
    message = caught.value.message
    assert message.startswith(f"--shard {text!r}")
    assert detail in message
    assert "K/N" in message


# --- merge_summaries -----------------------------------------------------------------------


def two_shards() -> list[tuple[str, dict[str, Any]]]:
    one = summary(result("softmax"), result("gemm", "cuda", "fp16", "failed"),
                  started="2024-01-01T10:00:10Z", finished="2024-01-01T10:04:00Z", host="a")
    two = summary(result("gemm"), result("fft", status="skipped"),
                  started="2024-01-01T10:00:00Z", finished="2024-01-01T10:06:00Z", host="b")
    return [("shard-1/summary.json", one), ("shard-2/summary.json", two)]


def test_merge_orders_results_and_recomputes_counts() -> None:
    merged = merge_summaries(two_shards())
    order = [(r["kernel_name"], r["backend"], r["precision"]) for r in merged["results"]]
    assert order == [("fft", "cpu", "fp32"), ("gemm", "cpu", "fp32"),
                     ("gemm", "cuda", "fp16"), ("softmax", "cpu", "fp32")]
    assert merged["counts"] == {"total": 4, "ok": 2, "failed": 1, "skipped": 1,
                                "timeout": 0, "invalid": 0}
    assert merged["counts"] == counts(results_from_summary(merged, "merged"))


def test_merge_times_settings_and_environment() -> None:
    merged = merge_summaries(two_shards())
    assert merged["schema_version"] == SCHEMA_VERSION
    assert merged["started_at"] == "2024-01-01T10:00:00Z"
    assert merged["finished_at"] == "2024-01-01T10:06:00Z"
    assert merged["complete"] is True
    identity = {"shard": None, "fingerprint": "f00d", "scheduler": {}}
    assert merged["settings"] == {"iterations": 3, "warmup": 1, "seed": 1,
                                  "output_dir": None, "shards": [
        {"source": "shard-1/summary.json", "host": "a", "testbed": "a", **identity},
        {"source": "shard-2/summary.json", "host": "b", "testbed": "b", **identity}]}
    assert merged["environment"]["hostname"] == "a"
    # same shape as summary_dict, plus what the merge found missing
    assert set(merged) == set(two_shards()[0][1]) | {"completeness"}


def test_merge_compares_times_not_strings() -> None:
    early = summary(result("a"), started="2024-01-01T11:00:00+02:00",   # 09:00 UTC
                    finished="2024-01-01T11:30:00+02:00")
    late = summary(result("b"), started="2024-01-01T10:00:00Z", finished="2024-01-01T10:00:01Z")
    merged = merge_summaries([("x", late), ("y", early)])
    assert merged["started_at"] == "2024-01-01T11:00:00+02:00"
    assert merged["finished_at"] == "2024-01-01T10:00:01Z"


def test_merge_does_not_modify_or_share_its_inputs() -> None:
    shards = two_shards()
    before = copy.deepcopy(shards)
    merged = merge_summaries(shards)
    assert shards == before
    merged["results"][0]["status"] = "changed"
    merged["environment"]["hostname"] = "changed"
    assert shards == before


def test_duplicate_case_names_both_sources() -> None:
    one = summary(result("gemm"))
    two = summary(result("gemm"), result("fft"))
    with pytest.raises(KernbenchError) as caught:
        merge_summaries([("machine-a", one), ("machine-b", two)])
    assert "gemm[cpu,fp32]" in caught.value.message
    assert "machine-a" in caught.value.message and "machine-b" in caught.value.message


def test_sweep_points_of_one_kernel_are_distinct_cases_in_a_merge() -> None:
    from dataclasses import replace

    small = replace(result("mm"), problem_size={"n": 2}, point="n=2")
    large = replace(result("mm"), problem_size={"n": 4}, point="n=4")
    merged = merge_summaries([("a", summary(small)), ("b", summary(large))])
    assert [r["case_id"] for r in merged["results"]] == ["mm[cpu,fp32,n=2]", "mm[cpu,fp32,n=4]"]
    assert [r.point for r in results_from_summary(merged, "merged")] == ["n=2", "n=4"]
    with pytest.raises(KernbenchError, match=r"mm\[cpu,fp32,n=2\]"):
        merge_summaries([("a", summary(small)), ("b", summary(small, large))])


def test_incomplete_shard_makes_the_merge_incomplete() -> None:
    one = summary(result("gemm"))
    two = summary(result("fft"), complete=False)
    assert merge_summaries([("a", one), ("b", two)])["complete"] is False
    assert merge_summaries([("a", one)])["complete"] is True


def test_newer_schema_is_refused_naming_the_source() -> None:
    one = summary(result("gemm"))
    two = summary(result("fft"))
    two["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(KernbenchError, match=r"future\.json: schema_version \d+ is newer"):
        merge_summaries([("a.json", one), ("future.json", two)])


def test_not_a_summary_is_refused() -> None:
    with pytest.raises(KernbenchError, match=r"bad\.json"):
        merge_summaries([("bad.json", {"results": []})])


def test_unknown_status_is_refused() -> None:
    one = summary(result("gemm"))
    one["results"][0]["status"] = "weird"
    with pytest.raises(KernbenchError, match="unknown status 'weird'"):
        merge_summaries([("a", one)])


def test_nothing_to_merge() -> None:
    with pytest.raises(KernbenchError, match="no shard summaries"):
        merge_summaries([])


def test_merge_of_sharded_suite_equals_the_whole_suite() -> None:
    cases = [result(f"k{i}", ("cpu", "cuda")[i % 2]) for i in range(30)]
    whole = summary(*cases)
    parts = [(f"shard{k}", summary(*cases[k - 1::3])) for k in (1, 2, 3)]
    merged = merge_summaries(parts)
    expected = sorted(whole["results"],
                      key=lambda r: (r["kernel_name"], r["backend"], r["precision"]))
    assert merged["results"] == expected
    assert merged["counts"] == whole["counts"]
