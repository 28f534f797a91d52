"""The GitHub workflows keep the promises their comments make: no pull_request_target, the
workflow_run comment job never checks out or runs the PR's code, least privilege everywhere,
actions pinned by commit SHA, and no ${{ }} expressions spliced into shell scripts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

WORKFLOWS = Path(__file__).resolve().parents[1] / ".github" / "workflows"
FILES = sorted(WORKFLOWS.glob("*.yml"))
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


def test_there_are_the_two_workflows() -> None:
    assert [p.name for p in FILES] == ["bench-comment.yml", "bench.yml"]


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


def test_jobs_that_run_pull_request_code_are_read_only() -> None:
    document = load(WORKFLOWS / "bench.yml")
    for name, job in document["jobs"].items():
        writes = {k for k, v in (job["permissions"] or {}).items() if v == "write"}
        if writes:
            assert name == "history"
            assert job["if"] == ("${{ github.event_name == 'push' && "
                                 "github.ref == 'refs/heads/main' }}")
        assert "secrets." not in str(job)


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
    assert "--force" not in history and "push -f" not in history and "pull --rebase" in history
