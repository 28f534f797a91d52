"""Bad files in, clear errors out; safe file names; nothing written outside --output-dir.

Result files (summary.json, kernels/*.json, history records, comparison inputs) that are
corrupt, truncated, of a newer schema or of the wrong shape give a KernbenchError naming the
file (and the key where one is at fault), never a traceback. Hypothesis feeds the loaders
arbitrary documents and bytes (60 examples each; set KERNBENCH_FUZZ_EXAMPLES for more).
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernbench.cli.main import main
from kernbench.errors import KernbenchError
from kernbench.execution.resume import load_previous
from kernbench.reporting.bundle import load_report_inputs
from kernbench.results.files import (
    atomic_writer,
    check_output_dir,
    safe_filename,
    write_bytes_atomic,
    write_json_atomic,
    write_text_atomic,
)
from kernbench.results.history import parse_record_bytes
from kernbench.results.inputs import load_run
from kernbench.results.schema import SCHEMA_VERSION
from support.kernel_tree import FAST, kernel, load, write

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "report_run"
SUMMARY = json.loads((FIXTURE / "summary.json").read_text(encoding="utf-8"))
FUZZ = settings(max_examples=int(os.environ.get("KERNBENCH_FUZZ_EXAMPLES", "60")), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def error_of(call: Any, *args: Any) -> str:
    with pytest.raises(KernbenchError) as caught:
        call(*args)
    return caught.value.message


def put(directory: Path, name: str, data: bytes | str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    return path


# -- corrupt, truncated and newer result files --------------------------------------------------

GOOD_TEXT = json.dumps(SUMMARY)
BROKEN: dict[str, bytes] = {
    "truncated": GOOD_TEXT[: len(GOOD_TEXT) // 2].encode(),
    "empty": b"",
    "binary": b"\x00\xff\xfe garbage",
    "a list": b"[1, 2, 3]",
    "no version": json.dumps({"results": []}).encode(),
    "newer": json.dumps({**SUMMARY, "schema_version": 99}).encode(),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
@pytest.mark.parametrize("loader", [load_run, load_report_inputs, load_previous],
                         ids=["compare", "report", "resume"])
def test_a_broken_summary_is_an_error_naming_the_file(tmp_path: Path, kind: str,
                                                      loader: Any) -> None:
    path = put(tmp_path, "summary.json", BROKEN[kind])
    message = error_of(loader, tmp_path)
    assert str(path) in message
    if kind == "newer":
        assert (f"schema_version 99 is newer than this kernbench reads ({SCHEMA_VERSION}); "
                "upgrade") in message


def test_a_broken_kernel_file_is_named_when_resuming(tmp_path: Path) -> None:
    put(tmp_path, "summary.json", json.dumps({**SUMMARY, "complete": False}))
    bad = put(tmp_path, "kernels/gemm.json", BROKEN["truncated"])
    assert f"{bad}: not valid JSON (truncated or corrupt?)" in error_of(load_previous, tmp_path)
    put(tmp_path, "kernels/gemm.json", json.dumps({"schema_version": 1, "results": [{}]}))
    assert f"{bad}: key 'results[0]': not a case record" in error_of(load_previous, tmp_path)
    put(tmp_path, "kernels/gemm.json", json.dumps({"schema_version": 1, "results": 3}))
    assert f"{bad}: key 'results': expected a list" in error_of(load_previous, tmp_path)


@pytest.mark.parametrize(("results", "key"), [
    ([{"backend": "cpu"}], "results[0]"),
    ([SUMMARY["results"][0], {"kernel_name": "x", "backend": "cpu", "precision": "fp32",
                              "status": "exploded"}], "results[1]"),
    ([SUMMARY["results"][0], "not a record"], "results[1]"),
    (5, "results"),
])
def test_a_malformed_record_names_its_key(tmp_path: Path, results: Any, key: str) -> None:
    path = put(tmp_path, "summary.json", json.dumps({**SUMMARY, "results": results}))
    message = error_of(load_run, path)
    assert message.startswith(f"{path}: key '{key}'"), message


def test_a_case_twice_or_a_negative_sample_is_refused(tmp_path: Path) -> None:
    """Which copy of a doubled case a comparison used was chance (the verdict flipped with
    the order of the files); a negative latency is no measurement."""
    record = SUMMARY["results"][0]
    path = put(tmp_path, "summary.json", json.dumps({**SUMMARY, "results": [record, record]}))
    message = error_of(load_run, path)
    assert message.startswith(f"{path}: key 'results[1]': case ") and "also results[0]" in message
    negative = copy.deepcopy(record)
    negative["timing"]["samples_ms"] = [1.0, -5.0]
    put(tmp_path, "summary.json", json.dumps({**SUMMARY, "results": [negative]}))
    assert "'samples_ms' must be a list of numbers, none negative" in error_of(load_run, path)


def test_one_kernels_file_is_not_a_run(tmp_path: Path) -> None:
    path = put(tmp_path, "kernels/gemm.json", json.dumps(
        {"schema_version": SCHEMA_VERSION, "kernel_name": "gemm", "kernel": None,
         "results": SUMMARY["results"]}))
    assert error_of(load_run, path) == (
        f"{path}: one kernel's file of a report set (kernels/NAME.json), not a run: give the "
        "report directory, its summary.json or a history record")


def test_a_truncated_or_corrupt_history_file_is_named(tmp_path: Path) -> None:
    record = gzip.compress(b'{"kind": "kernbench-history"}\n')
    path = put(tmp_path, "h.jsonl.gz", record[: len(record) // 2])
    assert str(path) in error_of(load_run, path)
    errors: list[str] = []
    assert parse_record_bytes(record[:-4], "h.jsonl.gz", errors.append) == []
    assert errors and errors[0].startswith("h.jsonl.gz: corrupt or truncated gzip data")


def test_the_cli_reports_a_corrupt_comparison_input_with_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = put(tmp_path / "a", "summary.json", GOOD_TEXT)
    bad = put(tmp_path / "b", "summary.json", BROKEN["truncated"])
    assert main(["compare", str(good), str(bad), "--output-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kernbench: error: {bad}: cannot read results")
    assert "Traceback" not in err
    assert not (tmp_path / "c").exists()


# -- fuzzing the loaders -----------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
RECORD_KEYS = sorted(SUMMARY["results"][0])


@st.composite
def mutated_summaries(draw: st.DrawFn) -> dict[str, Any]:
    """A real summary.json with a few values replaced by arbitrary JSON or removed."""
    document = copy.deepcopy(SUMMARY)
    targets = [document, *document["results"]]
    for _ in range(draw(st.integers(1, 4))):
        target = draw(st.sampled_from(targets))
        key = draw(st.sampled_from(sorted(target) or ["results"]))
        if draw(st.booleans()):
            target.pop(key, None)
        else:
            target[key] = draw(JSON)
    return document


def test_a_summary_whose_settings_are_no_object_is_a_clear_error_to_resume(
        tmp_path: Path) -> None:
    """What the fuzz test below found: `settings: [null]` was an AttributeError in --resume."""
    document = {**copy.deepcopy(SUMMARY), "settings": [None]}
    path = put(tmp_path, "summary.json", json.dumps(document))
    with pytest.raises(KernbenchError) as caught:
        load_previous(tmp_path)
    assert caught.value.message.startswith(f"{path}: key 'settings': expected an object")


@FUZZ
@given(document=mutated_summaries() | st.dictionaries(st.text(max_size=8), JSON, max_size=5))
def test_fuzz_loading_a_result_document_gives_results_or_a_clear_error(
        tmp_path: Path, document: dict[str, Any]) -> None:
    path = put(tmp_path, "summary.json", json.dumps(document))
    for loader in (load_run, load_previous):
        try:
            loader(tmp_path)
        except KernbenchError as exc:
            assert str(path) in exc.message


@FUZZ
@given(data=st.binary(max_size=200) | st.builds(
    lambda text, cut: text.encode()[:cut], st.just(GOOD_TEXT), st.integers(0, 400)))
def test_fuzz_loading_arbitrary_bytes_gives_a_clear_error(tmp_path: Path, data: bytes) -> None:
    path = put(tmp_path, "summary.json", data)
    for loader in (load_run, load_previous, load_report_inputs):
        try:
            loader(tmp_path)
        except KernbenchError as exc:
            assert str(path) in exc.message
    errors: list[str] = []
    parse_record_bytes(data, "h.jsonl", errors.append)
    assert all(e.startswith("h.jsonl") for e in errors)


# -- kernel names as file names ----------------------------------------------------------------

SAFE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]*$")


@given(name=st.text(min_size=1, max_size=300))
def test_fuzz_safe_filename_is_one_safe_path_component(name: str) -> None:
    cleaned = safe_filename(name)
    assert SAFE.match(cleaned), cleaned
    assert len(cleaned) <= 130
    assert cleaned not in (".", "..")


@given(a=st.text(min_size=1, max_size=40), b=st.text(min_size=1, max_size=40))
def test_fuzz_different_names_get_different_files(a: str, b: str) -> None:
    if a != b:
        assert safe_filename(a) != safe_filename(b)


NAMES = ["with space", "ünïcödé", "x" * 200, "dots..", "-dash"]


@pytest.mark.slow
def test_odd_kernel_names_give_safe_files_inside_the_output_dir(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    for name in NAMES:
        write(root / "kernels" / f"{name}.py", "def run_benchmark():\n    return 1.0\n")
    for folder in ("a", "b"):  # the same name twice: the kernel names become paths with "/"
        write(root / "kernels" / folder / "same.py", "def run_benchmark():\n    return 1.0\n")
    out = tmp_path / "out"
    code = main(["run", "--root", str(root), "--output-dir", str(out), *FAST,
                 "--debug-fake-timer", "1", "-q", "--format", "json"])
    assert code == 0
    summary = load(out / "summary.json")
    assert len(summary["results"]) == len(NAMES) + 2
    files = sorted((out / "kernels").iterdir())
    assert len(files) == len(NAMES) + 2
    by_name = {load(f)["kernel_name"]: f for f in files}
    assert set(by_name) == {r["kernel_name"] for r in summary["results"]}
    for name, path in by_name.items():
        assert path.parent == out / "kernels"
        assert SAFE.match(path.stem), path.name
        assert len(path.name) < 160
        assert load(path)["results"][0]["kernel_name"] == name


# -- nothing written outside the output directory ----------------------------------------------

TOUCHY = {  # kernels that fail in every way but write nothing themselves
    "good": "import numpy as np\n\ndef run_benchmark():\n    return np.ones(3)\n",
    "raiser": "def run_benchmark():\n    raise ValueError('no')\n",
    "segv": "import os, signal\n\ndef run_benchmark():\n    os.kill(os.getpid(), signal.SIGSEGV)\n",
    "missing": "import kernbench_missing_module\n\ndef run_benchmark():\n    return 1\n",
    "flood": "import sys\n\ndef run_benchmark():\n    print('x' * 100000)\n    return 1.0\n",
    "broken": "def run_benchmark(:\n",
}


def snapshot(directory: Path, skip: Path) -> dict[str, tuple[int, int] | None]:
    """Every path under `directory` but `skip`: files with (size, mtime_ns), folders None
    (a folder's mtime changes when a file is made and removed in it: temporary files).
    Python's own bytecode cache is left out: importing a kernel writes `__pycache__` beside
    it as any import does, unless the user's PYTHONDONTWRITEBYTECODE says not to (the
    workers run in the user's environment), and the git checks count it as no code."""
    found: dict[str, tuple[int, int] | None] = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = [d for d in dirnames if Path(dirpath, d) != skip and d != "__pycache__"]
        for name in dirnames:
            found[str(Path(dirpath, name).relative_to(directory))] = None
        for name in filenames:
            stat = Path(dirpath, name).lstat()
            found[str(Path(dirpath, name).relative_to(directory))] = (stat.st_size,
                                                                      stat.st_mtime_ns)
    return found


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX")
def test_nothing_is_written_outside_the_output_dir(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "repo"
    for name, source in TOUCHY.items():
        kernel(root, name, source)
    write(root / "kernels" / "good" / "bench.yaml", "precisions: [fp32]\n")
    out = tmp_path / "work" / "out"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    before = snapshot(tmp_path, out)
    code = main(["run", "--root", str(root), "--output-dir", str(out), *FAST,
                 "--debug-fake-timer", "1", "-q", "--cache-dir", str(tmp_path / "cache"),
                 "--format", "json,md,html,csv"])
    assert code == 2
    assert snapshot(tmp_path, out) == before
    assert (out / "summary.json").is_file()


# -- fuzzing bench.yaml and suite files: a config or a clear error, nothing else --------------

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def readme_yaml(after: str) -> str:
    """The first ```yaml block of the README after the heading `after`."""
    block = README[README.index(after):]
    block = block[block.index("```yaml\n") + 8:]
    return block[:block.index("```")]


BENCH_EXAMPLE = readme_yaml("## bench.yaml reference")
SUITE_EXAMPLE = readme_yaml("### Suite files")


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    """`text` with a few characters deleted, replaced or inserted."""
    for _ in range(draw(st.integers(1, 5))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 3))
        text = text[:at] + draw(st.text(max_size=3)) + text[at + cut:]
    return text


@FUZZ
@given(data=st.binary(max_size=300) | mutated(BENCH_EXAMPLE).map(
    lambda t: t.encode("utf-8", "surrogatepass")))
def test_fuzz_bench_yaml_bytes_give_a_config_or_a_config_error(tmp_path: Path,
                                                               data: bytes) -> None:
    from kernbench.config.loading import load_bench_config
    from kernbench.errors import ConfigError

    path = put(tmp_path, "bench.yaml", data)
    try:
        load_bench_config(path, "kernels/x/bench.yaml")
    except ConfigError as exc:
        assert exc.message.startswith("kernels/x/bench.yaml")


@FUZZ
@given(text=mutated(SUITE_EXAMPLE))
def test_fuzz_suite_files_give_a_suite_or_a_clear_error(tmp_path: Path, text: str) -> None:
    from kernbench.config.suite import load_suite

    path = put(tmp_path, "suite.yml", text.encode("utf-8", "surrogatepass"))
    try:
        load_suite(path)
    except KernbenchError as exc:
        assert exc.message.startswith(str(path))


def test_the_readme_examples_are_valid(tmp_path: Path) -> None:
    from kernbench.config.loading import load_bench_config
    from kernbench.config.suite import load_suite

    load_bench_config(put(tmp_path, "bench.yaml", BENCH_EXAMPLE), "bench.yaml")
    assert load_suite(put(tmp_path, "suite.yml", SUITE_EXAMPLE)).values["max_memory"] == "2G"


# --- atomic writes --------------------------------------------------------------------------


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name)


def test_atomic_writes_replace_the_file_and_leave_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "out.bin"
    assert write_bytes_atomic(target, b"\x00\x01") == target
    assert target.read_bytes() == b"\x00\x01"
    write_text_atomic(target, "é\n")
    assert target.read_bytes() == "é\n".encode()
    write_json_atomic(target, {"a": [1]})
    assert json.loads(target.read_text(encoding="utf-8")) == {"a": [1]}
    assert leftovers(target.parent) == []


def test_atomic_writer_keeps_the_old_file_when_the_writer_fails(tmp_path: Path) -> None:
    target = tmp_path / "kept.npz"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="half-way"), atomic_writer(target) as handle:
        handle.write(b"new but incomplete")
        raise RuntimeError("killed half-way")
    assert target.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_atomic_files_get_the_permissions_of_a_new_file(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    atomic = write_bytes_atomic(tmp_path / "atomic", b"")
    assert atomic.stat().st_mode == plain.stat().st_mode


def test_durable_writes_reach_the_disk_and_scratch_writes_skip_the_flush(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    flushed: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (flushed.append(fd), real_fsync(fd)))
    write_text_atomic(tmp_path / "report.json", "{}")
    assert len(flushed) == 1
    write_text_atomic(tmp_path / "reply.json", "{}", durable=False)
    assert len(flushed) == 1
    assert (tmp_path / "reply.json").read_text(encoding="utf-8") == "{}"
    assert leftovers(tmp_path) == []


def test_one_line_items_write_the_same_json_one_list_item_a_line(tmp_path: Path) -> None:
    from kernbench.results.files import write_json_atomic

    data = {"schema_version": 2, "settings": {"a": [1, 2], "b": None}, "empty": [],
            "results": [{"kernel_name": "k", "timing": {"samples_ms": [1.0, 2.5]}},
                        {"kernel_name": "é", "x": None}]}
    path = write_json_atomic(tmp_path / "s.json", data, one_line_items=True)
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == data
    assert '    {"kernel_name": "k", "timing": {"samples_ms": [1.0, 2.5]}},\n' in text
    assert text.endswith("}\n")
    assert json.loads(write_json_atomic(tmp_path / "e.json", {}, one_line_items=True)
                      .read_text(encoding="utf-8")) == {}


def test_check_output_dir_accepts_a_folder_or_one_that_can_be_made_and_creates_nothing(
        tmp_path: Path) -> None:
    check_output_dir(tmp_path)
    check_output_dir(tmp_path / "new" / "deeper")
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("make", ["file", "under_file", "broken_link"])
def test_check_output_dir_names_the_path_that_is_not_a_folder(tmp_path: Path,
                                                              make: str) -> None:
    blocker = tmp_path / "out"
    if make == "broken_link":
        blocker.symlink_to(tmp_path / "missing")
    else:
        blocker.write_text("x")
    target = blocker / "a" if make == "under_file" else blocker
    with pytest.raises(KernbenchError) as raised:
        check_output_dir(target, "--output-dir")
    assert raised.value.message.startswith(f"--output-dir {target} ")
    assert f"{blocker} is not a folder" in raised.value.message or make != "under_file"


def test_scratch_goes_to_memory_unless_the_user_chose_a_temporary_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernbench.results import files

    for name in files.TMPDIR_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(files, "MEMORY_SCRATCH", str(tmp_path))
    assert files.memory_scratch_dir() == str(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "mine"))
    assert files.memory_scratch_dir() is None  # the user's choice wins
    monkeypatch.delenv("TMPDIR")
    monkeypatch.setattr(files, "MEMORY_SCRATCH_FREE_BYTES", 1 << 62)
    assert files.memory_scratch_dir() is None  # too little free space
    monkeypatch.setattr(files, "MEMORY_SCRATCH_FREE_BYTES", 1)
    monkeypatch.setattr(files, "MEMORY_SCRATCH", str(tmp_path / "missing"))
    assert files.memory_scratch_dir() is None


def dead_pid() -> int:
    import subprocess

    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_scratch_of_runs_that_are_gone_is_swept_and_nothing_else(tmp_path: Path) -> None:
    from kernbench.results.files import sweep_dead_scratch

    gone = tmp_path / f"kernbench-cases-{dead_pid()}-x1"
    live = tmp_path / f"kernbench-cases-{os.getpid()}-x2"
    odd = tmp_path / "kernbench-cases-nopid"
    other = tmp_path / f"something-{dead_pid()}-x3"
    for folder in (gone, live, odd, other):
        (folder / "case").mkdir(parents=True)
    assert sweep_dead_scratch(tmp_path, "kernbench-cases-") == [gone]
    assert not gone.exists() and live.exists() and odd.exists() and other.exists()


def test_a_run_sweeps_what_a_killed_run_left_in_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernbench.api import run_suite
    from kernbench.execution.runner import RunSettings
    from kernbench.results import files
    from support.kernel_tree import kernel

    for name in files.TMPDIR_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    memory = tmp_path / "shm"
    left = memory / f"kernbench-cases-{dead_pid()}-abc" / "case-1"
    left.mkdir(parents=True)
    monkeypatch.setattr(files, "MEMORY_SCRATCH", str(memory))
    kernel(tmp_path / "repo", "k", "def run_benchmark():\n    return 1\n")
    settings = RunSettings(root=tmp_path / "repo", fake_call_ms=1.0, processes=1)
    run_suite(settings, tmp_path / "out")
    assert list(memory.iterdir()) == []  # the dead run's folder, and the run's own, are gone


def test_a_live_runs_scratch_is_not_swept_though_its_pid_looks_dead(tmp_path: Path) -> None:
    # A run in another PID namespace sharing /dev/shm (a container started with --ipc=host)
    # names its folder with a pid that is no process here: the folder's lock, held while the
    # run lives, keeps it; the sweep once removed the folder of such a live run mid-run.
    from kernbench.results.files import live_scratch, sweep_dead_scratch

    with live_scratch(tmp_path, "kernbench-cases-") as mine:
        foreign = tmp_path / f"kernbench-cases-{dead_pid()}-x1"
        mine.rename(foreign)  # as another namespace's live run's folder looks from here
        (foreign / "case").mkdir()
        assert sweep_dead_scratch(tmp_path, "kernbench-cases-") == []
        assert (foreign / "case").is_dir()
        foreign.rename(mine)
        assert mine.name.startswith(f"kernbench-cases-{os.getpid()}-")
    assert list(tmp_path.iterdir()) == []  # removed when the run ends
