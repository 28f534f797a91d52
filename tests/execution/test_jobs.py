"""Tests for kernbench.execution.jobs: the typed, versioned files between parent and worker.

Both sides go through one codec; these tests pin that a job and a reply survive the round trip
exactly, and that a file of another version, or with a missing, unknown or ill-typed field,
is refused with a message naming the file and the field.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest

from kernbench.errors import KernbenchError
from kernbench.execution.isolation import WorkerExit
from kernbench.execution.jobs import (
    JOB_VERSION,
    REPLY_VERSION,
    JobImplementation,
    ProfileRequest,
    WorkerJob,
    WorkerReply,
    dump_job,
    dump_reply,
    load_job,
    load_reply,
    to_data,
)
from kernbench.execution.runner import BenchmarkRunner
from kernbench.execution.settings import RunSettings
from kernbench.results.model import Case, KernelSpec, ProtocolSettings, SkipRule


def full_job(tmp_path: Path) -> WorkerJob:
    """A job with every optional part set, so the round trip covers each field kind."""
    return WorkerJob(
        kernel_file=tmp_path / "k.py", root=tmp_path, kernel_name="k", function_name="run",
        framework="pytorch", backend="cpu", precision="fp16",
        settings=ProtocolSettings(warmup=2, iterations=5), result_path=tmp_path / "r.json",
        problem_size={"n": 64, "shape": [2, 3]},
        implementation=JobImplementation("torch", "setup_torch", {"mode": "default"}),
        skip_rules=(SkipRule("no fp16", precision="fp16", check='module_available("x")'),),
        tolerances={"rmse": 1e-3}, work={"flops": "2*n"}, config_source="kernels/bench.yaml",
        trace_python=True, flush_l2=False, fake_call_ms=2.5, slowdown=1.5, skip_accuracy=True,
        is_reference=True, save_output_path=tmp_path / "ref.npz",
        reference_output_path=tmp_path / "other.npz", reference_label="reference case [cpu]",
        reference_error="it crashed",
        profile=ProfileRequest("cprofile", 3, tmp_path / "profiles", "k[cpu,fp16]"))


def full_reply() -> WorkerReply:
    return WorkerReply(
        status="ok", reason=None, samples_ns=(1.5, 2.0, 3), inner_loops=4, warmup_ns=(9.0,),
        warmup_s=0.25, timer="perf_counter_ns", timer_overhead_ns=30, timer_resolution_ns=1.0,
        memory={"peak_mb": 3.0}, energy={"energy_j": None}, accuracy={"passed": True},
        output={"type": "ndarray", "items": []}, device={"device": "cpu"}, l2_flush=False,
        work={"flops": 8.0}, machine={"busy_cores": 0.1}, gpu_state=None,
        compile={"mode": "default"}, profile={"path": None})


def test_a_job_survives_the_round_trip(tmp_path: Path) -> None:
    job = full_job(tmp_path)
    dump_job(job, tmp_path / "job.json")
    assert load_job(tmp_path / "job.json") == job


def test_a_minimal_job_survives_the_round_trip(tmp_path: Path) -> None:
    job = WorkerJob(kernel_file=tmp_path / "k.py", root=tmp_path, kernel_name="k",
                    function_name="run_benchmark", framework="numpy", backend="cpu",
                    precision="native", settings=ProtocolSettings(),
                    result_path=tmp_path / "r.json")
    dump_job(job, tmp_path / "job.json")
    assert load_job(tmp_path / "job.json") == job


def test_a_reply_survives_the_round_trip(tmp_path: Path) -> None:
    dump_reply(full_reply(), tmp_path / "reply.json")
    loaded = load_reply(tmp_path / "reply.json")
    assert loaded == full_reply()
    assert loaded is not None and loaded.timer_overhead_ns == 30  # numbers are not retyped
    assert isinstance(loaded.timer_overhead_ns, int)


def test_jobs_and_replies_are_scratch_files_never_flushed_to_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent reads them milliseconds later and deletes them: the rename keeps it from
    half a file; a flush to disk would only add about 0.5 ms to every worker twice."""
    monkeypatch.setattr(os, "fsync", lambda fd: pytest.fail("a worker file was flushed"))
    dump_job(full_job(tmp_path), tmp_path / "job.json")
    dump_reply(full_reply(), tmp_path / "reply.json")
    assert load_reply(tmp_path / "reply.json") == full_reply()


def test_a_reply_keeps_nan_values(tmp_path: Path) -> None:
    dump_reply(WorkerReply(status="ok", accuracy={"rmse": math.nan}), tmp_path / "reply.json")
    loaded = load_reply(tmp_path / "reply.json")
    assert loaded is not None and loaded.accuracy is not None
    assert math.isnan(loaded.accuracy["rmse"])


def test_no_reply_file_is_no_reply(tmp_path: Path) -> None:
    assert load_reply(tmp_path / "missing.json") is None


def test_the_files_are_plain_json_with_their_version(tmp_path: Path) -> None:
    dump_job(full_job(tmp_path), tmp_path / "job.json")
    data = json.loads((tmp_path / "job.json").read_text(encoding="utf-8"))
    assert data["version"] == JOB_VERSION
    assert data["kernel_file"] == str(tmp_path / "k.py")
    assert data["skip_rules"][0]["reason"] == "no fp16"
    assert to_data(full_reply())["version"] == REPLY_VERSION


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _job_data(tmp_path: Path, **changes: Any) -> dict[str, Any]:
    return {**to_data(full_job(tmp_path)), **changes}


@pytest.mark.parametrize("version", [JOB_VERSION + 1, 0, None, "1"])
def test_a_job_of_another_version_is_refused(tmp_path: Path, version: object) -> None:
    path = _write(tmp_path / "job.json", _job_data(tmp_path, version=version))
    expected = rf"job\.json: field 'version': expected {JOB_VERSION}"
    with pytest.raises(KernbenchError, match=expected) as err:
        load_job(path)
    assert str(path) in str(err.value)
    assert "different versions of kernbench" in str(err.value)


def test_a_reply_of_another_version_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "reply.json", {**to_data(full_reply()), "version": 99})
    expected = rf"reply\.json: field 'version': expected {REPLY_VERSION}, got 99"
    with pytest.raises(KernbenchError, match=expected):
        load_reply(path)


def test_a_missing_field_is_refused_by_name(tmp_path: Path) -> None:
    data = _job_data(tmp_path)
    del data["kernel_name"]
    with pytest.raises(KernbenchError, match=r"job\.json: field 'kernel_name': missing"):
        load_job(_write(tmp_path / "job.json", data))


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("backend", 3, "expected str, got int 3"),
    ("trace_python", "yes", "expected bool"),
    ("fake_call_ms", True, "expected float"),
    ("settings", {"warmup": "3"}, "field 'settings.warmup': expected int, got str"),
    ("skip_rules", [{"reason": 1}], "field 'skip_rules[0].reason': expected str"),
    ("implementation", {"name": "t", "compile": "max"}, "field 'implementation.compile'"),
    ("profile", {"kind": "cprofile", "iterations": 1.5, "directory": "p", "case_id": "k"},
     "field 'profile.iterations': expected int, got float"),
])
def test_an_ill_typed_field_is_refused_by_name(tmp_path: Path, field: str, value: object,
                                              expected: str) -> None:
    path = _write(tmp_path / "job.json", _job_data(tmp_path, **{field: value}))
    with pytest.raises(KernbenchError, match=re.escape(expected)) as err:
        load_job(path)
    assert str(err.value).startswith(f"{path}: field '{field}")


def test_an_unknown_field_is_refused_by_name(tmp_path: Path) -> None:
    path = _write(tmp_path / "job.json", _job_data(tmp_path, tolerance={"rmse": 1}))
    with pytest.raises(KernbenchError, match=r"field 'tolerance': unknown"):
        load_job(path)


def test_a_reply_with_an_unknown_status_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "reply.json", {**to_data(full_reply()), "status": "timeout"})
    with pytest.raises(KernbenchError, match=r"field 'status': expected one of ok, skipped"):
        load_reply(path)


def test_the_writer_refuses_what_the_reader_would_refuse(tmp_path: Path) -> None:
    with pytest.raises(KernbenchError, match="field 'status'"):
        dump_reply(WorkerReply(status="done"), tmp_path / "reply.json")
    bad = WorkerJob(kernel_file=tmp_path, root=tmp_path, kernel_name="k", function_name="f",
                    framework="numpy", backend="cpu", precision="native",
                    settings=ProtocolSettings(), result_path=tmp_path / "r.json",
                    slowdown="2")  # type: ignore[arg-type]
    with pytest.raises(KernbenchError, match="field 'slowdown': expected float, got str"):
        dump_job(bad, tmp_path / "job.json")
    assert not (tmp_path / "reply.json").exists()
    assert not (tmp_path / "job.json").exists()


def test_the_worker_refuses_a_job_of_another_version(tmp_path: Path) -> None:
    from kernbench.execution.worker import main

    path = _write(tmp_path / "job.json", _job_data(tmp_path, version=JOB_VERSION + 1))
    with pytest.raises(KernbenchError, match="field 'version'"):
        main([str(path)])
    assert not (tmp_path / "r.json").exists()


class ReplyingLauncher:
    """Stands in for the worker launcher: reads the job the runner wrote and writes `text`
    as the reply, as a worker would."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.jobs: list[WorkerJob] = []

    def run(self, framework: str, slot: int, job: Path, cwd: Path, timeout_s: float,
            max_memory_bytes: int | None) -> WorkerExit:
        loaded = load_job(job)
        self.jobs.append(loaded)
        loaded.result_path.write_text(self.text, encoding="utf-8")
        return WorkerExit(returncode=0, timed_out=False, wall_s=0.1, pid=1, stdout_tail="",
                          stderr_tail="", stdout_bytes=0, stderr_bytes=0)

    def close(self) -> None:
        pass


def _run_with_reply(tmp_path: Path, text: str) -> tuple[Any, ReplyingLauncher]:
    launcher = ReplyingLauncher(text)
    runner = BenchmarkRunner(RunSettings(root=tmp_path, processes=1),
                             launcher=launcher)  # type: ignore[arg-type]
    spec = KernelSpec(name="k", path="k.py", framework="numpy", frameworks=("numpy",))
    return runner.run_case(Case(spec, "cpu", "native", None)), launcher


def test_the_runner_writes_a_typed_job_and_reads_the_reply(tmp_path: Path) -> None:
    text = json.dumps(to_data(WorkerReply(status="ok", samples_ns=(2e6,), inner_loops=1)))
    record, launcher = _run_with_reply(tmp_path, text)
    assert record.status == "ok"
    assert record.samples_ms == (2.0,)
    [job] = launcher.jobs
    assert job.kernel_file == tmp_path / "k.py"
    assert (job.framework, job.backend, job.precision) == ("numpy", "cpu", "native")
    assert job.version == JOB_VERSION


def test_an_unreadable_reply_fails_the_case_not_the_run(tmp_path: Path) -> None:
    text = json.dumps({**to_data(WorkerReply(status="ok")), "samples_ns": "fast"})
    record, _ = _run_with_reply(tmp_path, text)
    assert record.status == "failed"
    assert record.reason is not None
    assert "unreadable reply" in record.reason
    assert "field 'samples_ns'" in record.reason


@pytest.mark.parametrize(("samples", "refused"), [
    ([1.5, 2, 3.0], None), ([1.5, True], "samples_ns[1]': expected float, got bool True"),
    ([1.0, "2"], "samples_ns[1]': expected float, got str '2'"), ([None], "samples_ns[0]'")])
def test_raw_samples_are_checked_number_by_number(tmp_path: Path, samples: list[Any],
                                                   refused: str | None) -> None:
    path = _write(tmp_path / "reply.json", {**to_data(full_reply()), "samples_ns": samples})
    if refused is None:
        loaded = load_reply(path)
        assert loaded is not None and loaded.samples_ns == (1.5, 2, 3.0)
        return
    with pytest.raises(KernbenchError, match=re.escape(refused)):
        load_reply(path)


def test_an_item_of_a_nested_tuple_is_named_by_every_index() -> None:
    # The codec rewrite named [[1], [2, None]]'s bad item 'w[1]', not 'w[1][1]' as before.
    from kernbench.execution.jobs import _decode

    with pytest.raises(KernbenchError, match=re.escape("field 'w[1][1]': expected int")):
        _decode([[1], [2, None]], tuple[tuple[int, ...], ...], "SRC", "w")
    assert _decode([[1], [2]], tuple[tuple[int, ...], ...], "SRC", "w") == ((1,), (2,))
