"""Tests for kernbench.results.vocabulary: the one home of precision, backend and framework
names, and the light import every room relies on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kernbench.config import schema
from kernbench.errors import UnsupportedPrecision
from kernbench.measure.backends import backend_for
from kernbench.results import vocabulary as v


def test_aliases_lead_to_canonical_names() -> None:
    for alias, name in v.PRECISION_ALIASES.items():
        assert v.canonical_precision(alias) == name
        assert name in v.PRECISION_NAMES and name != "fp8"


def test_unknown_precision_names_the_known_ones() -> None:
    with pytest.raises(UnsupportedPrecision, match="known: fp64, fp32"):
        v.canonical_precision("tf32")


def test_float_and_narrow_precisions_are_precisions() -> None:
    assert set(v.FLOAT_PRECISIONS) <= set(v.PRECISION_NAMES)
    assert set(v.NARROW_PRECISIONS) <= set(v.PRECISION_NAMES)
    assert set(v.DTYPE_NAME_PRECISIONS.values()) <= set(v.PRECISION_NAMES)


def test_framework_sets_are_frameworks() -> None:
    assert v.GPU_ONLY_FRAMEWORKS <= v.GPU_CAPABLE_FRAMEWORKS <= set(v.FRAMEWORK_NAMES)
    assert set(v.BACKEND_LABELS) == set(v.BACKEND_NAMES)


def test_the_schema_speaks_the_vocabulary() -> None:
    assert schema.PRECISION_NAMES is v.PRECISION_NAMES
    assert schema.BACKEND_NAMES is v.BACKEND_NAMES
    assert schema.FRAMEWORK_NAMES is v.FRAMEWORK_NAMES


@pytest.mark.parametrize("framework", ["numpy", "pytorch", "jax", "cupy"])
def test_backend_dtypes_use_canonical_precisions(framework: str) -> None:
    table = backend_for(framework).DTYPES
    assert set(table) <= set(v.PRECISION_NAMES) - set(v.PRECISION_ALIASES)
    assert set(table) == set(v.FLOAT_PRECISIONS) | {"int8"}


def test_importing_the_vocabulary_imports_nothing_heavy() -> None:
    code = ("import sys\nimport kernbench.results.vocabulary\n"
            "heavy = [m for m in ('numpy', 'torch', 'jax', 'yaml', 'jsonschema')"
            " if m in sys.modules]\nassert not heavy, heavy\n")
    src = str(Path(v.__file__).resolve().parents[2])
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=False, env={"PYTHONPATH": src}, timeout=120)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(("setting", "entry_point", "value", "spelled"), [
    ("iterations", None, 10, "--iters 10"),
    ("iterations", "kernbench.bench", 10, "iterations=10"),
    ("iterations", "pytest", 10, "--kernbench-iterations 10 (or the marker's iterations=10)"),
    ("warmup", "pytest", "", "--kernbench-warmup (or the marker's warmup=)"),
    ("warmup", None, "", "--warmup"),
    ("processes", "an unknown runner", 3, "--processes 3"),
])
def test_a_knob_is_spelled_as_its_entry_points_user_sets_it(
        setting: str, entry_point: str | None, value: object, spelled: str) -> None:
    assert v.knob(setting, entry_point, value) == spelled
