"""bench.yml's pull-request path, end to end: `--ab` shards of several machines, the merge
job's own `kernbench merge` arguments, then `kernbench comment --validate`.

The CPU rows run on hosted runners (`--testbed github-hosted`), whose CPU model can differ from
one job to the next; the GPU rows on the self-hosted runner (`--testbed gpu-runner`). Each
machine's A/B verdicts come from its own interleaved rounds, so the merge keeps them per
machine, and no report ranks or compares across machines. Two real `--ab` shards run here; the
other machines are the same shards with another machine's identity.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from kernbench.cli.main import main
from support.git import git
from support.kernel_tree import kernel, load

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / ".github" / "workflows" / "bench.yml"
GOOD = """
def run_benchmark():
    return 1
"""
XEON = "0000feed0000cafe"
GPU = "9f00deadbeef0001"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not on PATH")


def cli(*args: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def job_step(job: str, name: str) -> str:
    jobs = yaml.safe_load(BENCH.read_text(encoding="utf-8"))["jobs"]
    return str(next(s["run"] for s in jobs[job]["steps"] if s.get("name") == name))


def bench_args(job: str) -> list[str]:
    """The `args=(...)` of a job's Benchmark step, the matrix and inputs filled in."""
    found = re.search(r"args=\((.*?)\)\n", job_step(job, "Benchmark"), re.S)
    assert found, job
    text = found.group(1).replace('"$ITERATIONS"', "5").replace('"$BACKEND"', "cpu")
    return shlex.split(text.replace("\\\n", " "))


def merge_args() -> list[str]:
    """The merge job's `kernbench merge` arguments, as it runs them on a pull request."""
    found = re.search(r"args=\((.*?)\)\n", job_step("merge", "Merge"))
    assert found
    return shlex.split(found.group(1))


def as_machine(shard: Path, copy: Path, fingerprint: str, testbed: str, cpu: str,
               gpus: list[str] = ()) -> Path:  # type: ignore[assignment]
    """`shard` (both sides of its A/B) as if the machine `fingerprint` had run it."""
    shutil.copytree(shard, copy)
    for path in [*copy.rglob("summary.json"), *copy.rglob("env.json")]:
        document: dict[str, Any] = load(path)
        env = document.get("environment", document)
        env.update(fingerprint=fingerprint, testbed=testbed, hostname=f"{testbed}-host",
                   cpu={"model": cpu, "logical_cores": 4}, gpus=[{"name": g} for g in gpus])
        for record in document.get("results", []):
            record.update(fingerprint=fingerprint, testbed=testbed)
        path.write_text(json.dumps(document), encoding="utf-8")
    return copy


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """PR shards: CPU 1/2 and 2/2 on hosted runners, GPU 1/2 and 2/2 on the GPU runner."""
    top = tmp_path_factory.mktemp("pr")
    repo = top / "repo"
    for name in ("axpy", "gemm", "relu", "scale"):
        kernel(repo, name, GOOD)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "kernels")
    made = {"repo": repo}
    for job, testbed in (("bench", "github-hosted"), ("bench-gpu", "gpu-runner")):
        args = bench_args(job)
        assert args[args.index("--testbed") + 1] == testbed
        for k in (1, 2):
            out = top / f"{job}-{k}"
            args[args.index("--output-dir") + 1] = str(out)
            args[args.index("--shard") + 1] = f"{k}/2"
            code, _, err = cli("run", "--root", repo, *args, "--ab", "HEAD",
                               "--rounds", "2", "--warmup", "1", "--no-cpu-peak",
                               "--debug-fake-timer", "1", "--cache-dir", top / "cache", "-q")
            assert code == 0, err
            made[f"{job}-{k}"] = out
    # the second hosted job landed on another CPU model; the GPU rows ran on the GPU runner
    made["bench-2"] = as_machine(made["bench-2"], top / "xeon-2", XEON, "github-hosted",
                                 "Intel Xeon 8370C")
    for k in (1, 2):
        made[f"bench-gpu-{k}"] = as_machine(made[f"bench-gpu-{k}"], top / f"gpu-{k}", GPU,
                                            "gpu-runner", "AMD EPYC 7V13", ["NVIDIA H100"])
    return made


def merged(shards: dict[str, Path], out: Path, *names: str) -> tuple[int, str]:
    args = merge_args()
    assert args[:2] == ["reports", "shards/*"] and "--allow-mixed" in args
    rest = [a for a in args[2:] if a not in ("--root", ".")]
    code, _, err = cli("merge", out, *(shards[n] for n in names), "--root", shards["repo"],
                       *rest)
    return code, err


def comment(report: Path) -> str:
    code, body, err = cli("comment", report, "--validate")
    assert code == 0, err
    return body


def test_cpu_and_gpu_rows_merge_into_one_report_per_machine(shards: dict[str, Path],
                                                            tmp_path: Path) -> None:
    out = tmp_path / "reports"
    code, err = merged(shards, out, "bench-1", "bench-2", "bench-gpu-1", "bench-gpu-2")
    assert code == 0, err
    document = load(out / "comparison.json")
    machines = [(m["testbed"], m["fingerprint"]) for m in document["machines"]]
    assert sorted(machines) == sorted({(m["testbed"], m["fingerprint"])
                                       for m in load(out / "summary.json")["machines"]})
    assert ("gpu-runner", GPU) in machines and ("github-hosted", XEON) in machines
    assert len(machines) == 3
    # every case judged once per machine that ran it, each machine's cases on their own
    for entry in document["machines"]:
        mine = [c for c in document["cases"] if c["fingerprint"] == entry["fingerprint"]]
        assert sum(entry["counts"].values()) == len(mine) > 0
        assert entry["candidate"]["fingerprint"] == entry["fingerprint"]
    assert len(document["cases"]) == 8  # 4 kernels on the hosted runners, 4 on the GPU runner
    summary_md = (out / "summary.md").read_text(encoding="utf-8")
    assert summary_md.count("### Key Findings") == 3
    assert summary_md.count("### Regressions") == 3
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page.count('class="machine"') == 3 and "leaderboard-table" not in page
    assert len(list((out / "machines").glob("*/index.html"))) == 3
    assert len(list((out / "machines").glob("*/results.csv"))) == 3  # --format all, apart
    assert not (out / "results.csv").exists()
    body = comment(out)
    assert "| Machine | regressed |" in body and "no case is compared across machines" in body
    assert body.count("gpu-runner") >= 3 and "Intel Xeon 8370C" in body
    assert "unknown CPU" not in body


def test_two_hosted_shards_of_different_cpus_stay_apart_and_nothing_is_missing(
        shards: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "reports"
    code, err = merged(shards, out, "bench-1", "bench-2")
    assert code == 0, err
    assert "2 machines kept apart: github-hosted (fingerprint" in err  # not the testbed twice
    assert "missing:" not in err
    summary = load(out / "summary.json")
    assert [m["testbed"] for m in summary["machines"]] == ["github-hosted"] * 2
    assert "Incomplete" not in (out / "summary.md").read_text(encoding="utf-8")
    assert len(load(out / "comparison.json")["machines"]) == 2


def test_without_allow_mixed_ab_shards_of_two_machines_are_refused_cleanly(
        shards: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "reports"
    code, _, err = cli("merge", out, shards["bench-1"], shards["bench-2"])
    assert code == 2
    fingerprints = {load(shards["bench-1"] / "env.json")["fingerprint"], XEON}
    assert all(fp in err for fp in fingerprints) and "--allow-mixed" in err
    assert not out.exists()  # no partial report set


def test_ab_shards_beside_a_plain_shard_are_refused_without_a_partial_report(
        shards: dict[str, Path], tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    shutil.copytree(shards["bench-1"], plain)
    shutil.rmtree(plain / "baseline")
    (plain / "comparison.json").unlink()
    out = tmp_path / "reports"
    code, _, err = cli("merge", out, shards["bench-2"], plain, "--allow-mixed")
    assert code == 2 and "--ab baseline" in err
    assert not out.exists()


def test_ab_shards_carry_their_plan_so_the_merge_checks_both_sides(
        shards: dict[str, Path], tmp_path: Path) -> None:
    for side in ("", "baseline"):
        plan = load(shards["bench-gpu-1"] / side / "summary.json")["settings"]["plan"]
        assert plan["suite_cases"] == 4 and 0 < len(plan["case_ids"]) < 4
    out = tmp_path / "reports"
    code, err = merged(shards, out, "bench-gpu-1", "bench-gpu-2")
    assert code == 0, err
    for side in ("", "baseline"):
        found = load(out / side / "summary.json")["completeness"]
        assert found["complete"] is True and found["unchecked"] == [], side
    code, err = merged(shards, tmp_path / "half", "bench-gpu-1")
    assert "missing:" in err
    found = load(tmp_path / "half" / "summary.json")["completeness"]
    assert found["complete"] is False and [s["shard"] for s in found["missing_shards"]] == ["2/2"]
