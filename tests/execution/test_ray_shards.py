"""The Ray executor on a two-node local cluster: shards placed by a custom resource give the
same cases and statuses as an unsharded run; resources and their errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kernbench.api.run import run_suite
from kernbench.api.scale import run_sharded
from kernbench.errors import KernbenchError
from kernbench.execution.executors import ExecutorSettings
from kernbench.execution.ray_shards import parse_resources, ray_options
from support.kernel_tree import load
from support.sharded import settings, statuses, tree

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")


def test_resources_and_gpus_become_task_options() -> None:
    chosen = ExecutorSettings("ray", gpus_per_shard=1,
                              ray_resources=parse_resources([("sku:H100", "1")]))
    assert ray_options(chosen) == {"max_retries": 0, "num_cpus": 1, "num_gpus": 1,
                                   "resources": {"sku:H100": 1.0}}


@pytest.mark.parametrize("amount", ["0", "-1", "many"])
def test_a_bad_resource_amount_names_the_flag(amount: str) -> None:
    with pytest.raises(KernbenchError, match=rf"--ray-resource sku:H100={amount}: the amount"):
        parse_resources([("sku:H100", amount)])


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    """Two nodes: the head without the `sku:test` resource, a worker node with 2 of it."""
    made = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    made.add_node(num_cpus=2, resources={"sku:test": 2})
    ray.init(address=made.address, log_to_driver=False)
    try:
        yield made
    finally:
        ray.shutdown()
        made.shutdown()


def test_two_shards_on_a_two_node_cluster_give_the_unsharded_cases(
        cluster: object, tmp_path: Path) -> None:
    root = tree(tmp_path / "tree")
    run_suite(settings(root), tmp_path / "whole")
    chosen = ExecutorSettings("ray", ray_resources=(("sku:test", 1.0),))
    logged: list[str] = []
    outcome = run_sharded(settings(root), tmp_path / "out", chosen, shards=2,
                          log=logged.append)
    assert outcome.missing == ()
    assert statuses(tmp_path / "out") == statuses(tmp_path / "whole")
    merged = load(tmp_path / "out" / "summary.json")
    assert merged["completeness"]["complete"] is True
    # placed by the resource: both shards ran on the worker node, which Ray names
    node_ids = {s["scheduler"].get("RAY_NODE_ID") for s in merged["settings"]["shards"]}
    placed = {n["NodeID"] for n in ray.nodes() if "sku:test" in n["Resources"]}
    assert len(node_ids) == 1 and node_ids == placed  # ray.nodes(): Ray 2.9 and newer alike
    assert logged[0].startswith("2 shards, split by count")  # the split, before they start
    assert sorted(line.split(":")[0] for line in logged[1:]) == ["shard 1/2", "shard 2/2"]
