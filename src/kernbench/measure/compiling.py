"""torch.compile for an implementation: compile time apart, recompilations during timing found.

An implementation with bench.yaml ``compile: {mode: max-autotune}`` is wrapped with
``torch.compile`` in its worker. The first call, which compiles, is made and timed (waited for
on the device) before the protocol starts, so it is recorded as ``first_call_s`` and never
enters the samples. TorchDynamo's counters are read before that call, after it and after the
samples: graphs compiled *during* warmup and sampling mean the samples include compilation
(a shape or a guard that changes from call to call); the record says how many, and the case
carries a ``recompiled_during_timing`` warning.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kernbench.measure.protocol import SyncChoice, wait_untimed

COUNTER_SOURCE = "torch._dynamo.utils.counters (stats.unique_graphs, graph_break)"


@dataclass(frozen=True)
class DynamoCounts:
    """TorchDynamo's running totals in this process."""

    graphs: int
    graph_breaks: int


def compile_function(function: Callable[..., Any],
                     options: Mapping[str, Any]) -> Callable[..., Any]:
    """`function` under torch.compile with bench.yaml's options (mode, fullgraph, dynamic,
    backend); a mode of "default" is torch's default."""
    import torch

    kwargs = {k: v for k, v in options.items() if k in ("fullgraph", "dynamic", "backend")}
    mode = options.get("mode")
    if mode and mode != "default":
        kwargs["mode"] = mode
    return torch.compile(function, **kwargs)


def dynamo_counts() -> DynamoCounts | None:
    """The counters now, or None when this torch does not expose them."""
    try:
        from torch._dynamo.utils import counters
    except ImportError:  # pragma: no cover - depends on the torch version
        return None
    return DynamoCounts(graphs=int(counters["stats"]["unique_graphs"]),
                        graph_breaks=int(sum(counters["graph_break"].values())))


def timed_first_call(call: Callable[[], object], sync: SyncChoice) -> float:
    """Seconds for one call, waited for: for a compiled function, compilation included."""
    start = time.perf_counter()
    wait_untimed(sync, call())
    return time.perf_counter() - start


class CompileWatch:
    """Counts around one compiled implementation's case: the first call, then the samples."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = options
        self.first_call_s = 0.0
        self._before: DynamoCounts | None = None
        self._compiled: DynamoCounts | None = None

    def first_call(self, call: Callable[[], object], sync: SyncChoice) -> None:
        self._before = dynamo_counts()
        self.first_call_s = timed_first_call(call, sync)
        self._compiled = dynamo_counts()

    def record(self) -> dict[str, Any]:
        """Call after the samples."""
        return compile_record(self.options, self.first_call_s, self._before, self._compiled,
                              dynamo_counts())


def compile_record(options: Mapping[str, Any], first_call_s: float,
                   before: DynamoCounts | None, compiled: DynamoCounts | None,
                   after: DynamoCounts | None) -> dict[str, Any]:
    """The record's `compile` facts from the counters before the first call, after it and
    after the samples (any None: those counts are None, with a reason)."""
    record: dict[str, Any] = {"mode": options.get("mode") or "default",
                              "options": dict(options), "first_call_s": first_call_s}
    if before is None or compiled is None or after is None:
        return {**record, "graphs_compiled": None, "graph_breaks": None,
                "recompiles_during_timing": None,
                "reason": "this torch exposes no TorchDynamo counters"}
    return {**record, "graphs_compiled": compiled.graphs - before.graphs,
            "graph_breaks": after.graph_breaks - before.graph_breaks,
            "recompiles_during_timing": after.graphs - compiled.graphs,
            "source": COUNTER_SOURCE}
