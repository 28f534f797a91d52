"""Honest installation: the declared lower bounds are the versions the lowest-versions job
installs, the supported platforms are stated where installers and users read them, and no text
tells anyone to install kernbench from a package index it is not on."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 (the lowest-versions job): the same parser, as tomli
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
BOUND = re.compile(r"^([A-Za-z0-9_.-]+)>=([0-9][0-9.]*)\s*(?:;\s*(.+))?$")


def bounds(requirements: list[str]) -> dict[str, tuple[Version, str | None]]:
    """name -> (lowest version, marker) of `name>=X[; marker]` requirements."""
    found = {}
    for requirement in requirements:
        match = BOUND.match(requirement.strip())
        assert match, f"not a plain lower bound: {requirement}"
        found[match[1].lower()] = (Version(match[2]), _marker(match[3]))
    return found


def _marker(text: str | None) -> str | None:
    return None if text is None else text.strip().replace("'", '"')


def lowest_pins() -> dict[str, tuple[Version, str | None]]:
    pins = {}
    for line in (ROOT / "requirements" / "lowest.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            spec, _, marker = line.partition(";")
            name, _, version = spec.partition("==")
            pins[name.strip().lower()] = (Version(version.strip()),
                                          _marker(marker or None))
    return pins


def test_every_runtime_lower_bound_is_pinned_in_lowest_txt() -> None:
    """The core dependencies and every extra but torch and dev (jaxlib at jax's version, as
    jax requires); torch's bound is the one not checked by the lowest-versions job."""
    declared = bounds(PROJECT["dependencies"])
    extras = PROJECT["optional-dependencies"]
    checked = {name: bound for extra in ("plots", "jax", "nvml", "slurm", "ray")
               for name, bound in bounds(extras[extra]).items()}
    assert lowest_pins() == {**declared, **checked, "jaxlib": checked["jax"]}


def test_scipy_bound_covers_false_discovery_control() -> None:
    assert bounds(PROJECT["dependencies"])["scipy"][0] >= Version("1.11")  # added in 1.11


def test_licence_is_an_spdx_string_with_its_file() -> None:
    assert PROJECT["license"] == "MIT"
    assert PROJECT["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    build = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "setuptools>=77" in build["build-system"]["requires"]  # PEP 639 support


def test_supported_os_and_pythons_are_stated_in_classifiers_and_readme() -> None:
    classifiers = PROJECT["classifiers"]
    assert "Operating System :: POSIX :: Linux" in classifiers
    pythons = sorted(c.rsplit(" ", 1)[1] for c in classifiers
                     if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c))
    assert pythons == ["3.10", "3.11"]
    assert PROJECT["requires-python"] == f">={pythons[0]}"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "Supported: Linux, CPython 3.10 and 3.11" in readme


@pytest.mark.parametrize("path", ["README.md", *map(str, sorted(
    (ROOT / "src").rglob("*.py"))), ".github/workflows/bench.yml",
    ".github/workflows/bench-comment.yml"])
def test_nothing_says_to_install_kernbench_from_an_index(path: str) -> None:
    text = (ROOT / path).read_text(encoding="utf-8")
    assert not re.search(r"pip install ['\"]?kernbench(\[[a-z,]+\])?['\"]?(?!\s*@)"
                         r"(\s|$|[`'\")])", text), path


@pytest.mark.parametrize(("module", "extra"), [("ray", "ray"), ("submitit", "slurm")])
def test_a_missing_executor_library_is_named_with_its_own_requirement(module: str,
                                                                       extra: str) -> None:
    from kernbench.config.extras import install_command

    assert install_command(module, extra).endswith(
        f"-m pip install '{PROJECT['optional-dependencies'][extra][0]}'")


def test_the_install_command_kernbench_prints_installs_the_declared_requirement() -> None:
    from kernbench.config.extras import install_command

    command = install_command("matplotlib", "plots")
    assert command == f"{sys.executable} -m pip install 'matplotlib>=3.7'"
    assert "matplotlib>=3.7" in PROJECT["optional-dependencies"]["plots"]
