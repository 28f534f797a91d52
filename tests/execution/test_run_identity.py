"""A merge joins the shards of one run only: shards measured another way, of another suite or
from another tree are refused, naming two of them and what differs, even with --allow-mixed;
what shards of one run differ in (their output, their shard, a resume) still merges."""

from __future__ import annotations

from typing import Any

import pytest

from kernbench.errors import KernbenchError
from kernbench.execution.completeness import plan_record
from kernbench.execution.merging import merge_summaries
from support.summaries import result, summary

SUITE = ["a[cpu,fp32]", "b[cpu,fp32]"]
OTHER = ["a4[cpu,fp32]", "b4[cpu,fp32]", "c4[cpu,fp32]"]


def part(*kernels: str, index: tuple[int, int] | None = (1, 2), suite: list[str] = SUITE,
         fingerprint: str = "f00d", backend: str = "cpu", **settings: Any) -> dict[str, Any]:
    """A shard of `suite` holding `kernels` on `backend`, measured as the reviewer's first run
    was (a fake timer of 1 ms, 5 iterations) unless `settings` say otherwise."""
    document = summary(*(result(k, backend) for k in kernels), fingerprint=fingerprint,
                       host=fingerprint)
    document["settings"].update(
        {"iterations": 5, "fake_call_ms": 1.0, "root": "/t1", "output_dir": "s", **settings,
         "shard": list(index) if index else None,
         "plan": plan_record(suite, [f"{k}[{backend},fp32]" for k in kernels])})
    return document


def refusal(parts: list[tuple[str, dict[str, Any]]], allow_mixed: bool = False) -> str:
    with pytest.raises(KernbenchError) as info:
        merge_summaries(parts, allow_mixed=allow_mixed)
    return str(info.value)


def test_a_run_measured_otherwise_is_refused_naming_both_and_what_differs() -> None:
    """The reviewer's merge: shards 1/2 and 2/2 of one fake-clock run, and a whole real-clock
    run of another tree with 3 iterations between them."""
    s1, s2 = part("a", output_dir="s1"), part("b", index=(2, 2), output_dir="s2")
    o4 = part("a4", "b4", "c4", index=None, suite=OTHER, iterations=3, fake_call_ms=None,
              root="/t4", output_dir="o4")
    message = refusal([("s1", s1), ("o4", o4), ("s2", s2)])
    assert message.startswith("s1 and o4 are not shards of one run: they differ in ")
    for detail in ("iterations (s1: 5, o4: 3)", "fake_call_ms (s1: 1.0, o4: null)",
                   'root (s1: "/t1", o4: "/t4")', "suite (s1: "):
        assert detail in message
    assert "output_dir" not in message and "shard (" not in message
    assert "Merge each run's shards apart" in message


@pytest.mark.parametrize("key, value", [
    ("iterations", 3), ("warmup", 0), ("warmup_time_s", 0.5), ("seed", 7), ("processes", 1),
    ("isolation", "spawn"), ("timeout_s", 10.0), ("fake_call_ms", None),
    ("gpu_timing", "warm"), ("protocol", {"calibration_budget_s": 1.0}),
    ("ab", {"ref": "HEAD~1", "commit": "abc", "rounds": 8}), ("filters", ["a*"])])
def test_each_measurement_setting_must_be_the_same_in_every_shard(key: str,
                                                                  value: Any) -> None:
    other = part("b", index=(2, 2), **{key: value})
    assert f"{key} (s1: " in refusal([("s1", part("a")), ("s2", other)])


def test_allow_mixed_keeps_machines_apart_but_not_runs() -> None:
    cpu = part("a", fingerprint="cpu0")
    gpu = part("b", index=(2, 2), fingerprint="gpu0", processes=1)
    assert "processes (cpu: null, gpu: 1)" in refusal([("cpu", cpu), ("gpu", gpu)], True)


def test_shards_of_another_suite_are_refused() -> None:
    other = part("c4", index=(2, 2), suite=OTHER)
    assert "suite (s1: " in refusal([("s1", part("a")), ("s2", other)])


def test_shards_of_another_commit_are_refused() -> None:
    first, second = part("a"), part("b", index=(2, 2))
    for document, commit in ((first, "1" * 40), (second, "2" * 40)):
        document["environment"]["git"] = {"commit": commit}
    assert f'commit (s1: "{"1" * 40}", s2: "{"2" * 40}")' in refusal(
        [("s1", first), ("s2", second)])


def test_machines_may_check_the_tree_out_in_different_places_but_one_machine_may_not() -> None:
    """Self-hosted runners keep their checkouts in their own folders: one suite, one commit."""
    epyc = part("a", fingerprint="epyc", root="/runner-1/_work/repo")
    xeon = part("b", index=(2, 2), fingerprint="xeon", root="/runner-2/_work/repo")
    merged = merge_summaries([("s1", epyc), ("s2", xeon)], allow_mixed=True)
    assert merged["complete"] is True and len(merged["machines"]) == 2
    again = part("b", index=(2, 2), fingerprint="xeon", root="/elsewhere")
    message = refusal([("s1", epyc), ("s2", xeon), ("s2-again", again)], True)
    assert message.startswith("s2 and s2-again are not shards of one run")
    assert 'root (s2: "/runner-2/_work/repo", s2-again: "/elsewhere")' in message


def test_machines_may_run_their_own_rows_of_a_matrix_but_one_machine_one_suite() -> None:
    """bench.yml: the CPU rows (--backends cpu) on hosted runners, the CUDA rows (--backends
    cuda) on the GPU runner; each suite's shards came back, so the merge is complete."""
    cuda = [f"{k}[cuda,fp32]" for k in "ab"]

    def gpu_row(index: int, machine: str) -> dict[str, Any]:
        return part("ab"[index - 1], index=(index, 2), fingerprint=machine, backend="cuda",
                    backends=["cuda"], suite=cuda)

    rows = [("cpu-1", part("a", fingerprint="hosted", backends=["cpu"])),
            ("cpu-2", part("b", index=(2, 2), fingerprint="hosted", backends=["cpu"])),
            ("gpu-1", gpu_row(1, "gpu")), ("gpu-2", gpu_row(2, "gpu"))]
    merged = merge_summaries(rows, allow_mixed=True)
    assert merged["complete"] is True and len(merged["machines"]) == 2
    assert len(merged["results"]) == 4
    message = refusal([*rows[:2], ("gpu-rows-here", gpu_row(2, "hosted"))], True)
    assert message.startswith("cpu-1 and gpu-rows-here are not shards of one run")
    assert 'backends (cpu-1: ["cpu"], gpu-rows-here: ["cuda"])' in message
    assert "suite (cpu-1: " in message


def test_what_the_shards_of_one_run_differ_in_still_merges() -> None:
    first = part("a", output_dir="s1", formats=["json"], profile="cprofile")
    second = part("b", index=(2, 2), output_dir="s2", formats=["json", "md"],
                  resumed=[{"kept_cases": 0}])
    merged = merge_summaries([("s1", first), ("s2", second)])
    assert merged["complete"] is True
    assert (merged["settings"]["iterations"], merged["settings"]["fake_call_ms"]) == (5, 1.0)


def test_shards_without_a_plan_are_still_compared_by_their_settings() -> None:
    old, new = part("a"), part("b", index=(2, 2), iterations=3)
    del old["settings"]["plan"], new["settings"]["plan"]
    assert "iterations (old: 5, new: 3)" in refusal([("old", old), ("new", new)])


def test_of_two_settings_mappings_only_the_entries_that_differ_are_named() -> None:
    # --ab shards of 10 and 8 rounds: the message cut the mapping off at 80 characters, before
    # the rounds, on both sides.
    commit = "9be653fdabb6" * 3
    one = part("a", ab={"commit": commit, "ref": "HEAD~1", "rounds": 10})
    two = part("b", index=(2, 2), ab={"commit": commit, "ref": "HEAD~1", "rounds": 8})
    message = refusal([("s1", one), ("s2", two)])
    assert "ab.rounds (s1: 10, s2: 8)" in message
    assert "ab.ref" not in message and "ab.commit" not in message
