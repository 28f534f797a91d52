#!/usr/bin/env python3
"""Measure this machine's attainable CPU peak (memory bandwidth, fp64/fp32 matmul) and print it.

Runs :func:`kernbench.measure.metrics.peaks.probe_cpu` directly (no cache) and prints the record as
JSON, with the seconds it took.  With ``--cache-dir`` it goes through
:func:`~kernbench.measure.metrics.peaks.cpu_peak` instead, keyed by this machine's fingerprint, so a
second run reads the cached record.

    python benchmarks/probe_cpu_peak.py [--copy-mib 256] [--matmul-n 1536] [--repeats 5]
                                        [--budget 3.0] [--cache-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from kernbench.measure.environment import collect_environment
from kernbench.measure.metrics.peaks import cpu_peak, probe_cpu
from kernbench.results.fingerprint import machine_fingerprint


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copy-mib", type=int, default=256, help="size of the copied array")
    parser.add_argument("--matmul-n", type=int, default=1536, help="side of the square matrices")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per measurement")
    parser.add_argument("--budget", type=float, default=3.0, help="seconds for the 3 measurements")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="cache the result here, per machine fingerprint")
    return parser.parse_args()


def main() -> int:
    args = _arguments()

    def probe() -> dict[str, Any]:
        return probe_cpu(args.copy_mib, args.matmul_n, args.repeats, args.budget)

    if args.cache_dir is None:
        record = probe()
    else:
        env = collect_environment(Path.cwd(), run_git=False)
        record = cpu_peak(args.cache_dir, machine_fingerprint(env), probe)
    print(json.dumps(record, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
