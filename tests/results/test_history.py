"""Tests for kernbench.results.history: record format, append-only storage, reading and filters."""

from __future__ import annotations

import gzip
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest

from kernbench.analysis.summary import summary_dict
from kernbench.errors import KernbenchError
from kernbench.results import history
from kernbench.results import schema as schemamod
from kernbench.results.history import (
    append_record,
    iter_records,
    load_records,
    load_records_with_errors,
    parse_record_bytes,
)
from kernbench.results.history_names import (
    HISTORY_DIR,
    format_created_at,
    parse_history_name,
    record_path,
)
from kernbench.results.history_record import history_record
from kernbench.results.model import CaseResult, RunResult
from kernbench.results.schema import SCHEMA_VERSION

FP = "0123456789abcdef"
OTHER_FP = "fedcba9876543210"
SHA = "1234567890abcdef1234567890abcdef12345678"


def environment(fingerprint: str = FP, branch: str | None = "main",
                commit: str | None = SHA) -> dict[str, Any]:
    git = {"commit": commit, "short_commit": commit[:12] if commit else None, "branch": branch,
           "dirty": False, "detached": False, "describe": None, "reason": None}
    return {"fingerprint": fingerprint, "hostname": "box", "testbed": "pool-a", "git": git,
            "cpu": {"model": "Test CPU 9000", "logical_cores": 8},
            "os": {"system": "Linux", "machine": "x86_64"},
            "gpus": [{"name": "NVIDIA H100", "driver_version": "550"}]}


def case(kernel: str = "gemm", precision: str = "fp32",
         samples: tuple[float, ...] = (1.23456789, 2.0, 3.0, 4.0)) -> CaseResult:
    return CaseResult(kernel_name=kernel, kernel_path=f"kernels/{kernel}.py", framework="numpy",
                      backend="cpu", precision=precision, problem_size={"n": 64}, status="ok",
                      samples_ms=samples, inner_loops=10, timer="perf_counter_ns",
                      accuracy={"rmse": 1.234567891e-7, "max_error": 2e-6,
                                "relative_error": float("nan"), "passed": True,
                                "reference_source": "fp64"})


def summary(*kernels: str) -> dict[str, Any]:
    results = tuple(case(k) for k in kernels or ("gemm",))
    run = RunResult(started_at="2024-01-01T00:00:00Z", finished_at="2024-01-01T00:01:00Z",
                    complete=True, settings={"iterations": 4, "warmup": 3, "seed": 7,
                                             "processes": 1, "root": "/home/me/secret"},
                    environment=environment(), kernels=(), results=results)
    document: dict[str, Any] = json.loads(json.dumps(summary_dict(run)))
    return document


def record(created_at: str = "2024-05-01T12:00:00Z", kernels: tuple[str, ...] = ("gemm",),
           fingerprint: str = FP, branch: str | None = "main",
           commit: str | None = SHA) -> dict[str, Any]:
    return history_record(summary(*kernels), environment(fingerprint, branch, commit),
                          created_at=created_at)


def store(root: Path, *records: dict[str, Any]) -> list[Path]:
    return [append_record(root, r, fsync=False) for r in records]


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in (root / HISTORY_DIR).rglob("*") if p.is_file())


# --- the record ------------------------------------------------------------------------


def test_record_from_a_real_summary_is_compact() -> None:
    rec = record()
    assert rec["schema_version"] == SCHEMA_VERSION and rec["kind"] == "kernbench-history"
    assert rec["created_at"] == "2024-05-01T12:00:00.000Z"
    assert rec["git"] == {"commit": SHA, "short_commit": SHA[:12], "branch": "main",
                          "dirty": False}
    assert rec["fingerprint"] == FP
    assert rec["testbed"] == "pool-a"  # the machine's name in merged reports, beside its id
    assert rec["machine"] == {"cpu": "Test CPU 9000", "logical_cores": 8,
                              "gpus": ["NVIDIA H100"], "sku": "1x NVIDIA H100"}
    assert rec["settings"] == {"iterations": 4, "warmup": 3, "seed": 7, "processes": 1}
    (result,) = rec["results"]
    assert result["kernel_name"] == "gemm" and result["precision"] == "fp32"
    assert result["samples_ms"] == [1.23457, 2.0, 3.0, 4.0]  # 6 significant digits
    assert result["process_sample_counts"] == [4]
    assert result["inner_loops"] == 10  # what balances shards by wall time
    assert result["latency_ms_p50"] == 2.5
    assert result["accuracy"] == {"rmse": 1.23457e-7, "max_error": 2e-6,
                                  "relative_error": None, "passed": True}
    assert set(result) == {"kernel_name", "backend", "precision", "problem_size", "status",
                           "samples_ms", "process_sample_counts", "inner_loops",
                           "latency_ms_p50", "accuracy"}


def test_a_compact_result_keeps_the_measured_warm_up_for_shard_balance() -> None:
    from dataclasses import replace

    run = RunResult(started_at="2024-01-01T00:00:00Z", finished_at=None, complete=True,
                    settings={}, environment=environment(), kernels=(),
                    results=(replace(case(), warmup_s=0.25123456),))
    document = json.loads(json.dumps(summary_dict(run)))
    (result,) = history_record(document, environment())["results"]
    assert result["warmup_s"] == 0.251235


def test_a_sweep_points_compact_result_keeps_its_case_id_and_reads_back() -> None:
    from dataclasses import replace

    from kernbench.results.inputs import run_from_document

    point = replace(case(), problem_size={"m": 4, "k": 4, "n": 4}, point="m=4,k=4,n=4")
    run = RunResult(started_at="2024-01-01T00:00:00Z", finished_at=None, complete=True,
                    settings={}, environment=environment(), kernels=(), results=(point, case()))
    document = json.loads(json.dumps(summary_dict(run)))
    swept, plain = history_record(document, environment())["results"]
    assert swept["case_id"] == "gemm[cpu,fp32,m=4,k=4,n=4]"
    assert "case_id" not in plain  # plain ids are rebuilt from kernel, backend, precision
    loaded = run_from_document(history_record(document, environment()), "history")
    assert [r.case_id for r in loaded.results] == ["gemm[cpu,fp32,m=4,k=4,n=4]",
                                                   "gemm[cpu,fp32]"]


def test_a_gpu_case_keeps_its_modes_but_not_their_samples_and_reads_back() -> None:
    from dataclasses import replace

    from kernbench.analysis.gpu_summary import timing_mode
    from kernbench.results.inputs import run_from_document

    raw = {"requested": "graph", "primary": "graph", "modes": {"graph": {
        "mode": "hot", "requested_mode": "graph", "reason": "capture failed",
        "flush": {"bytes": None, "per": "none"}, "calls_per_sample": 10,
        "samples_us": [1.0, 2.0], "discarded_blocks": 0, "discard_reasons": {}}}}
    gpu = replace(case(), backend="cuda", gpu_timing=raw)
    run = RunResult(started_at="2024-01-01T00:00:00Z", finished_at=None, complete=True,
                    settings={}, environment=environment(), kernels=(), results=(gpu,))
    rec = history_record(json.loads(json.dumps(summary_dict(run))), environment())
    (result,) = rec["results"]
    assert result["gpu_timing"]["modes"]["graph"] == {
        "mode": "hot", "requested_mode": "graph", "reason": "capture failed",
        "flush": {"bytes": None, "per": "none"}, "calls_per_sample": 10}
    (loaded,) = run_from_document(rec, "history").results
    assert timing_mode(loaded.gpu_timing) == "hot"  # what a comparison checks


def test_process_sample_counts_come_from_the_timing_when_present() -> None:
    doc = summary()
    doc["results"][0]["timing"]["process_sample_counts"] = [1, 3]
    assert history_record(doc, environment())["results"][0]["process_sample_counts"] == [1, 3]
    absent: list[int] | None
    for absent in ([], None):
        doc["results"][0]["timing"]["process_sample_counts"] = absent
        assert history_record(doc, environment())["results"][0]["process_sample_counts"] == [4]
    del doc["results"][0]["timing"]["process_sample_counts"]
    assert history_record(doc, environment())["results"][0]["process_sample_counts"] == [4]
    doc["results"][0]["timing"]["samples_ms"] = []
    assert history_record(doc, environment())["results"][0]["process_sample_counts"] == []


def test_record_falls_back_to_the_summary_environment_and_defaults_to_now() -> None:
    before = format_created_at()
    rec = history_record(summary(), {})
    assert rec["fingerprint"] == FP and rec["git"]["branch"] == "main"
    assert before <= rec["created_at"] <= format_created_at()


def test_a_summary_of_a_newer_schema_is_refused() -> None:
    doc = {**summary(), "schema_version": SCHEMA_VERSION + 1}
    with pytest.raises(KernbenchError, match="newer"):
        history_record(doc, environment())


def test_created_at_is_normalised_to_utc_milliseconds() -> None:
    assert format_created_at("2024-05-01T14:00:00.123456+02:00") == "2024-05-01T12:00:00.123Z"
    assert format_created_at("2024-05-01T12:00:00") == "2024-05-01T12:00:00.000Z"


# --- writing ---------------------------------------------------------------------------


def test_file_is_sharded_by_date_and_named_by_time_commit_and_machine(tmp_path: Path) -> None:
    (path,) = store(tmp_path, record("2024-05-01T12:34:56.789Z"))
    rel = path.relative_to(tmp_path).as_posix()
    assert rel == f"{HISTORY_DIR}/2024/05/01/20240501T123456789Z-{SHA[:12]}-{FP}.jsonl.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["fingerprint"] == FP
    (nogit,) = store(tmp_path, record(commit=None))
    assert nogit.name == f"20240501T120000000Z-nogit-{FP}.jsonl.gz"


def test_appending_the_same_record_twice_writes_a_second_file(tmp_path: Path) -> None:
    rec = record()
    first = append_record(tmp_path, rec)
    before = first.read_bytes()
    second = append_record(tmp_path, rec)
    assert second != first and second.name.endswith(f"-{FP}-1.jsonl.gz")
    assert first.read_bytes() == before
    assert files_under(tmp_path) == sorted([first, second])
    assert len(load_records(tmp_path)) == 2


def test_an_existing_file_under_the_name_is_never_replaced(tmp_path: Path) -> None:
    rec = record()
    taken = record_path(tmp_path, rec)
    taken.parent.mkdir(parents=True)
    taken.write_bytes(b"precious")
    written = append_record(tmp_path, rec)
    assert written != taken and taken.read_bytes() == b"precious"


def test_without_hard_links_the_rename_fallback_still_never_replaces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(src: Any, dst: Any) -> None:
        raise PermissionError("hard links not supported here")

    monkeypatch.setattr(os, "link", no_links)
    rec = record()
    first = append_record(tmp_path, rec)
    second = append_record(tmp_path, rec)
    assert first != second and files_under(tmp_path) == sorted([first, second])
    assert [r["created_at"] for r in load_records(tmp_path)] == [rec["created_at"]] * 2


def test_a_crash_while_writing_leaves_no_file_under_the_final_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(fd: int) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "fsync", crash)
    rec = record()
    with pytest.raises(OSError, match="disk gone"):
        append_record(tmp_path, rec)
    assert not record_path(tmp_path, rec).exists()
    assert files_under(tmp_path) == []


def test_a_crash_before_publishing_leaves_no_file_under_the_final_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(tmp: Path, target: Path) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(history, "_publish", killed)
    rec = record()
    with pytest.raises(KeyboardInterrupt):
        append_record(tmp_path, rec)
    assert not record_path(tmp_path, rec).exists()
    assert files_under(tmp_path) == []


def test_a_temp_file_left_by_a_killed_writer_is_ignored(tmp_path: Path) -> None:
    (good,) = store(tmp_path, record())
    (good.parent / ".tmp-999-abcdef.jsonl.gz").write_bytes(good.read_bytes()[:20])
    records, errors = load_records_with_errors(tmp_path)
    assert len(records) == 1 and errors == []


def test_append_refuses_what_is_not_a_history_record(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="kind"):
        append_record(tmp_path, {"schema_version": 1, "created_at": "2024-01-01T00:00:00Z"})
    with pytest.raises(ValueError, match="created_at"):
        append_record(tmp_path, {**record(), "created_at": None})
    assert not (tmp_path / HISTORY_DIR).exists()


# --- reading ---------------------------------------------------------------------------


def test_round_trip_through_the_store(tmp_path: Path) -> None:
    rec = record(kernels=("gemm", "softmax"))
    (path,) = store(tmp_path, rec)
    assert load_records(tmp_path) == [rec]
    assert list(iter_records(tmp_path)) == [rec]
    assert parse_record_bytes(path.read_bytes(), str(path)) == [rec]
    name = parse_history_name(path.name)
    assert name is not None and name.fingerprint == FP and name.created_at == rec["created_at"]


def test_nothing_stored_reads_as_nothing(tmp_path: Path) -> None:
    assert load_records_with_errors(tmp_path) == ([], [])
    assert list(iter_records(tmp_path)) == []


@pytest.fixture()
def populated(tmp_path: Path) -> Path:
    store(tmp_path,
          record("2024-01-15T08:00:00Z", ("gemm", "layernorm")),
          record("2024-02-20T09:00:00Z", ("softmax",), fingerprint=OTHER_FP),
          record("2024-03-01T10:00:00Z", ("gemm", "rmsnorm"), branch="feature"),
          record("2024-03-01T11:00:00Z", ("fft",)),
          record("2024-04-10T12:00:00Z", ("layernorm",), fingerprint=OTHER_FP, branch=None))
    return tmp_path


def created(records: list[dict[str, Any]]) -> list[str]:
    return [r["created_at"][:13] for r in records]


def test_newest_first(populated: Path) -> None:
    assert created(load_records(populated)) == [
        "2024-04-10T12", "2024-03-01T11", "2024-03-01T10", "2024-02-20T09", "2024-01-15T08"]


def test_kernel_glob_keeps_only_matching_results(populated: Path) -> None:
    found = load_records(populated, kernel="*norm")
    assert created(found) == ["2024-04-10T12", "2024-03-01T10", "2024-01-15T08"]
    assert [[r["kernel_name"] for r in rec["results"]] for rec in found] == [
        ["layernorm"], ["rmsnorm"], ["layernorm"]]
    exact = load_records(populated, kernel="gemm")
    assert created(exact) == ["2024-03-01T10", "2024-01-15T08"]
    assert all(len(r["results"]) == 1 for r in exact)
    assert load_records(populated, kernel="gem") == []


def test_fingerprint_branch_since_and_limit(populated: Path) -> None:
    assert created(load_records(populated, fingerprint=OTHER_FP)) == [
        "2024-04-10T12", "2024-02-20T09"]
    assert created(load_records(populated, branch="feature")) == ["2024-03-01T10"]
    assert created(load_records(populated, since="2024-03")) == [
        "2024-04-10T12", "2024-03-01T11", "2024-03-01T10"]
    assert created(load_records(populated, since="2024-03-01T10:30:00Z")) == [
        "2024-04-10T12", "2024-03-01T11"]
    assert created(load_records(populated, limit=2)) == ["2024-04-10T12", "2024-03-01T11"]
    assert created(load_records(populated, fingerprint=FP, kernel="gemm", limit=1)) == [
        "2024-03-01T10"]
    assert load_records(populated, limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        load_records(populated, limit=-1)


def test_a_file_with_a_foreign_name_is_still_read_and_ordered(populated: Path) -> None:
    newest = record("2025-01-01T00:00:00Z", ("gemm",))
    odd = populated / HISTORY_DIR / "imported" / "old-run.jsonl.gz"
    odd.parent.mkdir()
    odd.write_bytes(gzip.compress((json.dumps(newest) + "\n").encode()))
    assert created(load_records(populated, limit=2)) == ["2025-01-01T00", "2024-04-10T12"]
    assert created(load_records(populated, since="2024-04")) == ["2025-01-01T00", "2024-04-10T12"]


def test_corrupt_files_and_lines_are_skipped_and_reported(
        populated: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = populated / HISTORY_DIR / "2024" / "05" / "01"
    folder.mkdir(parents=True)
    good = json.dumps(record("2024-05-01T00:00:01Z"))
    whole = gzip.compress(good.encode())
    (folder / "20240501T000000001Z-nogit-x.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    (folder / "20240501T000000002Z-nogit-x.jsonl.gz").write_bytes(b"\x1f\x8bnot gzip at all")
    mixed = gzip.compress(f'{{"broken": \n{good}\n[1, 2]\n'.encode())
    (folder / "20240501T000000003Z-nogit-x.jsonl.gz").write_bytes(mixed)
    records, errors = load_records_with_errors(populated)
    assert len(records) == 6 and records[0]["created_at"] == "2024-05-01T00:00:01.000Z"
    assert len(errors) == 4
    assert any("000001Z" in e and "truncated" in e for e in errors)
    assert any("000002Z" in e and "gzip" in e for e in errors)
    assert any(e.endswith("line skipped") and ".jsonl.gz:1:" in e for e in errors)
    assert any("not a JSON object" in e and ".jsonl.gz:3:" in e for e in errors)
    with caplog.at_level(logging.WARNING, logger="kernbench.results.history"):
        assert len(load_records(populated)) == 6
    assert sum("skipped" in m for m in caplog.messages) == 4


def test_a_record_without_a_testbed_still_loads(tmp_path: Path) -> None:
    """Schema-3 records written before the testbed was kept have none: they read as before."""
    older = {k: v for k, v in record().items() if k != "testbed"}
    store(tmp_path, older)
    (rec,) = load_records(tmp_path, fingerprint=FP)
    assert rec.get("testbed") is None and rec["results"][0]["kernel_name"] == "gemm"
    bare = {k: v for k, v in environment().items() if k != "testbed"}
    assert history_record({**summary(), "environment": bare}, bare)["testbed"] is None


def test_records_of_a_newer_schema_are_skipped(tmp_path: Path) -> None:
    newer = {**record("2024-06-01T00:00:00Z"), "schema_version": SCHEMA_VERSION + 1}
    store(tmp_path, record(), newer)
    records, errors = load_records_with_errors(tmp_path)
    assert [r["schema_version"] for r in records] == [SCHEMA_VERSION]
    assert len(errors) == 1 and "newer" in errors[0]


def test_older_records_are_migrated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store(tmp_path, record())
    monkeypatch.setattr(schemamod, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(schemamod.MIGRATIONS, SCHEMA_VERSION,
                        lambda doc: {**doc, "migrated": True})
    (rec,) = load_records(tmp_path)
    assert rec["migrated"] is True and rec["schema_version"] == SCHEMA_VERSION + 1


def test_parse_record_bytes_reads_plain_json_lines(tmp_path: Path) -> None:
    one, two = record("2024-01-01T00:00:00Z"), record("2024-01-02T00:00:00Z")
    data = f"{json.dumps(one)}\n\n{json.dumps(two)}\n".encode()
    errors: list[str] = []
    assert parse_record_bytes(data, "main:x.jsonl", errors.append) == [one, two]
    assert errors == []
    assert parse_record_bytes(b'{"kind": "other"}', "main:y", errors.append) == []
    assert errors and errors[0].startswith("main:y:1: not a kernbench history record")


def test_loading_1000_records_is_fast(tmp_path: Path) -> None:
    template = history_record(summary(*(f"k{i}" for i in range(20))), environment(),
                              created_at="2024-01-01T00:00:00Z")
    for result in template["results"]:
        result["samples_ms"] = [0.0123456 * (1 + j / 97) for j in range(30)]
    for i in range(1000):
        rec = {**template, "created_at": format_created_at(f"2024-01-01T00:00:00.{i:03d}")}
        append_record(tmp_path, rec, fsync=False)
    begin = time.perf_counter()
    records = load_records(tmp_path)
    elapsed = time.perf_counter() - begin
    assert len(records) == 1000 and len(records[0]["results"]) == 20
    assert records[0]["created_at"] == "2024-01-01T00:00:00.999Z"
    assert elapsed < 3.0, f"loading 1000 records took {elapsed:.2f} s"
    assert len(os.listdir(tmp_path / HISTORY_DIR / "2024" / "01" / "01")) == 1000
