"""Interrupted runs: SIGINT and SIGTERM leave a report set marked incomplete, and
`kernbench run --resume DIR` finishes it without redoing the finished cases."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kernbench.cli.main import main
from kernbench.execution.interrupts import (
    Interrupted,
    SignalGuard,
    exit_code_for_interrupt,
    signals_handled,
)
from support.kernel_tree import FAST, kernel, leftover_temp_files, load, subprocess_env, write

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

# Each case takes about half a second of real time (besides the fake timer's figures), so a
# signal can land while a case is running.
SLOWISH = """
import time

import numpy as np

def setup():
    time.sleep(0.4)
    return {}

def run_benchmark():
    return np.ones(4, dtype=np.float32)
"""
NAMES = [f"k{i}" for i in range(6)]
FLAGS = (*FAST, "--debug-fake-timer", "2", "-q", "--no-interleave")
"""Back to back, so a case's record is written as soon as its processes are done (an
interleaved run's resume is tests/cli/test_interleave.py's)."""


def tree(root: Path) -> Path:
    for name in NAMES:
        kernel(root, name, SLOWISH)
    return root


def start(root: Path, out: Path, *extra: str, tmp: Path | None = None) -> subprocess.Popen[str]:
    """`kernbench run` in a subprocess; with `tmp`, that folder is its TMPDIR."""
    env = subprocess_env()
    if tmp is not None:
        tmp.mkdir(exist_ok=True)
        env["TMPDIR"] = str(tmp)
    return subprocess.Popen(
        [sys.executable, "-m", "kernbench.cli", "run", "--root", str(root), "--output-dir",
         str(out), *FLAGS, *extra], cwd=root.parent, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def interrupt_after(proc: subprocess.Popen[str], out: Path, finished: int,
                    signum: int) -> tuple[int, str]:
    """Send `signum` once `finished` kernel files exist; (exit code, stderr)."""
    return interrupt_when(proc, lambda: len(list((out / "kernels").glob("*.json"))) >= finished,
                          signum)


def interrupt_when(proc: subprocess.Popen[str], ready: Callable[[], bool],
                   signum: int) -> tuple[int, str]:
    """Send `signum` once `ready()`; (exit code, stderr)."""
    try:
        deadline = time.monotonic() + 90
        while not ready():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run never got that far"
            time.sleep(0.02)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


def resume(root: Path, out: Path, *extra: str,
           quiet: bool = True) -> subprocess.CompletedProcess[str]:
    flags = FLAGS if quiet else tuple(f for f in FLAGS if f != "-q")
    return subprocess.run(
        [sys.executable, "-m", "kernbench.cli", "run", "--root", str(root), *flags,
         "--resume", str(out), *extra], cwd=root.parent, env=subprocess_env(),
        capture_output=True, text=True, timeout=180)


def by_case(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in summary["results"]}


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A run of six kernels stopped with SIGINT after two finished, then resumed."""
    base = tmp_path_factory.mktemp("resume")
    root, out = tree(base / "repo"), base / "out"
    code, err = interrupt_after(start(root, out), out, 2, signal.SIGINT)
    before = load(out / "summary.json")
    markdown = (out / "summary.md").read_text(encoding="utf-8")
    leftovers = leftover_temp_files(out)
    resumed = resume(root, out)
    return {"code": code, "err": err, "before": before, "markdown": markdown,
            "leftovers": leftovers, "resumed": resumed, "after": load(out / "summary.json"),
            "out": out, "root": root}


@pytest.mark.slow
def test_sigint_leaves_a_valid_report_set_marked_incomplete(interrupted: dict[str, Any]) -> None:
    assert interrupted["code"] == 130, interrupted["err"]
    assert "interrupted (SIGINT)" in interrupted["err"]
    assert f"continue with --resume {interrupted['out']}" in interrupted["err"]
    before = interrupted["before"]
    assert before["complete"] is False
    assert 2 <= before["counts"]["total"] < len(NAMES)
    assert all(r["status"] == "ok" for r in before["results"])
    assert "Incomplete run" in interrupted["markdown"]
    assert interrupted["leftovers"] == []


@pytest.mark.slow
def test_resume_runs_only_the_unfinished_cases_and_completes(interrupted: dict[str, Any]) -> None:
    proc = interrupted["resumed"]
    assert proc.returncode == 0, proc.stderr
    after = interrupted["after"]
    assert after["complete"] is True
    ids = [r["case_id"] for r in after["results"]]
    assert sorted(ids) == sorted(f"{n}[cpu,fp32]" for n in NAMES)  # each exactly once
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)  # in plan order
    finished = by_case(interrupted["before"])
    now = by_case(after)
    for case_id, record in finished.items():  # kept as they were: not run again
        assert now[case_id]["started_at"] == record["started_at"]
        assert now[case_id]["worker"]["pid"] == record["worker"]["pid"]
        assert now[case_id]["timing"] == record["timing"]
    new_pids = {now[c]["worker"]["pid"] for c in now if c not in finished}
    assert len(new_pids) == len(NAMES) - len(finished)
    assert not new_pids & {r["worker"]["pid"] for r in finished.values()}
    assert after["started_at"] == interrupted["before"]["started_at"]
    (resumed,) = after["settings"]["resumed"]
    assert resumed["kept_cases"] == len(finished)
    assert resumed["remaining_cases"] == len(NAMES) - len(finished)


@pytest.mark.slow
def test_resumed_kernel_files_hold_each_case_once(interrupted: dict[str, Any]) -> None:
    out = interrupted["out"]
    for name in NAMES:
        document = load(out / "kernels" / f"{name}.json")
        assert [r["case_id"] for r in document["results"]] == [f"{name}[cpu,fp32]"]
    assert "Incomplete run" not in (out / "summary.md").read_text(encoding="utf-8")
    assert (out / "index.html").is_file()


@pytest.mark.slow
def test_resume_of_a_complete_run_says_so_and_runs_nothing(interrupted: dict[str, Any]) -> None:
    out = interrupted["out"]
    stamp = (out / "summary.json").stat().st_mtime_ns
    proc = resume(interrupted["root"], out, quiet=False)  # -q would silence the status line
    assert proc.returncode == 0, proc.stderr
    assert "already complete" in proc.stderr
    assert "nothing to resume" in proc.stderr
    assert (out / "summary.json").stat().st_mtime_ns == stamp
    other = resume(interrupted["root"], out, "--iters", "7")  # not silently ignored
    assert other.returncode == 2, other.stderr
    assert "differ from the finished run's" in other.stderr
    assert "iterations: the run used" in other.stderr and "this command 7" in other.stderr


@pytest.mark.slow
def test_sigterm_is_handled_like_sigint(tmp_path: Path) -> None:
    root, out = tree(tmp_path / "repo"), tmp_path / "out"
    code, err = interrupt_after(start(root, out, tmp=tmp_path / "tmp"), out, 1, signal.SIGTERM)
    assert code == 143, err
    assert "interrupted (SIGTERM)" in err
    summary = load(out / "summary.json")
    assert summary["complete"] is False
    assert "partial report" in (out / "index.html").read_text(encoding="utf-8")
    assert list((tmp_path / "tmp").iterdir()) == []  # its temporary folders are gone
    assert summary["counts"]["total"] >= 1
    assert leftover_temp_files(out) == []
    assert "Incomplete run" in (out / "summary.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_killed_run_can_be_resumed_from_its_kernel_files(tmp_path: Path) -> None:
    root, out = tree(tmp_path / "repo"), tmp_path / "out"
    code, _ = interrupt_after(start(root, out, tmp=tmp_path / "tmp"), out, 2, signal.SIGKILL)
    assert code == -signal.SIGKILL
    # Nothing cleans up after SIGKILL: the run leaves its one scratch folder (cases' job
    # folders are inside it), in the TMPDIR given here, not in the machine's /tmp.
    (left,) = (tmp_path / "tmp").iterdir()
    assert left.name.startswith("kernbench-run-")
    summary = load(out / "summary.json")  # the one written when the run started
    assert summary["complete"] is False and summary["results"] == []
    kept = {p.stem: load(p)["results"][0]["worker"]["pid"]
            for p in (out / "kernels").glob("*.json")}
    proc = resume(root, out)
    assert proc.returncode == 0, proc.stderr
    after = by_case(load(out / "summary.json"))
    assert len(after) == len(NAMES)
    for name, pid in kept.items():
        assert after[f"{name}[cpu,fp32]"]["worker"]["pid"] == pid


def test_resume_refuses_other_settings_naming_them(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "repo"
    kernel(root, "k0", SLOWISH.replace("time.sleep(0.4)", "pass"))
    out = tmp_path / "out"
    assert main(["run", "--root", str(root), "--output-dir", str(out), *FLAGS]) == 0
    summary = load(out / "summary.json")
    summary["complete"] = False
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    capsys.readouterr()
    code = main(["run", "--root", str(root), "--resume", str(out), "--iters", "7",
                 "--warmup", "1", "--seed", "3", "-q"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"--resume {out}: the settings differ" in err
    assert "iterations: the run used 5, this command 7" in err
    assert "seed: the run used 1337, this command 3" in err
    code = main(["run", "--root", str(root), "--resume", str(out), *FLAGS,
                 "--output-dir", str(tmp_path / "elsewhere")])
    assert code == 2
    assert "leave out --output-dir" in capsys.readouterr().err


def test_resume_without_a_run_or_with_a_corrupt_summary_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "repo"
    kernel(root, "k0", SLOWISH)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["run", "--root", str(root), "--resume", str(empty), *FLAGS]) == 2
    assert f"--resume {empty}: no run to resume there (no summary.json)" in \
        capsys.readouterr().err
    write(empty / "summary.json", '{"schema_version": 1, "results": [')
    assert main(["run", "--root", str(root), "--resume", str(empty), *FLAGS]) == 2
    err = capsys.readouterr().err
    assert f"{empty / 'summary.json'}: not valid JSON (truncated or corrupt?)" in err
    write(empty / "summary.json", '{"schema_version": 99, "results": []}')
    assert main(["run", "--root", str(root), "--resume", str(empty), *FLAGS]) == 2
    assert "schema_version 99 is newer than this kernbench reads" in capsys.readouterr().err


def test_a_signal_inside_a_critical_section_waits_for_its_end() -> None:
    guard = SignalGuard()
    done = []
    with pytest.raises(Interrupted) as caught, guard.critical():
        guard.handle(signal.SIGTERM, None)
        done.append("write finished")
    assert done == ["write finished"]
    assert caught.value.signal_number == signal.SIGTERM
    assert exit_code_for_interrupt(caught.value) == 143
    assert exit_code_for_interrupt(KeyboardInterrupt()) == 130
    with pytest.raises(Interrupted):
        guard.handle(signal.SIGINT, None)  # outside: at once


def test_handlers_are_installed_for_the_run_and_restored_after() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with signals_handled():
        with pytest.raises(Interrupted) as caught:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler runs between bytecodes
        assert caught.value.signal_number == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) == before


def test_resuming_inside_a_kernel_keeps_its_earlier_points(tmp_path: Path) -> None:
    from kernbench.api import run_suite
    from kernbench.execution.settings import RunSettings
    from kernbench.results.model import ProtocolSettings

    kernel(tmp_path, "swept", "def run_benchmark(n):\n    return float(n)\n")
    write(tmp_path / "kernels" / "swept" / "bench.yaml", "sweep: {params: {n: [1, 2, 3]}}\n")
    settings = RunSettings(root=tmp_path, protocol=ProtocolSettings(warmup=1, iterations=3),
                           fake_call_ms=1.0, interleave=False)
    out = tmp_path / "out"

    def stop_after_two(result: Any, index: int, total: int) -> None:
        if index == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_suite(settings, out, on_result=stop_after_two)
    first = load(out / "kernels" / "swept.json")["results"]  # a Python float labels nothing
    assert [r["case_id"] for r in first] == ["swept[cpu,native,n=1]", "swept[cpu,native,n=2]"]
    outcome = run_suite(settings, out, resume=True)
    ids = ["swept[cpu,native,n=1]", "swept[cpu,native,n=2]", "swept[cpu,native,n=3]"]
    assert [r.case_id for r in outcome.run.results] == ids
    document = load(out / "kernels" / "swept.json")
    assert [r["case_id"] for r in document["results"]] == ids
    assert document["results"][:2] == first
    assert load(out / "summary.json")["results"] == document["results"]


def test_resuming_after_a_reference_implementation_still_checks_the_others(
        tmp_path: Path) -> None:
    from kernbench.api import run_suite
    from kernbench.execution.settings import RunSettings
    from kernbench.results.model import ProtocolSettings

    kernel(tmp_path, "total", """
        import numpy as np

        def setup(n=16, seed=0):
            return {"x": np.random.default_rng(seed).standard_normal(n)}

        def total_ref(x):
            return np.cumsum(x)

        def total_tree(x):
            return np.add.accumulate(x)

        def total_wrong(x):
            return np.cumsum(x) + 1e-2
    """)
    write(tmp_path / "kernels" / "total" / "bench.yaml", """
        precisions: [fp32]
        implementations:
          ref:   {function: total_ref, framework: numpy}
          tree:  {function: total_tree, framework: numpy}
          wrong: {function: total_wrong, framework: numpy}
    """)
    settings = RunSettings(root=tmp_path, protocol=ProtocolSettings(warmup=1, iterations=3),
                           fake_call_ms=1.0, interleave=False)
    out = tmp_path / "out"

    def stop_after_one(result: Any, index: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_suite(settings, out, on_result=stop_after_one)
    (first,) = load(out / "kernels" / "total.json")["results"]
    assert first["case_id"] == "total[cpu,fp32,impl=ref]"
    outcome = run_suite(settings, out, resume=True)
    records = {r.case_id: r for r in outcome.run.results}
    assert list(records) == ["total[cpu,fp32,impl=ref]", "total[cpu,fp32,impl=tree]",
                             "total[cpu,fp32,impl=wrong]"]
    assert records["total[cpu,fp32,impl=ref]"].worker["pid"] == first["worker"]["pid"]
    assert records["total[cpu,fp32,impl=tree]"].accuracy["passed"] is True
    assert records["total[cpu,fp32,impl=wrong]"].status == "failed"
    assert "accuracy check failed" in str(records["total[cpu,fp32,impl=wrong]"].reason)


def test_resume_alone_repeats_the_interrupted_runs_settings(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    root = tmp_path / "repo"
    for name in ("k0", "k1"):
        kernel(root, name, SLOWISH.replace("time.sleep(0.4)", "pass"))
    out = tmp_path / "out"
    assert main(["run", "--root", str(root), "--output-dir", str(out), "--iters", "4",
                 "--warmup", "0", "--seed", "9", "--filter", "k*", "--backends", "cpu",
                 "--debug-fake-timer", "1.5", "-q"]) == 0
    summary = load(out / "summary.json")
    summary["complete"] = False  # as if interrupted after k0: k1's record never written
    summary["results"] = [r for r in summary["results"] if r["kernel_name"] == "k0"]
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    (out / "kernels" / "k1.json").unlink()
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "-q"]) == 0, capsys.readouterr().err
    after = load(out / "summary.json")
    assert after["complete"] is True
    assert [r["case_id"] for r in after["results"]] == ["k0[cpu,fp32]", "k1[cpu,fp32]"]
    settings = after["settings"]
    assert (settings["iterations"], settings["warmup"], settings["seed"]) == (4, 0, 9)
    assert settings["filters"] == ["k*"] and settings["fake_call_ms"] == 1.5
    assert after["results"][1]["timing"]["samples_ms"] == [1.5] * 4 * 3  # 3 processes


def test_resume_alone_keeps_the_suite_file_sku_and_formats(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    root = tmp_path / "repo"
    path = kernel(root, "sw", "import numpy as np\n\ndef run_benchmark(n=1):\n"
                              "    return np.ones(n, dtype=np.float32)\n")
    write(path.with_name("bench.yaml"), "sweep:\n  params:\n    n: [2, 3]\n"
                                        "golden:\n  mysku: {time_ms: 100}\n")
    suite = write(tmp_path / "suite.yml", "iterations: 3\nwarmup: 0\nsweeps:\n  sw:\n"
                                          "    params: {n: [5, 6, 7]}\n")
    out = tmp_path / "out"
    assert main(["run", "--root", str(root), "--config", str(suite), "--output-dir", str(out),
                 "--sku", "mysku", "--format", "md,csv", "--debug-fake-timer", "1", "-q"]) == 0
    summary = load(out / "summary.json")
    summary["complete"] = False  # as if interrupted after the first point
    summary["results"] = summary["results"][:1]
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    kernel_file = load(out / "kernels" / "sw.json")
    kernel_file["results"] = kernel_file["results"][:1]
    (out / "kernels" / "sw.json").write_text(json.dumps(kernel_file), encoding="utf-8")
    (out / "results.csv").unlink()
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--sku", "other", "-q"]) == 2
    assert 'sku: the run used "mysku", this command "other"' in capsys.readouterr().err
    write(suite, "iterations: 3\nwarmup: 0\nsweeps:\n  sw:\n    params: {n: [5, 8]}\n")
    assert main(["run", "--resume", str(out), "-q"]) == 2  # the suite's sweep changed
    assert "sweeps: the run used" in capsys.readouterr().err
    write(suite, "iterations: 3\nwarmup: 0\nsweeps:\n  sw:\n    params: {n: [5, 6, 7]}\n")
    assert main(["run", "--resume", str(out), "-q"]) == 0, capsys.readouterr().err
    after = load(out / "summary.json")
    assert [r["case_id"] for r in after["results"]] == [
        "sw[cpu,fp32,n=5]", "sw[cpu,fp32,n=6]", "sw[cpu,fp32,n=7]"]
    assert all(r["golden"]["sku"] == "mysku" and r["golden"]["passed"] is True
               for r in after["results"])
    assert (out / "results.csv").is_file()
    assert after["settings"]["config"]["path"] == str(suite.resolve())
    assert main(["run", "--resume", str(out), "-q"]) == 0  # complete now: nothing runs
    # but a flag that differs is still refused, not ignored because nothing is left to run
    assert main(["run", "--resume", str(out), "--sku", "other", "-q"]) == 2
    assert "differ from the finished run's" in capsys.readouterr().err


def test_an_earlier_run_in_the_same_folder_is_never_resumed_or_reported(tmp_path: Path) -> None:
    """A finished run into `out`, then another run into `out` killed outright: the earlier
    run's kernels/*.json must not come back as this run's (resume kept them all and ran
    nothing; the report listed them under a 'complete' resumed run)."""
    from kernbench.reporting.bundle import load_report_inputs

    root, out = tree(tmp_path / "repo"), tmp_path / "out"
    first = start(root, out)
    assert first.wait(timeout=120) == 0
    earlier = {r["worker"]["pid"] for r in load(out / "summary.json")["results"]}
    began = load(out / "summary.json")["started_at"]
    time.sleep(1.1)  # started_at has whole seconds
    second = start(root, out, tmp=tmp_path / "tmp")  # what SIGKILL leaves stays in tmp_path
    deadline = time.monotonic() + 90
    while not (load(out / "summary.json")["started_at"] != began
               and any(load(p)["results"][0]["worker"]["pid"] not in earlier
                       for p in (out / "kernels").glob("*.json"))):
        assert second.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    second.kill()
    assert second.wait() == -signal.SIGKILL
    shown = {r["worker"]["pid"] for r in load_report_inputs(out).results}
    assert shown and not shown & earlier
    proc = resume(root, out)
    assert proc.returncode == 0, proc.stderr
    after = load(out / "summary.json")
    assert len(after["results"]) == len(NAMES)
    assert not {r["worker"]["pid"] for r in after["results"]} & earlier


def test_a_resumed_shard_runs_the_cases_its_run_was_given_not_a_new_split(
        tmp_path: Path) -> None:
    """A history measured since the shard started splits the suite otherwise: the resumed
    shard took a case another shard of its run held (merge: 'in two shard summaries')."""
    root = tmp_path / "repo"
    for name in NAMES:
        kernel(root, name, "def run_benchmark():\n    return 1.0\n")
    out, other = tmp_path / "out", tmp_path / "other"
    for target, shard in ((out, "2/2"), (other, "1/2")):
        assert main(["run", "--root", str(root), "--output-dir", str(target), *FLAGS,
                     "--processes", "1", "--shard", shard]) == 0
    given = load(other / "summary.json")["settings"]["plan"]["case_ids"]  # shard 1's cases
    summary = load(out / "summary.json")
    summary["settings"]["plan"]["case_ids"] = given  # as if split otherwise when it began
    summary["complete"], summary["results"] = False, []
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    for path in (out / "kernels").glob("*.json"):
        path.unlink()
    assert main(["run", "--root", str(root), *FLAGS, "--processes", "1", "--shard", "2/2",
                 "--resume", str(out)]) == 0
    after = load(out / "summary.json")
    assert sorted(r["kernel_name"] for r in after["results"]) == sorted(
        case_id.split("[")[0] for case_id in given)
    assert after["settings"]["plan"]["case_ids"] == given


# --- an interrupted --ab run --------------------------------------------------------------


MARKED = """
import os
import time

def setup():
    time.sleep(0.2)
    open(os.path.join(os.environ["KB_TEST_MARKS"], str(os.getpid())), "w").close()
    return {}

def run_benchmark():
    return 1.0
"""


@pytest.mark.slow
def test_an_interrupted_ab_run_keeps_the_rounds_that_finished(tmp_path: Path) -> None:
    # Both sides' records were held in memory until the last round: Ctrl-C lost them all.
    from support.git import git

    repo, out, marks = tmp_path / "repo", tmp_path / "out", tmp_path / "marks"
    marks.mkdir()
    for name in ("a", "b", "c"):
        kernel(repo, name, MARKED)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernbench.cli", "run", "--root", str(repo), "--output-dir",
         str(out), "--ab", "HEAD", "--rounds", "20", *FAST, "--debug-fake-timer", "2",
         "--no-cpu-peak"], cwd=tmp_path, env={**subprocess_env(), "KB_TEST_MARKS": str(marks)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # round 1 (six processes) and some of round 2
    code, err = interrupt_when(proc, lambda: len(list(marks.iterdir())) >= 9, signal.SIGINT)
    assert code == 130, err
    assert f"the rounds that finished are saved in {out} and {out}/baseline" in err
    sides = [load(out / "summary.json"), load(out / "baseline" / "summary.json")]
    for summary in sides:
        assert summary["complete"] is False
        assert {r["kernel_name"] for r in summary["results"]} == {"a", "b", "c"}
        assert all(r["status"] == "ok" for r in summary["results"])
    rounds = [{r["kernel_name"]: len(r["timing"]["process_sample_counts"])
               for r in s["results"]} for s in sides]
    assert rounds[0] == rounds[1]  # a case keeps the rounds both sides finished
    assert all(1 <= n < 20 for n in rounds[0].values())
    assert "Incomplete run" in (out / "summary.md").read_text(encoding="utf-8")
    assert not (out / "comparison.json").exists()
