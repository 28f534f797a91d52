"""Integration tests of the metrics, end to end through ``kernbench.cli.main.main`` on temporary
kernel trees: accuracy against reference() and against a bench.yaml reference case, work
counts and roofline figures, energy, memory, measurement warnings and the timing record.

Every run passes ``--no-cpu-peak`` or a temporary ``--cache-dir``, so nothing is written to
the home directory.
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kernbench.cli.main import main
from kernbench.measure.environment import collect_environment
from kernbench.measure.metrics.energy import POWERCAP_ROOT, rapl_packages
from kernbench.measure.metrics.peaks import cpu_peak_path
from kernbench.results.fingerprint import machine_fingerprint
from support.kernel_tree import FAST

MIB = 150  # what the memory kernel allocates per call


# -- helpers ---------------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def kernel(root: Path, name: str, source: str, bench: str | None = None) -> Path:
    """kernels/<name>/<name>.py, with a bench.yaml beside it when given."""
    path = write(root / "kernels" / name / f"{name}.py", source)
    if bench is not None:
        write(path.with_name("bench.yaml"), bench)
    return path


class Run:
    """One `kernbench run` through the CLI, and the reports it wrote."""

    def __init__(self, code: int, out: Path) -> None:
        self.code = code
        self.out = out
        self.summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
        self.results: list[dict[str, Any]] = self.summary["results"]

    def record(self, name: str, precision: str | None = None) -> dict[str, Any]:
        found = [r for r in self.results if r["kernel_name"] == name
                 and (precision is None or r["precision"] == precision)]
        assert len(found) == 1, [(r["kernel_name"], r["precision"]) for r in self.results]
        return found[0]

    def kernel_file(self, name: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads((self.out / "kernels" / f"{name}.json").read_text())
        return document

    @property
    def markdown(self) -> str:
        return (self.out / "summary.md").read_text()


def run(tmp_path: Path, *args: str, cache_dir: Path | None = None) -> Run:
    """`kernbench run` over tmp_path/repo; no CPU peak unless a cache folder is given."""
    out = tmp_path / "out"
    peak = ("--cache-dir", str(cache_dir)) if cache_dir else ("--no-cpu-peak",)
    code = main(["run", "--root", str(tmp_path / "repo"), "--output-dir", str(out), "-q",
                 *FAST, *peak, *args])
    return Run(code, out)


def codes(record: dict[str, Any]) -> list[str]:
    return [w["code"] for w in record["warnings"]]


# -- kernel sources --------------------------------------------------------------------------

NO_REFERENCE = """
import numpy as np

def run_benchmark():
    return np.ones(4, dtype=np.float32) * 2
"""

NAN_OUTPUT = """
import numpy as np

def run_benchmark():
    out = np.arange(8, dtype=np.float64)
    out[3] = np.nan
    return out

def reference():
    return np.arange(8, dtype=np.float64) + 1e-3
"""

# Inputs are drawn in fp64 and rounded to the case's precision; reference() multiplies the
# unrounded fp64 inputs with NumPy.
TORCH_MATMUL = """
import numpy as np
import torch

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "fp64": torch.float64}

def inputs(n):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, n)), rng.standard_normal((n, n))

def setup(n, precision):
    a, b = inputs(n)
    return {"a": torch.from_numpy(a).to(DTYPES[precision]),
            "b": torch.from_numpy(b).to(DTYPES[precision])}

def run_benchmark(a, b):
    return a @ b

def reference(a, b):
    a64, b64 = inputs(a.shape[0])
    return a64 @ b64
"""

JAX_MATMUL = """
import jax.numpy as jnp
import numpy as np

DTYPES = {"fp32": jnp.float32, "bf16": jnp.bfloat16}

def inputs(n):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, n)), rng.standard_normal((n, n))

def setup(n, precision):
    a, b = inputs(n)
    return {"a": jnp.asarray(a, dtype=DTYPES[precision]),
            "b": jnp.asarray(b, dtype=DTYPES[precision])}

def run_benchmark(a, b):
    return jnp.dot(a, b)

def reference(a, b):
    a64, b64 = inputs(a.shape[0])
    return a64 @ b64
"""

# A tuple holding an array and a dict; the reference's dict lists its keys in another order.
CONTAINERS = """
import numpy as np

X = np.linspace(0.0, 1.0, 6)

def run_benchmark():
    sq = X ** 2
    sq[2] += {offset}
    return (X[:{length}] * 2, {{"sum": X.sum(), "sq": sq}})

def reference():
    return (X * 2, {{"sq": X ** 2, "sum": X.sum()}})
"""

NUMPY_MATMUL = """
import numpy as np

DTYPES = {{"fp32": np.float32, "fp64": np.float64}}

def setup(n, precision):
    if precision == "fp64" and {fail_fp64}:
        raise RuntimeError("no fp64 kernel here")
    rng = np.random.default_rng(0)
    return {{"a": rng.standard_normal((n, n)).astype(DTYPES[precision])}}

def run_benchmark(a):
    return a @ a
"""

WORK_FUNCTIONS = """
import numpy as np

def setup(n, precision):
    return {"a": np.ones((n, n), dtype={"fp32": np.float32, "fp64": np.float64}[precision])}

def run_benchmark(a):
    return a @ a

def flops(n):
    return 2 * n ** 3

def bytes_moved(n, precision):
    return {"fp32": 4, "fp64": 8}[precision] * 3 * n * n
"""

WORK_FORMULAS = """
import numpy as np

def setup(n, precision):
    return {"a": np.ones((n, n), dtype={"fp32": np.float32, "fp64": np.float64}[precision])}

def run_benchmark(a):
    return a @ a
"""

WORK_YAML = """
problem_size: {n: 48}
precisions: [fp32, fp64]
work: {flops: "2*n**3", bytes: "itemsize*3*n*n"}
"""

ALLOCATES = f"""
import numpy as np

def setup():
    return {{}}

def run_benchmark():
    block = np.ones({MIB} * 2**20 // 8)  # {MIB} MiB of float64, every page written
    return float(block[::4096].sum())
"""

# Every call sleeps 2 ms, the first two 50 ms: with --warmup 0 the first call is the inner
# loop's calibration call (any call outlasts the calibration target, so the loop is 1 call) and
# the second is the first timed sample.
SLOW_START = """
import time

CALLS = [0]

def run_benchmark():
    CALLS[0] += 1
    time.sleep(0.05 if CALLS[0] <= {slow_calls} else 0.002)
    return 1.0
"""


# -- accuracy ---------------------------------------------------------------------------------


def test_nan_in_the_output_fails_the_accuracy_check(tmp_path: Path) -> None:
    kernel(tmp_path / "repo", "nan", NAN_OUTPUT)
    result = run(tmp_path)
    assert result.code == 1
    record = result.record("nan")
    accuracy = record["accuracy"]
    assert record["status"] == "failed" and record["success"] is False
    assert record["reason"].startswith("accuracy check failed")
    assert "NaN" in record["reason"]
    assert accuracy["passed"] is False
    assert accuracy["nan_count"] == 1
    assert accuracy["rmse"] == pytest.approx(1e-3)  # over the 7 finite positions
    assert accuracy["reference_source"] == "reference()"
    assert result.kernel_file("nan")["results"] == [record]


def test_kernel_without_reference_is_not_checked(tmp_path: Path) -> None:
    kernel(tmp_path / "repo", "plain", NO_REFERENCE)
    result = run(tmp_path)
    assert result.code == 0
    accuracy = result.record("plain")["accuracy"]
    assert accuracy["passed"] is None
    assert accuracy["reason"].startswith("not checked: ")
    assert accuracy["rmse"] is None and accuracy["relative_error"] is None


@pytest.mark.parametrize(("source", "low", "dtype"), [
    pytest.param(TORCH_MATMUL, "fp16", "float16", id="torch-fp16"),
    pytest.param(JAX_MATMUL, "bf16", "bfloat16", id="jax-bf16"),
])
def test_lower_precision_has_larger_error_and_obeys_explicit_tolerances(
        tmp_path: Path, source: str, low: str, dtype: str) -> None:
    pytest.importorskip("torch" if source is TORCH_MATMUL else "jax")  # else: skipped cases
    root = tmp_path / "repo"
    bench = f"problem_size: {{n: 64}}\nprecisions: [fp32, {low}]\nbackends: [cpu]\n"
    kernel(root, "loose", source, bench)
    kernel(root, "tight", source, bench + f"tolerances: {{{low}: {{relative_error: 1.0e-9}}}}\n")
    result = run(tmp_path)
    assert result.code == 1  # the tight low-precision case fails

    fp32, lower = result.record("loose", "fp32"), result.record("loose", low)
    for record in (fp32, lower):
        assert record["status"] == "ok", record["reason"]
        assert record["accuracy"]["passed"] is True
        assert record["accuracy"]["reference_source"] == "reference()"
        assert isinstance(record["accuracy"]["relative_error"], float)
    # the framework's arrays were converted to NumPy and compared with the fp64 reference
    assert lower["output"]["precision"] == low
    assert lower["accuracy"]["dtype"] == {"output": [dtype], "reference": ["float64"]}
    assert 0 < fp32["accuracy"]["relative_error"] < 1e-5
    assert lower["accuracy"]["relative_error"] > 10 * fp32["accuracy"]["relative_error"]

    tight32, tight_low = result.record("tight", "fp32"), result.record("tight", low)
    assert tight32["status"] == "ok" and tight32["accuracy"]["passed"] is True
    assert tight32["accuracy"]["tolerances"] == {"relative_error": 1e-5}  # defaults kept
    assert tight_low["status"] == "failed"
    assert tight_low["accuracy"]["passed"] is False
    assert tight_low["accuracy"]["exceeded"] == ["relative_error"]
    assert tight_low["reason"].startswith("accuracy check failed: relative_error")


def test_outputs_are_compared_leaf_by_leaf_through_tuples_and_dicts(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    kernel(root, "same", CONTAINERS.format(offset=0.0, length=6))
    kernel(root, "off", CONTAINERS.format(offset=0.5, length=6))
    kernel(root, "short", CONTAINERS.format(offset=0.0, length=5))
    result = run(tmp_path)
    assert result.code == 1

    same = result.record("same")
    assert same["status"] == "ok"
    assert same["accuracy"]["passed"] is True
    assert same["accuracy"]["leaves"] == 3
    assert same["accuracy"]["elements"] == 6 + 1 + 6
    assert same["accuracy"]["max_error"] == 0.0

    off = result.record("off")  # one element of the dict leaf "sq" is off by 0.5
    assert off["status"] == "failed"
    assert off["accuracy"]["max_error"] == pytest.approx(0.5)
    assert off["accuracy"]["passed"] is False

    short = result.record("short")
    mismatch = short["accuracy"]["mismatch"]
    assert short["status"] == "failed"
    assert short["accuracy"]["passed"] is False
    assert mismatch and "(5,) vs (6,)" in mismatch
    assert short["reason"] == f"accuracy check failed: {mismatch}"
    assert short["accuracy"]["rmse"] is None


def test_case_precision_sets_the_tolerance_not_the_output_dtype(tmp_path: Path) -> None:
    """A kernel asked for fp64 that silently computes and returns fp32 must fail the fp64
    tolerance (1e-9), as kernbench.measure.metrics.accuracy documents."""
    source = """
    import numpy as np

    def setup(n, precision):
        assert precision == "fp64"      # it reads its precision, then ignores it
        rng = np.random.default_rng(0)
        return {"a": rng.standard_normal((n, n))}

    def run_benchmark(a):
        return a.astype(np.float32) @ a.astype(np.float32)

    def reference(a):
        return a @ a
    """
    kernel(tmp_path / "repo", "sloppy", source, "problem_size: {n: 32}\nprecisions: [fp64]\n")
    result = run(tmp_path)
    record = result.record("sloppy", "fp64")
    assert record["accuracy"]["relative_error"] > 1e-9
    assert record["accuracy"]["tolerances"] == {"relative_error": 1e-9}
    assert record["accuracy"]["passed"] is False
    assert record["status"] == "failed"
    assert result.code == 1


# -- bench.yaml reference case ---------------------------------------------------------------

REFERENCE_YAML = "problem_size: {n: 32}\nprecisions: [fp32, fp64]\nreference: {precision: fp64}\n"


def test_reference_case_runs_first_and_the_others_compare_with_it(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    kernel(root, "ref", NUMPY_MATMUL.format(fail_fp64=False), REFERENCE_YAML)
    kernel(root, "badref", NUMPY_MATMUL.format(fail_fp64=True), REFERENCE_YAML)
    result = run(tmp_path)
    assert result.code == 1  # badref's fp64 case failed

    order = [(r["kernel_name"], r["precision"]) for r in result.results]
    assert order.index(("ref", "fp64")) < order.index(("ref", "fp32"))
    assert order.index(("badref", "fp64")) < order.index(("badref", "fp32"))

    reference, fp32 = result.record("ref", "fp64"), result.record("ref", "fp32")
    assert reference["status"] == "ok"
    assert reference["accuracy"]["passed"] is None
    assert "reference" in reference["accuracy"]["reason"]
    assert fp32["status"] == "ok"
    assert fp32["accuracy"]["passed"] is True
    assert "reference case" in fp32["accuracy"]["reference_source"]
    assert "fp64" in fp32["accuracy"]["reference_source"]
    assert 0 < fp32["accuracy"]["relative_error"] < 1e-5
    assert fp32["accuracy"]["dtype"] == {"output": ["float32"], "reference": ["float64"]}

    broken, orphan = result.record("badref", "fp64"), result.record("badref", "fp32")
    assert broken["status"] == "failed" and "no fp64 kernel here" in broken["reason"]
    assert orphan["status"] == "ok"
    assert orphan["accuracy"]["passed"] is None
    assert orphan["accuracy"]["reason"].startswith("not checked: reference case")
    assert "no fp64 kernel here" in orphan["accuracy"]["reason"]


def test_reference_case_is_computed_on_demand_when_not_selected(tmp_path: Path) -> None:
    kernel(tmp_path / "repo", "ref", NUMPY_MATMUL.format(fail_fp64=False), REFERENCE_YAML)
    result = run(tmp_path, "--precision", "fp32")
    assert result.code == 0
    assert [(r["kernel_name"], r["precision"]) for r in result.results] == [("ref", "fp32")]
    accuracy = result.record("ref", "fp32")["accuracy"]
    assert accuracy["passed"] is True
    assert "reference case" in accuracy["reference_source"]
    assert 0 < accuracy["relative_error"] < 1e-5


# -- work and roofline -----------------------------------------------------------------------


def make_work_tree(root: Path) -> None:
    kernel(root, "byfunc", WORK_FUNCTIONS, "problem_size: {n: 40}\nprecisions: [fp32, fp64]\n")
    kernel(root, "byyaml", WORK_FORMULAS, WORK_YAML)


def test_work_counts_and_rates_on_the_fake_clock(tmp_path: Path) -> None:
    make_work_tree(tmp_path / "repo")
    result = run(tmp_path, "--debug-fake-timer", "2")
    assert result.code == 0
    for name, n, source in (("byfunc", 40, "flops()"), ("byyaml", 48, "bench.yaml work.flops")):
        for precision, itemsize in (("fp32", 4), ("fp64", 8)):
            record = result.record(name, precision)
            work = record["work"]
            assert record["timing"]["latency_ms_p50"] == 2.0
            assert work["flops"] == 2 * n**3
            assert work["bytes"] == itemsize * 3 * n * n
            assert work["flops_source"].startswith(source)
            assert work["gflops_per_s"] == pytest.approx(2 * n**3 / 2e-3 / 1e9, rel=1e-12)
            assert work["gb_per_s"] == pytest.approx(itemsize * 3 * n * n / 2e-3 / 1e9,
                                                     rel=1e-12)
            assert work["arithmetic_intensity"] == pytest.approx(2 * n / (3 * itemsize))
            assert work["pct_peak_compute"] is None and work["peak_reason"]


def test_no_cpu_peak_leaves_percent_of_peak_out(tmp_path: Path) -> None:
    make_work_tree(tmp_path / "repo")
    result = run(tmp_path, "--filter", "byyaml", "--precision", "fp32")
    record = result.record("byyaml", "fp32")
    work = record["work"]
    p50_s = record["timing"]["latency_ms_p50"] / 1e3
    assert work["gflops_per_s"] == pytest.approx(work["flops"] / p50_s / 1e9, rel=1e-9)
    assert work["pct_peak_compute"] is None
    assert work["pct_peak_bandwidth"] is None
    assert "peak" in work["peak_reason"]


def test_cached_cpu_peak_is_used_without_probing(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    make_work_tree(root)
    cache = tmp_path / "cache"
    fingerprint = machine_fingerprint(collect_environment(root.resolve(), run_git=False))
    fake = {"kind": "cpu", "fingerprint": fingerprint, "source": "fake peak for the test",
            "memory_bandwidth_gbs": 123.0, "gflops": {"fp32": 1000.0, "fp64": 500.0}}
    path = cpu_peak_path(cache, fingerprint)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(fake))
    before = path.read_text()

    result = run(tmp_path, "--filter", "byyaml", cache_dir=cache)
    assert result.code == 0
    assert result.summary["environment"]["fingerprint"] == fingerprint
    for precision, peak in (("fp32", 1000.0), ("fp64", 500.0)):
        work = result.record("byyaml", precision)["work"]
        assert work["peak_gflops_per_s"] == peak
        assert work["peak_source"] == "fake peak for the test"
        assert work["pct_peak_compute"] == pytest.approx(100 * work["gflops_per_s"] / peak,
                                                         rel=1e-12)
        assert work["pct_peak_bandwidth"] == pytest.approx(100 * work["gb_per_s"] / 123.0,
                                                           rel=1e-12)
        assert work["ridge_point"] == pytest.approx(peak / 123.0)
        assert "peak_reason" not in work
    assert path.read_text() == before  # the probe never ran: the cache was not rewritten
    assert sorted(p.name for p in cache.iterdir()) == [path.name]


def test_unsafe_work_formula_makes_the_kernel_invalid(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    bench = "work: {flops: \"__import__('pathlib').Path('PWNED').touch()\"}\n"
    kernel(tmp_path / "repo", "evil", NO_REFERENCE, bench)
    result = run(tmp_path)
    assert result.code == 2
    record = result.record("evil")
    assert record["status"] == "invalid"
    assert "bench.yaml" in record["reason"]
    assert "work.flops" in record["reason"]
    assert not (tmp_path / "PWNED").exists()


# -- energy, memory, warnings, timing --------------------------------------------------------


def test_energy_is_never_estimated(tmp_path: Path) -> None:
    kernel(tmp_path / "repo", "plain", NO_REFERENCE)
    energy = run(tmp_path).record("plain")["energy"]
    if rapl_packages(POWERCAP_ROOT):
        assert energy["energy_j"] is None or energy["energy_j"] > 0
    else:
        assert energy["energy_j"] is None
        assert energy["power_w"] is None
        assert "RAPL" in energy["reason"]

    fake = run(tmp_path, "--debug-fake-timer", "2").record("plain")["energy"]
    assert fake["energy_j"] is None
    assert "fake clock" in fake["reason"]


def test_peak_memory_covers_the_kernels_allocations(tmp_path: Path) -> None:
    kernel(tmp_path / "repo", "alloc", ALLOCATES)
    memory = run(tmp_path).record("alloc")["memory"]
    assert memory["allocated_mb"] == pytest.approx(memory["peak_mb"] - memory["rss_start_mb"])
    assert memory["allocated_mb"] == pytest.approx(MIB, rel=0.10)
    assert "python_peak_mb" not in memory


def test_trace_memory_adds_python_peak_and_a_warning(tmp_path: Path) -> None:
    kernel(tmp_path / "repo", "alloc", ALLOCATES)
    record = run(tmp_path, "--trace-memory").record("alloc")
    assert record["memory"]["python_peak_mb"] == pytest.approx(MIB, rel=0.10)
    assert "tracemalloc" in codes(record)


def test_slow_first_sample_is_warned_about(tmp_path: Path) -> None:
    kernel(tmp_path / "repo", "slow", SLOW_START.format(slow_calls=3))
    result = run(tmp_path, "--warmup", "0", "--warmup-time", "0")
    record = result.record("slow")
    assert record["timing"]["inner_loops"] == 1
    assert "slow_first_sample" in codes(record)
    markdown = result.markdown
    assert "## Measurement Warnings" in markdown
    section = markdown.split("## Measurement Warnings", 1)[1].split("\n## ", 1)[0]
    assert "the first sample took" in section


def test_timing_record_has_warmup_and_timer_resolution(tmp_path: Path) -> None:
    kernel(tmp_path / "repo", "plain", NO_REFERENCE)
    timing = run(tmp_path, "--warmup", "3").record("plain")["timing"]
    assert len(timing["warmup_ms"]) == 3
    assert timing["warmup_iterations"] == 3
    assert all(w > 0 for w in timing["warmup_ms"])
    assert timing["timer"] == "perf_counter_ns"
    assert isinstance(timing["timer_resolution_ns"], float)
    assert 0 < timing["timer_resolution_ns"] < 1e6
    assert not math.isnan(timing["timer_overhead_ns"])
