"""Kernel trees on disk and the real CLI run over them, as the end-to-end tests use them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[2] / "src"
FAST = ("--iters", "5", "--warmup", "1")
"""Few samples: the end-to-end tests check behaviour, not figures."""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def kernel(root: Path, name: str, source: str) -> Path:
    """A kernel in its own folder: kernels/<name>/<name>.py."""
    return write(root / "kernels" / name / f"{name}.py", source)


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    return env


def kernbench(*args: str, cwd: Path, timeout: float = 120, tmp: Path | None = None,
              extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`kernbench ARGS` in a subprocess; with `tmp`, that folder (created) is its TMPDIR;
    `extra_env` is added to its environment."""
    env = {**subprocess_env(), **(extra_env or {})}
    if tmp is not None:
        tmp.mkdir(parents=True, exist_ok=True)
        env["TMPDIR"] = str(tmp)
    return subprocess.run([sys.executable, "-m", "kernbench.cli", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def leftover_temp_files(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file() and ".tmp" in p.name]
