"""`kernbench run --shards N --executor ...`: the merged run, the suite keys, the errors."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import signal
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from kernbench.cli.main import main
from kernbench.cli.parser import parse_args
from support.kernel_tree import kernel, load, subprocess_env, write
from support.sharded import statuses, tree

FAST = ("--iters", "3", "--warmup", "1", "--processes", "1", "--no-cpu-peak",
        "--debug-fake-timer", "1")
NEEDS_SUBMITIT = pytest.mark.skipif(importlib.util.find_spec("submitit") is None,
                                    reason="submitit (the slurm extra) is not installed: "
                                           "--executor slurm stops at that first")


def cli(*args: object) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        code = main([str(a) for a in args])
    return code, err.getvalue()


def test_local_shards_merge_into_the_unsharded_cases_and_statuses(tmp_path: Path) -> None:
    root = tree(tmp_path / "tree")
    common = ("--root", root, *FAST, "--cache-dir", tmp_path / "cache")
    code, err = cli("run", "--output-dir", tmp_path / "whole", *common)
    assert code == 1, err  # the broken kernel
    code, err = cli("run", "--output-dir", tmp_path / "out", *common, "--shards", "2",
                    "--jobs", "2", "--strict", "--save-history")
    assert code == 1, err
    assert "History record: " in err  # of the merged run: what balances the next shards
    assert statuses(tmp_path / "out") == statuses(tmp_path / "whole")
    merged = next(line for line in err.splitlines() if line.startswith("Merged 2 of 2"))
    assert merged.startswith("Merged 2 of 2 shards (local): 5 cases (") and "1 failed" in merged
    assert "shard 1/2: finished (exit" in err
    assert (tmp_path / "out" / "summary.md").is_file()
    assert (tmp_path / "out" / "index.html").is_file()
    assert load(tmp_path / "out" / "summary.json")["completeness"]["complete"] is True


def test_executor_options_are_suite_keys(tmp_path: Path) -> None:
    suite = write(tmp_path / "suite.yml", """
        shards: 4
        executor: slurm
        partition: gpu
        gpus_per_task: 1
        time: 30
        exclusive: true
        slurm_args: [mem=64G, qos=high]
        ray_resources: ["sku:H100=1"]
        gpus_per_shard: 0.5
    """)
    args = parse_args(["run", "--config", str(suite)])
    assert (args.shards, args.executor, args.partition, args.gpus_per_task, args.time,
            args.exclusive) == (4, "slurm", "gpu", 1, 30, True)
    assert args.slurm_arg == ("mem=64G", "qos=high")
    assert args.ray_resource == ("sku:H100=1",) and args.gpus_per_shard == 0.5


@pytest.mark.parametrize(("flags", "message"), [
    (("--executor", "slurm"), "--executor slurm needs --shards N"),
    (("--shards", "2", "--shard", "1/2"), "--shards cannot be combined with --shard"),
    (("--shards", "2", "--executor", "slurm", "--debug-slurm-cluster", "local", "--slurm-arg",
      "mem"), "--slurm-arg 'mem': expected KEY=VALUE"),
    (("--shards", "2", "--executor", "ray", "--ray-resource", "sku:H100=lots"),
     "--ray-resource sku:H100=lots: the amount must be a positive number"),
    pytest.param(("--shards", "2", "--executor", "slurm", "--slurm-arg", "time=30"),
                 "--slurm-arg time=30: use --time for this", marks=NEEDS_SUBMITIT),
])
def test_bad_executor_options_name_the_flag(flags: tuple[str, ...], message: str,
                                            tmp_path: Path) -> None:
    root = tree(tmp_path / "tree")
    code, err = cli("run", "--root", root, "--output-dir", tmp_path / "out", *FAST, *flags)
    assert code == 2
    assert message in err


def test_summary_md_is_written_once_whatever_the_formats(tmp_path: Path) -> None:
    root = tree(tmp_path / "tree")
    common = ("--root", root, *FAST, "--cache-dir", tmp_path / "cache", "--shards", "2")
    code, err = cli("run", "--output-dir", tmp_path / "json", *common, "--format", "json")
    assert code == 1, err
    assert (tmp_path / "json" / "summary.md").is_file()  # by the merge: md was not asked for
    assert not (tmp_path / "json" / "index.html").exists()
    code, err = cli("merge", tmp_path / "again", *sorted((tmp_path / "json" / "shards").iterdir()),
                    "--format", "md")
    assert code == 1, err  # the broken kernel's case failed: merge exits as run --shards did
    assert "Merged 2 shards: 5 cases (4 ok, 1 failed) into" in err
    assert (tmp_path / "again" / "summary.md").read_text(encoding="utf-8").startswith("#")


@NEEDS_SUBMITIT
def test_slurm_without_sbatch_is_refused_before_anything_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No silent fallback to submitit's local executor: the Slurm options would be dropped and
    the run reported as a Slurm one."""
    import shutil

    which = shutil.which
    monkeypatch.setattr(shutil, "which",
                        lambda name, *a, **k: None if name == "sbatch" else which(name, *a, **k))
    root = tree(tmp_path / "tree")
    out = tmp_path / "out"
    code, err = cli("run", "--root", root, "--output-dir", out, *FAST, "--shards", "2",
                    "--executor", "slurm", "--partition", "gpu", "--gpus-per-task", "1",
                    "--exclusive")
    assert code == 2, err
    assert "no sbatch on the PATH" in err
    assert "--debug-slurm-cluster local" in err       # how to try it on this machine
    assert "Merged" not in err
    assert not out.exists()                           # nothing ran, nothing was written


def test_debug_slurm_cluster_needs_the_slurm_executor(tmp_path: Path) -> None:
    root = tree(tmp_path / "tree")
    code, err = cli("run", "--root", root, "--output-dir", tmp_path / "out", *FAST,
                    "--shards", "2", "--debug-slurm-cluster", "local")
    assert code == 2
    assert "--debug-slurm-cluster goes with --executor slurm" in err


def test_debug_slurm_cluster_runs_the_job_array_here_and_says_so(tmp_path: Path) -> None:
    pytest.importorskip("submitit")
    root = tree(tmp_path / "tree")
    code, err = cli("run", "--root", root, "--output-dir", tmp_path / "out", *FAST,
                    "--cache-dir", tmp_path / "cache", "--shards", "2", "--executor", "slurm",
                    "--debug-slurm-cluster", "local", "--time", "5")
    assert code == 1, err  # the broken kernel
    assert "Merged 2 of 2 shards (slurm on submitit's local executor): 5 cases" in err
    assert load(tmp_path / "out" / "summary.json")["completeness"]["complete"] is True


def _sharded_run_under_way(tmp_path: Path, setup_s: float,
                           names: str = "abcdef") -> tuple[subprocess.Popen[str], Path]:
    """`kernbench run --shards 2 --jobs 2` of kernels whose setup sleeps `setup_s`, in a
    session of its own, returned once both shards have begun (written their summary.json)."""
    root = tmp_path / "tree"
    for name in names:
        kernel(root, name, f"import time\n\ndef setup():\n    time.sleep({setup_s})\n"
                           "    return {}\n\ndef run_benchmark():\n    return 1.0\n")
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernbench.cli", "run", "--root", str(root), "--output-dir",
         str(out), *FAST, "--shards", "2", "--jobs", "2"], env=subprocess_env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        # A shell's background job inherits SIGINT ignored (and so would the run and its
        # shards): restore the default, so Ctrl-C reaches them as it does at a terminal.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while len(list((out / "shards").glob("*/summary.json"))) < 2:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(proc.communicate())
        time.sleep(0.05)
    return proc, out


def _stop(proc: subprocess.Popen[str]) -> None:
    """Whatever is left of the run's session, killed."""
    if proc.poll() is None:
        proc.kill()
    proc.communicate()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def test_ctrl_c_on_a_sharded_run_says_how_to_go_on_without_tracebacks(tmp_path: Path) -> None:
    """The hint said `--resume OUT`, which a sharded run's folder cannot take, and each shard
    printed the interrupt's traceback."""
    proc, out = _sharded_run_under_way(tmp_path, 1.5, "abcd")
    try:
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
        _, err = proc.communicate(timeout=60)
    finally:
        _stop(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert f"kernbench run --resume {out}/shards/1-of-2" in err
    assert f"then kernbench merge {out} {out}/shards/1-of-2 {out}/shards/2-of-2" in err


def test_the_hint_names_the_shards_that_never_started(tmp_path: Path) -> None:
    # "resume each" cannot finish a shard that has no folder: it needs a run of its own.
    from kernbench.cli.main import _how_to_continue_shards

    out = tmp_path / "out"
    for folder in ("1-of-3", "2-of-3", "1-of-2", "2-of-2"):
        (out / "shards" / folder).mkdir(parents=True)
        (out / "shards" / folder / "summary.json").write_text("{}")
    hint = _how_to_continue_shards(out, 3)
    assert (f"continue the started shards (kernbench run --resume {out}/shards/1-of-3; "
            f"kernbench run --resume {out}/shards/2-of-3)") in hint
    assert (f"run the shards that never wrote a report (the same flags with --shard 3/3 "
            f"--output-dir {out}/shards/3-of-3)") in hint
    # the merge names this run's folders, not a glob that takes an earlier --shards 2's too
    assert hint.endswith(f"then kernbench merge {out} {out}/shards/1-of-3 {out}/shards/2-of-3 "
                         f"{out}/shards/3-of-3")
    assert "never wrote" not in _how_to_continue_shards(out, 2)


def test_sigterm_to_a_sharded_run_stops_its_shards_instead_of_waiting_for_them(
        tmp_path: Path) -> None:
    """`kill PID` (a CI cancel) reached the parent alone, which then waited for every shard to
    run to its end: hours for a real suite."""
    proc, out = _sharded_run_under_way(tmp_path, 3)
    try:
        proc.send_signal(signal.SIGTERM)  # the parent alone
        sent = time.monotonic()
        _, err = proc.communicate(timeout=60)
        waited = time.monotonic() - sent
    finally:
        _stop(proc)
    assert proc.returncode == 143, err
    assert waited < 6, f"{waited:.1f} s: the shards ran on (9 s each)"
    for summary in (out / "shards").glob("*/summary.json"):
        assert load(summary)["complete"] is False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="Linux: PR_SET_PDEATHSIG")
def test_a_sharded_run_killed_outright_takes_its_shards_with_it(tmp_path: Path) -> None:
    """SIGKILL runs no cleanup in the parent: its local shards ran on, orphaned."""
    proc, out = _sharded_run_under_way(tmp_path, 3)
    try:
        shards = {int(pid) for task in Path(f"/proc/{proc.pid}/task").iterdir()
                  for pid in (task / "children").read_text().split()}
        assert len(shards) >= 2
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 6
        while any(Path(f"/proc/{pid}").exists() and _state(pid) != "Z" for pid in shards):
            assert time.monotonic() < deadline, "the shards outlived their run"
            time.sleep(0.05)
    finally:
        _stop(proc)
    for summary in (out / "shards").glob("*/summary.json"):
        assert load(summary)["complete"] is False  # stopped and saved, not run to the end


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


@pytest.mark.parametrize(("flags", "message"), [
    (["--partition", "gpu"], "--partition is an option of --shards N (an executor's)"),
    (["--jobs", "2"], "--jobs is an option of --shards N"),
    (["--gpus-per-task", "1"], "--gpus-per-task is an option of --shards N"),  # 1 is given too
    (["--shards", "2", "--ray-address", "auto"],
     "--ray-address is an option of another executor than --executor local"),
    (["--shards", "2", "--executor", "slurm", "--debug-slurm-cluster", "local", "--jobs", "3"],
     "--jobs is an option of another executor than --executor slurm"),
])
def test_an_executor_option_that_would_do_nothing_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str],
        message: str) -> None:
    from kernbench.cli.main import main

    assert main(["run", "--root", str(tmp_path), "--output-dir", str(tmp_path / "out"),
                 *flags]) == 2
    assert message in capsys.readouterr().err
