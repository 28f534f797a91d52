"""--ab shards: both sides' suites are split together by count, so a kernel's baseline and
candidate land on one shard and no shard of a suite with enough kernels is empty."""

from __future__ import annotations

from pathlib import Path

from kernbench.api.run import discover
from kernbench.execution.ab import Side, make_side, shard_sides
from kernbench.execution.settings import RunSettings
from support.kernel_tree import kernel

GOOD = "def run_benchmark():\n    return 1\n"


def side(label: str, root: Path, names: tuple[str, ...]) -> Side:
    for name in names:
        kernel(root, name, GOOD)
    specs, _ = discover(root)
    return make_side(label, root, RunSettings(root=root), specs)


def kernels(side: Side) -> set[str]:
    return {item.kernel.name for item in side.planned}  # type: ignore[union-attr]


def test_both_sides_split_together_and_a_kernel_keeps_one_shard(tmp_path: Path) -> None:
    # The baseline lacks "new" and the candidate lacks "gone": each shard still gets its
    # kernels of both sides, and the four of the union are shared two and two.
    base = side("A", tmp_path / "base", ("a", "b", "gone"))
    cand = side("B", tmp_path / "cand", ("a", "b", "new"))
    halves = [shard_sides(base, cand, (k, 2)) for k in (1, 2)]
    union = [kernels(b) | kernels(c) for b, c in halves]
    assert union[0].isdisjoint(union[1])
    assert union[0] | union[1] == {"a", "b", "gone", "new"}
    assert sorted(map(len, union)) == [2, 2]
    for b, c in halves:  # a kernel on both sides runs on one shard
        assert kernels(b) <= {"a", "b", "gone"} and kernels(c) <= {"a", "b", "new"}
        assert kernels(b) & {"a", "b"} == kernels(c) & {"a", "b"}
    # the suite each side records is the whole suite, for the merge's completeness check
    assert all(len(b.suite) == 3 and len(c.suite) == 3 for b, c in halves)


def test_every_shard_gets_a_kernel_when_there_are_as_many_as_shards(tmp_path: Path) -> None:
    names = ("k0", "k1", "k2")
    base, cand = side("A", tmp_path / "base", names), side("B", tmp_path / "cand", names)
    split = [shard_sides(base, cand, (k, 3)) for k in (1, 2, 3)]
    assert [len(kernels(b)) for b, _ in split] == [1, 1, 1]
    assert [kernels(b) for b, _ in split] == [kernels(c) for _, c in split]


def test_without_a_shard_both_sides_plan_their_whole_suite(tmp_path: Path) -> None:
    base = side("A", tmp_path / "base", ("a", "b"))
    assert base.planned == base.suite and kernels(base) == {"a", "b"}
