"""`kernbench run --profile`: profiles taken after the timed samples, linked from the reports."""

from __future__ import annotations

import importlib.util
import json
import os
import pstats
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kernbench.cli.main import main
from kernbench.measure.profiling import profile_case, unfit_reason
from support.kernel_tree import FAST, SRC

NUMPY_KERNEL = """
import numpy as np

def run_benchmark():
    return np.ones(16, dtype=np.float32) * 2
"""

TORCH_KERNEL = """
import torch

def run_benchmark():
    return torch.ones(16) * 2
"""

JAX_KERNEL = """
import jax.numpy as jnp

def run_benchmark():
    return jnp.ones(16) * 2
"""


def kernel(root: Path, name: str, source: str) -> None:
    path = root / "kernels" / name / f"{name}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")


def kernbench(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-m", "kernbench.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def run_profiled(tmp_path: Path, name: str, source: str, profiler: str,
                 *extra: str) -> tuple[Path, dict[str, Any]]:
    root, out = tmp_path / "repo", tmp_path / "out"
    kernel(root, name, source)
    proc = kernbench("run", "--root", str(root), "--output-dir", str(out), *FAST,
                     "--profile", profiler, *extra, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    (record,) = summary["results"]
    return out, record


def test_cprofile_writes_a_pstats_file_linked_from_every_report(tmp_path: Path) -> None:
    out, record = run_profiled(tmp_path, "scale", NUMPY_KERNEL, "cprofile",
                               "--debug-fake-timer", "2", "--profile-iters", "3")
    assert record["status"] == "ok"
    profile = record["profile"]
    assert profile["kind"] == "cprofile"
    assert profile["iterations"] == 3
    assert profile["wall_s"] >= 0
    path = profile["path"]
    assert path.startswith("profiles/") and path.endswith(".prof")
    assert not Path(path).is_absolute()
    stats = pstats.Stats(str(out / path))
    assert any(func[2] == "run_benchmark" for func in stats.stats)  # type: ignore[attr-defined]
    assert (out / path).with_suffix(".txt").read_text(encoding="utf-8").strip()
    # The profiled calls are not samples: the fake clock's latency stays exact.
    timing = record["timing"]
    assert timing["latency_ms_p50"] == 2.0
    assert timing["samples_ms"] == [2.0] * 5 * 3  # three worker processes by default
    summary_md = (out / "summary.md").read_text(encoding="utf-8")
    assert "## Profiles" in summary_md
    assert f"(<{path}>)" in summary_md
    html = (out / "index.html").read_text(encoding="utf-8")
    assert f'href="{path}"' in html


def test_no_profile_leaves_records_and_reports_unchanged(tmp_path: Path) -> None:
    root, out = tmp_path / "repo", tmp_path / "out"
    kernel(root, "scale", NUMPY_KERNEL)
    proc = kernbench("run", "--root", str(root), "--output-dir", str(out), *FAST,
                     "--debug-fake-timer", "2", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (record,) = json.loads((out / "summary.json").read_text(encoding="utf-8"))["results"]
    assert "profile" not in record
    assert not (out / "profiles").exists()
    assert "## Profiles" not in (out / "summary.md").read_text(encoding="utf-8")
    assert "profiles/" not in (out / "index.html").read_text(encoding="utf-8")


def test_torch_profiler_on_a_numpy_kernel_keeps_the_case_ok(tmp_path: Path) -> None:
    out, record = run_profiled(tmp_path, "scale", NUMPY_KERNEL, "torch")
    assert record["status"] == "ok"
    assert record["profile"]["path"] is None
    assert "numpy" in record["profile"]["reason"]
    assert "## Profiles" not in (out / "summary.md").read_text(encoding="utf-8")


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
def test_torch_profiler_writes_a_chrome_trace(tmp_path: Path) -> None:
    out, record = run_profiled(tmp_path, "tscale", TORCH_KERNEL, "torch", "--profile-iters", "2")
    assert record["status"] == "ok", record["reason"]
    profile = record["profile"]
    assert profile["kind"] == "torch" and profile["iterations"] == 2, profile
    assert profile["path"].endswith(".torch.json")
    trace = json.loads((out / profile["path"]).read_text(encoding="utf-8"))
    assert "traceEvents" in trace


def _jax_profiler_available() -> bool:
    if importlib.util.find_spec("jax") is None:
        return False
    try:
        import jax.profiler  # noqa: F401
    except Exception:
        return False
    return True


@pytest.mark.skipif(not _jax_profiler_available(), reason="jax's profiler is unavailable")
def test_jax_profiler_writes_a_trace_directory(tmp_path: Path) -> None:
    out, record = run_profiled(tmp_path, "jscale", JAX_KERNEL, "jax", "--profile-iters", "2")
    assert record["status"] == "ok", record["reason"]
    profile = record["profile"]
    if profile["path"] is None:
        pytest.skip(f"jax's profiler did not run here: {profile['reason']}")
    assert profile["kind"] == "jax"
    folder = out / profile["path"]
    assert profile["path"].endswith(".jax") and folder.is_dir()
    assert any(p.is_file() for p in folder.rglob("*"))


def test_bad_profile_value_is_a_usage_error_naming_the_choices(tmp_path: Path) -> None:
    proc = kernbench("run", "--root", str(tmp_path), "--profile", "perf", cwd=tmp_path)
    assert proc.returncode == 2
    for choice in ("cprofile", "torch", "jax"):
        assert choice in proc.stderr


def test_profile_failure_is_a_record_not_an_error(tmp_path: Path) -> None:
    def broken() -> object:
        raise RuntimeError("boom")

    record = profile_case("cprofile", broken, None, 2, tmp_path, "k[cpu,fp32]", "numpy",
                          "cpu")
    assert record["path"] is None
    assert "RuntimeError: boom" in record["reason"]
    assert record["kind"] == "cprofile" and record["wall_s"] >= 0


def test_unfit_reasons() -> None:
    assert unfit_reason("cprofile", "numpy") is None
    assert unfit_reason("jax", "pytorch") is not None
    assert unfit_reason("torch", "numpy") is not None


def test_profile_with_ab_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--root", str(tmp_path), "--ab", "HEAD", "--profile", "cprofile"]) == 2
    assert "--profile cannot be combined with --ab" in capsys.readouterr().err
