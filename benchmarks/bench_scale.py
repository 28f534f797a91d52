#!/usr/bin/env python3
"""Scale: a large suite across local shards, and a merge of many shard report sets.

Part 1, sharded run. A generated tree of ``--cases`` trivial kernels (one case each, on the
fake clock: ``--debug-fake-timer 1``, 3 samples, 1 worker process per case, no warm-up time)
is run by ``kernbench.api.run_sharded`` as ``--shards`` shards on the local executor, all at
once (``--jobs`` = shards). Printed: the wall time of the whole sharded run (shards and merge),
and the time of merging the shards' report sets again on their own.

Part 2, merge. ``--merge-shards`` report sets of ``--merge-cases`` cases each are written
directly as files (summary.json as a run writes it, one record a line, with 30 samples per
record and a plan; env.json; one kernels/<name>.json per 10 cases; no kernel runs), then
merged by
``kernbench.api.merge_shards`` in a fresh process each, for a quarter, half and all of the
shards (or the counts of ``--merge-points``), so memory per shard shows. Printed per merge:
wall and CPU time, the process's peak resident memory (``ru_maxrss``), and the wall time of the
same merge again without summary.md (what summary.md adds). The merge reads the shards in
worker processes, one per core: the CPU time counts theirs too, and the peak memory of the
largest worker is printed beside the merging process's. Then the same shards are merged
by the command line with its default formats (``kernbench merge OUT shard-* -q``: json, md
and html, so index.html too), again in a fresh process: its wall time and peak memory.

Goals (issue 19): 2,000 cases across 4 local shards; merging 100 shard report sets of 1,000
cases each under 5 s, in memory that does not grow with the number of shards.

    python benchmarks/bench_scale.py                       # full size: 2000 cases, 100 x 1000
    python benchmarks/bench_scale.py --cases 200 --merge-shards 10 --merge-cases 1000  # reduced
    python benchmarks/bench_scale.py --skip-run --merge-points 10,20,50,100  # merges only
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))

from kernbench.api import merge_shards  # noqa: E402
from kernbench.api.scale import run_sharded  # noqa: E402
from kernbench.execution.completeness import plan_record  # noqa: E402
from kernbench.execution.executors import ExecutorSettings  # noqa: E402
from kernbench.execution.settings import RunSettings  # noqa: E402
from kernbench.results.files import write_json_atomic  # noqa: E402
from kernbench.results.model import ProtocolSettings, case_id_of  # noqa: E402
from kernbench.results.schema import SCHEMA_VERSION  # noqa: E402

KERNEL = "def run_benchmark():\n    return 1\n"
PRECISIONS = ("fp64", "fp32", "fp16", "bf16", "int8")
BACKENDS = ("cpu", "cuda")
CASES_PER_KERNEL = len(PRECISIONS) * len(BACKENDS)


def sharded_run(cases: int, shards: int, top: Path) -> None:
    root = top / "tree"
    for index in range(cases):
        path = root / "kernels" / f"k{index:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(KERNEL, encoding="utf-8")
    settings = RunSettings(root=root, protocol=ProtocolSettings(warmup=1, iterations=3,
                                                                warmup_time_s=0.0),
                           processes=1, fake_call_ms=1.0, testbed_dir=top / "cache")
    started = time.perf_counter()
    outcome = run_sharded(settings, top / "out", ExecutorSettings("local", jobs=shards),
                          shards=shards)
    wall_s = time.perf_counter() - started
    started = time.perf_counter()
    merge_shards(list(outcome.shard_dirs), top / "merged-again")
    merge_s = time.perf_counter() - started
    print(f"sharded run: {cases} cases, {shards} local shards at once: {wall_s:.1f} s wall "
          f"(shards and merge); merge alone {merge_s:.2f} s; "
          f"{outcome.summary['counts']['ok']} ok, missing {len(outcome.missing)}")


FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "report_run"


def template() -> dict[str, object]:
    """A record of a real run (the report fixture's first ok case, 30 samples kept), the
    model for every generated case."""
    summary = json.loads((FIXTURE / "summary.json").read_text(encoding="utf-8"))
    found: dict[str, object] = next(r for r in summary["results"] if r["status"] == "ok")
    timing = dict(found["timing"])  # type: ignore[call-overload]
    timing["samples_ms"] = [1.0 + 0.001 * i for i in range(30)]
    return {**found, "timing": timing}


TEMPLATE = template()
ENVIRONMENT = json.loads((FIXTURE / "env.json").read_text(encoding="utf-8"))


def record(kernel: str, backend: str, precision: str, fingerprint: str) -> dict[str, object]:
    return {**TEMPLATE, "kernel_name": kernel, "case_id": case_id_of(kernel, backend, precision),
            "kernel_path": f"kernels/{kernel}.py", "backend": backend, "precision": precision,
            "fingerprint": fingerprint, "testbed": "bench"}


def write_shard(directory: Path, index: int, total: int, cases: int, suite: list[str],
                fingerprint: str) -> None:
    kernels = [f"s{index:03d}k{j:04d}" for j in range(cases // CASES_PER_KERNEL)]
    results = [record(k, b, p, fingerprint) for k in kernels for b in BACKENDS
               for p in PRECISIONS]
    ids = [str(r["case_id"]) for r in results]
    environment = {**ENVIRONMENT, "schema_version": SCHEMA_VERSION,
                   "fingerprint": fingerprint, "hostname": "bench", "testbed": "bench"}
    summary = {
        "schema_version": SCHEMA_VERSION, "kernbench_version": "bench",
        "started_at": "2024-01-01T10:00:00Z", "finished_at": "2024-01-01T11:00:00Z",
        "complete": True,
        "settings": {"iterations": 30, "warmup": 3, "seed": 1337, "processes": 3,
                     "shard": [index, total], "plan": plan_record(suite, ids),
                     "shards": [{"shard": f"{index}/{total}", "host": "bench",
                                 "testbed": "bench", "fingerprint": fingerprint,
                                 "scheduler": {}}]},
        "environment": environment, "counts": {"total": len(results), "ok": len(results)},
        "results": results,
    }
    (directory / "kernels").mkdir(parents=True, exist_ok=True)
    # as a run writes it (ReportGenerator.write_summary): one record a line
    write_json_atomic(directory / "summary.json", summary, one_line_items=True)
    (directory / "env.json").write_text(json.dumps(environment), encoding="utf-8")
    for k in kernels:
        own = [r for r in results if r["kernel_name"] == k]
        (directory / "kernels" / f"{k}.json").write_text(json.dumps(
            {"schema_version": SCHEMA_VERSION, "kernel_name": k, "kernel": None,
             "results": own}), encoding="utf-8")


def write_shards(top: Path, shards: int, cases: int) -> list[Path]:
    fingerprint = "bench0bench0bench"
    suite = [case_id_of(f"s{i:03d}k{j:04d}", b, p) for i in range(1, shards + 1)
             for j in range(cases // CASES_PER_KERNEL) for b in BACKENDS for p in PRECISIONS]
    dirs = []
    for index in range(1, shards + 1):
        directory = top / f"shard-{index:03d}"
        write_shard(directory, index, shards, cases, suite, fingerprint)
        dirs.append(directory)
    return dirs


def usage() -> tuple[float, float, float]:
    """This process's peak RSS (MB); the CPU time of its finished child processes (the
    merge's workers) and the largest one's peak RSS (MB)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            children.ru_utime + children.ru_stime, children.ru_maxrss / 1024)


def merge_child(out: Path, dirs: list[str]) -> None:
    """In a fresh process: merge, then print the wall and CPU time, the peak RSS and the time
    of the same merge without summary.md, as JSON."""
    paths = [Path(d) for d in dirs]
    started, cpu = time.perf_counter(), time.process_time()
    merged, _ = merge_shards(paths, out)
    wall_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    peak_mb, workers_cpu_s, workers_mb = usage()
    started = time.perf_counter()  # again without summary.md: what it adds to the merge
    merge_shards(paths, out.with_name(f"{out.name}-plain"), markdown=False)
    plain_s = time.perf_counter() - started
    print(json.dumps({"wall_s": wall_s, "cpu_s": cpu_s + workers_cpu_s, "peak_mb": peak_mb,
                      "workers_mb": workers_mb, "plain_s": plain_s,
                      "cases": merged["counts"]["total"],
                      "complete": merged["completeness"]["complete"]}))


def cli_child(out: Path, dirs: list[str]) -> None:
    """In a fresh process: `kernbench merge OUT DIRS -q` with the default formats, then print
    its wall time and the process's peak RSS as JSON."""
    from kernbench.cli.main import main as kernbench

    started = time.perf_counter()
    code = kernbench(["merge", str(out), *dirs, "-q"])
    wall_s = time.perf_counter() - started
    peak_mb, _, workers_mb = usage()
    html_mb = (out / "index.html").stat().st_size / 1e6
    print(json.dumps({"wall_s": wall_s, "peak_mb": peak_mb, "workers_mb": workers_mb,
                      "code": code, "html_mb": html_mb}))


def timed_merge(out: Path, dirs: list[Path], mode: str = "--merge-child") -> dict[str, float]:
    listing = out.parent / f"{out.name}-dirs.json"
    listing.write_text(json.dumps([str(d) for d in dirs]), encoding="utf-8")
    done = subprocess.run([sys.executable, __file__, mode, str(out), str(listing)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the merge failed:\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def merges(shards: int, cases: int, top: Path, points: list[int] | None) -> None:
    started = time.perf_counter()
    dirs = write_shards(top, shards, cases)
    os.sync()  # the shards on disk before any merge is timed, as shards of a finished run are
    print(f"wrote {shards} shard report sets of {cases} cases in "
          f"{time.perf_counter() - started:.1f} s")
    counts = sorted(set(points or ()) or {max(1, shards // 4), max(1, shards // 2), shards})
    for count in counts:
        found = timed_merge(top / f"merged-{count}", dirs[:count])
        for name in (f"merged-{count}", f"merged-{count}-plain"):
            shutil.rmtree(top / name)
        print(f"merge of {count} shards x {cases} cases ({found['cases']:.0f} cases, complete "
              f"{found['complete']}): {found['wall_s']:.2f} s wall, {found['cpu_s']:.2f} s CPU "
              f"(without summary.md {found['plain_s']:.2f} s wall), peak RSS "
              f"{found['peak_mb']:.0f} MB (each worker at most {found['workers_mb']:.0f} MB)")
        cli = timed_merge(top / f"cli-{count}", dirs[:count], "--cli-child")
        shutil.rmtree(top / f"cli-{count}")
        print(f"  kernbench merge with the default formats (json, md, html): "
              f"{cli['wall_s']:.2f} s wall, peak RSS {cli['peak_mb']:.0f} MB (workers "
              f"{cli['workers_mb']:.0f} MB), index.html "
              f"{cli['html_mb']:.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--merge-shards", type=int, default=100)
    parser.add_argument("--merge-cases", type=int, default=1000)
    parser.add_argument("--merge-points", type=lambda text: [int(v) for v in text.split(",")],
                        help="merge the first N shard sets for each N of this comma-separated "
                             "list (default: a quarter, half and all of --merge-shards)")
    parser.add_argument("--skip-run", action="store_true", help="part 2 only")
    parser.add_argument("--merge-child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--cli-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    for child, run in ((args.merge_child, merge_child), (args.cli_child, cli_child)):
        if child:
            out, listing = child
            run(Path(out), json.loads(Path(listing).read_text(encoding="utf-8")))
            return
    with tempfile.TemporaryDirectory(prefix="kernbench-scale-") as tmp:
        if not args.skip_run:
            sharded_run(args.cases, args.shards, Path(tmp) / "run")
        merges(args.merge_shards, args.merge_cases, Path(tmp) / "merge", args.merge_points)


if __name__ == "__main__":
    main()
