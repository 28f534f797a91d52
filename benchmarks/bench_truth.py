#!/usr/bin/env python3
"""Measurement truth: the same functions timed by kernbench, by timeit and by pyperf, in one run.

Each function is a kernel file in a generated tree. kernbench times it the way a user's run
does (``kernbench.api.run_suite``: discovery, isolated worker processes, the full protocol,
default settings but ``--iters``); ``timeit`` (``Timer.autorange``, then the median of
``--repeat`` repeats, after one warming autorange) and ``pyperf timeit --fast`` (where pyperf
is installed) time the very same function, with the same arguments, in fresh interpreters as
kernbench does. Like with like: kernbench's figure is the median over its ``--processes``
worker processes (3 by default), so timeit's is the median over as many fresh interpreters, each
giving its median of ``--repeat`` repeats. On a shared VM one process can run the same call up
to 2x slower than another (its heap, stack offset and code placement differ), so a
comparison of one timeit process against several of kernbench's measures luck, not the
harness. Within a round each kernel is timed by kernbench (a run of that kernel alone) and by
timeit right after one another, kernbench first in odd rounds and timeit first in even ones, so
that the VM's drift (its speed moves by 10 % or more over minutes) falls between the tools as
little as it can; the figure shown is the median over rounds, and each ratio is the median of
the per-round ratios.

kernbench's figure is the median of its per-call samples; timeit's and pyperf's are means of
back-to-back calls. Where a kernel's calls are skewed (a few slow ones), the median is below
the mean by design, so the table also gives kernbench's mean over timeit's: the same statistic
on both sides.

"Same process" takes the processes' luck out of the comparison: a second kernbench run of the
same kernels, each of whose setup() first times the kernel's call with timeit (as above) inside
kernbench's own worker process, before kernbench's protocol measures it there. The ratio is
kernbench's median in that process over that timeit figure, the median over every process of
every round, (min-max) beside it. Where it is near 1 and the cross-process ratio is not, the
difference is between processes (their layout, the machine's moment), not in the harness.

Goals (measurement-truth issue): the empty function within 2x of timeit; every kernel of 1 us
or more within +-5 %; the 8 MB allocating kernel within +-5 %; the kernel that returns a list
of a million floats within 1.5x.

    python benchmarks/bench_truth.py [--rounds 3] [--iters 30] [--no-pyperf]
        [--no-same-process] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))

from kernbench.analysis.stats import percentile  # noqa: E402
from kernbench.api import run_suite  # noqa: E402
from kernbench.execution.settings import RunSettings  # noqa: E402
from kernbench.results.model import ProtocolSettings  # noqa: E402


@dataclass(frozen=True)
class Kernel:
    name: str
    source: str
    goal: tuple[float, float]
    """Allowed ratio kernbench / timeit: (low, high)."""
    wait: str = ""
    """What the timeit/pyperf statement appends to wait for the result (JAX)."""
    needs: str | None = None
    """A module that must be importable (torch, jax), else the kernel is left out."""


WITHIN_5 = (0.95, 1.05)
KERNELS = (
    Kernel("empty", """
        def run_benchmark():
            return None
        """, (0.0, 2.0)),
    Kernel("numpy_1us", """
        import numpy as np

        def setup():
            a, b = np.ones(1000), np.ones(1000)
            return {"a": a, "b": b, "out": np.empty_like(a)}

        def run_benchmark(a, b, out):
            return np.add(a, b, out=out)
        """, WITHIN_5),
    Kernel("numpy_100us", """
        import numpy as np

        def setup():
            return {"x": np.random.default_rng(0).standard_normal(60_000)}

        def run_benchmark(x):
            return x.cumsum()
        """, WITHIN_5),
    Kernel("numpy_10ms", """
        import numpy as np

        def setup():
            return {"x": np.random.default_rng(0).standard_normal(200_000)}

        def run_benchmark(x):
            return np.sort(x, kind="stable")
        """, WITHIN_5),
    Kernel("alloc_8mb", """
        import numpy as np

        def run_benchmark():
            return np.ones(1 << 20)          # 8 MB, allocated, written and returned
        """, WITHIN_5),
    Kernel("list_1m", """
        DATA = [0.5] * 1_000_000

        def run_benchmark():
            return DATA                      # a Python list of a million floats
        """, (0.0, 1.5)),
    Kernel("torch_add", """
        import torch

        def setup():
            return {"a": torch.ones(1 << 20), "b": torch.ones(1 << 20)}

        def run_benchmark(a, b):
            return torch.add(a, b)
        """, WITHIN_5, needs="torch"),
    Kernel("jax_jit", """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def _scale(x):
            return jnp.tanh(x) * 2.0 + 1.0

        def setup():
            return {"x": jnp.ones(1 << 20, dtype=jnp.float32)}

        def run_benchmark(x):
            return _scale(x)
        """, WITHIN_5, wait=".block_until_ready()", needs="jax"),
)


PROBE = """

# bench_truth's probe: timeit of this very call in the worker process kernbench measures it
# in, before kernbench's protocol starts; one line per process to $KERNBENCH_TRUTH_PROBE.
import functools as _functools
import os as _os
import statistics as _statistics
import timeit as _timeit

_kernel_setup = globals().get("setup")


def setup():
    kwargs = _kernel_setup() if _kernel_setup is not None else {{}}
    call = _functools.partial(run_benchmark, **kwargs) if kwargs else run_benchmark  # as load()
    timer = _timeit.Timer({timed})
    timer.autorange()  # warms the call, its caches and thread pools, as timeit_one does
    number, _ = timer.autorange()
    ns = _statistics.median(timer.repeat({repeat}, number)) / number * 1e9
    with open(_os.environ["KERNBENCH_TRUTH_PROBE"], "a", encoding="utf-8") as out:
        out.write(f"{name} {{ns}}\\n")
    return kwargs
"""


def write_tree(root: Path, kernels: list[Kernel], probe_repeat: int | None = None) -> None:
    """Each kernel as a kernel file under `root`; with `probe_repeat`, each also times its own
    call with timeit in kernbench's worker first (:data:`PROBE`)."""
    for kernel in kernels:
        folder = root / "kernels" / kernel.name
        folder.mkdir(parents=True)
        source = textwrap.dedent(kernel.source)
        if probe_repeat is not None:
            timed = f"lambda: call(){kernel.wait}" if kernel.wait else "call"
            source += PROBE.format(timed=timed, repeat=probe_repeat, name=kernel.name)
        (folder / f"{kernel.name}.py").write_text(source, encoding="utf-8")


def load(root: Path, kernel: Kernel, wait: bool = True) -> Callable[[], object]:
    """The kernel's zero-argument call as timeit times it (without `wait`: as kernbench is
    handed it, without the JAX kernel's wait for its result, which kernbench adds itself)."""
    path = root / "kernels" / kernel.name / f"{kernel.name}.py"
    spec = importlib.util.spec_from_file_location(f"truth_{kernel.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kwargs = module.setup() if hasattr(module, "setup") else {}
    call = partial(module.run_benchmark, **kwargs) if kwargs else module.run_benchmark
    return waiting(call, kernel) if wait else call


def waiting(call: Callable[[], object], kernel: Kernel) -> Callable[[], object]:
    """`call` as timeit times it: with the JAX kernel's wait for its result."""
    if not kernel.wait:
        return call
    return lambda: call().block_until_ready()  # type: ignore[attr-defined]


def timeit_ns(call: Callable[[], object], repeat: int) -> float:
    timer = timeit.Timer(call)
    number, _ = timer.autorange()
    return statistics.median(timer.repeat(repeat, number)) / number * 1e9


def timeit_in_fresh_process(root: Path, kernel: Kernel, repeat: int) -> float:
    """timeit's figure for one kernel, taken in a new interpreter as kernbench's and pyperf's
    are: in this process, torch's and JAX's thread pools and allocator state left by the other
    kernels would tilt the comparison (an 8 MB allocation here ran 2x slower after them)."""
    out = subprocess.run([sys.executable, __file__, "--timeit-one", kernel.name, str(root),
                          str(repeat)], check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def timeit_over_processes(root: Path, kernel: Kernel, repeat: int, processes: int) -> float:
    """The median of timeit's figures in `processes` fresh interpreters: the same number of
    processes kernbench's figure is the median over."""
    return statistics.median(timeit_in_fresh_process(root, kernel, repeat)
                             for _ in range(processes))


def pyperf_ns(root: Path, kernel: Kernel, scratch: Path) -> float | None:
    """pyperf's median for the same call, or None when pyperf is not installed."""
    if importlib.util.find_spec("pyperf") is None:
        return None
    folder = root / "kernels" / kernel.name
    setup = (f"import sys; sys.path.insert(0, {str(folder)!r}); import {kernel.name} as m; "
             "kw = m.setup() if hasattr(m, 'setup') else {}; f = m.run_benchmark")
    out = scratch / f"pyperf-{kernel.name}.json"
    out.unlink(missing_ok=True)
    subprocess.run([sys.executable, "-m", "pyperf", "timeit", "--fast", "--quiet",
                    "-o", str(out), "-s", setup, f"f(**kw){kernel.wait}"],
                   check=True, capture_output=True)
    import pyperf  # type: ignore[import-untyped]

    return float(pyperf.Benchmark.load(str(out)).median()) * 1e9


def kernbench_ns(root: Path, iters: int, processes: int, scratch: Path, only: str
                 ) -> dict[str, tuple[float, float]]:
    """(p50, mean) of kernel `only` in one kernbench run, as a user's
    ``kernbench run --filter ONLY --iters ITERS`` takes it."""
    settings = RunSettings(root=root, processes=processes, filters=(only,),
                           protocol=ProtocolSettings(iterations=iters))
    outcome = run_suite(settings, scratch / "kernbench")
    figures = {}
    for result in outcome.run.results:
        if result.status != "ok":
            raise SystemExit(f"{result.case_id}: {result.status}: {result.reason}")
        figures[result.kernel_name] = (percentile(result.samples_ms, 50) * 1e6,
                                       statistics.fmean(result.samples_ms) * 1e6)
    return figures


def time_side_by_side(root: Path, kernel: Kernel, args: argparse.Namespace, scratch: Path,
                      into: dict[str, list[float]], timeit_first: bool) -> None:
    """One round of one kernel: a kernbench run of it and timeit in as many fresh interpreters,
    one right after the other, so that the machine's drift between them is seconds, not the
    minutes a whole suite takes; which goes first alternates from round to round."""
    def with_kernbench() -> None:
        p50, mean = kernbench_ns(root, args.iters, args.processes, scratch,
                                 kernel.name)[kernel.name]
        into["kb"].append(p50)
        into["kb_mean"].append(mean)

    def with_timeit() -> None:
        into["ti"].append(timeit_over_processes(root, kernel, args.repeat, args.processes))

    for step in (with_timeit, with_kernbench) if timeit_first else (with_kernbench, with_timeit):
        step()


def same_process_ratios(root: Path, iters: int, processes: int, scratch: Path
                        ) -> dict[str, list[float]]:
    """Per worker process, kernbench's median over timeit's figure for the same call in that
    same process (the :data:`PROBE` tree): no between-process luck on either side."""
    import os

    probe = scratch / "probe.txt"
    probe.unlink(missing_ok=True)
    os.environ["KERNBENCH_TRUTH_PROBE"] = str(probe)
    settings = RunSettings(root=root, processes=processes,
                           protocol=ProtocolSettings(iterations=iters))
    outcome = run_suite(settings, scratch / "kernbench-probe")
    timeit_by_kernel: dict[str, list[float]] = {}
    for line in probe.read_text(encoding="utf-8").splitlines():
        name, ns = line.split()
        timeit_by_kernel.setdefault(name, []).append(float(ns))
    ratios: dict[str, list[float]] = {}
    for result in outcome.run.results:
        if result.status != "ok":
            raise SystemExit(f"same process: {result.case_id}: {result.status}: "
                             f"{result.reason}")
        samples, start = result.samples_ms, 0
        for count, ti in zip(result.process_sample_counts or [len(samples)],
                             timeit_by_kernel[result.kernel_name], strict=True):
            own = statistics.median(samples[start:start + count]) * 1e6
            ratios.setdefault(result.kernel_name, []).append(own / ti)
            start += count
    return ratios


def fmt_ns(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, scale in (("ms", 1e6), ("us", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} ns"


def timeit_one(name: str, root: str, repeat: str) -> int:
    """The child side of `timeit_in_fresh_process`: print timeit's ns per call."""
    kernel = next(k for k in KERNELS if k.name == name)
    call = load(Path(root), kernel)
    timeit_ns(call, 1)  # the first autorange warms the function, its caches and thread pools
    print(timeit_ns(call, int(repeat)))
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--timeit-one"]:
        return timeit_one(*sys.argv[2:5])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=7, help="timeit repeats per process")
    parser.add_argument("--processes", type=int, default=RunSettings(root=Path()).processes,
                        help="kernbench's worker processes per case, and timeit's fresh "
                             "interpreters per round (default: kernbench's default)")
    parser.add_argument("--no-pyperf", action="store_true")
    parser.add_argument("--no-same-process", action="store_true",
                        help="skip the run that times each call with timeit inside "
                             "kernbench's own worker processes too")
    parser.add_argument("--only", default="", help="comma list of kernel names")
    args = parser.parse_args()
    wanted = set(filter(None, args.only.split(",")))
    kernels = [k for k in KERNELS if (not wanted or k.name in wanted)
               and (k.needs is None or importlib.util.find_spec(k.needs) is not None)]
    runs: dict[str, dict[str, list[float]]] = {
        k.name: {"kb": [], "kb_mean": [], "ti": [], "pp": [], "same": []} for k in kernels}
    with tempfile.TemporaryDirectory(prefix="kernbench-truth-") as tmp:
        root, scratch = Path(tmp) / "tree", Path(tmp) / "scratch"
        write_tree(root, kernels)
        if not args.no_same_process:
            write_tree(Path(tmp) / "probe", kernels, probe_repeat=args.repeat)
        scratch.mkdir()
        for round_index in range(args.rounds):
            print(f"round {round_index + 1}/{args.rounds}", file=sys.stderr)
            for kernel in kernels:
                time_side_by_side(root, kernel, args, scratch, runs[kernel.name],
                                  timeit_first=round_index % 2 == 1)
                if not args.no_pyperf:
                    value = pyperf_ns(root, kernel, scratch)
                    if value is not None:
                        runs[kernel.name]["pp"].append(value)
            if not args.no_same_process:
                for name, ratios in same_process_ratios(Path(tmp) / "probe", args.iters,
                                                        args.processes, scratch).items():
                    runs[name]["same"].extend(ratios)
    return report(kernels, runs, args)


def same_text(ratios: list[float]) -> str:
    """The median of the per-process same-process ratios, (min-max)."""
    if not ratios:
        return "-"
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def report(kernels: list[Kernel], runs: dict[str, dict[str, list[float]]],
           args: argparse.Namespace) -> int:
    print(f"\nkernbench vs timeit and pyperf, same functions, {args.rounds} rounds "
          f"(kernbench --iters {args.iters}, {args.processes} processes; timeit in "
          f"{args.processes} fresh interpreters a round; medians over rounds)\n")
    print("| kernel | timeit | pyperf | kernbench | kernbench / timeit | kernbench / pyperf "
          "| kernbench mean / timeit | same process | goal | met |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    failed = 0
    for kernel in kernels:
        data = runs[kernel.name]
        ratios = [kb / ti for kb, ti in zip(data["kb"], data["ti"], strict=True)]
        ratio = statistics.median(ratios)
        pp = statistics.median(data["pp"]) if data["pp"] else None
        pp_ratio = (statistics.median([kb / p for kb, p in zip(data["kb"], data["pp"],
                                                                strict=False)])
                    if data["pp"] else None)
        means = statistics.median([m / ti for m, ti in zip(data["kb_mean"], data["ti"],
                                                           strict=True)])
        low, high = kernel.goal
        met = low <= ratio <= high
        failed += not met
        goal = f"<= {high:g}x" if low == 0 else f"{low:g}-{high:g}x"
        print(f"| {kernel.name} | {fmt_ns(statistics.median(data['ti']))} | {fmt_ns(pp)} | "
              f"{fmt_ns(statistics.median(data['kb']))} | {ratio:.2f} "
              f"({min(ratios):.2f}-{max(ratios):.2f}) | "
              f"{'-' if pp_ratio is None else f'{pp_ratio:.2f}'} | {means:.2f} | "
              f"{same_text(data['same'])} | {goal} | "
              f"{'yes' if met else 'NO'} |")
    print(json.dumps({k: {t: [round(v, 1) for v in vs] for t, vs in d.items()}
                      for k, d in runs.items()}), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
