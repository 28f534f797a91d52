"""Runner unit tests on hand-built specs: case planning, selection, exit codes, and how a
worker's outcome (result file, crash, timeout) becomes a record. No worker is started here."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kernbench.api import exit_code_for
from kernbench.config.loading import bench_config_from_data
from kernbench.execution.isolation import WorkerExit
from kernbench.execution.jobs import WorkerReply
from kernbench.execution.outcomes import build_result, invalid_result
from kernbench.execution.planning import (
    DEFAULT_PRECISION,
    plan_backends,
    plan_cases,
    plan_precisions,
    select_kernels,
)
from kernbench.execution.references import reference_key
from kernbench.execution.runner import BenchmarkRunner
from kernbench.execution.settings import RunSettings
from kernbench.results.model import NATIVE, BenchConfig, Case, CaseResult, KernelSpec


def spec(name: str = "k", **changes: object) -> KernelSpec:
    base = KernelSpec(name=name, path=f"kernels/{name}.py", framework="numpy",
                      frameworks=("numpy",))
    return replace(base, **changes)


def config(**values: object) -> BenchConfig:
    return bench_config_from_data(values, "bench.yaml")


def result(status: str, name: str = "k") -> CaseResult:
    return CaseResult(kernel_name=name, kernel_path=f"{name}.py", framework="numpy",
                      backend="cpu", precision="fp32", problem_size=None,
                      status=status)  # type: ignore[arg-type]


def worker_exit(returncode: int | None = 0, timed_out: bool = False,
                stderr: str = "", stdout: str = "") -> WorkerExit:
    return WorkerExit(returncode=returncode, timed_out=timed_out, wall_s=0.25, pid=4321,
                      stdout_tail=stdout, stderr_tail=stderr, stdout_bytes=len(stdout),
                      stderr_bytes=len(stderr))


# -- precisions ----------------------------------------------------------------------------


def test_kernel_without_precision_parameter_runs_native_only() -> None:
    native = spec()
    assert plan_precisions(native, None) == [NATIVE]
    assert plan_precisions(native, ("fp16",)) == [NATIVE]


def test_declared_precisions_are_the_default() -> None:
    declared = spec(parameters=("precision",), config=config(precisions=["fp32", "fp16"]))
    assert plan_precisions(declared, None) == ["fp32", "fp16"]


def test_requested_precisions_intersect_the_declared_ones() -> None:
    declared = spec(parameters=("precision",), config=config(precisions=["fp32", "fp16"]))
    assert plan_precisions(declared, ("fp16",)) == ["fp16"]
    assert set(plan_precisions(declared, ("fp16", "fp32", "bf16"))) == {"fp32", "fp16"}
    assert plan_precisions(declared, ("bf16",)) == []


def test_undeclared_precisions_default_to_fp32_or_follow_the_request() -> None:
    open_kernel = spec(parameters=("n", "precision"))
    assert plan_precisions(open_kernel, None) == [DEFAULT_PRECISION] == ["fp32"]
    assert plan_precisions(open_kernel, ("fp16", "bf16")) == ["fp16", "bf16"]


def test_precision_taken_by_setup_counts() -> None:
    via_setup = spec(has_setup=True, setup_parameters=("precision",))
    assert via_setup.takes_precision
    assert plan_precisions(via_setup, None) == ["fp32"]


# -- backends -------------------------------------------------------------------------------


def test_backends_default_to_the_declared_ones() -> None:
    assert plan_backends(spec(backends=("cpu", "cuda")), None) == ["cpu", "cuda"]


def test_requested_backends_are_limited_to_what_the_kernel_supports() -> None:
    cpu_only = spec(backends=("cpu",))
    assert plan_backends(cpu_only, ("cpu", "cuda")) == ["cpu"]
    assert plan_backends(cpu_only, ("cuda",)) == []


def test_rocm_is_offered_to_gpu_capable_frameworks_that_support_cuda() -> None:
    torch_kernel = spec(framework="pytorch", backends=("cpu", "cuda"))
    assert plan_backends(torch_kernel, ("rocm",)) == ["rocm"]
    numpy_kernel = spec(framework="numpy", backends=("cpu", "cuda"))
    assert plan_backends(numpy_kernel, ("rocm",)) == []
    torch_cpu_only = spec(framework="pytorch", backends=("cpu",))
    assert plan_backends(torch_cpu_only, ("rocm",)) == []


# -- cases ----------------------------------------------------------------------------------


def test_plan_cases_is_backend_by_precision_with_the_problem_size() -> None:
    kernel = spec(parameters=("precision", "n"), backends=("cpu", "cuda"),
                  config=config(precisions=["fp32", "bf16"], problem_size={"n": 8}))
    cases = plan_cases(kernel, RunSettings(root=Path(".")))
    assert [(c.backend, c.precision) for c in cases] == [
        ("cpu", "fp32"), ("cpu", "bf16"), ("cuda", "fp32"), ("cuda", "bf16")]
    assert {c.case_id for c in cases} >= {"k[cpu,fp32]", "k[cuda,bf16]"}
    assert all(c.problem_size == {"n": 8} for c in cases)


def test_a_sweep_plans_one_case_per_point_with_its_merged_problem_size() -> None:
    sweep = {"matrix_shapes": [{"name": "pow2", "min_power": 2, "max_power": 3}]}
    kernel = spec("mm", parameters=("precision", "m", "k", "n", "layout"),
                  config=config(precisions=["fp64", "fp32"], sweep=sweep,
                                problem_size={"layout": "row", "m": 1}))
    cases = plan_cases(kernel, RunSettings(root=Path(".")))
    assert [c.case_id for c in cases] == [
        "mm[cpu,fp64,m=4,k=4,n=4]", "mm[cpu,fp64,m=8,k=8,n=8]",
        "mm[cpu,fp32,m=4,k=4,n=4]", "mm[cpu,fp32,m=8,k=8,n=8]"]
    assert [c.problem_size for c in cases[:2]] == [{"layout": "row", "m": 4, "k": 4, "n": 4},
                                                   {"layout": "row", "m": 8, "k": 8, "n": 8}]
    assert [c.point for c in cases[:2]] == ["m=4,k=4,n=4", "m=8,k=8,n=8"]
    plain = plan_cases(spec(parameters=("precision",)), RunSettings(root=Path(".")))
    assert [(c.case_id, c.point) for c in plain] == [("k[cpu,fp32]", None)]


def test_each_sweep_point_has_its_own_reference_case_first() -> None:
    kernel = spec("mm", parameters=("precision", "n"),
                  config=config(precisions=["fp32", "fp64"], reference={"precision": "fp64"},
                                sweep={"params": {"n": [2, 3]}}))
    cases = plan_cases(kernel, RunSettings(root=Path(".")))
    assert [c.case_id for c in cases] == ["mm[cpu,fp64,n=2]", "mm[cpu,fp64,n=3]",
                                          "mm[cpu,fp32,n=2]", "mm[cpu,fp32,n=3]"]
    keys = {reference_key(c) for c in cases}
    assert keys == {("mm", "cpu", "fp64", "n=2", ""), ("mm", "cpu", "fp64", "n=3", "")}


def test_a_sweep_points_record_carries_its_point() -> None:
    case = Case(spec(parameters=("precision", "n")), "cpu", "fp32", {"n": 2}, "n=2")
    record = build_result(case, WorkerReply(status="ok", samples_ns=(1e6,)), worker_exit(), "t0",
                          1.0)
    assert record.point == "n=2"
    assert record.case_id == "k[cpu,fp32,n=2]"
    assert record.problem_size == {"n": 2}


def test_runner_plan_keeps_invalid_kernels_and_applies_filters(tmp_path: Path) -> None:
    good = spec("good")
    bad = spec("bad", status="invalid", error="kernels/bad.py:1:1: syntax error")
    other = spec("other")
    runner = BenchmarkRunner(RunSettings(root=tmp_path, filters=("good", "bad")))
    planned = runner.plan([bad, good, other])
    assert planned[0] is bad
    assert all(isinstance(p, Case) for p in planned[1:])
    assert [p.case_id for p in planned[1:]] == ["good[cpu,native]"]


def test_invalid_result_names_the_error() -> None:
    bad = spec("bad", status="invalid", error="kernels/bad.py:3:1: syntax error: invalid syntax")
    record = invalid_result(bad)
    assert record.status == "invalid"
    assert record.reason == bad.error
    assert record.success is False
    assert record.samples_ms == ()
    assert record.kernel_name == "bad"
    assert record.energy["energy_j"] is None


# -- selection -------------------------------------------------------------------------------


@pytest.mark.parametrize(("filters", "expected"), [
    ((), ["fft", "gemm", "gemv", "linalg.norm"]),
    (("ge*",), ["gemm", "gemv"]),
    (("fft", "linalg.*"), ["fft", "linalg.norm"]),
    (("gem?",), ["gemm", "gemv"]),
    (("nomatch",), []),
])
def test_select_kernels_by_glob(filters: tuple[str, ...], expected: list[str]) -> None:
    specs = [spec(n) for n in ("fft", "gemm", "gemv", "linalg.norm")]
    assert [s.name for s in select_kernels(specs, filters)] == expected


def test_select_kernels_keeps_order_and_does_not_duplicate() -> None:
    specs = [spec(n) for n in ("b", "a", "ab")]
    assert [s.name for s in select_kernels(specs, ("a*", "*b"))] == ["b", "a", "ab"]


# -- exit codes ------------------------------------------------------------------------------


@pytest.mark.parametrize(("statuses", "code"), [
    ((), 0),
    (("ok",), 0),
    (("ok", "skipped"), 0),
    (("skipped",), 0),
    (("ok", "failed"), 1),
    (("timeout", "skipped"), 1),
    (("invalid", "ok"), 2),
    (("failed", "timeout", "invalid"), 2),
])
def test_exit_code_for(statuses: tuple[str, ...], code: int) -> None:
    assert exit_code_for([result(s) for s in statuses]) == code


# -- worker outcome -> record ---------------------------------------------------------------


def _case(precision: str = "fp32") -> Case:
    return Case(spec(parameters=("precision",)), "cpu", precision, problem_size=16)


def test_build_result_from_a_result_file() -> None:
    payload = WorkerReply(status="ok", samples_ns=(2e6, 4e6), inner_loops=3,
                          warmup_ns=(1.0, 1.0), timer="perf_counter_ns", timer_overhead_ns=30.0,
                          memory={"peak_mb": 12.0}, output={"precision": "fp64"},
                          device={"device": "cpu"})
    record = build_result(_case(), payload, worker_exit(), "t0", 10.0)
    assert record.status == "ok"
    assert record.samples_ms == (2.0, 4.0)
    assert record.inner_loops == 3
    assert record.warmup_iterations == 2
    assert record.precision == "fp32"  # a requested precision is never relabelled
    assert record.problem_size == 16
    assert record.device == "cpu"
    assert record.worker["exit_code"] == 0
    assert record.worker["pid"] == 4321


def test_native_case_is_labelled_by_the_output_precision() -> None:
    payload = WorkerReply(status="ok", samples_ns=(1e6,), output={"precision": "fp64"})
    record = build_result(_case(NATIVE), payload, worker_exit(), "t0", 10.0)
    assert record.precision == "fp64"


def test_missing_result_after_a_signal_is_failed_with_the_signal_and_stderr() -> None:
    died = worker_exit(-11, stderr="noise\nFatal Python error: Segmentation fault\n")
    record = build_result(_case(), None, died, "t0", 10.0)
    assert record.status == "failed"
    assert "SIGSEGV" in record.reason
    assert "Fatal Python error: Segmentation fault" in record.reason
    assert record.worker["signal"] == "SIGSEGV"


def test_missing_result_after_a_clean_exit_is_failed() -> None:
    record = build_result(_case(), None, worker_exit(0), "t0", 10.0)
    assert record.status == "failed"
    assert "exited with code 0" in record.reason


def test_timeout_wins_even_over_a_result_file() -> None:
    payload = WorkerReply(status="ok", samples_ns=(1e6,))
    record = build_result(_case(), payload, worker_exit(-9, timed_out=True), "t0", 2.5)
    assert record.status == "timeout"
    assert "timed out after 2.5 s" in record.reason
    assert record.samples_ms == ()


def test_failed_payload_keeps_reason_and_traceback() -> None:
    payload = WorkerReply(
        status="failed", reason="ValueError: nope",
        traceback="Traceback (most recent call last):\n  ...\nValueError: nope\n")
    record = build_result(_case(), payload, worker_exit(), "t0", 10.0)
    assert record.status == "failed"
    assert record.reason == "ValueError: nope"
    assert record.worker["traceback"].startswith("Traceback")
    assert record.worker["exit_code"] == 0


@pytest.mark.parametrize(("flag", "declared", "mode"), [
    (None, None, "cold"), (None, "graph", "graph"), ("all", "graph", "all"), ("hot", None, "hot")])
def test_gpu_timing_is_the_flag_else_the_bench_yaml_else_cold(
        tmp_path: Path, flag: str | None, declared: str | None, mode: str) -> None:
    kernel = spec(framework="pytorch", config=config(gpu_timing=declared) if declared else None)
    runner = BenchmarkRunner(RunSettings(root=tmp_path, gpu_timing=flag))
    job = runner._job(Case(kernel=kernel, backend="cuda", precision="fp32"))
    assert job.gpu_timing == mode


class _RecordingLauncher:
    """Records where each worker's job file was; starts nothing (the case has no reply)."""

    def __init__(self) -> None:
        self.jobs: list[Path] = []

    def run(self, framework: str, slot: int, job: Path, *rest: object) -> WorkerExit:
        assert job.is_file()
        self.jobs.append(job)
        return worker_exit(returncode=1)

    def close(self) -> None:
        pass


@pytest.mark.parametrize("in_memory", [True, False])
def test_job_folders_are_in_memory_where_possible_and_go_with_the_session(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_memory: bool) -> None:
    import kernbench.execution.runner as runner_module

    memory = tmp_path / "shm"
    memory.mkdir()
    monkeypatch.setattr(runner_module, "memory_scratch_dir",
                        lambda: str(memory) if in_memory else None)
    monkeypatch.setattr(runner_module.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    launcher = _RecordingLauncher()
    runner = BenchmarkRunner(RunSettings(root=tmp_path, processes=1),
                             launcher=launcher)  # type: ignore[arg-type]
    with runner.session():
        assert runner.run_case(Case(kernel=spec(), backend="cpu",
                                    precision=NATIVE)).status == "failed"
        (job,) = launcher.jobs
        (run_folder,) = (tmp_path / "tmp").iterdir()
        assert job.parent.parent == (next(memory.iterdir()) if in_memory else run_folder)
    assert list(memory.iterdir()) == [] and list((tmp_path / "tmp").iterdir()) == []
