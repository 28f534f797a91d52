"""Tests for kernbench.measure.environment: shape, git, GPU parsing, fingerprint, no heavy
imports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernbench.measure import environment as envmod
from kernbench.results.fingerprint import machine_fingerprint
from support.git import git as _git

SRC = Path(envmod.__file__).resolve().parents[2]
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not on PATH")


@pytest.fixture()
def no_gpu_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(envmod, "gpu_tool_path", lambda name: None)


def test_keys_and_types_on_this_machine(tmp_path: Path) -> None:
    env = envmod.collect_environment(tmp_path)
    expected = {"os", "cpu", "memory", "python", "libraries", "git", "gpus", "gpus_reason",
                "hostname", "timestamp_utc", "fingerprint", "env_vars", "reasons"}  # fmt: skip
    assert expected <= set(env)
    assert set(env["os"]) == {"system", "release", "version", "machine", "platform"}
    assert env["os"]["system"] == __import__("platform").system()
    cpu = env["cpu"]
    for key in ("model", "logical_cores", "physical_cores", "affinity_cores",
                "frequency_mhz_max", "governor"):  # fmt: skip
        assert key in cpu
        assert cpu[key] is not None or isinstance(cpu.get(f"{key}_reason"), str), key
    assert cpu["logical_cores"] == os.cpu_count()
    if hasattr(os, "sched_getaffinity"):
        assert cpu["affinity_cores"] == len(os.sched_getaffinity(0))
    assert env["memory"]["total_mb"] is None or env["memory"]["total_mb"] > 0
    assert env["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert env["python"]["executable"] == sys.executable
    assert set(env["libraries"]) == set(envmod.LIBRARY_DISTRIBUTIONS)
    for name, version in env["libraries"].items():
        if version is None:
            assert f"libraries.{name}" in env["reasons"]
        else:
            assert isinstance(version, str)
    assert isinstance(env["gpus"], list)
    if not env["gpus"]:
        assert isinstance(env["gpus_reason"], str) and env["gpus_reason"]
    assert env["timestamp_utc"].endswith("Z")
    assert isinstance(env["hostname"], str)
    assert len(env["fingerprint"]) == 16
    int(env["fingerprint"], 16)


def test_the_fingerprint_alone_is_the_environments(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = [{"name": "NVIDIA H100 80GB HBM3", "memory_total_mb": 81559}]
    monkeypatch.setattr(envmod, "collect_gpus", lambda: (gpus, None))  # a GPU counts in both
    env = envmod.collect_environment(tmp_path, run_git=False)
    assert envmod.this_machine_fingerprint() == env["fingerprint"]
    assert env["fingerprint"] != machine_fingerprint({**env, "gpus": []})


def test_json_round_trip(tmp_path: Path) -> None:
    env = envmod.collect_environment(tmp_path)
    assert json.loads(json.dumps(env)) == env


def test_linux_cpu_details_match_proc() -> None:
    text = envmod.read_text(Path("/proc/cpuinfo"))
    if text is None or "model name" not in text:
        pytest.skip("no /proc/cpuinfo model name here")
    cpu = envmod.collect_environment(Path("."), run_git=False)["cpu"]
    first = next(ln for ln in text.splitlines() if ln.startswith("model name"))
    assert cpu["model"] == first.split(":", 1)[1].strip()


def test_cpuinfo_physical_core_count() -> None:
    text = "\n\n".join(
        f"processor\t: {i}\nmodel name\t: X\nphysical id\t: {i // 4}\ncore id\t\t: {i % 2}"
        for i in range(8)
    )
    blocks = envmod._cpuinfo_blocks(text)
    assert len(blocks) == 8
    assert envmod._physical_cores(blocks) == 4
    assert envmod._physical_cores(envmod._cpuinfo_blocks("processor : 0\n")) is None


def test_env_vars_whitelist(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in envmod.ENV_VAR_WHITELIST:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("KERNBENCH_UNRELATED", "x")
    env = envmod.collect_environment(tmp_path, run_git=False)
    assert env["env_vars"] == {"OMP_NUM_THREADS": "3"}


@needs_git
def test_git_info_in_repo(git_repo: Path) -> None:
    info = envmod.collect_environment(git_repo)["git"]
    assert info["commit"] == _git(git_repo, "rev-parse", "HEAD")
    assert info["short_commit"] and info["commit"].startswith(info["short_commit"])
    assert info["branch"] == "main"
    assert info["detached"] is False
    assert info["dirty"] is False
    assert info["reason"] is None
    assert isinstance(info["describe"], str)
    (git_repo / "a.txt").write_text("two\n")
    dirty = envmod.git_info(git_repo)
    assert dirty["dirty"] is True
    assert dirty["describe"].endswith("-dirty")


@needs_git
def test_untracked_file_is_not_dirty(git_repo: Path) -> None:
    (git_repo / "new.txt").write_text("x\n")
    assert envmod.git_info(git_repo)["dirty"] is False


@needs_git
def test_an_untracked_kernel_or_bench_yaml_is_dirty_bytecode_is_not(git_repo: Path) -> None:
    """A run filed under a commit measured a kernel the commit does not hold."""
    (git_repo / "kernels" / "__pycache__").mkdir(parents=True)
    (git_repo / "kernels" / "__pycache__" / "k.cpython-311.pyc").write_bytes(b"\0")
    (git_repo / "reports").mkdir()
    (git_repo / "reports" / "summary.json").write_text("{}")
    assert envmod.git_info(git_repo, ["kernels", "src/kernels"])["dirty"] is False
    (git_repo / "kernels" / "k").mkdir()
    (git_repo / "kernels" / "k" / "bench.yaml").write_text("precisions: [fp32]\n")
    assert envmod.git_info(git_repo, ["kernels", "src/kernels"])["dirty"] is True
    assert envmod.git_info(git_repo)["dirty"] is False  # no kernel folders named


@needs_git
def test_git_info_from_subdirectory(git_repo: Path) -> None:
    sub = git_repo / "sub"
    sub.mkdir()
    assert envmod.git_info(sub)["commit"] == _git(git_repo, "rev-parse", "HEAD")


@needs_git
def test_detached_head(git_repo: Path) -> None:
    head = _git(git_repo, "rev-parse", "HEAD")
    _git(git_repo, "checkout", "-q", "--detach", head)
    info = envmod.git_info(git_repo)
    assert info["branch"] is None
    assert info["detached"] is True
    assert info["commit"] == head


@needs_git
def test_non_repo_gives_null_commit_with_reason(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    info = envmod.git_info(plain)
    assert all(info[k] is None for k in ("commit", "short_commit", "branch", "dirty"))
    assert isinstance(info["reason"], str) and info["reason"]


def test_missing_directory_gives_reason(tmp_path: Path) -> None:
    info = envmod.git_info(tmp_path / "does-not-exist")
    assert info["commit"] is None and info["reason"]


@needs_git
def test_repo_without_commits(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q", "-b", "trunk")
    info = envmod.collect_environment(tmp_path)["git"]
    assert info["commit"] is None and info["short_commit"] is None
    assert "no commits" in info["reason"]
    assert info["branch"] == "trunk"


def test_no_git_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(envmod.shutil, "which", lambda name: None)
    info = envmod.git_info(tmp_path)
    assert info["commit"] is None and info["reason"] == "git not found on PATH"


def test_run_git_false(tmp_path: Path) -> None:
    info = envmod.collect_environment(tmp_path, run_git=False)["git"]
    assert info["commit"] is None and "disabled" in info["reason"]


NVIDIA_CANNED = """\
NVIDIA H100 80GB HBM3, 550.54.15, 81559
garbage line without commas
Tesla T4, 535.104.05, [N/A]
, 535.1, 100
a, b, c, d

NVIDIA A100-SXM4-40GB , 535.104.05 , 40960
"""


def test_parse_nvidia_smi_skips_garbage() -> None:
    gpus = envmod.parse_nvidia_smi(NVIDIA_CANNED)
    names = ["NVIDIA H100 80GB HBM3", "Tesla T4", "NVIDIA A100-SXM4-40GB"]
    assert [g["name"] for g in gpus] == names
    assert gpus[0] == {"name": "NVIDIA H100 80GB HBM3", "driver_version": "550.54.15",
                       "memory_total_mb": 81559, "vendor": "NVIDIA"}  # fmt: skip
    assert gpus[1]["memory_total_mb"] is None and gpus[1]["memory_total_mb_reason"]
    assert gpus[2]["memory_total_mb"] == 40960
    assert envmod.parse_nvidia_smi("") == []
    assert envmod.parse_nvidia_smi("NVIDIA-SMI has failed because it couldn't communicate") == []


Outputs = dict[str, tuple[str | None, str]]


def _fake_tools(monkeypatch: pytest.MonkeyPatch, outputs: Outputs) -> None:
    """Pretend exactly the tools in ``outputs`` are on PATH and print the canned text."""
    monkeypatch.setattr(
        envmod, "gpu_tool_path", lambda name: f"/x/{name}" if name in outputs else None
    )
    monkeypatch.setattr(envmod, "run_gpu_tool", lambda argv: outputs[argv[0]])


def test_collect_environment_uses_gpu_runner(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_tools(monkeypatch, {"nvidia-smi": (NVIDIA_CANNED, "")})
    env = envmod.collect_environment(tmp_path, run_git=False)
    assert len(env["gpus"]) == 3 and env["gpus_reason"] is None
    assert json.loads(json.dumps(env)) == env


def test_gpu_tool_failure_gives_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_tools(monkeypatch, {"nvidia-smi": (None, "nvidia-smi timed out after 2 s")})
    gpus, reason = envmod.collect_gpus()
    assert gpus == [] and reason == "nvidia-smi timed out after 2 s"


def test_no_gpu_tools(no_gpu_tools: None) -> None:
    assert envmod.collect_gpus() == ([], "no nvidia-smi or rocm-smi on PATH")


def test_rocm_smi_best_effort(monkeypatch: pytest.MonkeyPatch) -> None:
    canned = json.dumps({
        "card0": {"Card series": "AMD Instinct MI250X", "Card vendor": "Advanced Micro Devices"},
        "card1": {"Card Series": "N/A", "Card Model": "0x740c"},
        "system": {"Driver version": "6.3"},
    })  # fmt: skip
    _fake_tools(monkeypatch, {"rocm-smi": (canned, "")})
    gpus, reason = envmod.collect_gpus()
    assert [g["name"] for g in gpus] == ["AMD Instinct MI250X", "0x740c"]
    assert all(g["vendor"] == "AMD" and g["driver_version"] is None for g in gpus)
    assert reason is None
    assert envmod.parse_rocm_smi("not json") == []
    assert envmod.parse_rocm_smi("[1, 2]") == []


def test_run_command_reports_failures() -> None:
    out, reason = envmod.run_command([sys.executable, "-c", "print('hi')"], timeout=30)
    assert out == "hi\n" and reason == ""
    out, reason = envmod.run_command(
        [sys.executable, "-c", "import sys; sys.exit('boom')"], timeout=30
    )
    assert out is None and "exited 1" in reason and "boom" in reason
    out, reason = envmod.run_command(["/nonexistent/tool-xyz"], timeout=5)
    assert out is None and "could not be run" in reason
    out, reason = envmod.run_command(
        [sys.executable, "-c", "import time; time.sleep(5)"], timeout=0.2
    )
    assert out is None and "timed out" in reason


def _env_with(model: str, **extra: Any) -> dict[str, Any]:
    return {
        "cpu": {"model": model, "logical_cores": 8},
        "os": {"machine": "x86_64", "system": "Linux"},
        "gpus": [{"name": "NVIDIA H100"}],
        **extra,
    }


def test_fingerprint_stable_and_sensitive(tmp_path: Path) -> None:
    first = envmod.collect_environment(tmp_path, run_git=False)
    second = envmod.collect_environment(tmp_path, run_git=False)
    assert first["fingerprint"] == second["fingerprint"] == machine_fingerprint(first)
    base = machine_fingerprint(_env_with("AMD EPYC 9654"))
    assert base == machine_fingerprint(_env_with("AMD EPYC 9654"))
    assert base != machine_fingerprint(_env_with("Intel Xeon Platinum 8480"))
    other_gpu = _env_with("AMD EPYC 9654")
    other_gpu["gpus"] = [{"name": "NVIDIA A100"}]
    assert base != machine_fingerprint(other_gpu)


def test_fingerprint_ignores_hostname_and_time() -> None:
    a = _env_with("M", hostname="alpha", timestamp_utc="2020-01-01T00:00:00Z")
    b = _env_with("M", hostname="beta", timestamp_utc="2030-06-01T12:00:00Z")
    assert machine_fingerprint(a) == machine_fingerprint(b)
    assert machine_fingerprint({}) == machine_fingerprint({})


def test_does_not_import_heavy_libraries() -> None:
    code = (
        "import kernbench.measure.environment as e, sys; from pathlib import Path; "
        "e.collect_environment(Path('.')); "
        "print(sorted(m for m in ('numpy', 'torch', 'jax', 'scipy') if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
        timeout=120,
    )  # fmt: skip
    assert out.stdout.strip() == "[]", out.stderr


def test_installed_version_agrees_with_importlib_metadata_for_every_installed_library() -> None:
    from importlib import metadata

    names = sorted({d.metadata["Name"] for d in metadata.distributions()})
    assert len(names) > 5
    for name in names:
        assert envmod.installed_version(name) == metadata.version(name), name
    with pytest.raises(metadata.PackageNotFoundError):
        envmod.installed_version("no-such-distribution-kernbench")


def test_installed_version_stops_at_the_header_and_falls_back_to_the_full_parse(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Found:
        version = "9.9 (the full parse)"

        def __init__(self, text: str) -> None:
            self.text = text

        def read_text(self, name: str) -> str | None:
            return self.text if name == "METADATA" else None

    header = "Metadata-Version: 2.1\nName: x\nVersion:  1.2.3 \n\nVersion: 0.0 in the body\n"
    monkeypatch.setattr(envmod.metadata, "distribution", lambda name: Found(header))
    assert envmod.installed_version("x") == "1.2.3"
    body_only = "Metadata-Version: 2.1\nName: x\n\nVersion: 0.0 in the body\n"
    monkeypatch.setattr(envmod.metadata, "distribution", lambda name: Found(body_only))
    assert envmod.installed_version("x") == "9.9 (the full parse)"
