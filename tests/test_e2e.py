"""End-to-end runs: real subprocesses of `python -m kernbench.cli.main` and `tools/bench_all.py` on
temporary kernel trees, including kernels that raise, crash, exit, hang or flood their output.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kernbench.api import run_suite
from kernbench.cli.main import main
from kernbench.execution.settings import RunSettings
from kernbench.results.model import ProtocolSettings
from kernbench.results.schema import SCHEMA_VERSION
from support.kernel_tree import (
    FAST,
    kernbench,
    kernel,
    leftover_temp_files,
    load,
    subprocess_env,
    write,
)
from support.processes import wait_gone

REPO = Path(__file__).resolve().parents[1]
FAKE_MS = 2.5

GOOD = """
import numpy as np

def run_benchmark():
    return np.ones(4, dtype=np.float32) * 2
"""

RAISES = """
import numpy as np

def run_benchmark():
    raise ValueError("bad input shape 42")
"""

SEGFAULTS = """
import os
import signal

import numpy as np

def run_benchmark():
    os.kill(os.getpid(), signal.SIGSEGV)
"""

EXITS = """
import json
import os

import numpy as np

def run_benchmark():
    fake = {"status": "ok", "samples_ns": [1.0], "inner_loops": 1, "exiter_fake": True}
    print(json.dumps(fake), flush=True)
    os._exit(0)
"""

HANGS = """
import subprocess
import time
from pathlib import Path

import numpy as np

def run_benchmark():
    child = subprocess.Popen(["sleep", "1000"])
    Path(__file__).with_name("child.pid").write_text(str(child.pid))
    time.sleep(1000)
"""

FLOODS = """
import json
import sys

import numpy as np

sys.stdout.write("x" * (20 * 1024 * 1024))
fake = {"status": "ok", "samples_ns": [1.0], "inner_loops": 1, "flood_fake": True}
sys.stdout.write("\\n" + json.dumps(fake) + "\\n")
sys.stdout.flush()

def run_benchmark():
    return np.zeros(3)
"""

SYNTAX_ERROR = """
import numpy as np

def run_benchmark(:
    return 1
"""

BAD_YAML = "precisions: [fp32\nbackends: cpu]\n  - :\n"

RECORD_KEYS = {"kernel_name", "backend", "precision", "problem_size", "timing", "memory",
               "energy", "accuracy", "success", "status", "reason", "warnings", "worker"}
TIMING_KEYS = {"latency_ms_p50", "latency_ms_p90", "latency_ms_p99", "latency_ms_mean",
               "latency_ms_std", "latency_ms_min", "latency_ms_max", "latency_ms_p50_ci95",
               "throughput_ops_per_sec", "iterations", "inner_loops", "samples_ms"}
MEMORY_KEYS = {"peak_mb", "allocated_mb", "source"}
ENERGY_KEYS = {"energy_j", "power_w", "reason"}
ACCURACY_KEYS = {"rmse", "max_error", "reason"}
WORKER_KEYS = {"exit_code", "signal", "stdout_tail", "stderr_tail"}


def by_name(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["kernel_name"]: r for r in summary["results"]}


def assert_exact_fake_timing(record: dict[str, Any], ms: float, iterations: int = 5,
                             processes: int = 3) -> None:
    """Exact figures on the fake clock, over `processes` worker processes (the default 3)."""
    timing = record["timing"]
    iterations *= processes
    assert timing["process_sample_counts"] == ([iterations // processes] * processes
                                               if processes > 1 else [])
    for key in ("latency_ms_p50", "latency_ms_p90", "latency_ms_p99", "latency_ms_mean",
                "latency_ms_min", "latency_ms_max"):
        assert timing[key] == ms, key
    assert timing["latency_ms_std"] == 0
    assert timing["samples_ms"] == [ms] * iterations
    assert timing["iterations"] == iterations
    assert timing["throughput_ops_per_sec"] == pytest.approx(1000.0 / ms)
    assert timing["timer"] == "fake"


# -- a good kernel, through the real CLI process --------------------------------------------


def test_good_kernel_reports_exact_fake_timer_figures(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    kernel(root, "good", GOOD)
    proc = kernbench("run", "--root", str(root), "--output-dir", str(tmp_path / "out"), *FAST,
                     "--debug-fake-timer", str(FAKE_MS), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"

    summary = load(out / "summary.json")
    assert summary["schema_version"] == SCHEMA_VERSION
    assert summary["complete"] is True
    assert summary["counts"] == {"total": 1, "ok": 1, "failed": 0, "skipped": 0, "timeout": 0,
                                 "invalid": 0}
    assert summary["settings"]["iterations"] == 5
    assert summary["settings"]["warmup"] == 1
    assert summary["settings"]["fake_call_ms"] == FAKE_MS
    (record,) = summary["results"]
    assert record["kernel_name"] == "good"
    assert (record["backend"], record["precision"]) == ("cpu", "fp32")
    assert record["status"] == "ok" and record["success"] is True and record["reason"] is None
    assert_exact_fake_timing(record, FAKE_MS)
    assert record["timing"]["inner_loops"] == 1
    assert record["energy"]["energy_j"] is None and record["energy"]["reason"]
    assert record["accuracy"]["rmse"] is None and record["accuracy"]["reason"]
    assert record["memory"]["peak_mb"] > 0
    assert record["memory"]["source"]
    assert record["worker"]["exit_code"] == 0

    per_kernel = load(out / "kernels" / "good.json")
    assert per_kernel["schema_version"] == SCHEMA_VERSION
    assert per_kernel["kernel_name"] == "good"
    assert per_kernel["kernel"]["path"] == "kernels/good/good.py"
    assert per_kernel["results"] == summary["results"]

    env = load(out / "env.json")
    assert {"python", "os", "cpu", "git", "schema_version"} <= set(env)
    assert env["python"]["version"].startswith(f"{sys.version_info.major}.")

    manifest = load(out / "kernel_manifest.json")
    assert [k["name"] for k in manifest["kernels"]] == ["good"]
    assert manifest["count"] == 1

    md = (out / "summary.md").read_text()
    for section in ("## Environment", "## Performance Leaderboard", "## Resource Usage",
                    "## Failures and Skips"):
        assert section in md
    row = next(line for line in md.splitlines() if line.startswith("| 1 | good |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:5] == ["1", "good", "cpu", "fp32", "2.5"]
    assert "2.5 ± 0" in cells
    assert "400" in cells
    assert "None: every case ran." in md
    assert leftover_temp_files(out) == []


# -- a tree of misbehaving kernels ---------------------------------------------------------


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run over a good kernel and seven bad ones; the CLI's output and reports."""
    base = tmp_path_factory.mktemp("mixed")
    root = base / "repo"
    kernel(root, "good", GOOD)
    kernel(root, "raiser", RAISES)
    kernel(root, "segv", SEGFAULTS)
    kernel(root, "exiter", EXITS)
    kernel(root, "hang", HANGS)
    kernel(root, "flood", FLOODS)
    kernel(root, "syntax", SYNTAX_ERROR)
    badyaml = kernel(root, "badyaml", GOOD)
    write(badyaml.with_name("bench.yaml"), BAD_YAML)
    out = base / "out"
    started = time.monotonic()
    proc = kernbench("run", "--root", str(root), "--output-dir", str(out), *FAST,
                     "--debug-fake-timer", str(FAKE_MS), "--timeout", "3", cwd=base)
    summary = load(out / "summary.json")
    return {"proc": proc, "root": root, "out": out, "summary": summary,
            "records": by_name(summary), "elapsed": time.monotonic() - started}


@pytest.mark.slow
def test_mixed_run_exit_code_and_counts(mixed: dict[str, Any]) -> None:
    assert mixed["proc"].returncode == 2  # an invalid kernel is a configuration error
    summary = mixed["summary"]
    assert summary["complete"] is True
    assert summary["counts"] == {"total": 8, "ok": 2, "failed": 3, "skipped": 0, "timeout": 1,
                                 "invalid": 2}
    assert "8 cases" in mixed["proc"].stderr
    assert mixed["elapsed"] < 60


@pytest.mark.slow
def test_mixed_run_good_kernels_are_unaffected(mixed: dict[str, Any]) -> None:
    good = mixed["records"]["good"]
    assert good["status"] == "ok"
    assert_exact_fake_timing(good, FAKE_MS)
    flood = mixed["records"]["flood"]
    assert flood["status"] == "ok"
    assert_exact_fake_timing(flood, FAKE_MS)  # not the 1e-6 ms its fake JSON claims
    assert flood["precision"] == "fp64"


@pytest.mark.slow
def test_mixed_run_exception_is_failed_with_its_type(mixed: dict[str, Any]) -> None:
    record = mixed["records"]["raiser"]
    assert record["status"] == "failed"
    assert record["success"] is False
    assert "ValueError" in record["reason"]
    assert "bad input shape 42" in record["reason"]
    assert "Traceback" in record["worker"]["traceback"]
    assert record["timing"]["latency_ms_p50"] is None
    assert record["timing"]["samples_ms"] == []


@pytest.mark.slow
def test_mixed_run_segfault_is_failed_naming_the_signal(mixed: dict[str, Any]) -> None:
    record = mixed["records"]["segv"]
    assert record["status"] == "failed"
    assert "SIGSEGV" in record["reason"]
    assert record["worker"]["signal"] == "SIGSEGV"
    assert record["worker"]["exit_code"] == -signal.SIGSEGV


@pytest.mark.slow
def test_mixed_run_exit_without_result_is_failed_and_stdout_is_not_trusted(
        mixed: dict[str, Any]) -> None:
    record = mixed["records"]["exiter"]
    assert record["status"] == "failed"
    assert "before reporting a result" in record["reason"]
    assert record["worker"]["exit_code"] == 0
    assert '"exiter_fake": true' in record["worker"]["stdout_tail"]
    assert record["timing"]["samples_ms"] == []


@pytest.mark.slow
def test_mixed_run_hang_times_out_and_its_children_are_killed(mixed: dict[str, Any]) -> None:
    record = mixed["records"]["hang"]
    assert record["status"] == "timeout"
    assert "timed out" in record["reason"]
    assert "3 s" in record["reason"]
    assert 3 <= record["worker"]["wall_s"] < 20
    child_pid = int((mixed["root"] / "kernels" / "hang" / "child.pid").read_text())
    assert wait_gone(child_pid, 3.0), f"the hanging kernel's child {child_pid} outlived the case"


@pytest.mark.slow
def test_mixed_run_stdout_flood_is_bounded(mixed: dict[str, Any]) -> None:
    worker = mixed["records"]["flood"]["worker"]
    assert worker["stdout_bytes"] >= 20 * 1024 * 1024
    assert len(worker["stdout_tail"].encode()) <= 4096
    assert '"flood_fake": true' in worker["stdout_tail"]


@pytest.mark.slow
def test_mixed_run_syntax_error_and_bad_yaml_are_invalid(mixed: dict[str, Any]) -> None:
    syntax = mixed["records"]["syntax"]
    assert syntax["status"] == "invalid"
    assert "syntax error" in syntax["reason"]
    assert "kernels/syntax/syntax.py:3" in syntax["reason"]
    badyaml = mixed["records"]["badyaml"]
    assert badyaml["status"] == "invalid"
    assert "kernels/badyaml/bench.yaml" in badyaml["reason"]
    assert "YAML" in badyaml["reason"]
    manifest = load(mixed["out"] / "kernel_manifest.json")
    assert manifest["invalid"] == 2
    statuses = {k["name"]: k["status"] for k in manifest["kernels"]}
    assert statuses["syntax"] == statuses["badyaml"] == "invalid"
    assert statuses["good"] == "ok"


@pytest.mark.slow
def test_mixed_run_markdown_lists_every_problem(mixed: dict[str, Any]) -> None:
    md = (mixed["out"] / "summary.md").read_text()
    failures = md.split("## Failures and Skips", 1)[1]
    for needle in ("SIGSEGV", "timed out", "ValueError", "syntax error", "YAML",
                   "before reporting a result"):
        assert needle in failures, needle
    board = md.split("## Performance Leaderboard", 1)[1].split("## Resource Usage", 1)[0]
    ranked = [line.split("|")[2].strip() for line in board.splitlines()
              if line.startswith("| ") and line.split("|")[1].strip().isdigit()]
    assert sorted(ranked) == ["flood", "good"]


@pytest.mark.slow
def test_mixed_run_per_kernel_files_are_complete_and_valid(mixed: dict[str, Any]) -> None:
    out = mixed["out"]
    files = sorted((out / "kernels").glob("*.json"))
    assert [f.stem for f in files] == sorted(mixed["records"])
    for path in files:
        document = load(path)
        assert document["schema_version"] == SCHEMA_VERSION
        assert document["kernel_name"] == path.stem
        (record,) = document["results"]
        assert record == mixed["records"][path.stem]
    assert leftover_temp_files(out) == []


@pytest.mark.slow
def test_every_record_has_the_documented_keys(mixed: dict[str, Any]) -> None:
    missing = []
    for record in mixed["summary"]["results"]:
        case = record["case_id"]
        missing += [f"{case}: {key}" for key in RECORD_KEYS - set(record)]
        for part, keys in (("timing", TIMING_KEYS), ("memory", MEMORY_KEYS),
                           ("energy", ENERGY_KEYS), ("accuracy", ACCURACY_KEYS),
                           ("worker", WORKER_KEYS)):
            missing += [f"{case}: {part}.{key}" for key in keys - set(record.get(part) or {})]
        assert record["energy"].get("energy_j") is None
        assert record["accuracy"].get("rmse") is None
    assert missing == [], "\n".join(missing)


# -- exit codes ------------------------------------------------------------------------------


def test_exit_code_follows_the_worst_outcome(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    kernel(tmp_path, "good", GOOD)
    kernel(tmp_path, "raiser", RAISES)
    kernel(tmp_path, "segv", SEGFAULTS)
    kernel(tmp_path, "syntax", SYNTAX_ERROR)
    badyaml = kernel(tmp_path, "badyaml", GOOD)
    write(badyaml.with_name("bench.yaml"), BAD_YAML)
    args = ["run", "--root", str(tmp_path), *FAST, "--debug-fake-timer", "1", "-q"]

    assert main([*args, "--output-dir", str(tmp_path / "out1")]) == 2
    for name in ("syntax", "badyaml"):
        shutil.rmtree(tmp_path / "kernels" / name)
    assert main([*args, "--output-dir", str(tmp_path / "out2")]) == 1
    for name in ("raiser", "segv"):
        shutil.rmtree(tmp_path / "kernels" / name)
    assert main([*args, "--output-dir", str(tmp_path / "out3")]) == 0
    capsys.readouterr()
    assert load(tmp_path / "out2" / "summary.json")["counts"]["failed"] == 2
    assert load(tmp_path / "out3" / "summary.json")["counts"] == {
        "total": 1, "ok": 1, "failed": 0, "skipped": 0, "timeout": 0, "invalid": 0}


def test_bench_yaml_timeout_overrides_the_flag_and_exits_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hang = kernel(tmp_path, "hang", """
        import time
        import numpy as np

        def run_benchmark():
            time.sleep(1000)
    """)
    write(hang.with_name("bench.yaml"), "timeout_s: 1\n")
    started = time.monotonic()
    code = main(["run", "--root", str(tmp_path), "--output-dir", str(tmp_path / "out"), *FAST,
                 "--timeout", "120", "-q"])
    assert code == 1
    assert time.monotonic() - started < 30
    (record,) = load(tmp_path / "out" / "summary.json")["results"]
    assert record["status"] == "timeout"
    assert "timed out after 1 s" in record["reason"]


# -- interrupted runs -------------------------------------------------------------------------


def test_interrupted_run_suite_keeps_finished_cases(tmp_path: Path) -> None:
    kernel(tmp_path, "a_first", GOOD)
    kernel(tmp_path, "b_second", GOOD)
    out = tmp_path / "out"
    settings = RunSettings(root=tmp_path, protocol=ProtocolSettings(warmup=1, iterations=5),
                           fake_call_ms=1.0, interleave=False)  # in rounds: test_rounds.py
    seen: list[str] = []

    def interrupt(result: Any, index: int, total: int) -> None:
        seen.append(result.case_id)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_suite(settings, out, on_result=interrupt)
    assert seen == ["a_first[cpu,fp32]"]
    summary = load(out / "summary.json")
    assert summary["complete"] is False
    assert summary["counts"]["total"] == 1
    assert [r["case_id"] for r in summary["results"]] == seen
    first = load(out / "kernels" / "a_first.json")
    assert first["results"][0]["status"] == "ok"
    assert first["results"][0]["timing"]["latency_ms_p50"] == 1.0
    assert not (out / "kernels" / "b_second.json").exists()
    assert "Incomplete run" in (out / "summary.md").read_text()
    assert leftover_temp_files(out) == []


@pytest.mark.slow
def test_sigint_exits_130_and_saves_finished_cases(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    kernel(root, "a_good", GOOD)
    kernel(root, "b_hang", """
        import os
        import time
        from pathlib import Path

        import numpy as np

        def run_benchmark():
            Path(__file__).with_name("worker.pid").write_text(str(os.getpid()))
            time.sleep(1000)
    """)
    out, scratch = tmp_path / "out", tmp_path / "tmp"
    scratch.mkdir()
    pid_file = root / "kernels" / "b_hang" / "worker.pid"
    # A shell's background job inherits SIGINT ignored; restore the default so Python turns
    # the signal into KeyboardInterrupt, as it would for Ctrl-C in a terminal.
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernbench.cli", "run", "--root", str(root), "--output-dir",
         str(out), *FAST], cwd=tmp_path, env={**subprocess_env(), "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pid_file.exists(), "the hanging case never started"
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    summary = load(out / "summary.json")
    assert summary["complete"] is False
    assert [r["kernel_name"] for r in summary["results"]] == ["a_good"]
    assert load(out / "kernels" / "a_good.json")["results"][0]["status"] == "ok"
    assert wait_gone(int(pid_file.read_text()), 3.0), "the interrupted worker was left running"
    page = (out / "index.html").read_text(encoding="utf-8")  # rendered from what finished
    assert "partial report" in page and "<title>kernbench report" in page
    assert "(partial)</title>" in page and "a_good[cpu,fp32]" in page
    assert "b_hang" not in page.split('id="leaderboard"')[1].split("</section>")[0]
    assert list(scratch.iterdir()) == []  # the run's temporary folders went with it


def test_a_run_leaves_no_temporary_folder_behind(tmp_path: Path) -> None:
    """Every temporary folder of a run (its scratch, each case's job and reply, reference
    outputs) is removed by the end: TMPDIR, private to this run, is empty afterwards."""
    root = tmp_path / "repo"
    kernel(root, "a_good", GOOD)
    checked = kernel(root, "checked", """
        import numpy as np

        def setup(n=64, precision="fp32"):
            return {"x": np.ones(n, dtype=np.float32 if precision == "fp32" else np.float64)}

        def run_benchmark(x):
            return x * 2
    """)
    write(checked.with_name("bench.yaml"), "precisions: [fp64, fp32]\n"
          "reference: {precision: fp64}\n")  # saved to the run's scratch as .npz
    proc = kernbench("run", "--root", str(root), "--output-dir", str(tmp_path / "out"), *FAST,
                     "--processes", "2", "--format", "json,md,html,csv", cwd=tmp_path,
                     tmp=tmp_path / "tmp")
    assert proc.returncode == 0, proc.stderr
    assert [r["status"] for r in load(tmp_path / "out" / "summary.json")["results"]] == \
        ["ok"] * 3
    assert list((tmp_path / "tmp").iterdir()) == []


# -- the seed's entry point ------------------------------------------------------------------


def test_bench_all_shim_runs_and_lists(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    kernel(root, "good", GOOD)
    script = str(REPO / "tools" / "bench_all.py")
    listing = subprocess.run([sys.executable, script, "--root", str(root), "--list"],
                             cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True,
                             timeout=60)
    assert listing.returncode == 0, listing.stderr
    assert "good" in listing.stdout
    assert not (tmp_path / "reports").exists()

    proc = subprocess.run([sys.executable, script, "--root", str(root), *FAST,
                           "--debug-fake-timer", "4", "--quiet"],
                          cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = load(tmp_path / "reports" / "summary.json")  # the default --output-dir
    (record,) = summary["results"]
    assert_exact_fake_timing(record, 4.0)
    assert (tmp_path / "reports" / "summary.md").is_file()


# -- a bench.yaml sweep, through the real CLI process -----------------------------------------

MATMUL = """
import numpy as np

def setup(m, k, n, precision="fp32"):
    rng = np.random.default_rng(0)
    dtype = {"fp64": np.float64, "fp32": np.float32}[precision]
    return {"a": rng.standard_normal((m, k)).astype(dtype),
            "b": rng.standard_normal((k, n)).astype(dtype)}

def run_benchmark(a, b):
    return a @ b

def reference(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)
"""

MATMUL_YAML = """
precisions: [fp32]
sweep:
  matrix_shapes:
    - {name: pow2, min_power: 2, max_power: 4}
work:
  flops: "2*m*k*n"
  bytes: "itemsize*(m*k + k*n + m*n)"
tolerances: {relative_error: 1.0e-5}
"""

SWEEP_IDS = ["matmul[cpu,fp32,m=4,k=4,n=4]", "matmul[cpu,fp32,m=8,k=8,n=8]",
             "matmul[cpu,fp32,m=16,k=16,n=16]"]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pow2-swept matmul run twice: `out` at the fake 2.5 ms per call, `slow` at 5 ms."""
    base = tmp_path_factory.mktemp("sweep")
    kernel(base / "repo", "matmul", MATMUL)
    write(base / "repo" / "kernels" / "matmul" / "bench.yaml", MATMUL_YAML)
    for name, ms in (("out", FAKE_MS), ("slow", 2 * FAKE_MS)):
        proc = kernbench("run", "--root", str(base / "repo"), "--output-dir", str(base / name),
                         *FAST, "--debug-fake-timer", str(ms), "--format", "all", cwd=base)
        assert proc.returncode == 0, proc.stderr
    return base


def test_sweep_gives_one_record_per_shape_with_its_problem_size_and_work(swept: Path) -> None:
    summary = load(swept / "out" / "summary.json")
    assert summary["counts"]["total"] == summary["counts"]["ok"] == 3
    records = summary["results"]
    assert [r["case_id"] for r in records] == SWEEP_IDS
    for record, size in zip(records, (4, 8, 16), strict=True):
        assert record["problem_size"] == {"m": size, "k": size, "n": size}
        assert_exact_fake_timing(record, FAKE_MS)
        assert record["work"]["flops"] == 2 * size**3  # the formula saw this point's m, k, n
        assert record["work"]["bytes"] == 4 * 3 * size * size
        assert record["work"]["gflops_per_s"] == pytest.approx(2 * size**3 / FAKE_MS / 1e6)
        assert record["accuracy"]["passed"] is True


def test_sweep_gives_one_csv_row_and_one_leaderboard_row_per_shape(swept: Path) -> None:
    import csv

    from support.html_tables import table_rows

    with (swept / "out" / "results.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["case_id"] for row in rows] == SWEEP_IDS
    assert [json.loads(row["problem_size"])["n"] for row in rows] == [4, 8, 16]
    page = (swept / "out" / "index.html").read_text(encoding="utf-8")
    board = table_rows(page, "leaderboard-table")
    assert sorted(row[1]["text"] for row in board) == sorted(SWEEP_IDS)
    assert len(list((swept / "out").glob("kernels/*.json"))) == 1


def test_comparing_two_sweep_runs_matches_points_by_shape(swept: Path) -> None:
    proc = kernbench("compare", str(swept / "out"), str(swept / "slow"), "--output-dir",
                     str(swept / "cmp"), cwd=swept)
    assert proc.returncode == 0, proc.stderr
    cases = load(swept / "cmp" / "comparison.json")["cases"]
    assert sorted(c["label"] for c in cases) == sorted(SWEEP_IDS)
    assert {c["verdict"] for c in cases} <= {"regressed", "inconclusive"}
    assert all(c["ratio"] == pytest.approx(2.0) for c in cases)
    assert "m=16,k=16,n=16" in (swept / "cmp" / "regressions.md").read_text(encoding="utf-8")


def test_a_bench_yaml_reference_case_is_per_sweep_point(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    kernel(root, "scale", """
        import numpy as np

        def run_benchmark(n, precision="fp32"):
            dtype = {"fp64": np.float64, "fp32": np.float32}[precision]
            return np.arange(n, dtype=dtype) / 3
        """)
    write(root / "kernels" / "scale" / "bench.yaml", """
        precisions: [fp32, fp64]
        reference: {precision: fp64}
        sweep: {params: {n: [2, 5]}}
        tolerances: {relative_error: 1.0e-6}
        """)
    proc = kernbench("run", "--root", str(root), "--output-dir", str(tmp_path / "out"), *FAST,
                     "--debug-fake-timer", "1", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    records = {r["case_id"]: r for r in load(tmp_path / "out" / "summary.json")["results"]}
    assert list(records) == ["scale[cpu,fp64,n=2]", "scale[cpu,fp64,n=5]",
                             "scale[cpu,fp32,n=2]", "scale[cpu,fp32,n=5]"]
    for n in (2, 5):  # a point compared with another point's output would mismatch in shape
        accuracy = records[f"scale[cpu,fp32,n={n}]"]["accuracy"]
        assert accuracy["passed"] is True, accuracy
        assert 0 < accuracy["relative_error"] < 1e-6
