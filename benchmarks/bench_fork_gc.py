#!/usr/bin/env python3
"""What freezing the fork server's heap saves a forked worker that runs a full collection.

A fork server preloads a framework (torch: about 170,000 objects) and forks one child per
case. A full garbage collection in the child walks every tracked object, and writing to an
object's header copies its page (copy on write): the child pays for copying the server's whole
heap. ``gc.freeze()`` in the server (what kernbench's fork server does after preloading) puts
those objects out of the collector's sight. This script forks children of this process, with
``--preload`` imported, without and then with a frozen heap, alternating, and prints the median
time of one ``gc.collect()`` in the child.

    python benchmarks/bench_fork_gc.py [--preload torch] [--children 8]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import statistics
import sys
import time


def collect_in_child() -> float:
    """Seconds one full collection takes in a freshly forked child of this process."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        started = time.perf_counter()
        gc.collect()
        os.write(write, repr(time.perf_counter() - started).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as handle:
        seconds = float(handle.read())
    os.waitpid(pid, 0)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preload", default="torch", help="module the 'server' imports")
    parser.add_argument("--children", type=int, default=8)
    args = parser.parse_args()
    importlib.import_module(args.preload)
    gc.collect()
    objects = len(gc.get_objects())
    times: dict[str, list[float]] = {"plain": [], "frozen": []}
    for _ in range(args.children):
        for mode in ("plain", "frozen"):
            if mode == "frozen":
                gc.freeze()
            times[mode].append(collect_in_child())
            gc.unfreeze()
    plain, frozen = (statistics.median(times[m]) * 1e3 for m in ("plain", "frozen"))
    print(f"{args.preload} preloaded ({objects} tracked objects), {args.children} children "
          f"each: full collection in a forked child {plain:.1f} ms, with the server's heap "
          f"frozen {frozen:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
