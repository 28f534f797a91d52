"""Balanced shards: expected wall times from history records, longest-first greedy, and
`--shard K/N` split by them end to end (a synthetic history, the fake timer)."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import pytest

from kernbench.cli.main import main
from kernbench.execution.balancing import (
    balanced_groups,
    case_walls_s,
    describe_balance,
    history_ids,
)
from kernbench.results.history import append_record
from kernbench.results.schema import SCHEMA_VERSION
from support.kernel_tree import kernel, load


def result(kernel_name: str, samples_ms: list[float], inner_loops: int = 1,
           precision: str = "fp32") -> dict[str, Any]:
    return {"kernel_name": kernel_name, "backend": "cpu", "precision": precision,
            "status": "ok", "samples_ms": samples_ms, "inner_loops": inner_loops}


def record(*results: dict[str, Any], created_at: str = "2024-05-01T10:00:00.000Z"
           ) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "kind": "kernbench-history",
            "created_at": created_at, "fingerprint": "f00d", "results": list(results)}


# --- case_walls_s ------------------------------------------------------------------------


def test_a_case_wall_is_its_samples_times_inner_loops_plus_the_overhead() -> None:
    walls = case_walls_s([record(result("gemm", [2.0, 3.0], inner_loops=100))], 0.5,
                         start_s=0.0)
    assert walls["gemm[cpu,fp32]"] == pytest.approx(5.0 * 100 / 1000 + 0.5)
    # a native-precision case is planned as kernel[backend,*]
    assert walls["gemm[cpu,*]"] == walls["gemm[cpu,fp32]"]


def test_the_newest_record_wins_and_cases_without_samples_are_left_out() -> None:
    newest = record(result("gemm", [1000.0]), {**result("relu", []), "status": "failed"})
    older = record(result("gemm", [9000.0]), result("relu", [4000.0]),
                   created_at="2024-04-01T10:00:00.000Z")
    walls = case_walls_s([newest, older], 0.0, start_s=0.0)
    assert walls["gemm[cpu,fp32]"] == 1.0
    assert walls["relu[cpu,fp32]"] == 4.0  # the newest did not measure it


def test_an_older_record_without_inner_loops_counts_one_loop() -> None:
    plain = {k: v for k, v in result("gemm", [1000.0]).items() if k != "inner_loops"}
    assert case_walls_s([record(plain)], 0.25, start_s=0.0)["gemm[cpu,fp32]"] == 1.25


def test_each_process_pays_a_start_and_its_measured_warm_up() -> None:
    three = {**result("gemm", [100.0, 100.0, 100.0]), "process_sample_counts": [1, 1, 1]}
    walls = case_walls_s([record(three)], 0.1, start_s=0.15)
    assert walls["gemm[cpu,fp32]"] == pytest.approx(0.3 + 3 * (0.15 + 0.1))
    # A JAX case that settled for 0.25 s (or a compile) measured its own warm-up.
    settled = {**three, "warmup_s": 0.25}
    walls = case_walls_s([record(settled)], 0.1, start_s=0.15)
    assert walls["gemm[cpu,fp32]"] == pytest.approx(0.3 + 3 * (0.15 + 0.25))


def test_history_ids_name_the_case_and_its_native_precision_form() -> None:
    assert history_ids(result("gemm", [1.0])) == ("gemm[cpu,fp32]", "gemm[cpu,*]")


# --- balanced_groups -----------------------------------------------------------------------


def ident(item: tuple[str, str]) -> str:
    return f"{item[0]}[cpu,{item[1]}]"


def group(item: tuple[str, str]) -> str:
    return item[0]


def test_longest_first_greedy_puts_the_longest_kernel_alone() -> None:
    items = [("a", "fp32"), ("big", "fp32"), ("b", "fp32"), ("c", "fp32"), ("big", "fp16")]
    walls = {"big[cpu,fp32]": 5.0, "big[cpu,fp16]": 3.0, "a[cpu,fp32]": 3.0,
             "b[cpu,fp32]": 2.0, "c[cpu,fp32]": 1.0}
    balance = balanced_groups(items, group, ident, walls, 2)
    assert balance is not None
    # big (8) -> 1; a (3) -> 2; b (2) -> 2 (3 < 8); c (1) -> 2 (5 < 8)
    assert dict(balance.shard_of) == {"big": 1, "a": 2, "b": 2, "c": 2}
    assert balance.expected_s == (8.0, 6.0)
    assert balance.known_cases == 5


def test_ties_go_by_name_then_shard_number_so_the_split_is_deterministic() -> None:
    items = [("d", "x"), ("c", "x"), ("b", "x"), ("a", "x")]
    walls = {ident(item): 1.0 for item in items}
    first = balanced_groups(items, group, ident, walls, 2)
    again = balanced_groups(list(reversed(items)), group, ident, walls, 2)
    assert first is not None and again is not None
    assert dict(first.shard_of) == dict(again.shard_of) == {"a": 1, "b": 2, "c": 1, "d": 2}


def test_unmeasured_cases_count_as_the_median_measured_case() -> None:
    items = [("a", "x"), ("b", "x"), ("c", "x"), ("new", "x")]
    walls = {"a[cpu,x]": 1.0, "b[cpu,x]": 2.0, "c[cpu,x]": 9.0}
    balance = balanced_groups(items, group, ident, walls, 2)
    assert balance is not None
    assert balance.known_cases == 3
    assert sum(balance.expected_s) == 1.0 + 2.0 + 9.0 + 2.0


def test_without_a_measured_case_there_is_no_balance() -> None:
    assert balanced_groups([("a", "x")], group, ident, {"zzz[cpu,x]": 1.0}, 2) is None


def test_describe_balance_names_every_shard_expected_time() -> None:
    line = describe_balance((1, 2), {"by": "history", "known_cases": 3, "suite_cases": 4,
                                     "expected_s": [8.0, 6.25]})
    assert line == ("shard 1/2: balanced by measured wall time (3 of 4 cases in the history); "
                    "expected 1/2 8.0 s, 2/2 6.2 s")
    assert "by count" in describe_balance((2, 2), {"by": "count"})


# --- end to end: --shard K/N over a synthetic history -----------------------------------------

GOOD = """
def run_benchmark():
    return 1
"""


def run_shard(root: Path, out: Path, shard: str) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stderr(err):
        code = main(["run", "--root", str(root), "--output-dir", str(out), "--iters", "3",
                     "--warmup", "1", "--no-cpu-peak", "--debug-fake-timer", "1",
                     "--shard", shard, "--cache-dir", str(root / "cache")])
    return code, err.getvalue()


def test_shards_are_split_by_the_history_wall_times(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    names = ("big", "k1", "k2", "k3")
    for name in names:
        kernel(root, name, GOOD)
    append_record(root, record(result("big", [9000.0]), result("k1", [1000.0]),
                               result("k2", [1000.0]), result("k3", [1000.0])))
    kernels = {}
    for index in (1, 2):
        code, err = run_shard(root, tmp_path / f"s{index}", f"{index}/2")
        assert code == 0, err
        assert "balanced by measured wall time (4 of 4 cases in the history)" in err
        summary = load(tmp_path / f"s{index}" / "summary.json")
        kernels[index] = {r["kernel_name"] for r in summary["results"]}
        balance = summary["settings"]["plan"]["balance"]
        assert balance["by"] == "history"
        overhead = 0.1 + 0.15  # warmup_time_s default + the worker start estimate
        assert balance["expected_s"] == pytest.approx([9 + overhead, 3 + 3 * overhead])
    assert kernels == {1: {"big"}, 2: {"k1", "k2", "k3"}}


def test_without_a_history_shards_are_split_by_count(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    for name in ("a", "b", "c"):
        kernel(root, name, GOOD)
    code, err = run_shard(root, tmp_path / "s1", "1/2")
    assert code == 0, err
    assert "split by count" in err
    assert load(tmp_path / "s1" / "summary.json")["settings"]["plan"]["balance"] == {
        "by": "count"}


# --- --shards N: the split is printed before the shards start ------------------------------


def run_shards(root: Path, out: Path) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stderr(err):
        code = main(["run", "--root", str(root), "--output-dir", str(out), "--iters", "3",
                     "--warmup", "1", "--no-cpu-peak", "--debug-fake-timer", "1",
                     "--processes", "1", "--shards", "2", "--cache-dir", str(root / "cache")])
    return code, err.getvalue()


def test_shards_print_every_shard_expected_wall_time_before_they_start(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    for name in ("big", "k1", "k2", "k3"):
        kernel(root, name, GOOD)
    append_record(root, record(result("big", [9000.0]), result("k1", [1000.0]),
                               result("k2", [1000.0]), result("k3", [1000.0])))
    code, err = run_shards(root, tmp_path / "out")
    assert code == 0, err
    line = ("2 shards, balanced by measured wall time (4 of 4 cases in the history); "
            "expected 1/2 9.2 s, 2/2 3.8 s")
    assert line in err
    assert err.index(line) < err.index("shard 1/2: running")


def test_shards_without_a_history_say_they_split_by_count(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    for name in ("a", "b", "c"):
        kernel(root, name, GOOD)
    code, err = run_shards(root, tmp_path / "out")
    assert code == 0, err
    line = next(x for x in err.splitlines() if "split by count" in x)
    assert line.startswith("2 shards, split by count (no history measured these cases): 1/2 ")
    assert err.index(line) < err.index("shard 1/2: running")
    counts = [int(n) for n in re.findall(r"(\d+) cases", line)]
    merged = load(tmp_path / "out" / "summary.json")
    assert sum(counts) == merged["counts"]["total"] == 3


def test_without_a_history_every_shard_gets_its_share_of_the_kernels(tmp_path: Path) -> None:
    """By count means by count: 4 one-case kernels over 2 shards are 2 and 2, and 3 over 3
    are one each, whatever their names hash to."""
    from kernbench.api.run import shard_split
    from kernbench.execution.settings import RunSettings

    root = tmp_path / "tree"
    for name in ("a", "b", "c", "d"):
        kernel(root, name, GOOD)
    settings = RunSettings(root=root, backends=("cpu",))
    assert shard_split(settings, 2)["cases"] == [2, 2]
    assert shard_split(settings, 4)["cases"] == [1, 1, 1, 1]
    assert shard_split(settings, 3)["cases"] == [2, 1, 1]
