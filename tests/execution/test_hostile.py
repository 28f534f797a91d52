"""The hostile-kernel suite: one CLI run over a tree where good kernels sit beside kernels and
bench.yaml files that do everything a kernel should not. Each hostile one gets a clear status
and a message naming what went wrong; the good kernels' figures (on the fake timer) are
exactly those of a run without the hostile ones; nothing in a bench.yaml ever runs; no
process a kernel started outlives the run.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kernbench.execution.guard import guarded
from support.kernel_tree import FAST, kernbench, kernel, load
from support.processes import wait_gone

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")]

FAKE_MS = 1.5
MAX_MEMORY = "512M"
BLAS_THREADS = {"OPENBLAS_NUM_THREADS": "4"}
"""OpenBLAS maps a buffer per thread when numpy is imported: on a 16-core machine a worker
spawned under 512M of address space died in numpy's import ("OpenBLAS error: Memory allocation
still failed"), so the test pins the thread count and means the same on every machine."""

GOOD = """
import numpy as np

def setup(n=64):
    return {"x": np.arange(n, dtype=np.float64)}

def run_benchmark(x):
    return x * 2.0

def reference(x):
    return x * 2.0
"""

HOSTILE: dict[str, str] = {
    "raiser": """
        def run_benchmark():
            raise ValueError("bad input shape 42")
    """,
    "segv": """
        import os, signal

        def run_benchmark():
            os.kill(os.getpid(), signal.SIGSEGV)
    """,
    "hang": """
        import subprocess, time
        from pathlib import Path

        def run_benchmark():
            child = subprocess.Popen(["sleep", "1000"])
            Path(__file__).with_name("child.pid").write_text(str(child.pid))
            time.sleep(1000)
    """,
    "os_exit": """
        import os

        def run_benchmark():
            os._exit(3)
    """,
    "sys_exit_zero": """
        import sys

        def run_benchmark():
            sys.exit(0)
    """,
    "sys_exit_code": """
        import sys

        def run_benchmark():
            sys.exit(4)
    """,
    "flood": """
        import os, sys

        def run_benchmark():
            if os.environ.get("KERNBENCH_FLOODED") != "1":
                os.environ["KERNBENCH_FLOODED"] = "1"  # flood once per process, not per call
                sys.stdout.write("o" * (8 << 20))
                sys.stderr.write("e" * (8 << 20))
                sys.stdout.write("\\nSTDOUT-END\\n")
                sys.stderr.write("\\nSTDERR-END\\n")
            return 1.0
    """,
    "liar": """
        import json, sys

        LIE = {"status": "ok", "samples_ns": [1.0, 1.0], "inner_loops": 1, "timer": "lie"}

        def run_benchmark():
            print(json.dumps(LIE), flush=True)
            print(json.dumps({"result": LIE, "type": "result"}), file=sys.stderr, flush=True)
            return 1.0
    """,
    "nan": """
        import numpy as np

        def run_benchmark():
            return np.full(4, np.nan)

        def reference():
            return np.ones(4)
    """,
    "wrong_shape": """
        import numpy as np

        def run_benchmark():
            return np.ones(3)

        def reference():
            return np.ones(4)
    """,
    "hog": """
        def run_benchmark():
            blocks = []
            while True:  # until the machine would swap, without a limit
                blocks.append(bytearray(32 << 20))
    """,
    "spawner": """
        import os, subprocess, sys
        from pathlib import Path

        DAEMON = ("import os, time\\n"
                  "if os.fork() == 0:\\n"
                  "    os.setsid()\\n"
                  "    if os.fork() == 0:\\n"
                  "        print(os.getpid(), flush=True)\\n"
                  "        null = os.open(os.devnull, os.O_RDWR)\\n"
                  "        os.dup2(null, 1); os.dup2(null, 2)  # let go of the pipes\\n"
                  "        time.sleep(1000)\\n"
                  "    os._exit(0)\\n"
                  "os.wait()\\n")

        def run_benchmark():
            pids = Path(__file__).with_name("children.pid")
            if not pids.exists():
                child = subprocess.Popen(["sleep", "1000"])
                daemon = subprocess.run([sys.executable, "-c", DAEMON], capture_output=True,
                                        text=True, timeout=30).stdout.strip()
                pids.write_text(f"{child.pid} {daemon}")
            return 1.0
    """,
    "chdir_env": """
        import os

        os.chdir("/")
        os.environ["KERNBENCH_HOSTILE"] = "polluted"

        def run_benchmark():
            os.chdir("/tmp")
            os.environ["PATH"] = ""
            return 1.0
    """,
    "probe_env": """
        import os
        from pathlib import Path

        START_CWD = os.getcwd()
        HOSTILE = os.environ.get("KERNBENCH_HOSTILE")
        PATH = os.environ.get("PATH")

        def run_benchmark():
            root = Path(__file__).resolve().parents[2]
            if Path(START_CWD).resolve() != root or HOSTILE is not None or not PATH:
                raise RuntimeError(f"polluted: cwd={START_CWD} env={HOSTILE} path={PATH!r}")
            return 1.0
    """,
    "import_error": """
        import kernbench_no_such_module_anywhere

        def run_benchmark():
            return 1.0
    """,
    "syntax": """
        def run_benchmark(:
            return 1
    """,
}

SENTINEL_CODE = "__import__('os').system('touch {sentinel}')"
BAD_CONFIGS: dict[str, str] = {
    "yaml_malformed": "precisions: [fp32\nbackends: cpu]\n  - :\n",
    "yaml_types": "precisions: fp32\ntimeout_s: soon\n",
    "yaml_code": ("skip_conditions:\n  - reason: pwned\n"
                  "    check: \"" + SENTINEL_CODE + "\"\n"),
    "yaml_tag": "problem_size: !!python/object/apply:os.system ['touch {sentinel}']\n",
}
HUGE_BYTES = 50 << 20

GOOD_NAMES = ("good_a", "good_b", "good_c")


def build_tree(root: Path, hostile: bool) -> None:
    """Good kernels, and with `hostile` every hostile kernel and bench.yaml beside them."""
    for name in GOOD_NAMES:
        kernel(root, name, GOOD)
    if not hostile:
        return
    for name, source in HOSTILE.items():
        kernel(root, name, source)
    sentinel = root.parent / "SENTINEL"
    for name, text in BAD_CONFIGS.items():
        path = kernel(root, name, GOOD)
        path.with_name("bench.yaml").write_text(text.format(sentinel=sentinel),
                                                encoding="utf-8")
    huge = kernel(root, "yaml_huge", GOOD)
    with huge.with_name("bench.yaml").open("w", encoding="utf-8") as handle:
        line = "# " + "x" * 1021 + "\n"
        handle.write("description: huge\n")
        for _ in range(HUGE_BYTES // len(line)):
            handle.write(line)


def run(base: Path, hostile: bool, isolation: str) -> dict[str, Any]:
    root = base / "repo"
    build_tree(root, hostile)
    out = base / "out"
    proc = kernbench("run", "--root", str(root), "--output-dir", str(out), *FAST,
                     "--debug-fake-timer", str(FAKE_MS), "--timeout", "4",
                     "--max-memory", MAX_MEMORY, "--format", "json,md",
                     "--isolation", isolation, cwd=base, timeout=300, extra_env=BLAS_THREADS)
    summary = load(out / "summary.json")
    return {"proc": proc, "root": root, "out": out, "summary": summary, "base": base,
            "isolation": isolation, "records": {r["kernel_name"]: r for r in summary["results"]}}


# Every promise holds whichever way the workers start: forked from a preloaded server (the
# default) or spawned as fresh interpreters.
@pytest.fixture(scope="module", params=["fork", "spawn"])
def isolation(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> dict[str, Any]:
    return run(tmp_path_factory.mktemp("hostile"), hostile=True, isolation=isolation)


@pytest.fixture(scope="module")
def control(tmp_path_factory: pytest.TempPathFactory, isolation: str) -> dict[str, Any]:
    return run(tmp_path_factory.mktemp("control"), hostile=False, isolation=isolation)


def test_workers_started_the_way_that_was_asked(hostile: dict[str, Any]) -> None:
    ran = [r for r in hostile["records"].values() if r["worker"].get("pid")]
    assert ran
    assert {r["worker"]["isolation"] for r in ran} == {hostile["isolation"]}


def record(hostile: dict[str, Any], name: str) -> dict[str, Any]:
    return hostile["records"][name]  # type: ignore[no-any-return]


def test_the_run_finishes_with_every_kernel_accounted_for(hostile: dict[str, Any]) -> None:
    proc = hostile["proc"]
    assert proc.returncode == 2, proc.stderr  # invalid kernels are configuration errors
    summary = hostile["summary"]
    assert summary["complete"] is True
    expected = {*GOOD_NAMES, *HOSTILE, *BAD_CONFIGS, "yaml_huge"}
    assert set(hostile["records"]) == expected
    assert len(summary["results"]) == len(expected)
    assert "Traceback" not in proc.stderr  # the harness itself never crashed


def test_good_kernels_figures_are_as_if_the_hostile_ones_were_absent(
        hostile: dict[str, Any], control: dict[str, Any]) -> None:
    assert control["proc"].returncode == 0, control["proc"].stderr
    for name in GOOD_NAMES:
        mine, alone = record(hostile, name), record(control, name)
        assert mine["status"] == alone["status"] == "ok"
        assert mine["timing"]["samples_ms"] == [FAKE_MS] * 5 * 3
        for part in ("timing", "accuracy", "output", "warnings", "work"):
            assert mine[part] == alone[part], (name, part)
        assert mine["accuracy"]["passed"] is True


@pytest.mark.parametrize(("name", "status", "words"), [
    ("raiser", "failed", ["ValueError: bad input shape 42"]),
    ("segv", "failed", ["killed by SIGSEGV", "before reporting a result"]),
    ("hang", "timeout", ["timed out after 4 s", "children were killed",
                         "its stack at the timeout ended in hang.py, line 7, in run_benchmark"]),
    ("os_exit", "failed", ["exited with code 3", "before reporting a result"]),
    ("sys_exit_zero", "failed", ["called sys.exit(0) (SystemExit)"]),
    ("sys_exit_code", "failed", ["called sys.exit(4) (SystemExit)"]),
    ("nan", "failed", ["accuracy check failed", "4 NaN/inf values"]),
    ("wrong_shape", "failed", ["accuracy check failed", "shape"]),
    ("hog", "failed", [f"memory limit reached: --max-memory {MAX_MEMORY}", "MemoryError"]),
    ("import_error", "failed", ["ModuleNotFoundError",
                                "No module named 'kernbench_no_such_module_anywhere'"]),
    ("syntax", "invalid", ["kernels/syntax/syntax.py:1", "syntax error"]),
    ("yaml_malformed", "invalid", ["kernels/yaml_malformed/bench.yaml:", "YAML"]),
    ("yaml_types", "invalid", ["kernels/yaml_types/bench.yaml: 2 problems: key 'precisions'",
                               "expected a list", "key 'timeout_s'"]),
    ("yaml_code", "invalid", ["kernels/yaml_code/bench.yaml", "skip_conditions[0].check"]),
    ("yaml_tag", "invalid", ["kernels/yaml_tag/bench.yaml"]),
    ("yaml_huge", "invalid", ["kernels/yaml_huge/bench.yaml",
                              "expected a file under 1048576 bytes", "(got '5242"]),
])
def test_each_hostile_kernel_gets_a_clear_status_and_reason(
        hostile: dict[str, Any], name: str, status: str, words: list[str]) -> None:
    entry = record(hostile, name)
    assert entry["status"] == status, entry["reason"]
    assert entry["success"] is False
    for word in words:
        assert word in entry["reason"], (word, entry["reason"])


def test_code_in_a_bench_yaml_never_runs(hostile: dict[str, Any]) -> None:
    assert not (hostile["base"] / "SENTINEL").exists()
    assert "__import__" in record(hostile, "yaml_code")["reason"]


@pytest.mark.parametrize("name", ["flood", "liar", "spawner", "chdir_env", "probe_env"])
def test_kernels_that_misbehave_but_return_get_exact_figures(hostile: dict[str, Any],
                                                             name: str) -> None:
    entry = record(hostile, name)
    assert entry["status"] == "ok", entry["reason"]
    assert entry["timing"]["samples_ms"] == [FAKE_MS] * 5 * 3  # not the lies they printed
    assert entry["timing"]["timer"] == "fake"


def test_floods_of_stdout_and_stderr_are_counted_and_tailed(hostile: dict[str, Any]) -> None:
    worker = record(hostile, "flood")["worker"]
    assert worker["stdout_bytes"] > 8 << 20 and worker["stderr_bytes"] > 8 << 20
    assert worker["stdout_tail"].endswith("STDOUT-END\n")
    assert worker["stderr_tail"].endswith("STDERR-END\n")
    assert len(worker["stdout_tail"]) <= 4096 and len(worker["stderr_tail"]) <= 4096


def test_protocol_lookalike_output_stays_output(hostile: dict[str, Any]) -> None:
    entry = record(hostile, "liar")
    assert '"timer": "lie"' in entry["worker"]["stdout_tail"]
    assert '"type": "result"' in entry["worker"]["stderr_tail"]
    assert entry["timing"]["samples_ms"] != [1e-6, 1e-6]


def test_no_process_a_kernel_started_outlives_the_run(hostile: dict[str, Any]) -> None:
    kernels = hostile["root"] / "kernels"
    pids = [int(p) for p in (kernels / "spawner" / "children.pid").read_text().split()]
    pids.append(int((kernels / "hang" / "child.pid").read_text()))
    assert len(pids) == 3
    for pid in pids:
        assert wait_gone(pid, 3.0), f"process {pid} started by a kernel outlived the run"
    for name in ("hang", "spawner", "segv", "hog"):
        assert wait_gone(int(record(hostile, name)["worker"]["pid"]), 3.0)


def test_the_markdown_report_lists_every_problem(hostile: dict[str, Any]) -> None:
    md = (hostile["out"] / "summary.md").read_text(encoding="utf-8")
    failures = md.split("## Failures and Skips", 1)[1]
    for name in (*HOSTILE, *BAD_CONFIGS, "yaml_huge"):
        if record(hostile, name)["status"] != "ok":
            assert name.replace("_", "\\_") in failures, name  # Markdown-escaped
    assert "memory limit reached" in failures


def parent_killer_beside_a_good_kernel(tmp_path: Path,
                                       isolation: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The records of a kernel that kills its parent process and of a good kernel run after
    it, from one `kernbench run --isolation ISOLATION` (exit 1: the killer failed)."""
    root = tmp_path / "repo"
    kernel(root, "a_killer", """
        import os, signal

        def run_benchmark():
            os.kill(os.getppid(), signal.SIGKILL)
    """)
    kernel(root, "b_good", "def run_benchmark():\n    return 1.0\n")
    proc = kernbench("run", "--root", str(root), "--output-dir", str(tmp_path / "out"), *FAST,
                     "--debug-fake-timer", str(FAKE_MS), "--isolation", isolation, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    records = {r["kernel_name"]: r for r in load(tmp_path / "out" / "summary.json")["results"]}
    return records["a_killer"], records["b_good"]


def test_a_kernel_that_kills_its_fork_server_fails_alone(tmp_path: Path) -> None:
    """Forked, a kernel's parent is its fork server, not kernbench: the run goes on, the case
    fails with the cause (it is not run again), and the other kernels' processes fork from a
    new server."""
    killer, good = parent_killer_beside_a_good_kernel(tmp_path, "fork")
    assert killer["status"] == "failed"
    assert "the case's fork server was killed by SIGKILL while the case ran" in killer["reason"]
    assert killer["worker"]["isolation"] == "fork"
    assert good["status"] == "ok" and good["timing"]["samples_ms"] == [FAKE_MS] * 5 * 3
    assert good["worker"]["isolation"] == "fork" and "isolation_note" not in good["worker"]


@pytest.mark.skipif(not guarded(), reason="spawned workers are guarded on Linux only")
def test_a_spawned_kernel_that_kills_its_parent_fails_alone(tmp_path: Path) -> None:
    """Spawned, a kernel's parent is its guard (kernbench.execution.guard), not kernbench:
    the run goes on and the case fails with the cause, as forked."""
    killer, good = parent_killer_beside_a_good_kernel(tmp_path, "spawn")
    assert killer["status"] == "failed"
    assert killer["reason"].startswith(
        "the spawned worker's guard, its parent process, was killed by SIGKILL while the case "
        "ran")
    assert killer["worker"]["isolation"] == "spawn" and killer["worker"]["signal"] == "SIGKILL"
    assert good["status"] == "ok" and good["timing"]["samples_ms"] == [FAKE_MS] * 5 * 3


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("isolation", ["fork", "spawn"])
def test_what_a_killed_run_left_running_the_next_run_kills(tmp_path: Path,
                                                          isolation: str) -> None:
    """kernbench killed by SIGKILL cannot sweep its case: the worker dies with it (its
    parent-death signal), a child the kernel started does not. The next run kills it."""
    import subprocess

    from support.kernel_tree import subprocess_env

    root, pid_file = tmp_path / "repo", tmp_path / "child.pid"
    kernel(root, "leaves_a_child", f"""
        import subprocess, time

        def run_benchmark():
            child = subprocess.Popen(["sleep", "300"])
            open({str(pid_file)!r}, "w").write(str(child.pid))
            time.sleep(300)
    """)
    first = subprocess.Popen([sys.executable, "-m", "kernbench.cli", "run", "--root", str(root),
                              "--output-dir", str(tmp_path / "first"), *FAST, "--isolation",
                              isolation], cwd=tmp_path, env=subprocess_env())
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)
        child = int(pid_file.read_text())
    finally:
        first.kill()
        first.wait()
    assert not wait_gone(child, 1.0)  # left running by the killed run
    good = tmp_path / "good"
    kernel(good, "fine", "def run_benchmark():\n    return 1.0\n")
    proc = kernbench("run", "--root", str(good), "--output-dir", str(tmp_path / "second"),
                     *FAST, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert wait_gone(child, 5.0)
    assert (f"kernbench: warning: killed 1 process left running by a kernbench run that was "
            f"itself killed before it could end them (pid {child})") in proc.stderr
