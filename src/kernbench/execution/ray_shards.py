"""Shards as Ray tasks, placed by resources (the optional extra ``kernbench[ray]``).

One remote task per shard, asking for ``--gpus-per-shard`` GPUs and each ``--ray-resource
KEY=AMOUNT`` (a custom resource a node declares, such as ``sku:H100=1``), so a shard lands on
a machine of the kind it must measure. ``--ray-address`` joins a running cluster (``auto``: the
one this node belongs to); without it Ray joins the cluster this process already belongs to or
starts one on this machine. Tasks are not retried by Ray: :mod:`kernbench.api.scale` retries a
shard once, then names it missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kernbench.config.extras import install_command
from kernbench.errors import KernbenchError
from kernbench.execution.executors import Attempt, ExecutorSettings, Log, TaskFn

__all__ = ["RayShards", "ray_options"]


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise KernbenchError("--executor ray needs Ray, which is not installed: "
                             f"{install_command('ray', 'ray')}") from None
    return ray


def ray_options(settings: ExecutorSettings) -> dict[str, Any]:
    """``.options(...)`` of each shard's task: GPUs, custom resources, no retries by Ray."""
    options: dict[str, Any] = {"max_retries": 0, "num_cpus": 1}
    if settings.gpus_per_shard:
        options["num_gpus"] = settings.gpus_per_shard
    if settings.ray_resources:
        options["resources"] = dict(settings.ray_resources)
    return options


def parse_resources(pairs: Sequence[tuple[str, str]]) -> tuple[tuple[str, float], ...]:
    """``(("sku:H100", "1"),)`` -> amounts; a KernbenchError naming --ray-resource otherwise."""
    found = []
    for key, value in pairs:
        try:
            amount = float(value)
        except ValueError:
            amount = -1.0
        if not amount > 0:
            raise KernbenchError(f"--ray-resource {key}={value}: the amount must be a positive "
                                 "number (e.g. --ray-resource sku:H100=1)")
        found.append((key, amount))
    return tuple(found)


@dataclass(frozen=True)
class RayShards:
    """Runs each shard's task on the Ray cluster at `address`."""

    address: str | None
    options: dict[str, Any]

    @classmethod
    def from_settings(cls, settings: ExecutorSettings) -> RayShards:
        _ray()
        return cls(settings.ray_address, ray_options(settings))

    def run(self, fn: TaskFn, tasks: Sequence[Any], labels: Sequence[str],
            log: Log | None) -> list[Attempt]:
        ray = _ray()
        if not ray.is_initialized():
            ray.init(address=self.address, log_to_driver=False)
        remote = ray.remote(_on_node).options(**self.options)
        refs = [remote.remote(fn, task) for task in tasks]
        label_of = {ref: label for ref, label in zip(refs, labels, strict=True)}
        ended: dict[str, Attempt] = {}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                attempt = _attempt(ray, ref, label_of[ref])
                ended[attempt.label] = attempt
                if log is not None:
                    log(f"{attempt.label}: " + (f"finished (exit {attempt.exit_code})"
                                                 if attempt.finished else str(attempt.error)))
        return [ended[label] for label in labels]


def _on_node(fn: TaskFn, task: Any) -> int:
    """The remote body: Ray sets no variable naming the node, so the shard's identity
    (``settings.shards[].scheduler``) gets ``RAY_NODE_ID`` from the runtime context."""
    import os

    os.environ["RAY_NODE_ID"] = str(_ray().get_runtime_context().get_node_id())
    return fn(task)


def _attempt(ray: Any, ref: Any, label: str) -> Attempt:
    try:
        code = ray.get(ref)
    except Exception as exc:  # a task error, a lost node, a worker killed
        lines = [line for line in str(exc).strip().splitlines() if line.strip()]
        return Attempt(label, None, f"the Ray task did not finish: "
                                    f"{lines[-1] if lines else type(exc).__name__}")
    return Attempt(label, int(code))
