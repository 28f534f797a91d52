"""validate_report_dir: the gate between an untrusted artifact and the comment bot."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kernbench.errors import KernbenchError
from kernbench.reporting.validate import validate_report_dir
from kernbench.results.schema import SCHEMA_VERSION
from support.reports import FIXTURE


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    target = tmp_path / "report"
    shutil.copytree(FIXTURE, target)
    (target / "history.json").unlink()
    (target / "kernels").mkdir()
    (target / "kernels" / "gemm.json").write_text("{}", encoding="utf-8")
    return target


def edit(path: Path, change: Callable[[Any], None]) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(json.dumps(document), encoding="utf-8")


def refused(path: Path, *parts: str, **caps: int) -> str:
    with pytest.raises(KernbenchError) as info:
        validate_report_dir(path, **caps)
    message = info.value.message
    for part in parts:
        assert part in message, message
    assert "\n" not in message
    return message


def test_fixture_passes(run_dir: Path) -> None:
    validate_report_dir(FIXTURE)
    validate_report_dir(run_dir)


def test_summary_only_passes(run_dir: Path) -> None:
    (run_dir / "env.json").unlink()
    (run_dir / "comparison.json").unlink()
    validate_report_dir(run_dir)


def test_missing_summary(run_dir: Path) -> None:
    (run_dir / "summary.json").unlink()
    refused(run_dir, "summary.json", "no such file")


# --- the directory -------------------------------------------------------------------------

def test_symlink_to_file_refused(run_dir: Path) -> None:
    (run_dir / "kernels" / "leak.json").symlink_to("/etc/passwd")
    refused(run_dir, "leak.json", "symbolic link")


def test_symlink_to_directory_refused(run_dir: Path, tmp_path: Path) -> None:
    (run_dir / "plots").symlink_to(tmp_path)
    refused(run_dir, "plots", "symbolic link")


def test_dangling_symlink_as_summary_refused(run_dir: Path) -> None:
    (run_dir / "summary.json").unlink()
    (run_dir / "summary.json").symlink_to(run_dir / "nowhere")
    refused(run_dir, "summary.json", "symbolic link")


def test_directory_itself_a_symlink_refused(run_dir: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(run_dir)
    refused(link, "link", "symlink")


def test_a_missing_directory_is_said_to_be_missing(tmp_path: Path) -> None:
    refused(tmp_path / "nowhere", "nowhere", "expected a report directory, got no such folder")
    (tmp_path / "file").write_text("x")
    refused(tmp_path / "file", "file", "expected a report directory, got not a folder")


def test_hostile_file_name_cannot_forge_log_lines(run_dir: Path) -> None:
    (run_dir / "kernels" / "x\n::error::forged").symlink_to("/etc/passwd")
    message = refused(run_dir, "symbolic link", "\\n::error::forged")
    assert "\n" not in message


def test_fifo_refused(run_dir: Path) -> None:
    os.mkfifo(run_dir / "kernels" / "pipe.json")
    refused(run_dir, "pipe.json", "not a regular file")


def test_oversize_file_refused_without_reading(run_dir: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (run_dir / "summary.json").unlink()
    with open(run_dir / "summary.json", "wb") as f:
        f.truncate(30_000_000)  # sparse: 30 MB of zeros that take no disk

    def no_reading(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("validate_report_dir read an oversize file")

    monkeypatch.setattr(Path, "read_bytes", no_reading)
    monkeypatch.setattr(Path, "read_text", no_reading)
    refused(run_dir, "summary.json", "30000000 bytes", "20000000 bytes per file")


def test_oversize_file_anywhere(run_dir: Path) -> None:
    biggest = max(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
    (run_dir / "plots").mkdir()
    with open(run_dir / "plots" / "big.png", "wb") as f:
        f.truncate(biggest + 1)
    refused(run_dir, "big.png", f"{biggest + 1} bytes", max_file_bytes=biggest,
            max_total_bytes=10**9)


def test_total_over_cap(run_dir: Path) -> None:
    size = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
    for i in range(3):
        with open(run_dir / f"part{i}.bin", "wb") as f:
            f.truncate(1_000_000)
    refused(run_dir, "limit of", "in all", max_total_bytes=size + 2_500_000)


# --- the documents -------------------------------------------------------------------------

def test_not_json(run_dir: Path) -> None:
    (run_dir / "env.json").write_text("{not json", encoding="utf-8")
    refused(run_dir, "env.json", "not valid JSON")


def test_not_utf8(run_dir: Path) -> None:
    (run_dir / "comparison.json").write_bytes(b'{"verdict": "\xff"}')
    refused(run_dir, "comparison.json", "not UTF-8")


def test_nested_too_deeply(run_dir: Path) -> None:
    (run_dir / "summary.json").write_text("[" * 200_000 + "]" * 200_000, encoding="utf-8")
    refused(run_dir, "summary.json", "not valid JSON")


def test_not_an_object(run_dir: Path) -> None:
    (run_dir / "summary.json").write_text("[]", encoding="utf-8")
    refused(run_dir, "summary.json", "$:", "expected an object")


def test_newer_schema_version(run_dir: Path) -> None:
    edit(run_dir / "summary.json", lambda d: d.update(schema_version=SCHEMA_VERSION + 1))
    refused(run_dir, "summary.json", "$.schema_version", "newer", "upgrade")


def set_in(path: tuple[Any, ...], value: Any) -> Callable[[Any], None]:
    def change(document: Any) -> None:
        for part in path[:-1]:
            document = document[part]
        if value is KeyError:
            del document[path[-1]]
        else:
            document[path[-1]] = value
    return change


CASES = [
    ("summary.json", ("schema_version",), 0, "$.schema_version", "a number >= 1"),
    ("summary.json", ("schema_version",), "1", "$.schema_version", "an integer"),
    ("summary.json", ("results",), KeyError, "$.results", "present"),
    ("summary.json", ("results",), {"a": 1}, "$.results", "an array"),
    ("summary.json", ("results", 2, "status"), "exploded", "$.results[2].status",
     "one of ok, failed"),
    ("summary.json", ("results", 0, "case_id"), "x" * 1_001, "$.results[0].case_id",
     "at most 1000 characters"),
    ("summary.json", ("results", 3, "kernel_name"), None, "$.results[3].kernel_name",
     "a string"),
    ("summary.json", ("results", 3, "timing", "latency_ms_p50"), "fast",
     "$.results[3].timing.latency_ms_p50", "a number or null"),
    ("summary.json", ("results", 3, "timing"), [], "$.results[3].timing",
     "an object or null"),
    ("summary.json", ("results", 4, "timing", "samples_ms", 1), "1.0",
     "$.results[4].timing.samples_ms[1]", "a number"),
    ("summary.json", ("results", 4, "warnings"), ["slow"], "$.results[4].warnings[0]",
     "an object"),
    ("summary.json", ("counts", "ok"), -1, "$.counts.ok", "a number >= 0"),
    ("env.json", ("gpus",), "H100", "$.gpus", "an array"),
    ("env.json", ("cpu", "model"), 5, "$.cpu.model", "a string or null"),
    ("env.json", ("git", "commit"), "c" * 5_000, "$.git.commit", "at most 1000"),
    ("comparison.json", ("verdict",), KeyError, "$.verdict", "present"),
    ("comparison.json", ("cases", 0, "verdict"), "worse", "$.cases[0].verdict",
     "one of regressed, improved"),
    ("comparison.json", ("cases", 3, "ratio"), "1.5", "$.cases[3].ratio", "a number or null"),
    ("comparison.json", ("cases", 3, "processes", "baseline"), 1.5,
     "$.cases[3].processes.baseline", "an integer"),
    ("comparison.json", ("cases", 3, "accuracy_drift", "flagged"), "yes",
     "$.cases[3].accuracy_drift.flagged", "true or false"),
    ("comparison.json", ("counts", "regressed"), "2", "$.counts.regressed", "an integer"),
    ("comparison.json", ("counts", "missing"), KeyError, "$.counts.missing", "present"),
    ("comparison.json", ("baseline", "commit"), ["c305"], "$.baseline.commit",
     "a string or null"),
    ("comparison.json", ("kind",), "something-else", "$.kind", "'kernbench-comparison'"),
    ("comparison.json", ("warnings",), ["ok", 3], "$.warnings[1]", "a string"),
]


@pytest.mark.parametrize(("name", "path", "value", "where", "expected"), CASES,
                         ids=[f"{c[0]}:{c[3]}" for c in CASES])
def test_schema_errors_name_file_and_path(run_dir: Path, name: str, path: tuple[Any, ...],
                                          value: Any, where: str, expected: str) -> None:
    edit(run_dir / name, set_in(path, value))
    message = refused(run_dir, name, f"{where}:", expected)
    assert len(message) < 600


def test_extra_keys_allowed(run_dir: Path) -> None:
    edit(run_dir / "summary.json", lambda d: d["results"][0].update(future_field={"x": 1}))
    edit(run_dir / "comparison.json", lambda d: d.update(future_field=[1, 2]))
    validate_report_dir(run_dir)


def test_hostile_values_do_not_reach_the_message_raw(run_dir: Path) -> None:
    hostile = "\n::error::forged\r\n" + "x" * 10_000
    edit(run_dir / "summary.json", set_in(("counts", hostile), "many"))
    message = refused(run_dir, "summary.json", "$.counts", "an integer")
    assert "::error::" not in message.split("$")[0]
    assert "\r" not in message and len(message) < 800


# --- numbers JSON allows but a report cannot hold ------------------------------------------

@pytest.mark.parametrize(("name", "path", "literal", "got"), [
    ("summary.json", ("results", 0, "timing", "latency_ms_p50"), "1e309", "inf"),
    ("summary.json", ("results", 4, "timing", "samples_ms", 1), "NaN", "nan"),
    ("comparison.json", ("cases", 3, "ratio"), "-Infinity", "-inf"),
    ("comparison.json", ("settings", "threshold"), "Infinity", "inf"),
    ("env.json", ("cpu", "logical_cores"), "1" + "0" * 400, "401 digits"),
    ("comparison.json", ("cases", 0, "ratio"), "1" + "0" * 400, "401 digits"),
])
def test_non_finite_and_huge_numbers_refused(run_dir: Path, name: str, path: tuple[Any, ...],
                                             literal: str, got: str) -> None:
    marker = 7.25e-7  # a float json.dumps writes as one distinct literal, swapped afterwards
    edit(run_dir / name, set_in(path, marker))
    text = (run_dir / name).read_text(encoding="utf-8")
    assert text.count(repr(marker)) == 1
    (run_dir / name).write_text(text.replace(repr(marker), literal), encoding="utf-8")
    where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    message = refused(run_dir, name, f"{where}:", "expected a", got)
    assert "Traceback" not in message and len(message) < 400


def test_environment_block_of_the_summary_is_checked(run_dir: Path) -> None:
    """Without env.json the comment reads summary.json's own environment block."""
    (run_dir / "env.json").unlink()
    edit(run_dir / "summary.json", set_in(("environment", "gpus"), [{"name": ["H100"]}]))
    refused(run_dir, "summary.json", "$.environment.gpus[0].name:", "a string or null")
    edit(run_dir / "summary.json", set_in(("environment",), "a laptop"))
    refused(run_dir, "summary.json", "$.environment:", "an object")
