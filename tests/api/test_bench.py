"""kernbench.bench: a live function under the run's protocol, in this process or forked."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

import kernbench
import kernbench.api.display
from kernbench.api.bench import BenchOptions
from kernbench.errors import KernbenchError
from kernbench.measure.precision import dtype_for


def test_bench_measures_in_process_with_the_protocol() -> None:
    calls: list[int] = []

    def kernel(x: np.ndarray) -> np.ndarray:
        calls.append(1)
        return x * 2

    shown = kernbench.bench(kernel, np.ones(64, dtype=np.float32), iterations=7, warmup=2)
    case = shown.case
    assert shown.n == 7 and all(s > 0 for s in case.samples_ms)
    assert len(calls) >= 2 + 7 * case.inner_loops  # warmup, calibration, then the samples
    assert (case.precision, case.framework, case.backend) == ("fp32", "numpy", "cpu")
    assert case.kernel_name.endswith("kernel") and case.worker["pid"] == os.getpid()
    assert case.energy["energy_j"] is None and "not measured" in case.energy["reason"]
    assert "median" in repr(shown)


@pytest.mark.parametrize("processes", [1, 2])  # 2: replicates merged into one result
def test_a_result_cannot_be_changed_and_still_writes_and_pickles(processes: int) -> None:
    """A frozen result whose mappings were dicts: `memory["peak_mb"] = 0` changed the record,
    and the energy block, one dict shared by every result, changed all later ones too."""
    import copy
    import json
    import pickle

    import orjson

    shown = kernbench.bench(len, "abc", iterations=3, processes=processes,
                            isolation="fork" if processes > 1 else "none")
    case = shown.case
    for block in (case.memory, case.energy, case.accuracy, case.output, case.worker):
        with pytest.raises(TypeError, match="read-only"):
            block["peak_mb"] = 0  # type: ignore[index]
    with pytest.raises(TypeError, match="read-only"):
        case.energy.update(energy_j=1.0)  # type: ignore[attr-defined]
    assert kernbench.bench(len, "abc", iterations=3).case.energy["energy_j"] is None
    record = shown.record()
    assert json.loads(json.dumps(record)) == json.loads(orjson.dumps(record))
    assert json.loads(json.dumps(case.memory)) == dict(case.memory)
    for again in (pickle.loads(pickle.dumps(shown)).case, copy.deepcopy(case)):
        assert again == case and dict(again.memory) == dict(case.memory)
        with pytest.raises(TypeError, match="read-only"):
            again.memory["peak_mb"] = 0  # type: ignore[index]


def test_warnings_name_the_knobs_of_kernbench_bench_not_the_cli_flags() -> None:
    """`only 5 samples; use --iters 10 or more` told a notebook user about a flag they do not
    have: kernbench.bench takes iterations= (and warmup=)."""
    shown = kernbench.bench(len, "abc", iterations=5)
    hints = [w["message"] for w in shown.record()["warnings"] if w["code"] == "too_few_samples"]
    assert hints == ["only 5 samples; use iterations=10 or more"]
    assert "iterations=10" in shown._repr_html_() and "--iters" not in shown._repr_html_()


def test_labels_and_keywords_go_where_they_belong() -> None:
    seen: dict[str, object] = {}

    def kernel(a: int, *, scale: int) -> int:
        seen.update(a=a, scale=scale)
        return a * scale

    shown = kernbench.bench(kernel, 3, scale=4, precision="bf16", name="mul", iterations=3)
    assert seen == {"a": 3, "scale": 4}
    assert shown.name == "mul[cpu,bf16]"


@pytest.mark.parametrize("isolation", ["none", "fork"])
def test_a_backend_label_off_the_gpu_is_kept(isolation: str) -> None:
    # A label of a device kernbench does not time as a GPU (mps, xpu, a CPU variant) names
    # the record, as it did before GPU functions were detected: it was recorded as "cpu".
    shown = kernbench.bench(len, "abc", backend="mps", iterations=2, isolation=isolation)
    assert shown.case.backend == "mps" and shown.name == "len[mps,native]"
    assert kernbench.bench(len, "abc", iterations=2).case.backend == "cpu"


def test_a_precision_label_must_be_a_known_precision_or_dtype_name() -> None:
    # "fp33" made a case id no saved run would ever match, silently.
    with pytest.raises(KernbenchError, match=r"precision must be one of fp64, .* not 'fp33'"):
        kernbench.bench(len, "abc", precision="fp33", iterations=2)
    for label, shown in (("int64", "int64"), ("native", "native"), ("float32", "fp32"),
                         ("fp8", "fp8_e4m3"), ("complex64", "complex64")):
        assert kernbench.bench(len, "abc", precision=label, iterations=2).case.precision == shown


@pytest.mark.parametrize("isolation", ["none", "fork"])
def test_the_function_reads_the_precision_label_as_a_kernel_would(isolation: str) -> None:
    """A kernel written for `kernbench run` asks current_precision() which dtype to use."""

    def kernel() -> np.ndarray:
        return np.zeros(4, dtype=dtype_for("numpy", str(kernbench.current_precision("fp64"))))

    def dtype(result: kernbench.BenchResult) -> str:
        return str(result.case.output["items"][0]["dtype"])  # type: ignore[index]

    labelled = kernbench.bench(kernel, precision="fp16", iterations=2, isolation=isolation)
    assert dtype(labelled) == "float16"
    native = kernbench.bench(kernel, precision="native", iterations=2, isolation=isolation)
    assert dtype(native) == "float64"
    assert kernbench.current_precision() is None  # only while it measured


def test_a_result_without_dtype_is_native() -> None:
    assert kernbench.bench(len, "abc", iterations=2).case.precision == "native"


def test_forked_processes_are_replicates() -> None:
    parent = os.getpid()
    shown = kernbench.bench(os.getpid, isolation="fork", processes=3, iterations=4)
    assert shown.case.process_sample_counts == (4, 4, 4)
    assert shown.case.worker["pid"] != parent and shown.case.worker["processes"] == 3


def test_forked_replicates_of_two_sessions_are_compared_pooled() -> None:
    """Replicates forked from one session share its layout and hash seed: within the session
    their spread is the noise, against another session's it is not."""
    def work() -> int:
        return sum(range(2000))

    first = kernbench.bench(work, isolation="fork", processes=3, iterations=5)
    second = kernbench.bench(work, isolation="fork", processes=3, iterations=5)
    assert first.case.worker["forked_from"] == second.case.worker["forked_from"]
    same = kernbench.compare(first, second).comparison
    assert same.method == "welch-log-process-medians" and same.processes == (3, 3)
    elsewhere = kernbench.api.display.BenchResult(dataclasses.replace(
        second.case, worker={**second.case.worker, "forked_from": "another session"}))
    across = kernbench.compare(first, elsewhere).comparison
    assert across.method == "mann-whitney-samples" and across.processes == (1, 1)
    assert across.note is not None and "forked from one Python session" in across.note
    assert "each side's processes were forked from one Python session" in across.note


def test_a_forked_exception_names_the_error() -> None:
    def broken() -> None:
        raise ValueError("bad input")

    with pytest.raises(KernbenchError, match="ValueError: bad input"):
        kernbench.bench(broken, isolation="fork")


def test_an_exception_in_process_propagates() -> None:
    with pytest.raises(ZeroDivisionError):
        kernbench.bench(lambda: 1 / 0)


@pytest.mark.parametrize(("values", "message"), [
    ({"iterations": 0}, "iterations must be an integer >= 1"),
    ({"iterations": 1_000_000}, "test.py: iterations must be at most 100000, not 1000000"),
    ({"warmup": -1}, "warmup must be an integer >= 0"),
    ({"isolation": "spawn"}, "isolation must be one of none, fork"),
    ({"processes": 2}, "processes=2 needs isolation='fork'"),
    ({"iters": 3, "speed": 1}, "unknown option\\(s\\) 'iters', 'speed'"),
    ({"isolation": "fork", "timeout_s": float("inf")},
     "test.py: timeout_s: expected a finite number of seconds > 0 and at most 604800"),
    ({"isolation": "fork", "timeout_s": 1e10}, "at most 604800 \\(one week\\), got 10000000000.0"),
])
def test_bad_options_are_named(values: dict[str, object], message: str) -> None:
    with pytest.raises(KernbenchError, match=message):
        BenchOptions.from_mapping(values, "test.py")


def test_the_timed_call_is_the_function_itself_or_a_partial_not_a_python_wrapper(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrapper frame cost ~50 ns a call: an empty function read 3.4x timeit's figure
    (1.0x without it), side by side in one process."""
    import functools

    import kernbench.api.bench as bench_module

    seen: list[object] = []
    real = bench_module._measure_once

    def spy(call: object, *rest: object) -> object:
        seen.append(call)
        return real(call, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(bench_module, "_measure_once", spy)

    def empty() -> None:
        return None

    kernbench.bench(empty, iterations=2, warmup=0)
    kernbench.bench(max, 1, 2, iterations=2, warmup=0)
    assert seen[0] is empty
    assert isinstance(seen[1], functools.partial) and seen[1]() == 2


def test_timeout_s_without_fork_is_refused_not_silently_ignored() -> None:
    with pytest.raises(KernbenchError, match="timeout_s needs isolation='fork'"):
        kernbench.bench(len, "abc", timeout_s=0.5, iterations=2, warmup=0)


@pytest.mark.parametrize(("keywords", "message"), [
    ({"alpha": 5}, "alpha must be a number > 0 and < 1"),
    ({"alpha": float("nan")}, "alpha must be a number > 0 and < 1"),
    ({"threshold": float("nan")}, "threshold must be a finite number > 0"),
    ({"threshold": -1}, "threshold must be a finite number > 0"),
    ({"threshold": True}, "threshold must be a finite number > 0"),  # not 100 %
])
def test_compare_refuses_an_alpha_or_threshold_that_makes_no_verdict(
        keywords: dict[str, float], message: str) -> None:
    one = kernbench.bench(len, "abc", iterations=3, warmup=0)
    with pytest.raises(KernbenchError, match=message):
        kernbench.compare(one, one, **keywords)  # type: ignore[arg-type]


def test_a_first_argument_that_is_not_callable_is_a_clear_error() -> None:
    with pytest.raises(KernbenchError, match="must be the function to time, not int 42"):
        kernbench.bench(42)  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [lambda: (i for i in range(10)), lambda: map(abs, range(10))],
                         ids=["generator", "map"])
def test_a_lazy_result_is_refused_as_kernbench_run_fails_it(make: object) -> None:
    """It timed the creation of a generator and reported nanoseconds for any work."""
    with pytest.raises(KernbenchError, match="the function returned a lazy "):
        kernbench.bench(make, iterations=5)  # type: ignore[arg-type]


def test_a_coroutine_is_refused_without_a_never_awaited_warning() -> None:
    import asyncio
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(KernbenchError, match="the function returned a coroutine"):
            kernbench.bench(asyncio.sleep, 0, iterations=5)


def test_fork_after_jax_started_its_backend_is_refused_before_forking() -> None:
    """The forked child waited forever on the backend's threads (a timeout, or a hang). In a
    process of its own: JAX's backend, once started, stays started."""
    import subprocess
    import sys

    pytest.importorskip("jax")
    code = ("import jax, jax.numpy as jnp, kernbench\n"
            "double = jax.jit(lambda a: a * 2); x = jnp.ones(4); double(x).block_until_ready()\n"
            "try:\n"
            "    kernbench.bench(double, x, isolation='fork', iterations=3, timeout_s=20)\n"
            "except kernbench.KernbenchError as exc:\n"
            "    print(exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert "isolation='fork' after JAX has started its backend" in done.stdout, done.stderr
