"""A fork server's rehearsal: one no-op case through the worker's whole path before the first
fork, so that every child starts with that code warm.

A forked child runs kernbench's code for reading its job, setting up, timing, probing and
writing its reply once. Run cold, that code pays for what a first run costs (bytecode that
specialises itself, imports made inside functions, caches filled on first use), and a
child pays it on pages it must first copy from the server. Rehearsed in the server, the
children inherit it done. A forked worker of a trivial numpy kernel spent about 3.2 ms instead
of 4.1 ms outside its timed samples (``benchmarks/bench_worker_phases.py``), and
``benchmarks/bench_isolation.py`` measured 4-7 ms less per added case (three workers) for
about 18 ms more start-up (see docs/performance-history.md, "Rehearsed fork servers").

The rehearsal touches no framework: a torch or JAX server rehearses a plain-Python kernel
(only numpy's server rehearses through numpy's backend), so no device runtime is initialised
before the fork. It leaves no trace in the server: the kernel's folder, module, ``sys.path``
and ``sys.argv`` are put back, and each case seeds its own random generators.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from kernbench.results.measurement import NATIVE, ProtocolSettings

KERNEL = "def run_benchmark():\n    return None\n"
SETTINGS = ProtocolSettings(warmup=1, iterations=3, min_sample_overhead_ratio=10.0,
                            calibration_budget_s=0.05, warmup_time_s=0.0)
"""Just enough to run every step of the protocol once or a few times."""


def rehearse(key: str) -> str | None:
    """Run one no-op case as a child would (job read, measurement, reply written and read
    back); None, or why it failed (the server forks children all the same)."""
    from kernbench.execution.jobs import WorkerJob, dump_job, dump_reply, load_job, load_reply
    from kernbench.execution.worker import run_job

    saved_path, saved_argv = list(sys.path), list(sys.argv)
    before = set(sys.modules)
    try:
        with tempfile.TemporaryDirectory(prefix="kernbench-rehearsal-") as tmp:
            folder = Path(tmp)
            (folder / "rehearsal.py").write_text(KERNEL, encoding="utf-8")
            job = WorkerJob(kernel_file=folder / "rehearsal.py", root=folder,
                            kernel_name="rehearsal", function_name="run_benchmark",
                            framework="numpy" if key == "numpy" else "python", backend="cpu",
                            precision=NATIVE, settings=SETTINGS,
                            result_path=folder / "reply.json")
            dump_job(job, folder / "job.json")
            reply = run_job(load_job(folder / "job.json"))
            dump_reply(reply, job.result_path)
            load_reply(job.result_path)
            return None if reply.status == "ok" else f"{reply.status}: {reply.reason}"
    except Exception as exc:  # a warm-up only: never worth losing the server for
        return f"{type(exc).__name__}: {exc}"[:300]
    finally:
        sys.path[:], sys.argv[:] = saved_path, saved_argv
        for name in [n for n in sys.modules if n.startswith("kernbench_kernel_")
                     and n not in before]:
            del sys.modules[name]
