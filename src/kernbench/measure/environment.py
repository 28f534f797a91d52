"""Capture the machine and software environment for the report file ``env.json``.

Everything here is cheap: files under /proc and /sys, the ``platform`` module,
``importlib.metadata`` for library versions (nothing heavy is imported) and a few
short-timeout subprocesses (git, nvidia-smi, rocm-smi).  Every value is measured
or ``None``; a ``None`` comes with a reason (a sibling ``<name>_reason`` key, the
git section's ``reason``, ``gpus_reason``, or an entry in the top-level ``reasons``).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from kernbench.results.fingerprint import machine_fingerprint

GIT_TIMEOUT_S = 5.0
GPU_TIMEOUT_S = 2.0
ENV_VAR_WHITELIST = (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
    "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "XLA_FLAGS", "JAX_PLATFORMS",
)  # fmt: skip
LIBRARY_DISTRIBUTIONS = {
    "numpy": "numpy", "scipy": "scipy", "torch": "torch", "jax": "jax", "jaxlib": "jaxlib",
    "cupy": "cupy", "pyyaml": "PyYAML", "jinja2": "jinja2", "kernbench": "kernbench",
}  # fmt: skip
NVIDIA_QUERY = (
    "nvidia-smi", "--query-gpu=name,driver_version,memory.total",
    "--format=csv,noheader,nounits",
)  # fmt: skip
ROCM_QUERY = ("rocm-smi", "--showproductname", "--json")
CPUFREQ = Path("/sys/devices/system/cpu/cpu0/cpufreq")


def read_text(path: Path) -> str | None:
    """Return the file's text, or None when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def run_command(argv: Sequence[str], *, timeout: float) -> tuple[str | None, str]:
    """Run ``argv``; return ``(stdout, "")`` on exit 0, else ``(None, reason)``."""
    env = {**os.environ, "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}
    try:
        proc = subprocess.run(
            list(argv), env=env, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, f"{argv[0]} timed out after {timeout:g} s"
    except OSError as exc:
        return None, f"{argv[0]} could not be run: {exc}"
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        return None, f"{argv[0]} exited {proc.returncode}: {detail[0] if detail else ''}".strip()
    return proc.stdout, ""


def _os_info() -> dict[str, Any]:
    return {
        "system": platform.system() or None, "release": platform.release() or None,
        "version": platform.version() or None, "machine": platform.machine() or None,
        "platform": platform.platform() or None,
    }  # fmt: skip


def _cpuinfo_blocks(text: str) -> list[dict[str, str]]:
    blocks: list[dict[str, str]] = []
    for chunk in text.split("\n\n"):
        fields = dict(
            (key.strip(), value.strip())
            for key, sep, value in (line.partition(":") for line in chunk.splitlines())
            if sep
        )
        if fields:
            blocks.append(fields)
    return blocks


def _cpu_model(blocks: list[dict[str, str]]) -> tuple[str | None, str]:
    for block in blocks:
        if block.get("model name"):
            return block["model name"], ""
    processor = platform.processor().strip()
    if processor and processor != platform.machine():
        return processor, ""
    return None, "no 'model name' in /proc/cpuinfo and platform.processor() gave no model"


def _physical_cores(blocks: list[dict[str, str]]) -> int | None:
    pairs = {
        (b["physical id"], b["core id"]) for b in blocks if "physical id" in b and "core id" in b
    }
    return len(pairs) or None


def _put(section: dict[str, Any], key: str, value: Any, reason: str) -> None:
    """Store ``value``; when it is None, also store why under ``<key>_reason``."""
    section[key] = value
    if value is None:
        section[f"{key}_reason"] = reason


def _cpu_info() -> dict[str, Any]:
    text = read_text(Path("/proc/cpuinfo"))
    blocks = _cpuinfo_blocks(text) if text is not None else []
    cpu: dict[str, Any] = {}
    _put(cpu, "model", *_cpu_model(blocks))
    _put(cpu, "logical_cores", os.cpu_count(), "os.cpu_count() returned None")
    _put(cpu, "physical_cores", _physical_cores(blocks),
         "no (physical id, core id) pairs in /proc/cpuinfo")  # fmt: skip
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    _put(cpu, "affinity_cores", affinity, "os.sched_getaffinity is not available here")
    khz = (read_text(CPUFREQ / "cpuinfo_max_freq") or "").strip()
    _put(cpu, "frequency_mhz_max", int(khz) / 1000.0 if khz.isdigit() else None,
         f"{CPUFREQ}/cpuinfo_max_freq not readable")  # fmt: skip
    governor = (read_text(CPUFREQ / "scaling_governor") or "").strip() or None
    _put(cpu, "governor", governor, f"{CPUFREQ}/scaling_governor not readable")
    return cpu


def _memory_info() -> dict[str, Any]:
    for line in (read_text(Path("/proc/meminfo")) or "").splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "MemTotal:" and parts[1].isdigit():
            return {"total_mb": round(int(parts[1]) / 1024)}  # kB -> MiB
    return {"total_mb": None, "total_mb_reason": "MemTotal not found in /proc/meminfo"}


def _python_info() -> dict[str, Any]:
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable or None,
    }


def _library_versions(reasons: dict[str, str]) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for key, dist in LIBRARY_DISTRIBUTIONS.items():
        try:
            versions[key] = installed_version(dist)
        except metadata.PackageNotFoundError:
            versions[key] = None
            reasons[f"libraries.{key}"] = f"distribution {dist!r} is not installed"
    return versions


def installed_version(name: str) -> str:
    """The installed version of distribution `name` (PackageNotFoundError when there is none).

    Read from the `Version` field in the header of its METADATA (or PKG-INFO), as
    ``importlib.metadata.version`` reads it, without parsing the whole file with the email
    parser: a long description made that 2 ms a library, 19 ms for env.json's nine."""
    found = metadata.distribution(name)
    text = found.read_text("METADATA") or found.read_text("PKG-INFO") or ""
    for line in text.splitlines():
        if not line.strip():
            break  # the end of the header: the description follows
        field, _, value = line.partition(":")
        if field.strip().lower() == "version" and value.strip():
            return value.strip()
    return found.version


def _git(root: Path, *args: str) -> tuple[str | None, str]:
    out, reason = run_command(["git", "-C", str(root), *args], timeout=GIT_TIMEOUT_S)
    return (out.strip() if out is not None else None), reason


def _null_git(reason: str | None) -> dict[str, Any]:
    keys = ("commit", "short_commit", "branch", "detached", "dirty", "describe")
    return {**dict.fromkeys(keys), "reason": reason}


def git_info(root: Path, kernel_paths: Sequence[str] = ()) -> dict[str, Any]:
    """Commit, branch and dirty state of the git work tree containing ``root``.

    ``dirty`` means tracked files differ from HEAD, or a file git does not track and does not
    ignore is in one of the `kernel_paths` (a new kernel or bench.yaml: the run measured code
    the commit does not hold); untracked files elsewhere (a report folder) do not count.
    """
    if shutil.which("git") is None:
        return _null_git("git not found on PATH")
    inside, reason = _git(root, "rev-parse", "--is-inside-work-tree")
    if inside != "true":
        return _null_git(f"not a git work tree: {reason or inside}")
    info = _null_git(None)
    branch, _ = _git(root, "symbolic-ref", "--short", "-q", "HEAD")
    info["branch"], info["detached"] = branch or None, not branch
    status, reason = _git(root, "status", "--porcelain", "--untracked-files=no")
    info["dirty"] = bool(status) if status is not None else None
    folders = [str(root / p) for p in kernel_paths if (root / p).is_dir()]
    if info["dirty"] is False and folders:  # a new kernel or bench.yaml not in the commit
        new, _ = _git(root, "status", "--porcelain", "--untracked-files=all", "--", *folders)
        info["dirty"] = any("__pycache__/" not in line and not line.endswith(".pyc")
                            for line in (new or "").splitlines())  # bytecode is no code
    commit, _ = _git(root, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    if not commit:
        info["reason"] = "repository has no commits yet"
        return info
    info["commit"], info["short_commit"] = commit, commit[:12]
    info["describe"], _ = _git(root, "describe", "--tags", "--always", "--dirty")
    if info["dirty"] is None:
        info["reason"] = f"git status failed: {reason}"
    return info


def gpu_tool_path(name: str) -> str | None:
    """Where ``name`` is on PATH (a seam for tests)."""
    return shutil.which(name)


def run_gpu_tool(argv: Sequence[str]) -> tuple[str | None, str]:
    """Run a GPU query tool with the short GPU timeout (a seam for tests)."""
    return run_command(argv, timeout=GPU_TIMEOUT_S)


def parse_nvidia_smi(text: str) -> list[dict[str, Any]]:
    """Parse ``name, driver_version, memory.total`` CSV lines; skip lines that do not fit."""
    gpus: list[dict[str, Any]] = []
    for line in text.splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != 3 or not fields[0] or not fields[1] or fields[0].startswith("["):
            continue
        name, driver, memory = fields
        gpu: dict[str, Any] = {"name": name, "driver_version": driver, "vendor": "NVIDIA"}
        try:
            gpu["memory_total_mb"] = round(float(memory))
        except ValueError:
            gpu["memory_total_mb"] = None
            gpu["memory_total_mb_reason"] = f"nvidia-smi reported memory.total {memory!r}"
        gpus.append(gpu)
    return gpus


def parse_rocm_smi(text: str) -> list[dict[str, Any]]:
    """Best-effort parse of ``rocm-smi --showproductname --json`` output."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    gpus: list[dict[str, Any]] = []
    for card, fields in data.items() if isinstance(data, dict) else []:
        if not str(card).lower().startswith("card") or not isinstance(fields, dict):
            continue
        lowered = {str(k).lower(): str(v).strip() for k, v in fields.items()}
        names = (lowered.get(k) for k in ("market name", "card series", "card model"))
        name = next((n for n in names if n and n.lower() != "n/a"), None)
        if name is None:
            continue
        gpus.append({
            "name": name, "driver_version": None, "memory_total_mb": None, "vendor": "AMD",
            "driver_version_reason": "not reported by rocm-smi --showproductname",
            "memory_total_mb_reason": "not reported by rocm-smi --showproductname",
        })  # fmt: skip
    return gpus


def collect_gpus() -> tuple[list[dict[str, Any]], str | None]:
    """GPUs from nvidia-smi and rocm-smi; an empty list comes with a reason."""
    gpus: list[dict[str, Any]] = []
    problems: list[str] = []
    tools = ((NVIDIA_QUERY, parse_nvidia_smi), (ROCM_QUERY, parse_rocm_smi))
    present = [(argv, parse) for argv, parse in tools if gpu_tool_path(argv[0]) is not None]
    if not present:
        return [], "no nvidia-smi or rocm-smi on PATH"
    for argv, parse in present:
        out, reason = run_gpu_tool(argv)
        found = parse(out) if out is not None else []
        gpus.extend(found)
        if not found:
            problems.append(reason or f"{argv[0]} listed no GPUs")
    return gpus, (None if gpus else "; ".join(problems))


def this_machine_fingerprint() -> str:
    """This machine's fingerprint, as :func:`collect_environment` gives it, from the three
    things it hashes alone (no git, no library versions): a baseline can be looked up before
    the run has collected its environment."""
    return machine_fingerprint({"cpu": _cpu_info(), "os": _os_info(),
                                "gpus": collect_gpus()[0]})


def collect_environment(root: Path, *, run_git: bool = True,
                        kernel_paths: Sequence[str] = ()) -> dict[str, Any]:
    """Everything ``env.json`` records about this machine, its software and ``root``'s repo."""
    reasons: dict[str, str] = {}
    env: dict[str, Any] = {
        "os": _os_info(), "cpu": _cpu_info(), "memory": _memory_info(),
        "python": _python_info(), "libraries": _library_versions(reasons),
    }  # fmt: skip
    env["git"] = git_info(root, kernel_paths) if run_git else _null_git(
        "git collection disabled (run_git=False)")
    env["gpus"], env["gpus_reason"] = collect_gpus()
    try:
        env["hostname"] = socket.gethostname() or None
    except OSError as exc:
        env["hostname"], reasons["hostname"] = None, f"socket.gethostname() failed: {exc}"
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    env["timestamp_utc"] = now.replace("+00:00", "Z")
    env["env_vars"] = {k: os.environ[k] for k in ENV_VAR_WHITELIST if k in os.environ}
    env["fingerprint"] = machine_fingerprint(env)
    env["reasons"] = reasons
    return env
