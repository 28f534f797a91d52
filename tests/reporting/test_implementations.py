"""Several implementations of one kernel: bench.yaml `implementations`, planning, input
conversion, torch.compile facts, the side-by-side tables, and end-to-end runs of the CLI."""

from __future__ import annotations

import math
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernbench.config.loading import bench_config_from_data
from kernbench.discovery.scan import KernelDiscovery
from kernbench.errors import ConfigError
from kernbench.execution.planning import plan_cases
from kernbench.execution.references import reference_key as _reference_key
from kernbench.execution.settings import RunSettings
from kernbench.measure.compiling import DynamoCounts, compile_record
from kernbench.measure.convert import to_framework
from kernbench.reporting.implementations import implementation_tables
from kernbench.results.model import BenchConfig, Case, KernelSpec, case_id_of, point_of
from support.kernel_tree import kernbench, load

IMPLS = {"ref": {"function": "f_ref", "framework": "numpy"},
         "fast": {"function": "f_fast", "framework": "numpy"},
         "torch": {"function": "f_torch", "framework": "pytorch",
                   "compile": {"mode": "max-autotune"}}}


def config(**values: object) -> BenchConfig:
    return bench_config_from_data(values, "k/bench.yaml")


def error_of(**values: object) -> str:
    with pytest.raises(ConfigError) as caught:
        config(**values)
    return str(caught.value)


# -- bench.yaml ---------------------------------------------------------------------------


def test_implementations_keep_their_order_and_the_first_is_the_reference() -> None:
    cfg = config(implementations=IMPLS)
    assert [i.name for i in cfg.implementations] == ["ref", "fast", "torch"]
    assert cfg.reference_implementation == "ref"
    torch_impl = cfg.implementations[2]
    assert (torch_impl.function, torch_impl.framework) == ("f_torch", "pytorch")
    assert torch_impl.compile == {"mode": "max-autotune"}
    assert cfg.implementations[0].compile is None and cfg.implementations[0].setup is None


def test_reference_implementation_can_be_named() -> None:
    cfg = config(implementations=IMPLS, reference={"implementation": "fast"})
    assert cfg.reference_implementation == "fast"


@pytest.mark.parametrize(("values", "key", "words"), [
    ({"implementations": IMPLS, "reference": {"implementation": "slow"}},
     "reference.implementation", "one of the implementations (ref, fast, torch)"),
    ({"reference": {"implementation": "ref"}}, "reference.implementation",
     "this bench.yaml defines no `implementations`"),
    ({"implementations": {"np": {"function": "f", "framework": "numpy",
                                 "compile": {"mode": "default"}}}},
     "implementations.np.compile", "on a pytorch implementation only"),
    ({"implementations": {"t": {"function": "f", "compile": {"mode": "fastest"}}}},
     "implementations.t.compile.mode", "one of default, reduce-overhead"),
    ({"implementations": {"a b": {"function": "f"}}}, "implementations",
     "an implementation name of letters"),
    ({"implementations": {"a": {"framework": "numpy"}}}, "implementations.a.function",
     "this key to be present"),
    ({"implementations": {"a": {"function": "f()"}}}, "implementations.a.function",
     "an identifier"),
    ({"implementations": {}}, "implementations", "at least 1 key"),
])
def test_bad_implementations_name_the_key(values: dict[str, Any], key: str, words: str) -> None:
    message = error_of(**values)
    assert f"key '{key}'" in message and words in message, message


def write_kernel(root: Path, yaml: str, source: str, name: str = "k") -> Path:
    folder = root / "kernels" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bench.yaml").write_text(textwrap.dedent(yaml), encoding="utf-8")
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def test_discovery_resolves_frameworks_and_backends_and_checks_functions(tmp_path: Path) -> None:
    write_kernel(tmp_path, """
        backends: [cpu, cuda]
        implementations:
          np: {function: f_np, framework: numpy}
          tc: {function: f_tc, framework: pytorch}
    """, "def f_np(x): return x\ndef f_tc(x): return x\n")
    write_kernel(tmp_path, """
        implementations:
          np: {function: f_np, framework: numpy}
          gone: {function: f_gone, framework: numpy, setup: setup_gone}
    """, "def f_np(x): return x\n", name="broken")
    specs = {s.name: s for s in KernelDiscovery(tmp_path).discover()}
    k = specs["k"]
    assert k.status == "ok" and k.framework == "mixed" and k.function_name == "f_np"
    assert k.config is not None
    assert [(i.framework, i.backends) for i in k.config.implementations] == [
        ("numpy", ("cpu",)), ("pytorch", ("cpu", "cuda"))]
    assert specs["broken"].status == "invalid"
    assert specs["broken"].error == (
        "kernels/broken/bench.yaml: key 'implementations.gone.function': expected a module-level "
        "function, got 'f_gone', which is not defined in kernels/broken/broken.py")


# -- planning -----------------------------------------------------------------------------


def impl_spec(**values: object) -> KernelSpec:
    cfg = config(backends=["cpu", "cuda"], precisions=["fp32"],
                 sweep={"params": {"n": [8, 16]}}, **values)
    impls = tuple(replace(i, backends=("cpu",) if i.framework == "numpy" else ("cpu", "cuda"))
                  for i in cfg.implementations)
    return KernelSpec(name="k", path="kernels/k/k.py", framework="mixed",
                      backends=("cpu", "cuda"), config=replace(cfg, implementations=impls))


def test_plan_has_a_case_per_implementation_backend_and_point_reference_first() -> None:
    spec = impl_spec(implementations=IMPLS, reference={"implementation": "fast"})
    ids = [c.case_id for c in plan_cases(spec, RunSettings(root=Path(".")))]
    assert ids[:2] == ["k[cpu,fp32,impl=fast,n=8]", "k[cpu,fp32,impl=fast,n=16]"]
    assert sorted(ids[2:]) == sorted([
        "k[cpu,fp32,impl=ref,n=8]", "k[cpu,fp32,impl=ref,n=16]",
        "k[cpu,fp32,impl=torch,n=8]", "k[cpu,fp32,impl=torch,n=16]",
        "k[cuda,fp32,impl=torch,n=8]", "k[cuda,fp32,impl=torch,n=16]"])
    assert len(set(ids)) == len(ids)


def test_a_gpu_case_is_checked_against_the_cpu_only_reference_on_the_cpu() -> None:
    spec = impl_spec(implementations=IMPLS)
    cases = plan_cases(spec, RunSettings(root=Path("."), backends=("cuda",)))
    assert [c.case_id for c in cases] == ["k[cuda,fp32,impl=torch,n=8]",
                                          "k[cuda,fp32,impl=torch,n=16]"]
    key = _reference_key(cases[0])
    assert key is not None
    assert (key.backend, key.precision, key.point, key.implementation) == ("cpu", "fp32", "n=8",
                                                                          "ref")


def test_case_ids_name_the_implementation_and_invert() -> None:
    case_id = case_id_of("k", "cpu", "fp32", "n=8", "fast")
    assert case_id == "k[cpu,fp32,impl=fast,n=8]"
    assert point_of(case_id, "k", "cpu", "fp32", "fast") == "n=8"
    assert case_id_of("k", "cpu", "fp32", None, "fast") == "k[cpu,fp32,impl=fast]"
    assert point_of("k[cpu,fp32,impl=fast]", "k", "cpu", "fp32", "fast") is None
    case = Case(impl_spec(implementations=IMPLS), "cpu", "fp32", None, None,
                impl_spec(implementations=IMPLS).config.implementations[2])  # type: ignore[union-attr]
    assert case.framework == "pytorch" and case.case_id == "k[cpu,fp32,impl=torch]"


# -- the same inputs in every framework ----------------------------------------------------


def test_numpy_inputs_are_cast_floats_only() -> None:
    prepared = {"x": np.linspace(0, 1, 6).reshape(2, 3), "idx": np.arange(2), "n": 3}
    out = to_framework(prepared, "numpy", "fp16", "cpu")
    assert out["x"].dtype == np.float16 and out["idx"].dtype == np.arange(2).dtype
    assert out["n"] == 3
    np.testing.assert_array_equal(out["x"], prepared["x"].astype(np.float16))


def test_torch_and_jax_inputs_hold_the_same_values() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("jax")
    x = np.random.default_rng(0).standard_normal((3, 4))
    prepared = {"x": x, "targets": np.array([2, 0, 1], dtype=np.int64), "pair": (x, x)}
    as_torch = to_framework(prepared, "pytorch", "bf16", "cpu")
    assert as_torch["x"].dtype == torch.bfloat16 and as_torch["targets"].dtype == torch.int64
    assert isinstance(as_torch["pair"], tuple) and as_torch["pair"][1].dtype == torch.bfloat16
    as_jax = to_framework(prepared, "jax", "fp32", "cpu")
    assert str(as_jax["x"].dtype) == "float32"
    np.testing.assert_array_equal(np.asarray(as_jax["x"]), x.astype(np.float32))
    np.testing.assert_array_equal(as_torch["x"].float().numpy(),
                                  torch.from_numpy(x).to(torch.bfloat16).float().numpy())


# -- torch.compile facts -------------------------------------------------------------------


def test_compile_record_separates_first_call_graphs_from_recompilations() -> None:
    record = compile_record({"mode": "default"}, 2.5, DynamoCounts(3, 1), DynamoCounts(4, 1),
                            DynamoCounts(7, 2))
    assert record == {"mode": "default", "options": {"mode": "default"}, "first_call_s": 2.5,
                      "graphs_compiled": 1, "graph_breaks": 1, "recompiles_during_timing": 3,
                      "source": record["source"]}
    unknown = compile_record({}, 1.0, None, None, None)
    assert unknown["recompiles_during_timing"] is None and unknown["reason"]
    assert unknown["mode"] == "default"


# -- side-by-side tables ------------------------------------------------------------------


def record(impl: str, point: str, p50: float | None, *, status: str = "ok",
           gb_per_s: float | None = None) -> dict[str, Any]:
    return {"kernel_name": "k", "implementation": impl, "backend": "cpu", "precision": "fp32",
            "case_id": case_id_of("k", "cpu", "fp32", point, impl), "status": status,
            "timing": {"latency_ms_p50": p50},
            "work": {"gb_per_s": gb_per_s} if gb_per_s is not None else None}


def test_speedup_per_shape_and_geometric_mean_per_implementation() -> None:
    summary = {"implementations": {"k": {"reference": "ref", "names": ["ref", "a", "b"]}},
               "results": [
                   record("ref", "n=1", 4.0, gb_per_s=1.0), record("ref", "n=2", 9.0),
                   record("a", "n=1", 2.0, gb_per_s=2.0), record("a", "n=2", 18.0),
                   record("b", "n=1", 1.0), record("b", "n=2", None, status="failed")]}
    (table,) = implementation_tables(summary)
    assert (table.kernel, table.reference, table.names) == ("k", "ref", ("ref", "a", "b"))
    assert [row.label for row in table.rows] == ["cpu/fp32 n=1", "cpu/fp32 n=2"]
    first, second = table.rows
    assert [first.cells[n].speedup for n in table.names] == [1.0, 2.0, 4.0]
    assert [second.cells[n].speedup for n in table.names] == [1.0, 0.5, None]
    assert second.cells["b"].status == "failed"
    assert table.geomean_speedup["ref"] == 1.0
    assert table.geomean_speedup["a"] == pytest.approx(1.0)  # 2x and 0.5x cancel
    assert table.geomean_speedup["b"] == pytest.approx(4.0)  # over the one row where it ran
    assert dict(table.geomean_rows) == {"ref": 2, "a": 2, "b": 1}
    assert first.cells["a"].gb_per_s == 2.0 and table.has_bandwidth


def test_no_speedup_where_the_reference_did_not_run() -> None:
    summary = {"implementations": {"k": {"reference": "ref", "names": ["ref", "a"]}},
               "results": [record("ref", "n=1", None, status="skipped"),
                           record("a", "n=1", 3.0)]}
    (table,) = implementation_tables(summary)
    assert table.rows[0].cells["a"].speedup is None
    assert table.geomean_speedup["a"] is None and table.geomean_rows["a"] == 0
    assert implementation_tables({"results": []}) == []


def test_no_rows_for_a_backend_the_machine_lacks() -> None:
    gpu_rows = [{**record(impl, "n=1", None, status="skipped"), "backend": "cuda",
                 "case_id": case_id_of("k", "cuda", "fp32", "n=1", impl)} for impl in ("a",)]
    summary = {"implementations": {"k": {"reference": "ref", "names": ["ref", "a"]}},
               "results": [record("ref", "n=1", 4.0), record("a", "n=1", 2.0), *gpu_rows],
               "environment": {"gpus": []}}
    (table,) = implementation_tables(summary)
    assert [row.label for row in table.rows] == ["cpu/fp32 n=1"]
    with_gpu = {**summary, "environment": {"gpus": [{"name": "NVIDIA A100", "vendor": "NVIDIA"}]}}
    (table,) = implementation_tables(with_gpu)
    assert [row.label for row in table.rows] == ["cpu/fp32 n=1", "cuda/fp32 n=1"]


# -- end to end ---------------------------------------------------------------------------

SETUP = """
import numpy as np

def setup(n=64, seed=0):
    return {"x": np.random.default_rng(seed).standard_normal(n)}
"""

ACCURACY_YAML = """
problem_size: {n: 64}
sweep:
  params:
    n: [64, 256]
precisions: [fp32]
implementations:
  ref:   {function: total_ref, framework: numpy}
  tree:  {function: total_tree, framework: numpy}
  wrong: {function: total_wrong, framework: numpy}
  torch: {function: total_torch, framework: pytorch}
"""

ACCURACY_KERNEL = SETUP + """
def total_ref(x):
    return np.cumsum(x)

def total_tree(x):
    return np.add.accumulate(x)

def total_wrong(x):
    return np.cumsum(x) + 1e-2

def total_torch(x):
    import torch
    return torch.cumsum(x, dim=0)
"""


@pytest.fixture(scope="module")
def accuracy_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("torch")  # total_torch is one of the implementations
    base = tmp_path_factory.mktemp("impls")
    write_kernel(base / "repo", ACCURACY_YAML, ACCURACY_KERNEL, name="total")
    out = base / "out"
    proc = kernbench("run", "--root", str(base / "repo"), "--output-dir", str(out), "--iters",
                     "5", "--warmup", "1", "--debug-fake-timer", "2.0", "--format", "all",
                     cwd=base, timeout=300)
    return {"proc": proc, "out": out, "summary": load(out / "summary.json")}


def test_a_wrong_implementation_fails_with_the_numbers(accuracy_run: dict[str, Any]) -> None:
    assert accuracy_run["proc"].returncode == 1, accuracy_run["proc"].stderr
    records = {r["case_id"]: r for r in accuracy_run["summary"]["results"]}
    assert len(records) == 8
    for n in (64, 256):
        wrong = records[f"total[cpu,fp32,impl=wrong,n={n}]"]
        assert wrong["status"] == "failed"
        assert wrong["reason"].startswith("accuracy check failed: relative_error ")
        assert "> 1e-05" in wrong["reason"]
        assert wrong["accuracy"]["reference_source"] == "reference implementation ref [cpu,fp32]"
        assert wrong["accuracy"]["max_error"] == pytest.approx(1e-2, rel=1e-3)
        for good in ("tree", "torch"):
            other = records[f"total[cpu,fp32,impl={good},n={n}]"]
            assert other["status"] == "ok" and other["accuracy"]["passed"] is True
            assert other["implementation"] == good
        ref = records[f"total[cpu,fp32,impl=ref,n={n}]"]
        assert ref["accuracy"]["passed"] is None and "reference" in ref["accuracy"]["reason"]
    assert records["total[cpu,fp32,impl=torch,n=64]"]["framework"] == "pytorch"


def test_reports_carry_the_side_by_side_tables(accuracy_run: dict[str, Any]) -> None:
    out = accuracy_run["out"]
    summary = accuracy_run["summary"]
    assert summary["implementations"] == {"total": {"reference": "ref",
                                                    "names": ["ref", "tree", "wrong", "torch"]}}
    md = (out / "summary.md").read_text(encoding="utf-8")
    section = md.split("## Implementations", 1)[1].split("\n## ", 1)[0]
    assert "### total (reference: ref)" in section
    assert "| cpu/fp32 n=64 | 2 ms (1×) | 2 ms (1×) | failed | 2 ms (1×) |" in section
    assert "| **geomean speedup** | **1×** (2) | **1×** (2) | n/a | **1×** (2) |" in section
    html = (out / "index.html").read_text(encoding="utf-8")
    assert 'id="implementations"' in html and "geomean speedup" in html
    assert (out / "plots" / "implementations_total.png").stat().st_size > 1000
    header, *rows = (out / "results.csv").read_text(encoding="utf-8").splitlines()
    assert header.split(",")[-3:] == ["implementation", "compile_first_call_s",
                                      "compile_recompiles_during_timing"]
    assert sum(1 for row in rows if ",wrong,," in row) == 2


def test_two_runs_compare_case_by_case(accuracy_run: dict[str, Any], tmp_path: Path) -> None:
    out = accuracy_run["out"]
    proc = kernbench("compare", str(out / "summary.json"), str(out / "summary.json"),
                     "--output-dir", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    labels = [c["label"] for c in load(tmp_path / "comparison.json")["cases"]]
    assert len(labels) == len(set(labels)) == 8
    assert "total[cpu,fp32,impl=torch,n=256]" in labels


COMPILED_YAML = """
problem_size: {n: 32}
precisions: [fp32]
implementations:
  eager:    {function: scaled, framework: pytorch}
  compiled: {function: scaled, framework: pytorch, compile: {mode: default}}
  churning: {function: bump, framework: pytorch, compile: {backend: eager}}
tolerances: {max_error: 100.0}
"""

COMPILED_KERNEL = SETUP + """
STEP = [0]

def scaled(x):
    import torch
    return torch.tanh(x) * 2.0 + 1.0

def bump(x):
    STEP[0] += 1  # a new constant every call: TorchDynamo recompiles on each
    return x * 2.0 + 1.0 + STEP[0] * 1e-9
"""


@pytest.mark.slow
def test_compiled_torch_kernel_end_to_end_on_the_cpu(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    write_kernel(tmp_path / "repo", COMPILED_YAML, COMPILED_KERNEL, name="tc")
    out = tmp_path / "out"
    proc = kernbench("run", "--root", str(tmp_path / "repo"), "--output-dir", str(out),
                     "--iters", "5", "--warmup", "2", cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    records = {r["implementation"]: r for r in load(out / "summary.json")["results"]}
    assert records["eager"]["compile"] is None
    compiled = records["compiled"]
    assert compiled["status"] == "ok" and compiled["accuracy"]["passed"] is True
    facts = compiled["compile"]
    assert facts["mode"] == "default" and facts["first_call_s"] > 0
    assert facts["graphs_compiled"] >= 1 and facts["recompiles_during_timing"] == 0
    assert all(w["code"] != "recompiled_during_timing" for w in compiled["warnings"])
    # The first (compiling) call is timed apart: no sample comes near it.
    assert max(compiled["timing"]["samples_ms"]) < facts["first_call_s"] * 1000
    churning = records["churning"]
    assert churning["compile"]["recompiles_during_timing"] >= 2
    assert "recompiled_during_timing" in [w["code"] for w in churning["warnings"]]
    md = (out / "summary.md").read_text(encoding="utf-8")
    assert "| tc\\[cpu,fp32,impl=compiled\\] | default |" in md
    assert math.isfinite(float(compiled["timing"]["latency_ms_p50"]))


@pytest.mark.skipif(__import__("shutil").which("nvidia-smi") is not None,
                    reason="needs a machine without a CUDA device")
def test_an_unavailable_device_is_probed_once_per_framework(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    write_kernel(tmp_path / "repo", """
        problem_size: {n: 8}
        sweep:
          params:
            n: [8, 16, 32]
        backends: [cuda]
        implementations:
          eager: {function: f, framework: pytorch}
    """, SETUP + "\ndef f(x):\n    return x\n", name="gpu")
    out = tmp_path / "out"
    proc = kernbench("run", "--root", str(tmp_path / "repo"), "--output-dir", str(out),
                     "--iters", "5", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first, *rest = load(out / "summary.json")["results"]
    assert first["status"] == "skipped" and first["worker"]["pid"] is not None
    assert len(rest) == 2
    for record in rest:
        assert record["status"] == "skipped" and record["worker"]["pid"] is None
        assert record["reason"] == f"{first['reason']} (as an earlier case of this run found)"


def test_compile_mode_run_option_replaces_each_implementations_mode() -> None:
    from kernbench.execution.jobs import JobImplementation
    from kernbench.execution.runner import implementation_job
    cfg = config(implementations=IMPLS)
    eager, compiled = cfg.implementations[0], cfg.implementations[2]
    assert implementation_job(compiled) == JobImplementation("torch", None,
                                                             {"mode": "max-autotune"})
    with_mode = implementation_job(compiled, "reduce-overhead")
    assert with_mode is not None and with_mode.compile == {"mode": "reduce-overhead"}
    eager_job = implementation_job(eager, "reduce-overhead")
    assert eager_job is not None and eager_job.compile is None
    assert implementation_job(None, "default") is None


def test_key_findings_name_the_fastest_implementation() -> None:
    from kernbench.reporting.findings import key_findings

    summary = {"implementations": {"k": {"reference": "ref", "names": ["ref", "a", "b"]}},
               "results": [record("ref", "n=1", 4.0), record("a", "n=1", 2.0),
                           record("b", "n=1", 8.0)]}
    found = [f for f in key_findings(summary) if f.kind == "implementations"]
    assert [f.message for f in found] == [
        "k: a is fastest, 2.00x the reference ref (geometric mean over 1 shape)"]
    summary["results"] = [record("ref", "n=1", 1.0), record("a", "n=1", 2.0)]
    (only,) = [f for f in key_findings(summary) if f.kind == "implementations"]
    assert only.message == "k: ref is the reference and none beats it"


def test_a_broken_reference_leaves_the_others_unchecked_not_failed(tmp_path: Path) -> None:
    write_kernel(tmp_path / "repo", """
        implementations:
          ref:  {function: broken, framework: numpy}
          good: {function: doubled, framework: numpy}
    """, SETUP + """
def broken(x):
    raise RuntimeError("reference exploded")

def doubled(x):
    return 2 * x
""", name="fragile")
    out = tmp_path / "out"
    proc = kernbench("run", "--root", str(tmp_path / "repo"), "--output-dir", str(out),
                     "--iters", "3", "--debug-fake-timer", "1.0", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    ref, good = load(out / "summary.json")["results"]
    assert ref["implementation"] == "ref" and ref["status"] == "failed"
    assert "reference exploded" in ref["reason"]
    assert good["status"] == "ok" and good["accuracy"]["passed"] is None
    assert good["accuracy"]["reason"].startswith(
        "not checked: reference implementation ref [cpu,fp32]: failed: RuntimeError: "
        "reference exploded")


@pytest.mark.parametrize("yaml", [
    "precison: [fp32]\nimplementations: {x: {function: a}, y: {function: b}}\n",
    "implementations: {x: {function: a}\n",  # malformed YAML
    "implementations: {x: {function: a}}\nreference: {implementation: z}\n",
    "implementations: {x: {function: a, framework: numpy, compile: {mode: default}}}\n",
    "implementations: {}\n",
])
def test_a_broken_implementations_bench_yaml_makes_the_kernel_invalid_not_missing(
        tmp_path: Path, yaml: str) -> None:
    write_kernel(tmp_path, yaml, "def a(x):\n    return x\n\ndef b(x):\n    return x\n",
                 name="ty")
    (spec,) = KernelDiscovery(tmp_path).discover()
    assert spec.status == "invalid" and spec.error is not None and spec.name == "ty"
    assert spec.error.startswith("kernels/ty/bench.yaml"), spec.error


def test_a_missing_first_implementation_function_is_reported(tmp_path: Path) -> None:
    write_kernel(tmp_path, """
        implementations:
          first: {function: gone, framework: numpy}
          second: {function: b, framework: numpy}
    """, "def b(x):\n    return x\n", name="half")
    (spec,) = KernelDiscovery(tmp_path).discover()
    assert spec.status == "invalid"
    assert "key 'implementations.first.function'" in (spec.error or "")


def test_golden_point_keys_must_name_points_of_the_kernel() -> None:
    good = config(implementations=IMPLS, sweep={"params": {"n": [8, 16]}},
                  golden={"h100": {"points": {"impl=fast,n=16": {"time_ms": 1.0}}}})
    assert good.golden is not None
    message = error_of(implementations=IMPLS, sweep={"params": {"n": [8, 16]}},
                       golden={"h100": {"time_ms": 2.0, "points": {"impl=quick,n=16": {
                           "time_ms": 1.0}}}})
    assert "key 'golden.h100.points.impl=quick,n=16'" in message
    assert "a point of this kernel (impl=fast,n=16, impl=fast,n=8, impl=ref,n=16" in message
    plain = error_of(golden={"h100": {"points": {"n=8": {"time_ms": 1.0}}}})
    assert "no points: the kernel has neither a sweep nor implementations" in plain


def test_a_sweep_parameter_cannot_be_called_impl() -> None:
    message = error_of(sweep={"params": {"impl": ["fast", "slow"]}})
    assert "key 'sweep.params.impl': expected a name other than impl" in message
