#!/usr/bin/env python3
"""Where a forked worker's time goes, with and without the fork server's rehearsal.

One process plays a fork server: it imports kernbench's worker and the framework (numpy by
default, or ``--framework torch|jax``, as that framework's server does), freezes its heap, and
forks ``--forks`` children that each run one trivial case of that framework (a kernel that
returns a zero scalar; the job ``kernbench run`` writes for it) and
report how long each phase took: the fork until the child runs, reading the job, the case
(set-up, probes, calibration, timed samples), writing the reply, and the exit until the
parent has reaped it. Then the same after a rehearsal (:mod:`kernbench.execution.rehearsal`)
in the parent. Medians over the forks; "outside the samples" is the case's time less its
timed samples. Beside them, the minor page faults each child took from its start until its
reply was written (most of them copies of pages it shares with its parent, written to
because an object on them was touched), and what one copy-on-write fault costs here (a child
writing one byte on each page of a buffer its parent filled).

    python benchmarks/bench_worker_phases.py [--forks 15] [--framework numpy|torch|jax]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))

import kernbench.execution.launcher as launcher  # noqa: E402
import kernbench.execution.worker as worker  # noqa: E402
from kernbench.api import run_suite  # noqa: E402
from kernbench.execution.forkserver import GPU_FRAMEWORKS, PRELOADS  # noqa: E402
from kernbench.execution.jobs import dump_reply, load_job, prepare_codec  # noqa: E402
from kernbench.execution.rehearsal import rehearse  # noqa: E402
from kernbench.execution.settings import RunSettings  # noqa: E402
from kernbench.results.model import ProtocolSettings  # noqa: E402

KERNELS = {"numpy": ("numpy", "import numpy as np", "np.float64(0.0)"),
           "torch": ("pytorch", "import torch", "torch.zeros(())"),
           "jax": ("jax", "import jax.numpy as jnp", "jnp.zeros(())")}
PHASES = ("fork", "job read", "case", "outside the samples", "reply", "exit and reap", "total")
FAULTS = "minor page faults"


def minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def capture_job(tmp: Path, framework: str) -> Path:
    """The job file `kernbench run` writes for one trivial case of `framework`."""
    root = tmp / "tree"
    folder = root / "kernels" / "trivial"
    folder.mkdir(parents=True)
    _, imports, value = KERNELS[framework]
    (folder / "trivial.py").write_text(
        f"{imports}\n\n\ndef run_benchmark():\n    return {value}\n", encoding="utf-8")
    original = launcher.WorkerLauncher.run

    def keep(self, framework, slot, job, *rest):  # type: ignore[no-untyped-def]
        if not (tmp / "job.json").exists():
            shutil.copy(job, tmp / "job.json")
        return original(self, framework, slot, job, *rest)

    launcher.WorkerLauncher.run = keep  # type: ignore[method-assign]
    try:
        run_suite(RunSettings(root=root, processes=1,
                              protocol=ProtocolSettings(warmup_time_s=0.0)), tmp / "out")
    finally:
        launcher.WorkerLauncher.run = original  # type: ignore[method-assign]
    os.chdir(root)
    return tmp / "job.json"


def child(job_path: Path, forked_at: float, write_fd: int) -> None:
    began, faults = time.perf_counter(), minor_faults()
    job = load_job(job_path)
    read = time.perf_counter()
    reply = worker.run_job(job)
    ran = time.perf_counter()
    dump_reply(reply, job.result_path)
    wrote = time.perf_counter()
    timed = sum(reply.samples_ns or ()) * max(reply.inner_loops or 1, 1) / 1e9
    os.write(write_fd, json.dumps([began - forked_at, read - began, ran - read,
                                   ran - read - timed, wrote - ran, wrote,
                                   minor_faults() - faults]).encode())
    os._exit(0)


def phases(job_path: Path, forks: int) -> dict[str, float]:
    rows: list[list[float]] = []
    for _ in range(forks):
        read_fd, write_fd = os.pipe()
        forked_at = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            child(job_path, forked_at, write_fd)
        os.close(write_fd)
        fork_s, job_s, case_s, outside_s, reply_s, wrote, faults = json.loads(
            os.read(read_fd, 4096))
        os.close(read_fd)
        os.waitpid(pid, 0)
        reaped = time.perf_counter()
        rows.append([fork_s, job_s, case_s, outside_s, reply_s, reaped - wrote,
                     reaped - forked_at, faults])
    found = {name: statistics.median(r[i] for r in rows) * 1e3 for i, name in enumerate(PHASES)}
    return {**found, FAULTS: statistics.median(r[-1] for r in rows)}


def copy_on_write_us(pages: int = 4096) -> float:
    """Microseconds per page a child takes to write one byte on each of `pages` pages that
    its parent filled: one copy-on-write fault each."""
    buffer = bytearray(b"x" * (pages * 4096))
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        faults, began = minor_faults(), time.perf_counter()
        for offset in range(0, len(buffer), 4096):
            buffer[offset] = 1
        took, faults = time.perf_counter() - began, minor_faults() - faults
        os.write(write_fd, json.dumps(took / max(faults, 1) * 1e6).encode())
        os._exit(0)
    os.close(write_fd)
    cost = float(json.loads(os.read(read_fd, 4096)))
    os.close(read_fd)
    os.waitpid(pid, 0)
    return cost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forks", type=int, default=15)
    parser.add_argument("--framework", choices=sorted(KERNELS), default="numpy")
    args = parser.parse_args()
    key = KERNELS[args.framework][0]
    with tempfile.TemporaryDirectory(prefix="kernbench-phases-") as tmp:
        job_path = capture_job(Path(tmp), args.framework)
        for name in PRELOADS[key]:  # what the framework's server imports
            __import__(name)
        if key in GPU_FRAMEWORKS:
            __import__("kernbench.measure.gpu_session")
        if "numpy" in sys.modules:
            __import__("numpy.random")
        prepare_codec()
        gc.collect()
        gc.freeze()
        cold = phases(job_path, args.forks)
        reason = rehearse(key)
        if reason is not None:
            raise SystemExit(f"the rehearsal failed: {reason}")
        gc.collect()
        gc.freeze()
        warm = phases(job_path, args.forks)
    print(f"\nA forked worker of a trivial {args.framework} case, medians of {args.forks} "
          "forks (ms)\n")
    print("| phase | without rehearsal | rehearsed |")
    print("|---|---:|---:|")
    for name in PHASES:
        print(f"| {name} | {cold[name]:.2f} ms | {warm[name]:.2f} ms |")
    print(f"| {FAULTS}, start to reply | {cold[FAULTS]:.0f} | {warm[FAULTS]:.0f} |")
    cost = statistics.median(copy_on_write_us() for _ in range(5))
    print(f"\nOne copy-on-write fault costs {cost:.1f} us here (median of 5 children): a "
          f"rehearsed child's faults are at most {warm[FAULTS] * cost / 1e3:.1f} ms of its "
          "time.")


if __name__ == "__main__":
    main()
