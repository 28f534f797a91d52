"""The optional extras (pyproject.toml's ``[project.optional-dependencies]``) and the command
that installs what one of them declares, for a message that refuses a missing library.

kernbench is on no package index, so a message never asks to install kernbench by name with
an extra: it names the library's own requirement (``ray>=2.9``) for the interpreter running
now."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"
"""Read when kernbench runs from a checkout without being installed (no metadata)."""


def declared_requirements() -> list[str]:
    """kernbench's requirements with their markers (``ray>=2.9; extra == "ray"``)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        return requires("kernbench") or []
    except PackageNotFoundError:
        return _from_pyproject()


def _from_pyproject() -> list[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            return []
    try:
        project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    except (OSError, KeyError, ValueError):
        return []
    return [f'{requirement}; extra == "{extra}"'
            for extra, requirements in project.get("optional-dependencies", {}).items()
            for requirement in requirements]


def install_command(module: str, extra: str) -> str:
    """`/path/python -m pip install 'matplotlib>=3.7'`: the requirement kernbench's `extra`
    declares for `module`, for the interpreter running now."""
    wanted = next((r.split(";")[0].strip() for r in declared_requirements()
                   if re.match(rf"{re.escape(module)}\b", r) and f'extra == "{extra}"' in r),
                  module)
    return f"{shlex.quote(sys.executable)} -m pip install {shlex.quote(wanted)}"
