"""The recipes in integrations/ (a Kubernetes Indexed Job, a GitHub Actions matrix) parse as
YAML, run every shard K/N once, and call kernbench with flags its CLI parser accepts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from kernbench.cli.parser import parse_args

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "integrations" / "kubernetes" / "kernbench-indexed-job.yaml"
ACTIONS = ROOT / "integrations" / "github-actions" / "kernbench-matrix.yml"


def kernbench_commands(script: str, values: dict[str, str]) -> list[list[str]]:
    """The `kernbench ...` commands of a shell script, split as the shell would, with the
    variables in `values` substituted."""
    for pattern, value in values.items():
        script = script.replace(pattern, value)
    commands = []
    for part in re.split(r"[;\n]|&&", script):
        words = shlex.split(part)
        if words and words[0] == "kernbench":
            commands.append(words[1:])
    return commands


def shard_of(command: list[str]) -> str:
    return command[command.index("--shard") + 1]


def check(command: list[str]) -> Any:
    """The parsed command: argparse exits (failing the test) on a flag it does not know."""
    return parse_args(command)


def test_the_kubernetes_indexed_job_runs_each_shard_then_merges() -> None:
    shards_job, merge_job = yaml.safe_load_all(K8S.read_text(encoding="utf-8"))
    spec = shards_job["spec"]
    assert spec["completionMode"] == "Indexed"
    total = spec["completions"]
    assert spec["parallelism"] == total
    (script,) = spec["template"]["spec"]["containers"][0]["args"]
    seen = set()
    for index in range(total):  # what each pod runs, JOB_COMPLETION_INDEX 0..N-1
        (run,) = kernbench_commands(script, {
            "$((JOB_COMPLETION_INDEX + 1))": str(index + 1),
            "$JOB_COMPLETION_INDEX": str(index)})
        args = check(run)
        assert args.command == "run" and args.shard == (index + 1, total)
        seen.add(args.output_dir)
    assert len(seen) == total  # one report directory per shard
    (merge_script,) = merge_job["spec"]["template"]["spec"]["containers"][0]["args"]
    (merge,) = kernbench_commands(merge_script, {
        "/results/shard-*": " ".join(str(d) for d in sorted(seen))})
    args = check(merge)
    assert args.command == "merge" and args.strict
    assert sorted(args.shards) == sorted(seen)


def test_the_github_actions_matrix_runs_each_shard_then_merges() -> None:
    workflow = yaml.safe_load(ACTIONS.read_text(encoding="utf-8"))
    shard_job, merge_job = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    shards = shard_job["strategy"]["matrix"]["shard"]
    (run_step,) = [s for s in shard_job["steps"] if s.get("run", "").startswith("kernbench ")]
    assert run_step["env"]["SHARD"] == "${{ matrix.shard }}"  # no expression in the script
    assert "${{" not in run_step["run"]
    for shard in shards:
        (run,) = kernbench_commands(run_step["run"], {"$SHARD": str(shard)})
        args = check(run)
        assert args.command == "run" and args.shard == (shard, len(shards))
    assert merge_job["needs"] == "shard"
    (merge_step,) = [s for s in merge_job["steps"] if s.get("run", "").startswith("kernbench ")]
    (merge,) = kernbench_commands(merge_step["run"], {
        "shard-*": " ".join(f"shard-{k}" for k in shards)})
    args = check(merge)
    # hosted runners of one label can be different CPU models: different machines
    assert args.command == "merge" and args.strict and args.allow_mixed
    assert [str(p) for p in args.shards] == [f"shard-{k}" for k in shards]
    uses = [s["uses"] for job in (shard_job, merge_job) for s in job["steps"] if "uses" in s]
    assert uses and all(re.search(r"@[0-9a-f]{40}$", u) for u in uses)  # pinned by SHA


def test_the_github_actions_matrix_installs_kernbench_itself() -> None:
    # Copied into another repository, `pip install -e .` would install that repository, not
    # kernbench: every job installs kernbench from KERNBENCH_URL, a git URL at a commit SHA.
    workflow = yaml.safe_load(ACTIONS.read_text(encoding="utf-8"))
    assert re.fullmatch(r"git\+https://\S+@[0-9a-f]{40}", workflow["env"]["KERNBENCH_URL"])
    for name, job in workflow["jobs"].items():
        installs = [s["run"] for s in job["steps"] if "pip install" in s.get("run", "")]
        assert installs == ['python -m pip install "kernbench @ ${KERNBENCH_URL}"'], name
