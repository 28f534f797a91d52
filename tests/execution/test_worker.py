"""Tests for kernbench.execution.worker: one case, run in-process through `run_job`, and once for
real.

Jobs are ``WorkerJob`` objects built the way ``BenchmarkRunner._job`` builds them, pointing at
kernels written to a temporary directory. Kernels record the arguments they receive in a
module-level ``CALLS`` list; the worker keeps the imported kernel module in ``sys.modules`` so
the test can read it back.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import random
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from kernbench.execution.describe import describe_output
from kernbench.execution.jobs import WorkerJob, WorkerReply, dump_job, to_data
from kernbench.execution.worker import run_job
from kernbench.results.model import ProtocolSettings, SkipRule

FAST = ProtocolSettings(warmup=1, iterations=3, max_inner_loops=1000, calibration_budget_s=0.5)
CUPY_INSTALLED = importlib.util.find_spec("cupy") is not None


@pytest.fixture(autouse=True)
def interpreter_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """run_job rewrites sys.argv and sys.path, seeds the global RNGs and registers the kernel
    module: undo all of it after each test."""
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    py_state, np_state = random.getstate(), np.random.get_state()
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("kernbench_kernel_", "relpkg")):
            del sys.modules[name]
    random.setstate(py_state)
    np.random.set_state(np_state)


def write_kernel(directory: Path, name: str, source: str) -> Path:
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def make_job(kernel_file: Path, *, framework: str = "numpy", backend: str = "cpu",
             precision: str = "native", problem_size: Any = None,
             skip_rules: tuple[dict[str, Any], ...] = (), fake_call_ms: float | None = None,
             function_name: str = "run_benchmark", **protocol: Any) -> WorkerJob:
    """A job like the one BenchmarkRunner._job builds, for a kernel outside any project."""
    return WorkerJob(
        kernel_file=kernel_file, root=kernel_file.parent, kernel_name=kernel_file.stem,
        function_name=function_name, framework=framework, backend=backend,
        precision=precision, problem_size=problem_size,
        skip_rules=tuple(SkipRule(**rule) for rule in skip_rules),
        settings=dataclasses.replace(FAST, **protocol), fake_call_ms=fake_call_ms,
        result_path=kernel_file.parent / "result.json")


def run_kernel(tmp_path: Path, source: str, name: str = "kern", **job: Any) -> WorkerReply:
    return run_job(make_job(write_kernel(tmp_path, name, source), **job))


def kernel_calls(name: str) -> list[dict[str, Any]]:
    """What the kernel `name` recorded in its module-level CALLS list."""
    return sys.modules[f"kernbench_kernel_{name}"].CALLS  # type: ignore[no-any-return]


# --- ok -------------------------------------------------------------------------------------


def test_ok_case_has_samples_and_a_description(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        import numpy as np

        def run_benchmark():
            return np.ones((3, 4), dtype=np.float32)
    """)
    assert result.status == "ok", result
    assert len(result.samples_ns) == 3
    assert all(s > 0 for s in result.samples_ns)
    assert 1 <= result.inner_loops <= 1000
    assert len(result.warmup_ns) == 1
    assert result.timer == "perf_counter_ns"
    assert result.timer_overhead_ns >= 0
    assert result.memory["peak_mb"] > 0
    assert result.device == {"framework": "numpy", "device": "cpu"}
    assert result.output == {
        "type": "ndarray", "leaves": 1, "precision": "fp32", "nbytes": 3 * 4 * 4,
        "items": [{"type": "ndarray", "dtype": "float32", "precision": "fp32", "shape": [3, 4]}],
    }
    json.dumps(to_data(result), allow_nan=False)  # the reply must be plain JSON


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
@pytest.mark.parametrize(("body", "said"), [
    ("def run_benchmark():\n    return (i * i for i in range(10**6))", "a lazy generator"),
    ("def run_benchmark():\n    return map(abs, range(10**6))", "a lazy map"),
    ("import itertools\ndef run_benchmark():\n    return itertools.count()", "a lazy count"),
    ("async def run_benchmark():\n    return sum(range(10**6))", "a coroutine"),
])
def test_a_result_whose_work_never_ran_fails(tmp_path: Path, body: str, said: str) -> None:
    result = run_kernel(tmp_path, body)
    assert result.status == "failed"
    assert result.reason is not None and f"run_benchmark returned {said}" in result.reason
    assert result.accuracy is not None and result.accuracy["passed"] is None


def test_an_iterable_that_holds_its_values_is_not_lazy(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, "def run_benchmark():\n    return range(3), {1: 2}.items()")
    assert result.status == "ok", result


@pytest.mark.parametrize("statement", ["from .helper import SCALE",
                                       "from relpkg.ops.helper import SCALE",
                                       "from helper import SCALE"])
def test_a_kernel_inside_a_package_imports_as_its_package_does(
        tmp_path: Path, statement: str) -> None:
    package = tmp_path / "kernels" / "relpkg" / "ops"
    package.mkdir(parents=True)
    for folder in (package.parent, package):
        (folder / "__init__.py").write_text("", encoding="utf-8")
    (package / "helper.py").write_text("SCALE = 3.0\n", encoding="utf-8")
    kernel = write_kernel(package, "scaled", f"""
        {statement}

        def run_benchmark():
            return SCALE * 2
    """)
    result = run_job(make_job(kernel))
    assert result.status == "ok", result
    assert result.output is not None and result.output["items"][0]["dtype"] == "python float"


def test_teardown_runs_once_after_everything_with_what_setup_made(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        import os

        CALLS = []

        def setup(n=4):
            path = os.path.join(os.path.dirname(__file__), "scratch.bin")
            open(path, "wb").close()
            return {"path": path, "n": n}

        def run_benchmark(path, n):
            CALLS.append("run")
            return float(n)

        def reference(path, n):
            CALLS.append("reference")
            return float(n)

        def teardown(path, precision="none"):
            CALLS.append(("teardown", os.path.basename(path), precision))
            os.remove(path)
    """, name="tidy", precision="fp32")
    assert result.status == "ok", result
    assert not (tmp_path / "scratch.bin").exists()
    calls = kernel_calls("tidy")
    assert calls[-1] == ("teardown", "scratch.bin", "fp32")
    assert calls.count(("teardown", "scratch.bin", "fp32")) == 1
    assert "reference" in calls[:-1]


def test_a_teardown_that_raises_fails_the_case(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        def run_benchmark():
            return 1.0

        def teardown():
            raise OSError("could not remove the scratch file")
    """)
    assert result.status == "failed"
    assert result.reason == "OSError: could not remove the scratch file"


def test_custom_function_name(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        def bench():
            return 1.5
    """, function_name="bench")
    assert result.status == "ok"
    assert result.output["precision"] is None  # a Python float labels no precision
    assert result.output["items"] == [{"type": "float", "dtype": "python float"}]


def test_missing_function_fails(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, "VALUE = 3\n")
    assert result.status == "failed"
    assert result.reason.startswith("ContractError: run_benchmark is not a callable in ")


# --- failures -------------------------------------------------------------------------------


def test_kernel_raising_value_error_fails_with_traceback(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        def run_benchmark():
            raise ValueError("shapes do not match")
    """, name="raiser")
    assert result.status == "failed"
    assert result.reason == "ValueError: shapes do not match"
    assert result.traceback.startswith("Traceback (most recent call last)")
    assert "raiser.py" in result.traceback
    assert result.traceback.rstrip().endswith("ValueError: shapes do not match")
    assert result.samples_ns is None


@pytest.mark.parametrize(("raised", "reason"), [
    ("MemoryError()", "MemoryError: an allocation failed"),
    ("ValueError()", "ValueError: no message")])
def test_an_exception_without_a_message_still_reads_as_a_sentence(
        tmp_path: Path, raised: str, reason: str) -> None:
    result = run_kernel(tmp_path, f"def run_benchmark():\n    raise {raised}\n")
    assert result.status == "failed" and result.reason == reason


@pytest.mark.parametrize("where", ["call", "import"])
def test_system_exit_fails(tmp_path: Path, where: str) -> None:
    source = """
        import sys

        def run_benchmark():
            sys.exit(3)
    """ if where == "call" else """
        import sys
        sys.exit("bye")

        def run_benchmark():
            return 0
    """
    result = run_kernel(tmp_path, source)
    assert result.status == "failed"
    code = "3" if where == "call" else "'bye'"
    assert result.reason == (f"the kernel called sys.exit({code}) (SystemExit): a kernel must "
                                "return, not exit")


def test_error_at_import_fails(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, "raise RuntimeError('broken at import')\n")
    assert result.status == "failed"
    assert result.reason == "RuntimeError: broken at import"


def test_missing_non_framework_module_fails(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        import nonexistent_xyz

        def run_benchmark():
            return nonexistent_xyz.go()
    """)
    assert result.status == "failed"
    assert result.reason == "ModuleNotFoundError: No module named 'nonexistent_xyz'"


def test_missing_module_named_like_a_framework_prefix_fails(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, "import torchish_helpers\n")
    assert result.status == "failed"


def test_missing_submodule_of_an_installed_framework_fails(tmp_path: Path) -> None:
    # torch is installed; a typo in a submodule is a broken kernel, not "torch is not installed"
    pytest.importorskip("torch")
    result = run_kernel(tmp_path, """
        import torch.definitely_not_a_submodule

        def run_benchmark():
            return 0
    """, framework="pytorch")
    assert result.status == "failed", result
    assert "definitely_not_a_submodule" in result.reason


# --- skips ----------------------------------------------------------------------------------


@pytest.mark.skipif(CUPY_INSTALLED, reason="cupy is installed here")
@pytest.mark.parametrize("statement",
                         ["import cupy", "import cupy.cuda", "from cupy import asarray"])
def test_missing_optional_framework_skips(tmp_path: Path, statement: str) -> None:
    result = run_kernel(tmp_path, f"""
        {statement}

        def run_benchmark():
            return 0
    """)
    assert result == WorkerReply(status="skipped", reason="requires cupy, which is not installed")


def test_lazy_imports_are_classified_like_top_level_ones(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        def run_benchmark():
            import triton_not_here_either  # not a framework: fails
            return 0
    """)
    assert result.status == "failed"
    if not CUPY_INSTALLED:
        result = run_kernel(tmp_path, """
            def run_benchmark():
                import cupy
                return cupy
        """, name="lazy")
        assert result.status == "skipped"
        assert result.reason.startswith("requires cupy")


def test_skip_rule_with_true_check_skips_before_importing(tmp_path: Path) -> None:
    rule = {"reason": "numpy is here", "check": 'module_available("numpy")'}
    result = run_kernel(tmp_path, "raise RuntimeError('must not be imported')\n",
                        skip_rules=(rule,))
    assert result == WorkerReply(status="skipped",
                                 reason='numpy is here (module_available("numpy"))')


def test_skip_rule_with_false_check_runs(tmp_path: Path) -> None:
    rule = {"reason": "never", "check": 'module_available("nonexistent_xyz_mod")'}
    result = run_kernel(tmp_path, "def run_benchmark():\n    return 1\n", skip_rules=(rule,))
    assert result.status == "ok"


def test_unconditional_skip_rule_for_a_backend(tmp_path: Path) -> None:
    rule = {"reason": "not ported to this backend", "backend": "cpu"}
    result = run_kernel(tmp_path, "def run_benchmark():\n    return 1\n", skip_rules=(rule,))
    assert result == WorkerReply(status="skipped", reason="not ported to this backend")


@pytest.mark.parametrize("rule", [
    {"reason": "other backend", "backend": "cuda"},
    {"reason": "other precision", "precision": "fp16"},
])
def test_skip_rule_for_another_backend_or_precision_does_not_apply(
        tmp_path: Path, rule: dict[str, Any]) -> None:
    source = "def run_benchmark(precision='x'):\n    return 1\n"
    result = run_kernel(tmp_path, source, precision="fp32", skip_rules=(rule,))
    assert result.status == "ok"


def test_skip_rule_for_the_case_precision_applies(tmp_path: Path) -> None:
    rule = {"reason": "no fp16 here", "precision": "fp16"}
    source = "def run_benchmark(precision):\n    return 1\n"
    result = run_kernel(tmp_path, source, precision="fp16", skip_rules=(rule,))
    assert result == WorkerReply(status="skipped", reason="no fp16 here")


def test_cuda_backend_for_a_numpy_kernel_skips(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, "def run_benchmark():\n    return 1\n", backend="cuda")
    assert result == WorkerReply(
        status="skipped", backend_unavailable=True,
        reason="numpy kernels run on the CPU only; backend 'cuda' does not apply")


def test_cuda_backend_for_a_torch_kernel_skips_without_a_gpu(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    result = run_kernel(tmp_path, "def run_benchmark():\n    return 1\n",
                        framework="pytorch", backend="cuda")
    assert result == WorkerReply(
        status="skipped", backend_unavailable=True,
        reason="CUDA not available (torch.cuda.is_available() is False)")


def test_a_triton_kernel_goes_to_the_torch_cuda_backend(tmp_path: Path) -> None:
    """A file importing `triton` is discovered as framework "triton"; its case is checked by
    PyTorch's CUDA backend (not the CPU-only one, which would say it never runs on CUDA)."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    result = run_kernel(tmp_path, "def run_benchmark():\n    return 1\n",
                        framework="triton", backend="cuda")
    assert result == WorkerReply(
        status="skipped", backend_unavailable=True,
        reason="CUDA not available (torch.cuda.is_available() is False)")


@pytest.mark.parametrize(("raised", "reason"), [
    ("SkipCase('matrix too small for this kernel')",
     "SkipCase: matrix too small for this kernel"),
    ("UnsupportedPrecision('no fp8 on this CPU')", "UnsupportedPrecision: no fp8 on this CPU"),
])
def test_kernel_raised_skip_exceptions_skip(tmp_path: Path, raised: str, reason: str) -> None:
    result = run_kernel(tmp_path, f"""
        from kernbench.errors import SkipCase, UnsupportedPrecision

        def run_benchmark():
            raise {raised}
    """)
    assert result == WorkerReply(status="skipped", reason=reason)


def test_dtype_for_an_unknown_precision_in_setup_fails(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        from kernbench.measure.precision import dtype_for

        def setup(precision):
            return {"dtype": dtype_for("numpy", precision)}

        def run_benchmark(dtype):
            return dtype
    """, precision="fp4")
    assert result.status == "failed"
    assert result.reason.startswith("ValueError: dtype_for: unknown precision 'fp4'")


# --- the calling contract -------------------------------------------------------------------


def test_setup_returning_a_non_dict_fails_clearly(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        def setup():
            return [1, 2, 3]

        def run_benchmark(a):
            return a
    """)
    assert result.status == "failed"
    assert result.reason == ("ContractError: setup() must return a dict of keyword "
                                "arguments for run_benchmark(), got list")


def test_problem_size_key_the_function_does_not_accept_is_invalid(tmp_path: Path) -> None:
    """A configuration error only the worker can see (it needs the imported kernel) makes
    the case `invalid`, naming the bench.yaml and the key, not `failed`."""
    result = run_job(dataclasses.replace(
        make_job(write_kernel(tmp_path, "kern", "def run_benchmark(n):\n    return n\n"),
                 problem_size={"n": 4, "m": 5}), config_source="kernels/kern/bench.yaml"))
    assert result.status == "invalid"
    assert result.reason == ("kernels/kern/bench.yaml: key 'problem_size.m': expected a "
                             "parameter of run_benchmark(), or a variable a work formula reads "
                             "(got 'm')")
    assert result.samples_ns is None


def test_problem_size_key_neither_setup_nor_the_function_accepts_is_invalid(
        tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        CALLS = []

        def setup(n):
            CALLS.append(n)
            return {"x": n}

        def run_benchmark(x):
            return x
    """, problem_size={"n": 4, "k": 2})
    assert result.status == "invalid"
    assert result.reason == ("bench.yaml: key 'problem_size.k': expected a parameter of setup() "
                             "or run_benchmark(), or a variable a work formula reads (got 'k')")
    assert kernel_calls("kern") == []  # refused before setup ran


def test_a_scalar_problem_size_no_function_takes_is_invalid(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        def setup(n=8):
            return {"x": n}

        def run_benchmark(x):
            return x
    """, problem_size=64)
    assert result.status == "invalid"
    assert result.reason == ("bench.yaml: key 'problem_size': expected a mapping of keyword "
                             "arguments (a scalar is passed as problem_size=, which is not a "
                             "parameter of setup() or run_benchmark(), and no work formula reads "
                             "it) (got 64)")


def test_a_work_formula_with_an_unknown_variable_is_invalid_before_setup(
        tmp_path: Path) -> None:
    job = dataclasses.replace(make_job(write_kernel(tmp_path, "kern", """
        CALLS = []

        def setup(n=8):
            CALLS.append(n)
            return {"x": n}

        def run_benchmark(x):
            return x
    """)), work={"flops": "2*n**3"}, config_source="kernels/kern/bench.yaml")
    result = run_job(job)
    assert result.status == "invalid"
    assert result.reason == ("kernels/kern/bench.yaml: key 'work.flops': expected formula "
                             "'2*n**3' to use only the available variables: itemsize "
                             "(got 'unknown variable(s) n')")
    assert kernel_calls("kern") == []


def test_a_work_formula_that_cannot_be_computed_is_invalid(tmp_path: Path) -> None:
    job = dataclasses.replace(make_job(
        write_kernel(tmp_path, "kern", "def run_benchmark(n):\n    return n\n"),
        problem_size={"n": 8}), work={"flops": "n/(n-8)"}, config_source="b.yaml")
    result = run_job(job)
    assert result.status == "invalid"
    assert result.reason is not None
    assert result.reason.startswith("b.yaml: key 'work.flops': expected a formula 'n/(n-8)'")


def test_setup_result_key_the_function_does_not_accept_fails(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        def setup():
            return {"x": 1, "surprise": 2}

        def run_benchmark(x):
            return x
    """)
    assert result.status == "failed"
    assert "run_benchmark() has no parameter 'surprise' (passed from setup()'s result)" \
        in result.reason


def test_harness_arguments_are_passed_when_declared(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        CALLS = []

        def run_benchmark(n, precision, backend, device, seed):
            CALLS.append(dict(n=n, precision=precision, backend=backend, device=device,
                              seed=seed))
    """, name="declares_all", precision="fp16", problem_size={"n": 4}, seed=99)
    assert result.status == "ok", result
    calls = kernel_calls("declares_all")
    assert calls[-1] == {"n": 4, "precision": "fp16", "backend": "cpu", "device": "cpu",
                         "seed": 99}
    assert all(call == calls[0] for call in calls)


def test_harness_arguments_are_not_passed_when_not_declared(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        CALLS = []

        def run_benchmark(n, **extra):
            CALLS.append(dict(n=n, **extra))
    """, name="declares_none", precision="fp32", problem_size={"n": 4})
    assert result.status == "ok", result
    assert kernel_calls("declares_none")[-1] == {"n": 4}


def test_native_precision_is_not_passed(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        CALLS = []

        def run_benchmark(precision="own default", device=None):
            CALLS.append(dict(precision=precision, device=device))
    """, name="native", precision="native")
    assert result.status == "ok", result
    assert kernel_calls("native")[-1] == {"precision": "own default", "device": "cpu"}


def test_setup_gets_harness_arguments_and_its_result_feeds_the_function(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        CALLS = []

        def setup(n, precision):
            CALLS.append(("setup", n, precision))
            return {"data": list(range(n))}

        def run_benchmark(data, n, seed):
            CALLS.append(("run", len(data), n, seed))
    """, name="with_setup", precision="bf16", problem_size={"n": 5}, seed=7)
    assert result.status == "ok", result
    calls = kernel_calls("with_setup")
    assert calls[0] == ("setup", 5, "bf16")
    assert calls.count(("setup", 5, "bf16")) == 1, "setup must run once"
    assert calls[1:] and all(call == ("run", 5, 5, 7) for call in calls[1:])


@pytest.mark.parametrize("size", [128, [2, 3], "large"])
def test_scalar_problem_size_is_passed_as_problem_size(tmp_path: Path, size: Any) -> None:
    result = run_kernel(tmp_path, """
        CALLS = []

        def run_benchmark(problem_size):
            CALLS.append(problem_size)
    """, name="scalar", problem_size=size)
    assert result.status == "ok", result
    assert kernel_calls("scalar")[-1] == size


def test_the_kernel_runs_with_the_seeded_global_rngs(tmp_path: Path) -> None:
    result = run_kernel(tmp_path, """
        import random
        import numpy as np

        CALLS = []

        def setup():
            CALLS.append((random.random(), float(np.random.random())))
            return {}

        def run_benchmark():
            return 0
    """, name="seeded", seed=1234)
    assert result.status == "ok", result
    expected_py = random.Random(1234).random()
    expected_np = float(np.random.RandomState(1234).random_sample())
    assert kernel_calls("seeded")[0] == (expected_py, expected_np)


@pytest.mark.parametrize("fake_ms", [2.5, 0.001, 40.0])
def test_fake_call_ms_gives_exact_samples(tmp_path: Path, fake_ms: float) -> None:
    result = run_kernel(tmp_path, "def run_benchmark():\n    return 1\n",
                        fake_call_ms=fake_ms, iterations=4, warmup=2)
    assert result.status == "ok", result
    assert result.samples_ns == (fake_ms * 1e6,) * 4
    assert result.warmup_ns == (fake_ms * 1e6,) * 2
    assert result.inner_loops == 1
    assert result.timer == "fake"
    assert result.timer_overhead_ns == 0.0


# --- output descriptions through run_job ----------------------------------------------------


def test_torch_kernel_output_is_described(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    result = run_kernel(tmp_path, """
        import torch

        def run_benchmark(precision):
            dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[precision]
            return torch.zeros(2, 5, dtype=dtype)
    """, framework="pytorch", precision="bf16")
    assert result.status == "ok", result
    assert result.output["precision"] == "bf16"
    assert result.output["items"] == [
        {"type": "Tensor", "dtype": "torch.bfloat16", "precision": "bf16", "shape": [2, 5]}]
    assert result.device["framework"] == "pytorch"
    assert result.device["device"] == "cpu"


def test_jax_kernel_output_is_described(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    result = run_kernel(tmp_path, """
        import jax.numpy as jnp

        def run_benchmark():
            return {"y": jnp.ones((3,), dtype=jnp.float16), "n": 3}
    """, framework="jax")
    assert result.status == "ok", result
    output = result.output
    assert output["type"] == "dict"
    assert output["precision"] == "fp16"
    assert output["items"][0] == {"type": output["items"][0]["type"], "dtype": "float16",
                                  "precision": "fp16", "shape": [3]}
    assert output["items"][1] == {"type": "int"}
    assert result.device["device"] == "cpu"


# --- describe_output ------------------------------------------------------------------------


def test_describe_numpy_array() -> None:
    assert describe_output(np.zeros((3, 4), dtype=np.float32)) == {
        "type": "ndarray", "leaves": 1, "precision": "fp32", "nbytes": 3 * 4 * 4,
        "items": [{"type": "ndarray", "dtype": "float32", "precision": "fp32", "shape": [3, 4]}],
    }


@pytest.mark.parametrize(("dtype", "precision"), [
    (np.float64, "fp64"), (np.float16, "fp16"), (np.int8, "int8"), (np.complex64, "fp32"),
    (np.complex128, "fp64"), (np.int64, None), (np.bool_, None),
])
def test_describe_numpy_dtypes(dtype: Any, precision: str | None) -> None:
    description = describe_output(np.zeros(2, dtype=dtype))
    assert description["precision"] == precision
    assert description["items"][0]["dtype"] == str(np.dtype(dtype))


def test_describe_numpy_scalar_has_empty_shape() -> None:
    item = describe_output(np.float32(1.5))["items"][0]
    assert item == {"type": "float32", "dtype": "float32", "precision": "fp32", "shape": []}


def test_describe_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    for dtype, precision in [(torch.float16, "fp16"), (torch.bfloat16, "bf16"),
                             (torch.float32, "fp32"), (torch.int8, "int8"),
                             (torch.float8_e4m3fn, "fp8_e4m3"), (torch.complex64, "fp32")]:
        description = describe_output(torch.zeros(4, 2, dtype=dtype))
        assert description["precision"] == precision, dtype
        assert description["items"] == [{"type": "Tensor", "dtype": str(dtype),
                                         "precision": precision, "shape": [4, 2]}]


@pytest.mark.parametrize(("asked", "at_least", "below"), [(0.05, 0.25, None), (0.0, 0.0, 0.25)])
def test_a_jax_case_on_cpu_warms_up_for_at_least_its_settling_time(
        tmp_path: Path, asked: float, at_least: float, below: float | None) -> None:
    """JAX's CPU calls run slow for 0.1-0.25 s after the compile; a warm-up turned off stays
    off."""
    pytest.importorskip("jax")
    result = run_kernel(tmp_path, """
        import jax.numpy as jnp

        def run_benchmark():
            return jnp.zeros(())
    """, framework="jax", warmup_time_s=asked)
    assert result.status == "ok", result
    assert result.warmup_s is not None and result.warmup_s >= at_least
    assert below is None or result.warmup_s < below


def test_a_jax_case_on_cpu_never_starts_jaxs_gpu(tmp_path: Path) -> None:
    """JAX's default device is a GPU wherever it sees one: a case labelled cpu ran there."""
    pytest.importorskip("jax")
    result = run_kernel(tmp_path, """
        import jax
        import jax.numpy as jnp

        PLATFORMS = jax.config.jax_platforms

        def run_benchmark():
            return jnp.zeros(())
    """, name="jaxcpu", framework="jax", warmup_time_s=0.0)
    assert result.status == "ok", result
    assert sys.modules["kernbench_kernel_jaxcpu"].PLATFORMS == "cpu"


def test_a_torch_case_on_cpu_sees_no_gpu(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU case's torch.compile started CUDA on a GPU machine (and failed when the GPU was
    full): the case's worker hides the GPUs before the kernel is imported."""
    pytest.importorskip("torch")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # restored after the in-process worker
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "0")
    result = run_kernel(tmp_path, """
        import os

        import torch

        SEEN = (os.environ["CUDA_VISIBLE_DEVICES"], os.environ["HIP_VISIBLE_DEVICES"],
                torch.cuda.is_available())

        def run_benchmark():
            return torch.zeros(3)
    """, name="torchcpu", framework="pytorch")
    assert result.status == "ok", result
    assert sys.modules["kernbench_kernel_torchcpu"].SEEN == ("", "", False)


def test_describe_jax_arrays() -> None:
    jnp = pytest.importorskip("jax.numpy")
    for dtype, precision in [(jnp.float32, "fp32"), (jnp.bfloat16, "bf16"),
                             (jnp.float16, "fp16"), (jnp.int8, "int8")]:
        description = describe_output(jnp.zeros((2, 3), dtype=dtype))
        assert description["precision"] == precision, dtype
        item = description["items"][0]
        assert item["dtype"] == str(jnp.dtype(dtype))
        assert item["shape"] == [2, 3]


def test_describe_tuples_and_dicts() -> None:
    torch = pytest.importorskip("torch")
    pair = describe_output((np.zeros(3, np.float64), torch.zeros(2, dtype=torch.int8)))
    assert pair["type"] == "tuple"
    assert pair["leaves"] == 2
    assert pair["precision"] == "fp64"
    assert [item["precision"] for item in pair["items"]] == ["fp64", "int8"]

    mapping = describe_output({"count": 3, "out": torch.zeros(2, dtype=torch.float16)})
    assert mapping["type"] == "dict"
    assert mapping["precision"] == "fp16"  # the first leaf that has one
    assert mapping["items"][0] == {"type": "int"}

    nested = describe_output([{"a": (np.zeros(1, np.float32),)}, [np.zeros(1, np.float16)]])
    assert nested["leaves"] == 2
    assert [item["precision"] for item in nested["items"]] == ["fp32", "fp16"]


def test_describe_keeps_eight_items_but_counts_every_leaf() -> None:
    description = describe_output([np.zeros(1, np.float32)] * 20)
    assert description["leaves"] == 20
    assert len(description["items"]) == 8


def test_describe_plain_python_values() -> None:
    assert describe_output(2.5) == {"type": "float", "leaves": 1, "precision": None,
                                    "items": [{"type": "float", "dtype": "python float"}],
                                    "nbytes": None}
    assert describe_output(1j)["items"] == [{"type": "complex", "dtype": "python complex"}]
    assert describe_output((2.5, np.zeros(2, np.float32)))["precision"] == "fp32"
    assert describe_output(None) == {"type": "NoneType", "leaves": 1, "precision": None,
                                     "items": [{"type": "NoneType"}], "nbytes": None}


def test_describe_output_never_includes_data() -> None:
    torch = pytest.importorskip("torch")
    value = {"key_alpha": np.full((2, 2), 12345.678), "key_beta": torch.full((3,), 424242.5),
             "text": "TOPSECRET", "number": 98765.4321, "items": [31337, "hunter2"]}
    text = json.dumps(describe_output(value))
    for secret in ("12345", "424242", "TOPSECRET", "98765", "31337", "hunter2", "key_alpha",
                   "key_beta"):
        assert secret not in text


# --- the real worker process ----------------------------------------------------------------


def test_worker_process_writes_json_and_exits_despite_a_live_thread(tmp_path: Path) -> None:
    kernel = write_kernel(tmp_path, "threaded", """
        import threading
        import time

        import numpy as np

        STARTED = []

        def run_benchmark():
            if not STARTED:
                thread = threading.Thread(target=time.sleep, args=(300,), daemon=False)
                thread.start()
                STARTED.append(thread)
                print("KERNEL SAYS HELLO", flush=True)
            return np.arange(6, dtype=np.float32).reshape(2, 3)
    """)
    job = make_job(kernel)
    job_path = tmp_path / "job.json"
    dump_job(job, job_path)

    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kernbench.execution.worker", str(job_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          check=False)
    elapsed = time.monotonic() - started

    assert proc.returncode == 0, proc.stderr
    assert elapsed < 30
    assert "KERNEL SAYS HELLO" in proc.stdout

    def reject(constant: str) -> None:
        raise AssertionError(f"not valid JSON: {constant}")

    text = job.result_path.read_text(encoding="utf-8")
    result = json.loads(text, parse_constant=reject)
    assert result["status"] == "ok"
    assert len(result["samples_ns"]) == FAST.iterations
    assert result["output"]["items"][0]["shape"] == [2, 3]
    assert "HELLO" not in text
    assert not list(tmp_path.glob("result.json.tmp*"))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_before_exit_is_called_once_the_reply_is_written(tmp_path: Path) -> None:
    """A forked worker tells its server it is leaving only when nothing is left to do."""
    job = make_job(write_kernel(tmp_path, "kern", "def run_benchmark():\n    return None\n"))
    job_path = tmp_path / "job.json"
    dump_job(job, job_path)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child, which leaves through os._exit
        from kernbench.execution.worker import main

        def before_exit() -> None:
            os.write(write, b"reply written" if job.result_path.is_file() else b"no reply")

        main([str(job_path)], before_exit=before_exit)
    os.close(write)
    said = os.read(read, 64)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert said == b"reply written"
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_framework_without_a_kernel_for_the_dtype_skips_the_case() -> None:
    from kernbench.execution.worker import _unsupported_precision

    error = RuntimeError('"addmm_impl_cpu_" not implemented for \'Half\'')
    assert _unsupported_precision(error, "fp16") is not None
    assert "fp16 cannot run here" in str(_unsupported_precision(error, "fp16"))
    # The same words about another dtype, or an unrelated error, are a real failure.
    assert _unsupported_precision(error, "bf16") is None
    assert _unsupported_precision(RuntimeError("shape mismatch"), "fp16") is None
    assert _unsupported_precision(KeyError("not implemented for half"), "fp16") is None


# --- GPU cases on the stream simulator (tests/support/fake_cuda.py) --------------------------


GPU_KERNEL = """\
import torch

def setup():
    return {"scratch": torch.empty(2**20, dtype=torch.uint8, device="cuda")}

def run_benchmark(scratch):
    return torch.kernel()
"""


def gpu_job(tmp_path: Path, gpu_timing: str, **changes: Any) -> WorkerJob:
    """The job of GPU_KERNEL on the simulated CUDA device, timed in `gpu_timing`."""
    return dataclasses.replace(
        make_job(write_kernel(tmp_path, "gpu", GPU_KERNEL), framework="pytorch",
                 backend="cuda", warmup_time_s=0.0), gpu_timing=gpu_timing, **changes)


@pytest.fixture
def simulated_gpu(monkeypatch: pytest.MonkeyPatch) -> Any:
    """`torch` is the simulator (kernel 3 us, launch 5 us, sync 8 us) and NVML is absent."""
    from kernbench.measure.backends.torch_backend import TorchBackend
    from kernbench.measure.metrics import energy, gpu_state
    from support.fake_cuda import FakeDevice, fake_torch

    device = FakeDevice(launch_ns=5_000.0, sync_ns=8_000.0)
    torch = fake_torch(device)
    torch.kernel = device.kernel(3_000.0)
    torch.manual_seed = lambda seed: None
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(TorchBackend, "_torch", lambda self: torch)

    def no_nvml(name: str) -> Any:
        raise ImportError(f"no {name} here")
    monkeypatch.setattr(energy, "import_optional", no_nvml)
    monkeypatch.setattr(gpu_state, "_load_nvml", lambda nvml: no_nvml("pynvml"))
    return device


@pytest.mark.parametrize(("mode", "figure_ns"), [
    ("cold", 3_000.0), ("hot", 5_000.0), ("graph", 3_000.0), ("kernel", 3_000.0),
    ("sync", 16_000.0)])
def test_a_gpu_case_is_timed_in_the_requested_mode(tmp_path: Path, simulated_gpu: Any,
                                                   mode: str, figure_ns: float) -> None:
    job = gpu_job(tmp_path, mode)
    reply = run_job(job)
    assert reply.status == "ok", reply.reason
    assert reply.samples_ns is not None and set(reply.samples_ns) == {figure_ns}
    assert reply.gpu_timing is not None
    assert reply.gpu_timing["primary"] == mode
    assert reply.gpu_timing["modes"][mode]["mode"] == mode
    assert reply.timer == "cuda_event"
    assert reply.l2_flush is True
    # The flush buffer was allocated before the peak was reset and is not the kernel's:
    # the 1 MiB its setup allocated is.
    assert reply.memory is not None and reply.memory["allocated_mb"] == 1.0
    assert reply.energy is not None and reply.energy["energy_j"] is None
    assert reply.energy["reason"].startswith("NVML not available")


def test_all_modes_in_one_gpu_case(tmp_path: Path, simulated_gpu: Any) -> None:
    job = gpu_job(tmp_path, "all")
    reply = run_job(job)
    assert reply.status == "ok", reply.reason
    assert reply.gpu_timing is not None
    modes = reply.gpu_timing["modes"]
    assert {name: set(m["samples_us"]) for name, m in modes.items()} == {
        "cold": {3.0}, "hot": {5.0}, "graph": {3.0}, "graph_cold": {3.0}, "kernel": {3.0},
        "sync": {16.0}, "kernel_sync_flush": {3.0}}
    assert reply.gpu_timing["primary"] == "cold"


def test_kernel_mode_without_a_profiler_skips_the_case_with_the_reason(
        tmp_path: Path, simulated_gpu: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """No figure stands in for the kernels' device time: the case is not timed, and says why;
    the mode's record is null with the same reason."""
    monkeypatch.delattr(sys.modules["torch"], "profiler")
    job = gpu_job(tmp_path, "kernel")
    reply = run_job(job)
    assert reply.status == "skipped"
    assert reply.reason is not None
    assert reply.reason.startswith("not timed: kernel mode: torch.profiler failed: ")
    assert reply.samples_ns == ()
    assert reply.gpu_timing is not None
    kernel = reply.gpu_timing["modes"]["kernel"]
    assert kernel["mode"] == "kernel" and kernel["samples_us"] == []
    assert reply.reason == f"not timed: kernel mode: {kernel['reason']}"


def test_a_gpu_without_a_bus_id_on_a_two_gpu_machine_reads_no_nvml(
        tmp_path: Path, simulated_gpu: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Index 0 may be another GPU: state, throttle guard and energy are null with the reason."""
    from kernbench.measure.backends.torch_backend import TorchBackend
    from kernbench.measure.metrics import energy, gpu_state

    class TwoGpus:
        def nvmlInit(self) -> None:
            return None

        def nvmlShutdown(self) -> None:
            return None

        def nvmlDeviceGetCount(self) -> int:
            return 2

        def nvmlDeviceGetHandleByIndex(self, index: int) -> object:
            raise AssertionError(f"NVML read at index {index}")

    monkeypatch.setattr(TorchBackend, "pci_bus_id", lambda self, backend: None)
    monkeypatch.setattr(gpu_state, "_load_nvml", lambda nvml: TwoGpus())
    monkeypatch.setattr(energy, "import_optional", lambda name: TwoGpus())
    job = gpu_job(tmp_path, "cold")
    reply = run_job(job)
    assert reply.status == "ok", reply.reason
    why = ("NVML not read: the PCI bus id of the GPU that ran the case is unknown and NVML "
           "sees 2 GPUs, so index 0 may be another one")
    assert reply.gpu_state == {"before": {"source": None, "reason": why},
                               "after": {"source": None, "reason": why}}
    assert reply.energy is not None and reply.energy["energy_j"] is None
    assert reply.energy["reason"] == why


def test_a_gpu_case_lets_go_of_every_nvml_init_it_made(
        tmp_path: Path, simulated_gpu: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The device lookup, the state reads and the throttle guard each undo their nvmlInit
    (NVML counts them); energy is left out here (its meter keeps NVML by design)."""
    from kernbench.measure.backends.torch_backend import TorchBackend
    from kernbench.measure.metrics import gpu_state
    from support.nvml import OneGpuNVML

    nvml = OneGpuNVML()
    monkeypatch.setattr(TorchBackend, "pci_bus_id", lambda self, backend: None)
    monkeypatch.setattr(gpu_state, "_load_nvml", lambda module: nvml)
    job = gpu_job(tmp_path, "cold")
    reply = run_job(job)
    assert reply.status == "ok", reply.reason
    assert reply.gpu_state is not None and reply.gpu_state["before"]["source"] == "nvml"
    assert nvml.open == 0


JAX_GPU_KERNEL = """\
import torch

def setup():
    return {"scratch": torch.empty(2**20, dtype=torch.uint8, device="cuda")}

def run_benchmark(scratch):
    return torch.jax_call()
"""


def simulated_jax(device: Any) -> Any:
    """JAX's backend on the simulator: the host clock after block_until_ready, a device whose
    memory_stats() are the simulator's allocator, and a 512 MiB flush whose jitted touch
    makes a transient copy (as XLA does where it cannot honour the donation)."""
    from kernbench.measure.backends.jax_backend import JaxBackend
    from kernbench.measure.backends.other_gpu import JaxClock
    from kernbench.measure.gpu_timing import Flush
    from support.fake_cuda import FakeArray, FakeBuffer

    class SimulatedJax(JaxBackend):
        def unavailable_reason(self, backend: str) -> str | None:
            return None

        def _gpu(self) -> Any:
            def memory_stats() -> dict[str, int]:
                return {"peak_bytes_in_use": device.peak, "bytes_in_use": device.allocated}
            return SimpleNamespace(memory_stats=memory_stats, local_hardware_id=None)

        def gpu_clock(self, backend: str) -> Any:
            return JaxClock(lambda array: array.block_until_ready(),
                            now=lambda: int(device.host_ns))

        def l2_flush(self, backend: str) -> Any:
            size = 512 * 2**20
            FakeBuffer(device, size)

            def touch() -> object:
                device.allocate(size)  # the copy a donated jit would not make
                device.launch(device.flush_ns, name="flush")
                device.allocated -= size
                return FakeArray(device)
            return Flush(size, touch)

        def describe(self, backend: str) -> dict[str, Any]:
            return {"framework": "jax", "device": "gpu"}
    return SimulatedJax()


def test_jax_memory_is_read_after_warm_up_before_the_flush_buffer_exists(
        tmp_path: Path, simulated_gpu: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """JAX cannot reset its peak: the kernel's 1 MiB is read before the 512 MiB buffer (and
    any copy its flush makes) exists; the old subtraction reported 513 MiB here."""
    from kernbench.execution import worker
    from support.fake_cuda import jax_kernel

    sys.modules["torch"].jax_call = jax_kernel(simulated_gpu, 3_000.0)
    monkeypatch.setattr(worker, "backend_for", lambda framework: simulated_jax(simulated_gpu))
    job = dataclasses.replace(
        make_job(write_kernel(tmp_path, "gpu", JAX_GPU_KERNEL), framework="jax",
                 backend="cuda", warmup_time_s=0.0), gpu_timing="cold")
    reply = run_job(job)
    assert reply.status == "ok", reply.reason
    assert reply.l2_flush is True and "flush" in simulated_gpu.log
    assert simulated_gpu.peak == 2 * 512 * 2**20 + 2**20  # the flush's copy was there
    assert reply.memory is not None
    assert reply.memory["peak_mb"] == 1.0 and reply.memory["allocated_mb"] == 1.0
    assert "before the L2 flush buffer was allocated" in reply.memory["source"]
    assert reply.gpu_timing is not None
    assert reply.gpu_timing["modes"]["cold"]["flush"] == {"bytes": 512 * 2**20, "per": "call"}


def test_no_l2_flush_leaves_the_gpu_cache_alone(tmp_path: Path, simulated_gpu: Any) -> None:
    job = gpu_job(tmp_path, "cold", flush_l2=False)
    reply = run_job(job)
    assert reply.status == "ok", reply.reason
    assert "flush" not in simulated_gpu.log
    assert reply.l2_flush is False
    assert reply.gpu_timing is not None
    assert reply.gpu_timing["modes"]["cold"]["flush"] == {"bytes": None, "per": "none"}


GPU_KERNEL_WITH_RESET = GPU_KERNEL + """
def reset(scratch):                     # untimed: 4 us of device work, one more launch
    return torch.reset_kernel()
"""


def run_with_reset(tmp_path: Path, device: Any, mode: str) -> WorkerReply:
    sys.modules["torch"].reset_kernel = device.kernel(4_000.0, name="reset")
    return run_job(dataclasses.replace(
        make_job(write_kernel(tmp_path, "gpu", GPU_KERNEL_WITH_RESET), framework="pytorch",
                 backend="cuda", warmup_time_s=0.0), gpu_timing=mode))


@pytest.mark.parametrize(("mode", "figure_ns"), [
    ("cold", 3_000.0), ("kernel", 3_000.0), ("sync", 16_000.0)])
def test_a_gpu_kernel_with_a_reset_is_timed_without_its_reset(
        tmp_path: Path, simulated_gpu: Any, mode: str, figure_ns: float) -> None:
    """The reset runs before every call, outside what is timed: the figures are those of the
    same kernel without one."""
    reply = run_with_reset(tmp_path, simulated_gpu, mode)
    assert reply.status == "ok", reply.reason
    assert reply.samples_ns is not None and set(reply.samples_ns) == {figure_ns}
    launched = [e for e in simulated_gpu.log if e in ("reset", "kernel")]
    assert launched == ["reset", "kernel"] * (len(launched) // 2) and launched


@pytest.mark.parametrize(("mode", "held"), [("hot", "event pair"), ("graph", "graph replay")])
def test_a_gpu_kernel_with_a_reset_in_a_back_to_back_mode_is_skipped_with_the_reason(
        tmp_path: Path, simulated_gpu: Any, mode: str, held: str) -> None:
    reply = run_with_reset(tmp_path, simulated_gpu, mode)
    assert reply.status == "skipped" and reply.samples_ns == ()
    assert reply.reason == (
        f"not timed: {mode} mode: a kernel with a `reset` cannot be timed in {mode} mode: one "
        f"{held} holds N calls back to back, with no untimed place for the reset between "
        "them; no figure")


def test_all_modes_of_a_gpu_kernel_with_a_reset(tmp_path: Path, simulated_gpu: Any) -> None:
    reply = run_with_reset(tmp_path, simulated_gpu, "all")
    assert reply.status == "ok", reply.reason
    assert reply.gpu_timing is not None and reply.gpu_timing["primary"] == "cold"
    modes = reply.gpu_timing["modes"]
    assert {name: set(m["samples_us"]) for name, m in modes.items()} == {
        "cold": {3.0}, "hot": set(), "graph": set(), "graph_cold": set(), "kernel": {3.0},
        "sync": {16.0}, "kernel_sync_flush": {3.0}}
    assert all("`reset`" in modes[name]["reason"] for name in ("hot", "graph", "graph_cold"))
    assert reply.energy is not None and "includes_reset" not in reply.energy  # NVML is absent
