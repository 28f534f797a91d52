"""The kernel contract (`kernbench.execution.contract`): what a kernel's functions receive, the
untimed per-call reset, `Class.method`, bench.yaml `sys_path`, the precision context; each unit
first, then end to end through the CLI on temporary kernel trees."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import pytest

from kernbench.cli.main import main
from kernbench.errors import ConfigError
from kernbench.execution.contract import (
    ContractError,
    bind_kernel,
    import_kernel,
    resolve_function,
)
from kernbench.measure.precision import current_precision, set_current_precision
from support.kernel_tree import kernel, write

RUN = ("--iters", "4", "--warmup", "2", "--no-cpu-peak", "--processes", "1", "-q")


def module(source: str) -> types.ModuleType:
    made = types.ModuleType("kernel_under_test")
    made.__file__ = "kernel_under_test.py"
    exec(source, made.__dict__)  # noqa: S102 - the test's own source text
    return made


def run(root: Path, out: Path, *extra: str) -> dict[str, dict[str, Any]]:
    """`kernbench run` on the tree; its records by case id."""
    code = main(["run", "--root", str(root), "--output-dir", str(out), *RUN, *extra])
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    records = {r["case_id"]: r for r in summary["results"]}
    assert code == 0, {k: r["reason"] for k, r in records.items()}
    return records


# -- setup receives only what it accepts ------------------------------------------------------


def test_setup_gets_only_the_problem_size_keys_it_accepts() -> None:
    kernel_module = module(
        "def setup(n):\n    return {'x': list(range(n))}\n"
        "def run_benchmark(x, scale):\n    return [v * scale for v in x]\n")
    bound = bind_kernel(kernel_module, kernel_module.run_benchmark, {"n": 3, "scale": 2}, {})
    assert bound.run_kwargs == {"x": [0, 1, 2], "scale": 2}
    assert bound.call() == [0, 2, 4]


def test_setup_with_kwargs_gets_every_key() -> None:
    kernel_module = module(
        "def setup(**sizes):\n    return {'seen': sorted(sizes)}\n"
        "def run_benchmark(seen):\n    return seen\n")
    bound = bind_kernel(kernel_module, kernel_module.run_benchmark, {"n": 3, "m": 1}, {})
    assert bound.call() == ["m", "n"]


def test_a_key_no_function_takes_is_an_error_unless_a_formula_reads_it() -> None:
    kernel_module = module("def setup(n):\n    return {}\ndef run_benchmark():\n    return 1\n")
    with pytest.raises(ConfigError, match=r"^k/bench.yaml: key 'problem_size.nn': expected a "
                                          r"parameter of setup\(\) or run_benchmark\(\), or a "
                                          r"variable a work formula reads \(got 'nn'\)$"):
        bind_kernel(kernel_module, kernel_module.run_benchmark, {"n": 3, "nn": 4}, {},
                    source="k/bench.yaml")
    bound = bind_kernel(kernel_module, kernel_module.run_benchmark, {"n": 3, "width": 4}, {},
                        formulas=["2*n*width"])
    assert bound.call() == 1


# -- reset ------------------------------------------------------------------------------------


def test_reset_is_bound_to_the_inputs_it_names() -> None:
    kernel_module = module(
        "def setup(n):\n    return {'x': [1] * n, 'x0': [1] * n}\n"
        "def reset(x, x0):\n    x[:] = x0\n"
        "def run_benchmark(x):\n    x[0] += 1\n    return x[0]\n")
    bound = bind_kernel(kernel_module, kernel_module.run_benchmark, {"n": 2}, {"seed": 1})
    reset = bound.reset_call()
    assert reset is not None
    assert [bound.call(), bound.call()] == [2, 3]
    reset()
    assert bound.call() == 2
    plain = module("def run_benchmark():\n    return 1\n")
    assert bind_kernel(plain, plain.run_benchmark, None, {}).reset_call() is None


# -- Class.method -----------------------------------------------------------------------------


def test_class_methods_resolve_static_class_and_instance_methods() -> None:
    kernel_module = module(
        "class Ops:\n"
        "    def __init__(self):\n        self.k = 10\n"
        "    @staticmethod\n    def add(a, b):\n        return a + b\n"
        "    @classmethod\n    def name(cls):\n        return cls.__name__\n"
        "    def scale(self, x):\n        return self.k * x\n")
    assert resolve_function(kernel_module, "Ops.add")(1, 2) == 3
    assert resolve_function(kernel_module, "Ops.name")() == "Ops"
    assert resolve_function(kernel_module, "Ops.scale")(3) == 30
    with pytest.raises(ContractError, match="Nope is not defined"):
        resolve_function(kernel_module, "Nope.add")
    needs = module("class Op:\n    def __init__(self, n):\n        pass\n"
                   "    def run(self):\n        return 1\n")
    with pytest.raises(ContractError, match=r"Op\(\) must be callable without arguments"):
        resolve_function(needs, "Op.run")


# -- sys_path and the precision context -------------------------------------------------------


def test_module_colon_names_a_function_of_another_module(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "pkg_unit_other" / "__init__.py", "")
    write(tmp_path / "pkg_unit_other" / "ops.py", """
        class Ops:
            @staticmethod
            def add(a, b):
                return a + b

        def twice(x):
            return 2 * x
    """)
    monkeypatch.syspath_prepend(str(tmp_path))
    kernel_module = module("")
    assert resolve_function(kernel_module, "pkg_unit_other.ops:Ops.add")(1, 2) == 3
    assert resolve_function(kernel_module, "pkg_unit_other.ops:twice")(4) == 8
    with pytest.raises(ContractError, match="cannot import no_such_module_here"):
        resolve_function(kernel_module, "no_such_module_here:f")


def test_import_kernel_puts_sys_path_folders_first(tmp_path: Path) -> None:
    write(tmp_path / "pkg" / "helpers_for_contract_test.py", "VALUE = 42\n")
    path = write(tmp_path / "pkg" / "kernels" / "k.py",
                 "from helpers_for_contract_test import VALUE\n"
                 "def run_benchmark():\n    return VALUE\n")
    loaded = import_kernel(path, tmp_path, "k_sys_path", [tmp_path / "pkg"])
    assert loaded.run_benchmark() == 42


def test_current_precision_is_the_cases_or_the_default() -> None:
    set_current_precision(None)
    assert current_precision() is None and current_precision("fp32") == "fp32"
    set_current_precision("bf16")
    try:
        assert current_precision("fp32") == "bf16"
        import kernbench
        import kernbench.precision

        assert kernbench.current_precision is kernbench.precision.current_precision
    finally:
        set_current_precision(None)


# -- end to end -------------------------------------------------------------------------------

IN_PLACE = """
import numpy as np

def setup(n):
    x0 = np.arange(n, dtype=np.float64)
    return {"x": x0.copy(), "x0": x0}

def reset(x, x0):
    np.copyto(x, x0)

def run_benchmark(x):
    x *= 2.0          # in place: without reset, every call doubles the last call's output
    return x

def reference(x0):    # the pristine copy: x itself is the output being checked
    return x0 * 2.0
"""


def test_an_in_place_kernel_with_reset_is_correct_and_one_call_per_sample(
        tmp_path: Path) -> None:
    kernel(tmp_path, "inplace", IN_PLACE)
    write(tmp_path / "kernels" / "inplace" / "bench.yaml", "problem_size: {n: 8}\n")
    record = run(tmp_path, tmp_path / "out", "--debug-fake-timer", "2")["inplace[cpu,fp64]"]
    assert record["status"] == "ok"
    assert record["accuracy"]["passed"] is True and record["accuracy"]["max_error"] == 0.0
    assert record["timing"]["inner_loops"] == 1
    assert record["timing"]["samples_ms"] == [2.0] * 4  # the resets are in no sample


def test_the_other_contract_items_end_to_end(tmp_path: Path) -> None:
    kernel(tmp_path, "pairs", """
        def setup(m):
            return {"rows": m}

        def run_benchmark(rows, n, scale=1):
            return float(rows * n * scale)
    """)
    write(tmp_path / "kernels" / "pairs" / "bench.yaml", """
        problem_size: {scale: 2}
        sweep:
          zip: {m: [2, 4], n: [8, 16]}
        tolerances: {relative_error: 1e-5}
    """)
    write(tmp_path / "lib" / "shared_helpers_e2e.py", "FACTOR = 3\n")
    kernel(tmp_path, "methods", """
        import numpy as np
        from shared_helpers_e2e import FACTOR
        from kernbench import current_precision
        from kernbench.precision import dtype_for

        class Op:
            def __init__(self):
                self.factor = FACTOR

            def run(self, n):
                dtype = dtype_for("numpy", current_precision("fp64"))
                return np.full(n, self.factor, dtype=dtype)
    """)
    write(tmp_path / "kernels" / "methods" / "bench.yaml", """
        function_name: Op.run
        problem_size: {n: 4}
        precisions: [fp32, fp64]
        sys_path: [../../lib]
    """)
    records = run(tmp_path, tmp_path / "out", "--debug-fake-timer", "1")
    assert sorted(records) == ["methods[cpu,fp32]", "methods[cpu,fp64]",
                               "pairs[cpu,native,m=2,n=8]", "pairs[cpu,native,m=4,n=16]"]
    pair = records["pairs[cpu,native,m=4,n=16]"]
    assert pair["problem_size"] == {"scale": 2, "m": 4, "n": 16}
    assert pair["output"]["items"] == [{"type": "float", "dtype": "python float"}]
    assert pair["precision"] == "native"  # a Python float is not fp64 of anything
    assert [records[f"methods[cpu,{p}]"]["output"]["items"][0]["dtype"]
            for p in ("fp32", "fp64")] == ["float32", "float64"]
    assert all(r["status"] == "ok" for r in records.values())


def test_module_colon_class_method_end_to_end(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The kernel's file only points at the code: bench.yaml names `module:Class.method` in a
    library folder on `sys_path`; discovery reads that module's source for the parameters."""
    write(tmp_path / "lib" / "ops_e2e_other.py", """
        import numpy as np

        class Scaled:
            def __init__(self):
                self.factor = 3.0

            def run(self, n, precision="fp64"):
                dtype = np.float64 if precision == "fp64" else np.float32
                return np.full(n, self.factor, dtype=dtype)
    """)
    kernel(tmp_path, "thin", '"""The kernel is lib/ops_e2e_other.py\'s Scaled.run."""\n')
    write(tmp_path / "kernels" / "thin" / "bench.yaml", """
        function_name: ops_e2e_other:Scaled.run
        problem_size: {n: 5}
        precisions: [fp64]
        sys_path: [../../lib]
    """)
    records = run(tmp_path, tmp_path / "out", "--debug-fake-timer", "1")
    assert list(records) == ["thin[cpu,fp64]"]
    record = records["thin[cpu,fp64]"]
    assert record["status"] == "ok"
    assert record["output"]["items"][0]["shape"] == [5]
    assert record["output"]["items"][0]["dtype"] == "float64"
    write(tmp_path / "kernels" / "thin" / "bench.yaml", """
        function_name: ops_e2e_missing:Scaled.run
        sys_path: [../../lib]
    """)
    assert main(["list", "--root", str(tmp_path)]) == 2
    assert "function_name ops_e2e_missing:Scaled.run: no module 'ops_e2e_missing'" in \
        capsys.readouterr().out


def test_a_sys_path_outside_the_repository_makes_the_kernel_invalid(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "repo"
    kernel(root, "escape", "def run_benchmark():\n    return 1\n")
    write(root / "kernels" / "escape" / "bench.yaml", "sys_path: [../../..]\n")
    assert main(["list", "--root", str(root)]) == 2
    out = capsys.readouterr().out
    assert "kernels/escape/bench.yaml: key 'sys_path[0]': expected a folder" in out
    assert "(got '../../..')" in out

