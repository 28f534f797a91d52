"""End-to-end tests of the regression features through `kernbench.cli.main.main([...])`.

Small NumPy kernels in temporary trees (git repositories where a ref is needed), run in real
worker processes. `--debug-fake-timer` makes exact figures wherever the test needs them; the
A/B tests time real work. Covered: `kernbench compare`, `--save-history` and `kernbench
history`, `--compare-to REF`, `--ab REF` (also with `--debug-inject-slowdown`), golden values
with `--sku`, `--shard K/N` and `kernbench merge`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kernbench.analysis.machine_caveats import busy
from kernbench.cli.main import main
from kernbench.execution.forkserver import fork_supported
from kernbench.results.history import append_record
from kernbench.results.history_names import format_created_at
from support.git import git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not on PATH")

FAST = ("--iters", "5", "--warmup", "1", "--no-cpu-peak", "-q")

GOOD = """
import numpy as np

def run_benchmark():
    return np.ones(4, dtype=np.float32) * 2
"""

# Pure-Python work, so the time is the interpreter's and not the allocator's; `work()` is
# repeated to make a kernel slower for real.
LOOP = """
import numpy as np


def work():
    total = 0
    for i in range(30000):
        total += i
    return total


def run_benchmark():
    {body}
    return np.float64(work())
"""


# --- helpers -------------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def loop_kernel(repeats: int = 1) -> str:
    body = "; ".join(["work()"] * (repeats - 1)) if repeats > 1 else "pass"
    return LOOP.replace("{body}", body)


def init_repo(path: Path, kernels: dict[str, str]) -> str:
    """A git repository on `main` with kernels/<name>.py committed; returns the commit sha."""
    path.mkdir(parents=True)
    for name, source in kernels.items():
        write(path / "kernels" / f"{name}.py", source)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "kernels")
    return git(path, "rev-parse", "HEAD")


def cli(*args: Any) -> tuple[int, str, str]:
    """`kernbench ARGS` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def run(root: Path, out: Path, *extra: Any) -> tuple[int, str]:
    code, _, err = cli("run", "--root", root, "--output-dir", out, *FAST, *extra)
    return code, err


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def statuses(summary_dir: Path) -> dict[str, str]:
    return {r["kernel_name"]: r["status"] for r in load(summary_dir / "summary.json")["results"]}


def verdicts(comparison_dir: Path) -> dict[str, str]:
    cases = load(comparison_dir / "comparison.json")["cases"]
    return {c["kernel_name"]: c["verdict"] for c in cases}


def section(markdown: str, title: str) -> str:
    """The text of a `## title` section, up to the next section or details block."""
    start = markdown.index(f"## {title}")
    ends = [i for i in (markdown.find("\n## ", start + 1), markdown.find("<details>", start))
            if i != -1]
    return markdown[start:min(ends) if ends else len(markdown)]


def table_row(markdown: str, label: str) -> list[str]:
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == label:
            return cells[1:]
    raise AssertionError(f"no table row {label!r} in:\n{markdown}")


def history_files(root: Path) -> list[Path]:
    return sorted((root / "benchmarks" / "history").rglob("*.jsonl.gz"))


# --- two fake-timer runs and one unchanged run, shared by the compare tests ---------------


@dataclass(frozen=True)
class FakeRuns:
    repo: Path
    base: Path
    """--debug-fake-timer 1, at commit `base_sha`."""
    slow: Path
    """--debug-fake-timer 1.5 --save-history, at commit `slow_sha`."""
    same: Path
    """--debug-fake-timer 1 again, at commit `slow_sha`."""
    base_sha: str
    slow_sha: str
    record: Path
    """The history record the slow run saved."""


@pytest.fixture(scope="module")
def fake_runs(tmp_path_factory: pytest.TempPathFactory) -> FakeRuns:
    top = tmp_path_factory.mktemp("fake")
    repo = top / "repo"
    base_sha = init_repo(repo, {"alpha": GOOD, "beta": GOOD})
    code, err = run(repo, top / "base", "--debug-fake-timer", "1", "--processes", "3")
    assert code == 0, err
    write(repo / "README", "a second commit\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "second")
    slow_sha = git(repo, "rev-parse", "HEAD")
    code, err = run(repo, top / "slow", "--debug-fake-timer", "1.5", "--processes", "3",
                    "--save-history")
    assert code == 0, err
    code, err = run(repo, top / "same", "--debug-fake-timer", "1", "--processes", "3")
    assert code == 0, err
    records = history_files(repo)
    assert len(records) == 1, records
    return FakeRuns(repo, top / "base", top / "slow", top / "same", base_sha, slow_sha,
                    records[0])


# --- kernbench compare -----------------------------------------------------------------------


def test_compare_of_a_fifty_percent_slowdown_reports_a_regression(
        fake_runs: FakeRuns, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    code, _, err = cli("compare", fake_runs.base, fake_runs.slow, "--output-dir", out)
    assert code == 0, err  # warn only, without --fail-on-regression
    assert "Regression" in err
    markdown = (out / "regressions.md").read_text(encoding="utf-8")
    assert "**Regression: 2 regressed**" in markdown
    significant = section(markdown, "Significant changes")
    assert "alpha" in significant and "beta" in significant
    assert "**regressed**" in significant
    runs = section(markdown, "Runs")
    commits = table_row(runs, "Commit")
    assert commits == [fake_runs.base_sha[:12], fake_runs.slow_sha[:12]]
    machines = table_row(runs, "Machine")
    assert len(machines) == 2 and all(m and m != "n/a" for m in machines)

    document = load(out / "comparison.json")
    assert document["regression"] is True
    assert document["counts"]["regressed"] == 2
    assert sorted(c["kernel_name"] for c in document["cases"]) == ["alpha", "beta"]
    for case in document["cases"]:
        assert case["verdict"] == "regressed"
        assert case["ratio"] == pytest.approx(1.5)
        # Identical fake samples: zero variance on each side, a degenerate but decided result.
        assert case["ci_low"] == pytest.approx(1.5) and case["ci_high"] == pytest.approx(1.5)
        assert case["baseline_p50_ms"] == pytest.approx(1.0)
        assert case["candidate_p50_ms"] == pytest.approx(1.5)
        assert case["processes"] == {"baseline": 3, "candidate": 3}
        assert case["method"] == "welch-log-process-medians"
    assert document["baseline"]["commit"] == fake_runs.base_sha[:12]
    assert document["candidate"]["commit"] == fake_runs.slow_sha[:12]


def test_compare_exits_1_on_a_regression_with_fail_on_regression(
        fake_runs: FakeRuns, tmp_path: Path) -> None:
    code, _, err = cli("compare", fake_runs.base, fake_runs.slow, "--output-dir",
                       tmp_path / "cmp", "--fail-on-regression")
    assert code == 1, err


def test_compare_of_identical_fake_runs_is_no_regression(fake_runs: FakeRuns,
                                                         tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    code, _, err = cli("compare", fake_runs.base, fake_runs.same, "--output-dir", out,
                       "--fail-on-regression")
    assert code == 0, err
    markdown = (out / "regressions.md").read_text(encoding="utf-8")
    assert "**No regression**" in markdown
    assert "## Significant changes" not in markdown
    assert "No significant change." in markdown
    document = load(out / "comparison.json")
    assert document["regression"] is False
    assert document["verdict"] == "No regression"
    assert len(document["cases"]) == 2
    for case in document["cases"]:
        # Zero variance and identical medians: p = 1 and a point interval at 1.
        assert case["verdict"] == "unchanged"
        assert case["ratio"] == pytest.approx(1.0)
        assert (case["ci_low"], case["ci_high"]) == pytest.approx((1.0, 1.0))
        assert not (case["accuracy_drift"] or {}).get("flagged")


def test_compare_a_report_dir_with_a_history_record(fake_runs: FakeRuns,
                                                    tmp_path: Path) -> None:
    out = tmp_path / "dir-vs-record"
    code, _, err = cli("compare", fake_runs.base, fake_runs.record, "--output-dir", out)
    assert code == 0, err
    document = load(out / "comparison.json")
    assert {c["kernel_name"]: c["verdict"] for c in document["cases"]} == {
        "alpha": "regressed", "beta": "regressed"}
    assert all(c["ratio"] == pytest.approx(1.5) for c in document["cases"])
    assert document["candidate"]["source"] == str(fake_runs.record)
    assert document["candidate"]["commit"] == fake_runs.slow_sha[:12]

    back = tmp_path / "record-vs-dir"
    code, _, err = cli("compare", fake_runs.record, fake_runs.same, "--output-dir", back)
    assert code == 0, err
    assert verdicts(back) == {"alpha": "improved", "beta": "improved"}
    assert "No regression; 2 improved" in (back / "regressions.md").read_text()


def _garbage_summary(folder: Path, fake_runs: FakeRuns) -> Path:
    return write(folder / "summary.json", '{"schema_version": 1, "results": [')


def _truncated_record(folder: Path, fake_runs: FakeRuns) -> Path:
    data = fake_runs.record.read_bytes()
    target = folder / "truncated.jsonl.gz"
    folder.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data[: len(data) // 2])
    return target


def _corrupt_record(folder: Path, fake_runs: FakeRuns) -> Path:
    """The deflate stream's bytes scrambled (header and trailer kept): bad gzip data."""
    data = bytearray(fake_runs.record.read_bytes())
    for i in range(10, len(data) - 8):
        data[i] ^= 0x5A
    target = folder / "corrupt.jsonl.gz"
    folder.mkdir(parents=True, exist_ok=True)
    target.write_bytes(bytes(data))
    return target


def _empty_record(folder: Path, fake_runs: FakeRuns) -> Path:
    target = folder / "empty.jsonl.gz"
    folder.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"")
    return target


def _newer_summary(folder: Path, fake_runs: FakeRuns) -> Path:
    document = load(fake_runs.slow / "summary.json")
    document["schema_version"] = 99
    return write(folder / "summary.json", json.dumps(document))


def _newer_record(folder: Path, fake_runs: FakeRuns) -> Path:
    record = json.loads(gzip.decompress(fake_runs.record.read_bytes()).decode().splitlines()[0])
    record["schema_version"] = 99
    target = folder / "newer.jsonl.gz"
    folder.mkdir(parents=True, exist_ok=True)
    target.write_bytes(gzip.compress((json.dumps(record) + "\n").encode()))
    return target


def _not_an_object(folder: Path, fake_runs: FakeRuns) -> Path:
    return write(folder / "summary.json", "[1, 2, 3]")


@pytest.mark.parametrize(("make", "detail"), [
    (_garbage_summary, "cannot read results"),
    (_truncated_record, "cannot read results"),
    (_corrupt_record, "cannot read results"),
    (_empty_record, "the history record is empty (expected one JSON line)"),
    (_newer_summary, "schema_version 99 is newer"),
    (_newer_record, "schema_version 99 is newer"),
    (_not_an_object, "not a kernbench result file"),
], ids=["garbage-json", "truncated-gzip", "corrupt-gzip", "empty-record", "newer-summary",
        "newer-record", "not-an-object"])
def test_unreadable_input_exits_2_naming_the_file(make: Any, detail: str, fake_runs: FakeRuns,
                                                  tmp_path: Path) -> None:
    bad = make(tmp_path / "bad", fake_runs)
    out = tmp_path / "cmp"
    code, _, err = cli("compare", fake_runs.base, bad, "--output-dir", out)
    assert code == 2, err
    assert err.startswith("kernbench: error: ")
    assert str(bad) in err
    assert detail in err
    assert "Traceback" not in err
    assert not (out / "regressions.md").exists()


def test_missing_input_exits_2_naming_the_path(fake_runs: FakeRuns, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    code, _, err = cli("compare", missing, fake_runs.base, "--output-dir", tmp_path / "cmp")
    assert code == 2
    assert str(missing) in err and "no such result file" in err


# --- --save-history and kernbench history -------------------------------------------------


def test_save_history_writes_a_dated_record_that_history_lists(fake_runs: FakeRuns) -> None:
    relative = fake_runs.record.relative_to(fake_runs.repo).as_posix()
    match = re.fullmatch(r"benchmarks/history/(\d{4})/(\d{2})/(\d{2})/"
                         r"(\d{8})T\d{9}Z-([0-9a-f]+)-([0-9A-Za-z_]+)\.jsonl\.gz", relative)
    assert match, relative
    year, month, day, stamp_day, commit, name_fp = match.groups()
    assert stamp_day == f"{year}{month}{day}"
    assert commit == fake_runs.slow_sha[:12]
    record = json.loads(gzip.decompress(fake_runs.record.read_bytes()).decode().splitlines()[0])
    assert record["created_at"].startswith(f"{year}-{month}-{day}")
    assert record["fingerprint"] == name_fp
    assert len(record["results"]) == 2

    code, out, err = cli("history", "--root", fake_runs.repo)
    assert code == 0, err
    assert out.splitlines()[0].startswith("1 history record under")
    assert fake_runs.slow_sha[:12] in out
    assert "main" in out and "2 cases  (fake clock, --debug-fake-timer 1.5)" in out

    code, out, err = cli("history", "--root", fake_runs.repo, "--json")
    assert code == 0, err
    records = json.loads(out)
    assert isinstance(records, list) and len(records) == 1
    assert records[0]["git"]["commit"] == fake_runs.slow_sha
    assert records[0]["git"]["branch"] == "main"
    assert records[0]["fingerprint"] == name_fp


def test_history_of_a_tree_without_records_lists_none(tmp_path: Path) -> None:
    code, out, err = cli("history", "--root", tmp_path)
    assert code == 0, err
    assert out.startswith("0 history records")
    code, out, _ = cli("history", "--root", tmp_path, "--json")
    assert json.loads(out) == []


# --- --compare-to REF ----------------------------------------------------------------------


def test_compare_to_a_ref_without_history_says_there_is_no_baseline(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD})
    out = tmp_path / "out"
    code, err = run(repo, out, "--debug-fake-timer", "1", "--compare-to", "main",
                    "--fail-on-regression")
    assert code == 0, err
    markdown = (out / "regressions.md").read_text(encoding="utf-8")
    assert "**No comparison: no benchmark history at main" in markdown
    assert "this is not a pass" in markdown
    assert "No comparison" in err
    document = load(out / "comparison.json")
    assert document["regression"] is False
    assert "no benchmark history at main" in document["baseline_note"]
    # said before the first kernel runs too (unless -q), so that a user can stop a long run
    code, _, err = cli("run", "--root", repo, "--output-dir", tmp_path / "loud",
                       *(flag for flag in FAST if flag != "-q"), "--debug-fake-timer", "1",
                       "--compare-to", "main")
    assert code == 0, err
    notice = err.index("--compare-to main: nothing to compare with (no benchmark history")
    assert notice < err.index("alpha") < err.index("No comparison")


def test_compare_to_a_ref_whose_record_is_corrupt_fails_before_running(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD})
    code, err = run(repo, tmp_path / "base", "--debug-fake-timer", "1", "--save-history")
    assert code == 0, err
    (record,) = (repo / "benchmarks" / "history").rglob("*.jsonl.gz")
    record.write_bytes(record.read_bytes()[:40])  # truncated, as a botched commit leaves it
    git(repo, "add", "benchmarks")
    git(repo, "commit", "-q", "-m", "a truncated record")
    out = tmp_path / "out"
    code, err = run(repo, out, "--debug-fake-timer", "1", "--compare-to", "main",
                    "--fail-on-regression")
    assert code == 2, err
    assert "history at main has 1 record" in err and "none can be read" in err
    assert record.name in err
    assert not (out / "summary.json").exists(), "no kernel may run before the record is read"


MOVES_MAIN = """
import subprocess

def run_benchmark():
    return 1.0

def setup():  # once per worker process: the first commits, the others find nothing to do
    subprocess.run(["git", "rm", "-q", "-r", "--ignore-unmatch", "benchmarks"], check=True)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "history gone"], check=True)
    return {}
"""


@pytest.mark.parametrize("sharded", [(), ("--shards", "2")], ids=["run", "shards"])
def test_compare_to_uses_the_record_read_before_the_run_though_the_ref_moves(
        tmp_path: Path, sharded: tuple[str, ...]) -> None:
    """The record announced before the first kernel is the one compared with: a ref that
    moves during a long run (a pull, a commit) does not change the baseline under it. A
    sharded run compares once its shards are merged, at the commit the ref named first."""
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD})
    code, err = run(repo, tmp_path / "base", "--debug-fake-timer", "1", "--save-history")
    assert code == 0, err
    write(repo / "kernels" / "mover.py", MOVES_MAIN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "history and a kernel that moves main")
    before = git(repo, "rev-parse", "main")
    out = tmp_path / "out"
    code, err = run(repo, out, "--debug-fake-timer", "1.5", "--compare-to", "main",
                    "--processes", "1", *sharded)
    assert git(repo, "rev-parse", "main") != before  # main moved during the run
    assert code == 0, err
    document = load(out / "comparison.json")
    assert document.get("baseline_note") is None, document.get("baseline_note")
    assert verdicts(out) == {"alpha": "regressed", "mover": "new"}


def test_compare_to_a_record_on_the_other_clock_fails_before_running(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD})
    code, err = run(repo, tmp_path / "base", "--debug-fake-timer", "1", "--save-history")
    assert code == 0, err
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a record made on the fake clock")
    out = tmp_path / "out"
    code, err = run(repo, out, "--compare-to", "main")
    assert code == 2, err
    assert "the baseline (history at main: found" in err and "ran on the fake clock" in err
    assert not (out / "summary.json").exists(), "no kernel may run before the clocks agree"


def test_compare_to_takes_the_newest_record_on_the_runs_clock(tmp_path: Path) -> None:
    """A fake-clock record saved after a measured one at the same commit does not hide the
    measured one from a measured run (it used to make every such comparison exit 2), nor
    the other way round."""
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD})
    code, err = run(repo, tmp_path / "measured", "--iters", "5", "--warmup", "1",
                    "--processes", "1", "--save-history")
    assert code == 0, err
    code, err = run(repo, tmp_path / "fake", "--debug-fake-timer", "1", "--save-history")
    assert code == 0, err
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a measured record, then a fake-clock one")
    code, err = run(repo, tmp_path / "out", "--iters", "5", "--warmup", "1",
                    "--processes", "1", "--compare-to", "main")
    assert code == 0, err
    found = load(tmp_path / "out" / "comparison.json")
    assert found.get("baseline_note") is None and verdicts(tmp_path / "out").keys() == {"alpha"}
    assert ("the newest measured, as this run is: 1 newer record made on the other clock "
            "passed over") in (tmp_path / "out" / "comparison.json").read_text()
    code, err = run(repo, tmp_path / "out-fake", "--debug-fake-timer", "1.5",
                    "--compare-to", "main")
    assert code == 0, err
    assert verdicts(tmp_path / "out-fake") == {"alpha": "regressed"}  # 1.5 ms against 1 ms


def test_a_baseline_file_on_the_other_clock_fails_before_running_even_empty(
        tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD})
    code, err = run(repo, tmp_path / "fake", "--debug-fake-timer", "1")
    assert code == 0, err
    summary = load(tmp_path / "fake" / "summary.json")
    summary["results"] = []  # no case in it: its clock is still the fake one
    (tmp_path / "fake" / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    out = tmp_path / "out"
    code, err = run(repo, out, "--baseline", tmp_path / "fake" / "summary.json")
    assert code == 2, err
    assert "ran on the fake clock" in err
    assert not (out / "summary.json").exists()


def test_compare_to_a_ref_that_does_not_exist_fails_before_running(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD})
    out = tmp_path / "out"
    code, err = run(repo, out, "--debug-fake-timer", "1", "--compare-to", "no-such-branch",
                    "--fail-on-regression")
    assert code == 2, err
    assert "--compare-to no-such-branch: no such commit, branch or tag" in err
    assert not (out / "summary.json").exists(), "no kernel may run before the ref is checked"


def test_compare_to_outside_a_git_repository_fails_before_running(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root / "kernels" / "alpha.py", GOOD)
    out = tmp_path / "out"
    code, err = run(root, out, "--debug-fake-timer", "1", "--compare-to", "main")
    assert code == 2, err
    assert "is not in a git repository" in err
    assert not (out / "summary.json").exists()


def test_compare_to_a_ref_missing_from_a_shallow_clone_says_how_to_fetch_it(
        tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    init_repo(origin, {"alpha": GOOD})
    write(origin / "kernels" / "beta.py", GOOD)
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "second")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(clone)],
                   check=True)
    code, err = run(clone, tmp_path / "out", "--debug-fake-timer", "1", "--compare-to",
                    "HEAD~1")
    assert code == 2, err
    assert "shallow clone" in err and "git fetch" in err


@pytest.mark.parametrize(("ref", "then"), [("feature", "origin/feature"),
                                           ("origin/feature", "origin/feature"),
                                           ("HEAD~1", "HEAD~1")])
def test_the_shallow_clone_hint_is_a_git_command_that_works(tmp_path: Path, ref: str,
                                                             then: str) -> None:
    """`git fetch --depth=1 origin main` only set FETCH_HEAD, and `origin origin/main` and
    `origin HEAD~1` are refused by git: the hint's own command must bring the ref in."""
    import shlex

    from kernbench.analysis.gitref import check_ref
    from kernbench.errors import KernbenchError

    origin = tmp_path / "origin"
    init_repo(origin, {"alpha": GOOD})
    write(origin / "kernels" / "beta.py", GOOD)
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "second")
    git(origin, "branch", "feature", "HEAD~1")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--single-branch", "--branch",
                    "main", f"file://{origin}", str(clone)], check=True)
    with pytest.raises(KernbenchError) as raised:
        check_ref(clone, ref)
    command = next(part for part in raised.value.message.split("`")
                   if part.startswith("git fetch"))
    words = [w.replace("--deepen=N", "--deepen=1") for w in shlex.split(command)]
    subprocess.run(words, cwd=clone, check=True, capture_output=True)
    assert check_ref(clone, then)


def test_run_baseline_file_is_read_first_and_compared(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root / "kernels" / "alpha.py", GOOD)
    code, err = run(root, tmp_path / "missing-out", "--debug-fake-timer", "1",
                    "--baseline", tmp_path / "nope.json")
    assert code == 2 and "nope.json: no such result file" in err
    assert not (tmp_path / "missing-out" / "summary.json").exists()
    code, err = run(root, tmp_path / "base", "--debug-fake-timer", "1", "--processes", "3")
    assert code == 0, err
    code, err = run(root, tmp_path / "slow", "--debug-fake-timer", "1.5", "--processes", "3",
                    "--baseline", tmp_path / "base", "--fail-on-regression")
    assert code == 1, err
    alpha = next(c for c in load(tmp_path / "slow" / "comparison.json")["cases"]
                 if c["kernel_name"] == "alpha")
    assert alpha["verdict"] == "regressed" and alpha["ratio"] == pytest.approx(1.5)
    # a file of the report set that is not a run's results is refused before anything runs
    for other, said in (("env.json", "got a document without them"),
                        ("comparison.json", "got a kernbench-comparison")):
        code, err = run(root, tmp_path / "never", "--baseline", tmp_path / "slow" / other)
        assert code == 2 and f"{other}: key 'results': expected a run's results" in err
        assert said in err and not (tmp_path / "never").exists()
    (tmp_path / "empty").mkdir()
    code, err = run(root, tmp_path / "never", "--baseline", tmp_path / "empty")
    assert code == 2 and "empty: a folder without summary.json" in err
    # a baseline that did not finish: the comparison says so under its verdict
    summary = load(tmp_path / "base" / "summary.json")
    (tmp_path / "base" / "summary.json").write_text(json.dumps({**summary, "complete": False}))
    code, err = run(root, tmp_path / "again", "--debug-fake-timer", "1", "--processes", "3",
                    "--baseline", tmp_path / "base")
    assert code == 0, err
    assert load(tmp_path / "again" / "comparison.json")["warnings"] == [
        "incomplete run on the baseline side: interrupted before every case finished; the "
        "cases it lacks were not compared, so this verdict is not a pass for them"]
    # and on the terminal under the verdict, -q or not: a CI log shows no regressions.md
    verdict = err.index("No regression")
    assert err.index("  warning: incomplete run on the baseline side: interrupted") > verdict


def test_run_json_carries_the_verdict_of_a_stored_baseline(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root / "kernels" / "alpha.py", GOOD)
    assert run(root, tmp_path / "base", "--debug-fake-timer", "1", "--processes", "3")[0] == 0
    code, out, err = cli("run", "--root", root, "--output-dir", tmp_path / "slow", *FAST,
                         "--debug-fake-timer", "1.5", "--processes", "3", "--baseline",
                         tmp_path / "base", "--json", "--fail-on-regression")
    assert code == 1, err
    document = json.loads(out)
    assert document["exit_code"] == 1 and document["cases"] == 1
    assert document["counts"] == {"total": 1, "ok": 1, "failed": 0, "skipped": 0, "timeout": 0,
                                  "invalid": 0}
    assert document["comparison"]["verdict"] == "Regression: 1 regressed"
    assert document["comparison"]["counts"]["regressed"] == 1


def test_two_baselines_are_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD})
    code, err = run(repo, tmp_path / "out", "--compare-to", "main", "--baseline",
                    tmp_path / "x.json")
    assert code == 2 and "--compare-to and --baseline cannot be combined" in err


def test_compare_to_a_committed_record_flags_a_slower_run(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD})
    code, err = run(repo, tmp_path / "base", "--debug-fake-timer", "1", "--processes", "3",
                    "--save-history")
    assert code == 0, err
    git(repo, "add", "benchmarks")
    git(repo, "commit", "-q", "-m", "baseline record")
    out = tmp_path / "out"
    code, err = run(repo, out, "--debug-fake-timer", "2", "--processes", "3",
                    "--compare-to", "main", "--fail-on-regression")
    assert statuses(out) == {"alpha": "ok"}
    assert code == 1, err  # every case ran: the 1 is the regression's
    document = load(out / "comparison.json")
    assert document["baseline_note"] is None
    (case,) = document["cases"]
    assert case["verdict"] == "regressed"
    assert case["ratio"] == pytest.approx(2.0)
    assert case["processes"] == {"baseline": 3, "candidate": 3}
    assert "history at main" in document["baseline"]["source"]
    markdown = (out / "regressions.md").read_text(encoding="utf-8")
    assert "**Regression: 1 regressed**" in markdown
    assert "alpha" in section(markdown, "Significant changes")


def test_compare_to_a_ref_with_only_other_machines_records(fake_runs: FakeRuns,
                                                           tmp_path: Path) -> None:
    record = json.loads(gzip.decompress(fake_runs.record.read_bytes()).decode().splitlines()[0])
    other = "0123456789abcdef" if record["fingerprint"] != "0123456789abcdef" else "fedcba98"
    record["fingerprint"] = other
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD, "beta": GOOD})
    path = append_record(repo, record, fsync=False)
    assert other in path.name
    git(repo, "add", "benchmarks")
    git(repo, "commit", "-q", "-m", "someone else's record")
    out = tmp_path / "out"
    code, err = run(repo, out, "--debug-fake-timer", "1", "--compare-to", "main",
                    "--fail-on-regression")
    assert code == 0, err
    markdown = (out / "regressions.md").read_text(encoding="utf-8")
    assert "none for this machine" in markdown
    assert f"machines there: {other} (1)" in markdown
    assert "this is not a pass" in markdown
    assert "none for this machine" in err


# --- bench.yaml per-kernel thresholds in every kind of comparison --------------------------


@dataclass(frozen=True)
class Lenient:
    repo: Path
    base: Path
    """--debug-fake-timer 1 --processes 3 --save-history, the record committed on main."""
    slow: Path
    """--debug-fake-timer 2 --processes 3 --compare-to main."""


@pytest.fixture(scope="module")
def lenient(tmp_path_factory: pytest.TempPathFactory) -> Lenient:
    """Kernel `gamma` whose bench.yaml allows a 150% latency change; `delta` has no override."""
    top = tmp_path_factory.mktemp("lenient")
    repo = top / "repo"
    repo.mkdir()
    write(repo / "kernels" / "gamma" / "gamma.py", GOOD)
    write(repo / "kernels" / "gamma" / "bench.yaml", "regression: {latency: 1.5}\n")
    write(repo / "kernels" / "delta" / "delta.py", GOOD)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "kernels")
    code, err = run(repo, top / "base", "--debug-fake-timer", "1", "--processes", "3",
                    "--save-history")
    assert code == 0, err
    git(repo, "add", "benchmarks")
    git(repo, "commit", "-q", "-m", "record")
    code, err = run(repo, top / "slow", "--debug-fake-timer", "2", "--processes", "3",
                    "--compare-to", "main")
    assert code == 0, err
    return Lenient(repo, top / "base", top / "slow")


def thresholds_and_verdicts(out: Path) -> dict[str, tuple[Any, str]]:
    return {c["kernel_name"]: (c["threshold"], c["verdict"])
            for c in load(out / "comparison.json")["cases"]}


def test_compare_to_applies_bench_yaml_thresholds(lenient: Lenient) -> None:
    found = thresholds_and_verdicts(lenient.slow)
    # A 2x slowdown: beyond the default 10%, within gamma's 150%.
    assert found["delta"] == (pytest.approx(0.10), "regressed")
    assert found["gamma"] == (pytest.approx(1.5), "unchanged")


def test_compare_applies_bench_yaml_thresholds(lenient: Lenient, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    code, _, err = cli("compare", lenient.base, lenient.slow, "--output-dir", out)
    assert code == 0, err
    found = thresholds_and_verdicts(out)
    assert found["delta"] == (pytest.approx(0.10), "regressed")
    assert found["gamma"] == (pytest.approx(1.5), "unchanged")
    assert load(out / "comparison.json")["settings"]["per_kernel"] == {"gamma": {"latency": 1.5}}
    # said "(default 10%)" while gamma was judged by its own 150%
    assert ("beyond the threshold (10%; a kernel's own from its bench.yaml: gamma 150%)"
            in (out / "regressions.md").read_text(encoding="utf-8"))


def test_ab_applies_bench_yaml_thresholds(lenient: Lenient, tmp_path: Path) -> None:
    """The documented rule (`--threshold` help, README): bench.yaml `regression.latency`
    overrides the threshold per kernel, in --ab as in the other comparisons."""
    out = tmp_path / "ab"
    code, err = run(lenient.repo, out, "--ab", "main", "--rounds", "2",
                    "--debug-fake-timer", "1", "--filter", "gamma")
    assert code == 0, err
    found = thresholds_and_verdicts(out)
    assert found["gamma"][0] == pytest.approx(1.5)
    code, _, err = cli("run", "--root", lenient.repo, "--output-dir", tmp_path / "loud",
                       "--ab", "main", "--rounds", "2", "--debug-fake-timer", "1",
                       "--filter", "gamma")
    assert code == 0, err  # not quiet: the closing line a plain run prints, after the verdict
    assert err.index("No regression") < err.index(f"1 case: 1 ok. Reports in {tmp_path}/loud/")


# --- --ab REF ------------------------------------------------------------------------------


def snapshot(repo: Path) -> dict[str, Any]:
    """The repository's files, status, index and HEAD; Python's bytecode cache left out (the
    workers import the kernels as any import does, writing `__pycache__` unless the user's
    PYTHONDONTWRITEBYTECODE says not to; kernbench's git checks count it as no code)."""
    files = {p.relative_to(repo).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(repo.rglob("*"))
             if p.is_file() and ".git" not in p.parts and "__pycache__" not in p.parts}
    status = git(repo, "status", "--porcelain", "--untracked-files=all")
    return {"status": "\n".join(line for line in status.splitlines()
                                if "__pycache__/" not in line),
            "index": hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
            "head": git(repo, "rev-parse", "HEAD"), "files": files}


@pytest.mark.slow
def test_ab_flags_only_the_kernel_made_slower_and_leaves_the_repo_alone(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    sha = init_repo(repo, {"slowme": loop_kernel(1), "steady": loop_kernel(1)})
    write(repo / "kernels" / "slowme.py", loop_kernel(3))  # three times the work, uncommitted
    write(repo / "notes.txt", "untracked\n")
    before = snapshot(repo)
    assert "M kernels/slowme.py" in before["status"]
    out = tmp_path / "out"
    # Twelve rounds rather than three: on a busy machine the medians of two worker processes
    # running the same code can differ by 1.6x. At the default --alpha 0.05 the sign test over
    # 12 rounds calls 10 of 12 agreeing rounds a change, which noise alone does 3.9 % of the time
    # (seen on this VM and under `pytest -n 14`); at 0.01 it takes 11 of 12 (0.6 %), while the
    # 3x slower kernel agrees in all 12 (q = 0.001).
    code, err = run(repo, out, "--ab", "main", "--rounds", "12", "--threshold", "0.1",
                    "--alpha", "0.01")
    assert code == 0, err
    result = verdicts(out)
    assert result["slowme"] == "regressed", (out / "regressions.md").read_text()
    assert result["steady"] not in ("regressed", "improved"), (out / "regressions.md").read_text()
    document = load(out / "comparison.json")
    assert document["settings"]["paired"] is True
    slow = next(c for c in document["cases"] if c["kernel_name"] == "slowme")
    assert slow["ratio"] > 1.5
    assert slow["method"] == "sign-test-log-round-medians"
    assert slow["processes"] == {"baseline": 12, "candidate": 12}
    markdown = (out / "regressions.md").read_text(encoding="utf-8")
    significant = section(markdown, "Significant changes")
    assert "slowme" in significant and "steady" not in significant

    # The baseline's report set, measured at the ref's commit.
    baseline = load(out / "baseline" / "summary.json")
    assert sorted(r["kernel_name"] for r in baseline["results"]) == ["slowme", "steady"]
    assert baseline["environment"]["git"]["commit"] == sha
    assert (out / "summary.json").is_file()

    # Nothing in the repository changed, and the temporary worktree is gone.
    assert snapshot(repo) == before
    worktrees = [line for line in git(repo, "worktree", "list", "--porcelain").splitlines()
                 if line.startswith("worktree ")]
    assert worktrees == [f"worktree {repo.resolve()}"]


@pytest.mark.slow
def test_ab_with_an_injected_slowdown_flags_only_the_injected_kernel(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {"kmul": loop_kernel(1), "other": loop_kernel(1)})
    before = snapshot(repo)
    out = tmp_path / "out"
    code, err = run(repo, out, "--ab", "HEAD", "--rounds", "12", "--threshold", "0.1",
                    "--alpha", "0.01", "--debug-inject-slowdown", "k*=3.0")  # --alpha: above
    assert code == 0, err
    result = verdicts(out)
    assert result["kmul"] == "regressed", (out / "regressions.md").read_text()
    assert result["other"] not in ("regressed", "improved"), (out / "regressions.md").read_text()
    kmul = next(c for c in load(out / "comparison.json")["cases"] if c["kernel_name"] == "kmul")
    assert 2.0 < kmul["ratio"] < 4.0
    assert snapshot(repo) == before


@pytest.mark.skipif(fork_supported() is not None, reason="fork servers unsupported here")
def test_ab_rounds_fork_from_fresh_servers_that_both_sides_share(tmp_path: Path) -> None:
    """A worker inherits its fork server's layout and hash seed. Each round's pair forks from
    one server started for that round: the pair shares a layout, the rounds do not."""
    log = tmp_path / "parents.txt"
    kernel = textwrap.dedent(f"""
        import os

        with open({str(log)!r}, "a", encoding="utf-8") as handle:
            handle.write(f"{{SIDE}} {{os.getppid()}}\\n")


        def run_benchmark():
            return None
        """)
    repo = tmp_path / "repo"
    init_repo(repo, {"who": kernel.replace("{SIDE}", "A")})
    write(repo / "kernels" / "who.py", kernel.replace("{SIDE}", "B"))
    code, err = run(repo, tmp_path / "out", "--ab", "HEAD", "--rounds", "4")
    assert code == 0, err
    lines = [line.split() for line in log.read_text(encoding="utf-8").splitlines()]
    assert [side for side, _ in lines] == ["A", "B", "B", "A", "A", "B", "B", "A"]
    parents = [pid for _, pid in lines]
    pairs = [set(parents[i:i + 2]) for i in range(0, 8, 2)]
    assert all(len(pair) == 1 for pair in pairs), lines  # one server for both sides of a round
    assert len(set(parents)) == 4, lines  # a new one every round


def test_ab_progress_names_a_case_as_its_record_does(tmp_path: Path) -> None:
    """A native case is recorded under the precision of its output (sq[cpu,fp64]); each
    finished worker's progress line says the same, not the planned sq[cpu,native]."""
    repo = tmp_path / "repo"
    init_repo(repo, {"sq": "import numpy as np\n\n\ndef run_benchmark():\n"
                           "    return np.zeros(4)\n"})
    code, _, err = cli("run", "--root", repo, "--output-dir", tmp_path / "out", *FAST[:-1],
                       "--ab", "HEAD", "--rounds", "2", "--debug-fake-timer", "1")
    assert code == 0, err  # not quiet: the progress lines
    assert "[1/4] round 1/2 A sq[cpu,fp64]: ok" in err and "native" not in err
    assert [r["case_id"] for r in load(tmp_path / "out" / "summary.json")["results"]] == [
        "sq[cpu,fp64]"]


def test_ab_with_a_ref_that_does_not_exist_exits_2(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD})
    code, err = run(repo, tmp_path / "out", "--ab", "no-such-ref", "--rounds", "2")
    assert code == 2
    assert "no-such-ref" in err and "no such commit" in err


def test_ab_removes_the_worktree_an_ab_run_killed_outright_left(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD})
    dead = scratch / "kernbench-ab-4194303-left"  # a pid no process has: SIGKILLed
    git(repo, "worktree", "add", "--detach", "--quiet", str(dead / "baseline"), "HEAD")
    code, err = run(repo, tmp_path / "out", "--ab", "HEAD", "--rounds", "2",
                    "--debug-fake-timer", "1")
    assert code == 0, err
    assert not dead.exists() and not list(scratch.glob("kernbench-ab-*"))
    listed = [line for line in git(repo, "worktree", "list", "--porcelain").splitlines()
              if line.startswith("worktree ")]
    assert listed == [f"worktree {repo.resolve()}"]


def test_ab_where_no_kernel_is_on_both_sides_exits_2_before_any_round(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD})
    write(repo / "kernels" / "fresh.py", GOOD)  # not at HEAD
    code, err = run(repo, tmp_path / "out", "--ab", "HEAD", "--rounds", "2", "--filter",
                    "fresh")
    assert code == 2 and "--ab HEAD: no selected kernel is on both sides (1 only in this " \
        "tree, 0 only at HEAD)" in err
    assert not (tmp_path / "out" / "summary.json").exists()


def test_ab_of_a_root_below_the_repositorys_top_compares_that_folder(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {"top": GOOD})  # the top's kernels are not --root's
    write(repo / "sub" / "kernels" / "alpha.py", GOOD)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "sub")
    out = tmp_path / "out"
    code, err = run(repo / "sub", out, "--ab", "HEAD", "--rounds", "2",
                    "--debug-fake-timer", "1")
    assert code == 0, err
    assert [c["verdict"] for c in load(out / "comparison.json")["cases"]] != ["new"]
    assert statuses(out / "baseline") == {"alpha": "ok"}
    write(repo / "newer" / "kernels" / "beta.py", GOOD)  # not at HEAD
    code, err = run(repo / "newer", tmp_path / "out2", "--ab", "HEAD", "--rounds", "2")
    assert code == 2 and "--ab HEAD: --root is newer in its repository, and HEAD has no " \
        "such folder" in err


# --- golden values -------------------------------------------------------------------------


def golden_tree(root: Path, bench_yaml: str) -> Path:
    write(root / "kernels" / "gold" / "gold.py", GOOD)
    write(root / "kernels" / "gold" / "bench.yaml", bench_yaml)
    return root


def only_record(out: Path) -> dict[str, Any]:
    (record,) = load(out / "summary.json")["results"]
    assert isinstance(record, dict)
    return record


def test_golden_value_exceeded_fails_the_case(tmp_path: Path) -> None:
    root = golden_tree(tmp_path / "tree",
                       "golden:\n  mysku: {time_ms: 0.5, tolerance_multiplier: 1.1}\n")
    out = tmp_path / "out"
    code, err = run(root, out, "--debug-fake-timer", "1", "--sku", "mysku")
    assert code == 1, err
    record = only_record(out)
    assert record["status"] == "failed"
    assert "golden" in record["reason"]
    # median 1 ms against a limit of 0.5 x 1.1 = 0.55 ms: (1 - 0.55) / 0.55 = 81.8182% over.
    assert "81.8182%" in record["reason"]
    golden = record["golden"]
    assert golden["passed"] is False
    assert golden["sku"] == "mysku" and golden["golden_sku"] == "mysku"
    assert golden["limit_ms"] == pytest.approx(0.55)
    assert golden["measured_ms"] == pytest.approx(1.0)
    assert golden["exceeded_by_pct"] == pytest.approx(81.818182, abs=1e-4)


def test_golden_value_met_passes(tmp_path: Path) -> None:
    root = golden_tree(tmp_path / "tree",
                       "golden:\n  mysku: {time_ms: 2, tolerance_multiplier: 1.1}\n")
    out = tmp_path / "out"
    code, err = run(root, out, "--debug-fake-timer", "1", "--sku", "MySKU")
    assert code == 0, err
    record = only_record(out)
    assert record["status"] == "ok"
    assert record["golden"]["passed"] is True
    assert record["golden"]["reason"] is None
    assert record["golden"]["ratio"] == pytest.approx(0.5)


def test_golden_value_without_a_sku_on_cpu_is_not_checked(tmp_path: Path) -> None:
    root = golden_tree(tmp_path / "tree", "golden:\n  mysku: {time_ms: 0.5}\n")
    out = tmp_path / "out"
    code, err = run(root, out, "--debug-fake-timer", "1")
    assert code == 0, err
    record = only_record(out)
    assert record["status"] == "ok"
    assert record["golden"]["passed"] is None
    assert "SKU unknown" in record["golden"]["reason"]


def test_golden_value_for_an_ignored_sku_is_not_checked(tmp_path: Path) -> None:
    root = golden_tree(tmp_path / "tree",
                       "golden:\n  mysku: {time_ms: 0.5}\nignore_skus: [mysku]\n")
    out = tmp_path / "out"
    code, err = run(root, out, "--debug-fake-timer", "1", "--sku", "mysku")
    assert code == 0, err
    record = only_record(out)
    assert record["status"] == "ok"
    assert record["golden"]["passed"] is None
    assert "ignored" in record["golden"]["reason"]


# --- --shard and kernbench merge -----------------------------------------------------------

SHARD_KERNELS = ("axpy", "gemm", "conv", "softmax", "relu", "scale")


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    top = tmp_path_factory.mktemp("shards")
    root = top / "tree"
    for name in SHARD_KERNELS:
        write(root / "kernels" / f"{name}.py", GOOD)
    for index in (1, 2):
        code, err = run(root, top / f"s{index}", "--debug-fake-timer", "1",
                        "--shard", f"{index}/2", "--testbed", "pool-a",
                        "--cache-dir", top / "cache")
        assert code == 0, err
    return top / "s1", top / "s2"


def test_shards_cover_every_kernel_exactly_once(shards: tuple[Path, Path]) -> None:
    first, second = (set(statuses(s)) for s in shards)
    assert first and second
    assert not first & second
    assert first | second == set(SHARD_KERNELS)
    for shard in shards:
        assert len(load(shard / "summary.json")["results"]) == len(statuses(shard))


def test_merge_joins_the_shards(shards: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "merged"
    code, _, err = cli("merge", out, *shards)
    assert code == 0, err
    merged = load(out / "summary.json")
    names = [r["kernel_name"] for r in merged["results"]]
    assert sorted(names) == sorted(SHARD_KERNELS)
    assert merged["counts"]["total"] == len(SHARD_KERNELS)
    assert merged["counts"]["ok"] == len(SHARD_KERNELS)
    assert [s["source"] for s in merged["settings"]["shards"]] == [str(s) for s in shards]
    assert [s["shard"] for s in merged["settings"]["shards"]] == ["1/2", "2/2"]
    assert {s["testbed"] for s in merged["settings"]["shards"]} == {"pool-a"}
    assert {(r["testbed"], r["fingerprint"]) for r in merged["results"]} == {
        ("pool-a", load(shards[0] / "env.json")["fingerprint"])}
    assert merged["completeness"]["complete"] is True
    summary_md = (out / "summary.md").read_text(encoding="utf-8")
    assert all(name in summary_md for name in SHARD_KERNELS)
    assert sorted(p.stem for p in (out / "kernels").glob("*.json")) == sorted(SHARD_KERNELS)


def test_merging_a_shard_twice_exits_2_with_a_duplicate_message(shards: tuple[Path, Path],
                                                                tmp_path: Path) -> None:
    first = shards[0]
    code, _, err = cli("merge", tmp_path / "merged", first, shards[1], first)
    assert code == 2
    assert "in two shard summaries" in err
    assert str(first) in err
    assert not (tmp_path / "merged" / "summary.json").exists()


def fake_gpu_machine(shard: Path, copy: Path) -> Path:
    """`shard` as if a GPU machine had run it: another fingerprint and testbed."""
    shutil.copytree(shard, copy)
    for name in ("summary.json", "env.json"):
        document = load(copy / name)
        env = document.get("environment", document)
        env.update(fingerprint="9f00deadbeef0001", testbed="h100", hostname="gpu-node-1")
        for record in document.get("results", []):
            record.update(fingerprint="9f00deadbeef0001", testbed="h100")
        (copy / name).write_text(json.dumps(document), encoding="utf-8")
    return copy


def test_merging_a_cpu_and_a_gpu_machine_is_refused_then_grouped_with_allow_mixed(
        shards: tuple[Path, Path], tmp_path: Path) -> None:
    gpu = fake_gpu_machine(shards[1], tmp_path / "gpu")
    code, _, err = cli("merge", tmp_path / "refused", shards[0], gpu)
    assert code == 2
    for part in ("different machines", "pool-a", "h100", "9f00deadbeef0001", "--allow-mixed"):
        assert part in err
    assert not (tmp_path / "refused" / "summary.json").exists()
    out = tmp_path / "mixed"
    code, _, err = cli("merge", out, shards[0], gpu, "--allow-mixed", "--compare-to", "HEAD")
    assert code == 0, err
    assert "2 machines kept apart: h100, pool-a" in err
    # --compare-to: each machine with its own record at HEAD (here none: said per machine)
    comparison = load(out / "comparison.json")
    assert [(m["testbed"], m["baseline_note"] is not None) for m in comparison["machines"]] == [
        ("h100", True), ("pool-a", True)]
    assert "h100 (fingerprint 9f00deadbeef0001): No comparison" in err
    merged = load(out / "summary.json")
    assert [m["testbed"] for m in merged["machines"]] == ["h100", "pool-a"]
    testbeds = [r["testbed"] for r in merged["results"]]
    assert testbeds == sorted(testbeds) and set(testbeds) == {"h100", "pool-a"}
    assert load(out / "env.json")["fingerprint"] is None
    # one machine ran shard 1/2 and the other 2/2: every case of the suite came back once
    assert "missing:" not in err and merged["completeness"]["complete"] is True
    assert cli("merge", tmp_path / "strict", shards[0], gpu, "--allow-mixed", "--strict")[0] == 0


def test_merging_shards_with_a_run_measured_otherwise_exits_2_naming_both(
        shards: tuple[Path, Path], tmp_path: Path) -> None:
    """The reviewer's merge: the fake-clock shards of one tree and, between them, a whole
    real-clock run of another tree with 3 iterations; once it said `complete: True` and
    claimed the fake clock and 5 iterations for every case."""
    root = tmp_path / "t4"
    for name in ("a4", "b4", "c4"):
        write(root / "kernels" / f"{name}.py", GOOD)
    o4 = tmp_path / "o4"
    assert run(root, o4, "--iters", "3")[0] == 0
    for extra in ((), ("--allow-mixed",)):  # it keeps machines apart, not runs
        code, _, err = cli("merge", tmp_path / "m", shards[0], o4, shards[1], *extra)
        assert code == 2
        assert f"{shards[0]} and {o4} are not shards of one run" in err
        for detail in ("iterations (", "fake_call_ms (", "root (", "suite ("):
            assert detail in err
        assert not (tmp_path / "m").exists()
    assert cli("merge", tmp_path / "m", *shards, "--strict")[0] == 0


def test_a_missing_shard_is_named_and_fails_the_merge_under_strict(
        shards: tuple[Path, Path], tmp_path: Path) -> None:
    code, _, err = cli("merge", tmp_path / "half", shards[0])
    assert code == 0
    assert "missing: shard 2/2 of suite" in err
    assert load(tmp_path / "half" / "summary.json")["complete"] is False
    code, _, err = cli("merge", tmp_path / "strict", shards[0], "--strict")
    assert code == 1 and "missing: shard 2/2" in err


def test_a_partial_merge_merged_again_with_the_late_shard_is_complete(
        shards: tuple[Path, Path], tmp_path: Path) -> None:
    # The merge keeps each shard's plan in settings.shards, so the second merge checks the
    # suite through it instead of calling the first merge "unchecked" and its shards missing.
    half, whole = tmp_path / "half", tmp_path / "whole"
    assert cli("merge", half, shards[0])[0] == 0
    kept = load(half / "summary.json")["settings"]["shards"][0]["plan"]
    assert kept["planned"] >= 1 and kept["missing"] == []
    code, _, err = cli("merge", whole, half, shards[1], "--strict")
    assert code == 0, err
    assert "missing" not in err and "unchecked" not in err
    merged = load(whole / "summary.json")
    assert merged["complete"] is True
    assert merged["completeness"]["unchecked"] == []
    assert [e["shard"] for e in merged["settings"]["shards"]] == ["1/2", "2/2"]
    direct = load(tmp_path / "direct" / "summary.json") if cli(
        "merge", tmp_path / "direct", *shards)[0] == 0 else None
    assert direct is not None
    assert [r["kernel_name"] for r in merged["results"]] == [
        r["kernel_name"] for r in direct["results"]]
    # merged with itself, the half is still half: shard 2/2 is named as missing
    code, _, err = cli("merge", tmp_path / "again", half, "--strict")
    assert code == 1 and "missing: shard 2/2" in err


def test_a_partial_merge_is_not_resumed_as_a_shard_and_history_says_merge_again(
        shards: tuple[Path, Path], tmp_path: Path) -> None:
    # Resuming it ran "shard 1/2" again in the merge's folder, deleted the other shard's
    # records and marked the set complete.
    half = tmp_path / "half"
    assert cli("merge", half, shards[0])[0] == 0
    before = sorted(p.name for p in (half / "kernels").iterdir())
    code, _, err = cli("run", "--resume", half)
    assert code == 2
    assert "is a merge of shards" in err and "then merge again" in err
    assert sorted(p.name for p in (half / "kernels").iterdir()) == before
    assert load(half / "summary.json")["complete"] is False
    code, _, err = cli("history", "--root", half, "--add", half)
    assert code == 2
    assert "--resume" not in err and f"kernbench merge {half} again" in err
    assert cli("merge", tmp_path / "whole", *shards, "--strict")[0] == 0


# --- shards of an --ab run -------------------------------------------------------------------


@pytest.mark.slow
def test_merging_ab_shards_compares_all_cases_at_once(tmp_path: Path) -> None:
    """A CI matrix runs `--ab REF --shard K/N`; the merge joins both sides and compares again,
    so the verdicts and Benjamini-Hochberg control cover the whole suite."""
    repo = tmp_path / "repo"
    init_repo(repo, {f"k{i}": loop_kernel(1) for i in range(4)})
    shards = []
    for k in (1, 2):
        out = tmp_path / f"shard{k}"
        code, err = run(repo, out, "--ab", "HEAD", "--rounds", "8", "--shard", f"{k}/2",
                        "--debug-inject-slowdown", "k0=3")
        assert code == 0, err
        shards.append(out)
    per_shard = [set(verdicts(s)) for s in shards]
    assert not per_shard[0] & per_shard[1]
    assert [len(k) for k in per_shard] == [2, 2]  # split by count, not by a hash
    merged = tmp_path / "merged"
    code, _, err = cli("merge", merged, *shards, "--root", repo)
    assert code == 0, err
    assert set(verdicts(merged)) == {"k0", "k1", "k2", "k3"}
    assert verdicts(merged)["k0"] == "regressed"
    settings = load(merged / "summary.json")["settings"]
    assert settings["processes"] == 8  # a case's processes a side, one per round (not 3)
    assert settings["output_dir"] is None  # not shard 1's
    document = load(merged / "comparison.json")
    assert document["settings"]["paired"] is True
    assert document["counts"]["regressed"] == 1
    assert len(load(merged / "baseline" / "summary.json")["results"]) == 4
    assert (merged / "regressions.md").is_file() and (merged / "index.html").is_file()
    assert "Regressions" in (merged / "summary.md").read_text()


def test_merging_ab_shards_with_plain_shards_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {"k0": GOOD, "k1": GOOD})
    ab, plain = tmp_path / "ab", tmp_path / "plain"
    assert run(repo, ab, "--ab", "HEAD", "--rounds", "2", "--shard", "1/2",
               "--debug-fake-timer", "2")[0] == 0
    assert run(repo, plain, "--shard", "2/2", "--debug-fake-timer", "2")[0] == 0
    code, _, err = cli("merge", tmp_path / "merged", ab, plain)
    assert code == 2
    assert "--ab baseline" in err


def two_shards(tmp_path: Path, *extra: str) -> list[Path]:
    """Shards 1/2 and 2/2 of a repository of four kernels, on the fake clock."""
    repo = tmp_path / "repo"
    init_repo(repo, {f"k{i}": GOOD for i in range(4)})
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for k, out in enumerate(shards, start=1):
        assert run(repo, out, *extra, "--shard", f"{k}/2", "--debug-fake-timer", "2")[0] == 0
    return shards


def test_an_interrupted_ab_shard_joins_the_merge_which_says_it_is_incomplete(
        tmp_path: Path) -> None:
    # A CI shard job's timeout sends SIGTERM: the shard keeps both sides' finished rounds
    # (complete: false) and writes no comparison.json. The merge refused every shard.
    shards = two_shards(tmp_path, "--ab", "HEAD", "--rounds", "3")
    stopped = shards[0]
    (stopped / "comparison.json").unlink()
    for side in (stopped, stopped / "baseline"):
        summary = load(side / "summary.json")
        (side / "summary.json").write_text(json.dumps({**summary, "complete": False}))
    merged = tmp_path / "merged"
    code, _, err = cli("merge", merged, *shards)
    assert code == 0, err
    assert set(verdicts(merged)) == {f"k{i}" for i in range(4)}
    warning = load(merged / "comparison.json")["warnings"][0]
    assert warning.startswith("incomplete merge on the candidate side: a shard was "
                              "interrupted before its end")
    assert f"  warning: {warning}" in err
    assert warning in (merged / "regressions.md").read_text(encoding="utf-8").replace("\\", "")
    finished = shards[1]
    (finished / "comparison.json").unlink()  # a shard that finished must have compared
    code, _, err = cli("merge", tmp_path / "again", *shards)
    assert code == 2 and f"{finished}: an --ab shard that finished has no comparison.json" in err


def test_a_merge_of_a_shard_stopped_between_rounds_is_incomplete_under_strict(
        tmp_path: Path) -> None:
    # every case came back, but one shard was interrupted with a case short of its processes:
    # the merge said "not every case came back", and --strict exited 0
    shards = two_shards(tmp_path)
    summary = load(shards[0] / "summary.json")
    short = summary["results"][0]["case_id"]
    (shards[0] / "summary.json").write_text(json.dumps(
        {**summary, "complete": False, "unfinished_cases": [short]}))
    code, _, err = cli("merge", tmp_path / "merged", *shards, "--strict")
    assert code == 1, err
    assert f"the merge is incomplete: a shard was interrupted before its end; 1 of the cases " \
        f"shown ran fewer worker processes than the 3 asked for (e.g. {short})" in err
    merged = load(tmp_path / "merged" / "summary.json")
    assert merged["complete"] is False and merged["unfinished_cases"] == [short]
    assert cli("merge", tmp_path / "lenient", *shards)[0] == 0
    before = (shards[1] / "summary.json").read_bytes()
    code, _, err = cli("merge", shards[1], *shards)  # would overwrite the shard it reads
    assert code == 2 and "the merge's output folder is one of its shards" in err
    assert (shards[1] / "summary.json").read_bytes() == before


def test_history_add_appends_the_record_of_a_finished_run(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD, "beta": GOOD})
    out = tmp_path / "out"
    assert run(repo, out, "--debug-fake-timer", "2")[0] == 0
    code, _, err = cli("history", "--root", repo, "--add", out)
    assert code == 0 and "History record:" in err
    code, listing, _ = cli("history", "--root", repo, "--json")
    (record,) = json.loads(listing)
    assert sorted(r["kernel_name"] for r in record["results"]) == ["alpha", "beta"]
    assert record["results"][0]["latency_ms_p50"] == 2.0
    # dated by the run, not by the add: a late add is not the newest run
    summary = json.loads((out / "summary.json").read_text())
    assert record["created_at"] == format_created_at(summary["finished_at"])
    code, _, err = cli("history", "--root", repo, "--add", out)  # a second copy would count twice
    assert code == 2 and f"the run that started at {summary['started_at']}" in err
    assert "already; nothing added" in err and len(history_files(repo)) == 1


def test_history_add_refuses_another_repositorys_run(tmp_path: Path) -> None:
    repo, other = tmp_path / "repo", tmp_path / "other"
    init_repo(repo, {"alpha": GOOD})
    init_repo(other, {"beta": GOOD})
    out = tmp_path / "out"
    assert run(other, out, "--debug-fake-timer", "2")[0] == 0
    commit = json.loads((out / "env.json").read_text())["git"]["commit"]
    code, _, err = cli("history", "--root", repo, "--add", out)
    assert code == 2, err
    assert f"the run measured commit {commit[:12]}, which the repository at {repo}" in err
    assert "another repository's run, or a commit this clone lacks" in err
    assert f"`git fetch origin {commit}`" in err and history_files(repo) == []
    assert cli("history", "--root", other, "--add", out)[0] == 0  # its own repository


def test_history_add_refuses_a_run_that_recorded_no_commit(tmp_path: Path) -> None:
    repo, loose = tmp_path / "repo", tmp_path / "loose"
    init_repo(repo, {"alpha": GOOD})
    write(loose / "kernels" / "beta.py", GOOD)  # no git work tree around it
    out = tmp_path / "out"
    assert run(loose, out, "--debug-fake-timer", "2")[0] == 0
    assert json.loads((out / "env.json").read_text())["git"]["commit"] is None
    code, _, err = cli("history", "--root", repo, "--add", out)
    assert code == 2, err
    assert f"{out}: the run recorded no git commit (" in err and "nothing added" in err
    assert history_files(repo) == []


def test_history_add_refuses_a_run_that_did_not_finish(tmp_path: Path) -> None:
    # An interrupted run's record would become the baseline with its cases left out, and a
    # later comparison would call every case "new" and pass.
    repo = tmp_path / "repo"
    init_repo(repo, {"alpha": GOOD})
    out = tmp_path / "out"
    assert run(repo, out, "--debug-fake-timer", "2")[0] == 0
    summary = json.loads((out / "summary.json").read_text())
    summary["complete"] = False
    (out / "summary.json").write_text(json.dumps(summary))
    code, _, err = cli("history", "--root", repo, "--add", out)
    assert code == 2
    assert "did not finish" in err and f"--resume {out}" in err
    assert history_files(repo) == []


def test_merged_shards_save_history_and_compare_to_a_ref(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    init_repo(repo, {f"k{i}": GOOD for i in range(3)})
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for k, out in enumerate(shards, start=1):
        assert run(repo, out, "--shard", f"{k}/2", "--debug-fake-timer", "2")[0] == 0
    merged = tmp_path / "merged"
    code, _, err = cli("merge", merged, *shards, "--root", repo, "--save-history")
    assert code == 0, err
    assert len(history_files(repo)) == 1
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "history")
    again = tmp_path / "again"
    code, _, err = cli("merge", again, *shards, "--root", repo, "--compare-to", "HEAD")
    assert code == 0, err
    assert set(verdicts(again).values()) == {"unchanged"}
    assert "No regression" in err


def test_a_merge_missing_a_shard_still_compares_what_it_holds(tmp_path: Path) -> None:
    """bench.yml's push path: a shard that never came back leaves the merge incomplete, and
    --compare-to still judges the cases that are there (refusing is history --add's business,
    where the incomplete run would become the baseline)."""
    repo = tmp_path / "repo"
    init_repo(repo, dict.fromkeys(SHARD_KERNELS, GOOD))  # both shards hold cases
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for k, out in enumerate(shards, start=1):
        assert run(repo, out, "--shard", f"{k}/2", "--debug-fake-timer", "2")[0] == 0
    code, _, err = cli("merge", tmp_path / "merged", *shards, "--root", repo, "--save-history")
    assert code == 0, err
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "history")
    part = tmp_path / "part"
    code, _, err = cli("merge", part, shards[0], "--root", repo, "--compare-to", "HEAD")
    assert code == 0, err
    assert load(part / "summary.json")["complete"] is False
    assert set(verdicts(part).values()) == {"unchanged", "missing"}


def test_a_merge_of_two_machines_compares_each_with_its_own_history(tmp_path: Path) -> None:
    """The push path of bench.yml: --save-history keeps one record per machine, and
    --compare-to judges each machine's cases against its own record, never another's."""
    repo = tmp_path / "repo"
    init_repo(repo, dict.fromkeys(SHARD_KERNELS, GOOD))  # both shards hold cases
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for k, out in enumerate(shards, start=1):
        assert run(repo, out, "--shard", f"{k}/2", "--debug-fake-timer", "2")[0] == 0
    gpu = fake_gpu_machine(shards[1], tmp_path / "gpu")
    code, _, err = cli("merge", tmp_path / "m1", shards[0], gpu, "--allow-mixed",
                       "--root", repo, "--save-history")
    assert code == 0, err
    assert sorted(p.name.split("-")[-1] for p in history_files(repo)) == sorted(
        f"{fp}.jsonl.gz" for fp in (load(shards[0] / "env.json")["fingerprint"],
                                    "9f00deadbeef0001"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "history")
    code, _, err = cli("merge", tmp_path / "m2", shards[0], gpu, "--allow-mixed",
                       "--root", repo, "--compare-to", "HEAD")
    assert code == 0, err
    document = load(tmp_path / "m2" / "comparison.json")
    for machine in document["machines"]:
        mine = [c for c in document["cases"] if c["fingerprint"] == machine["fingerprint"]]
        assert machine["baseline_note"] is None and mine
        assert machine["baseline"]["fingerprint"] == machine["fingerprint"]
        assert {c["verdict"] for c in mine} == {"unchanged"}
        assert machine["counts"]["unchanged"] == len(mine)
    assert len(document["cases"]) == len(SHARD_KERNELS)


def test_golden_values_per_sweep_point(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    write(root / "kernels" / "gold" / "gold.py", "import numpy as np\n\n"
          "def run_benchmark(n=1):\n    return np.ones(n, dtype=np.float32)\n")
    write(root / "kernels" / "gold" / "bench.yaml", """\
sweep:
  params:
    n: [1, 2, 3]
golden:
  mysku:
    time_ms: 2.0
    points:
      n=1: {time_ms: 0.5}
      n=2: {time_ms: 1.0, tolerance_multiplier: 1.5}
""")
    out = tmp_path / "out"
    code, err = run(root, out, "--debug-fake-timer", "1", "--sku", "mysku")
    assert code == 1, err
    records = {r["case_id"]: r for r in load(out / "summary.json")["results"]}
    first, second, third = (records[f"gold[cpu,fp32,n={n}]"] for n in (1, 2, 3))
    assert first["status"] == "failed" and first["golden"]["golden_point"] == "n=1"
    assert first["golden"]["limit_ms"] == pytest.approx(0.55)
    assert second["status"] == "ok" and second["golden"]["limit_ms"] == pytest.approx(1.5)
    assert third["status"] == "ok" and third["golden"]["golden_time_ms"] == 2.0
    assert "golden_point" not in third["golden"]


# --- A/A: a busy machine is not a regression ----------------------------------------------


ATTEMPTS = 8


def disturbance(runs: list[Path], document: dict[str, Any]) -> str | None:
    """Why an attempt of the A/A test ran on a disturbed machine (its baseline and candidate
    runs, their comparison), or None: busy during loop_b's samples, a changed machine, a claim
    the machine checks took back, or a third of a side's processes in the VM's slow mode."""
    case = next(c for c in document["cases"] if c["kernel_name"] == "loop_b")
    reasons = [why for run in runs for r in load(run / "summary.json")["results"]
               if r["kernel_name"] == "loop_b" and (why := busy(r.get("machine")))]
    reasons += document.get("warnings") or []
    if case.get("claimed"):
        reasons.append(case["note"])
    kept = case.get("processes") or {}
    if any(10 - kept.get(side, 10) >= 3 for side in ("baseline", "candidate")):
        reasons.append(case["note"])
    return reasons[0] if reasons else None


def hogs(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def test_a_a_with_a_cpu_hog_claims_no_regression_but_a_real_slowdown_is_caught(
        tmp_path: Path) -> None:
    """Two stored runs of the same kernels, the second with CPU hogs started while it runs:
    nothing is blamed on the kernels. A real 1.3x slowdown on a quiet machine is still caught."""
    root = tmp_path / "tree"
    for name in ("loop_a", "loop_b", "loop_c"):
        write(root / "kernels" / f"{name}.py", LOOP.format(body="pass"))
    # Ten processes a side: on a VM a process can run 1.7x slower than its siblings for its
    # whole life (layout, a shared core), and the 1.3x must stand out of that noise.
    settings = ("--iters", "15", "--warmup", "1", "--no-cpu-peak", "-q", "--processes", "10",
                "--warmup-time", "0.02")
    code, _, err = cli("run", "--root", root, "--output-dir", tmp_path / "quiet", *settings)
    assert code == 0, err
    started: list[subprocess.Popen[bytes]] = []
    timer = threading.Timer(0.3, lambda: started.extend(hogs(2 * (os.cpu_count() or 1))))
    timer.start()
    try:
        code, _, err = cli("run", "--root", root, "--output-dir", tmp_path / "busy", *settings)
    finally:
        timer.cancel()
        timer.join()
        for hog in started:
            hog.kill()
            hog.wait()
    assert code == 0, err
    busy_run = load(tmp_path / "busy" / "summary.json")
    seen = [r["machine"]["other_cpu_cores"] for r in busy_run["results"]]
    # seen as kernbench sees a busy machine (half a core or more: BUSY_OTHER_CORES); on two
    # cores shared with the worker itself, four hogs read 0.96-1.2 cores, so 1.0 was a coin
    assert any(busy(r["machine"]) for r in busy_run["results"]), \
        f"the hogs were not seen: {seen}"

    code, _, err = cli("compare", tmp_path / "quiet", tmp_path / "busy", "--output-dir",
                       tmp_path / "aa", "--fail-on-regression")
    document = load(tmp_path / "aa" / "comparison.json")
    assert code == 0, (tmp_path / "aa" / "regressions.md").read_text(encoding="utf-8")
    assert document["counts"]["regressed"] == 0
    for case in document["cases"]:
        if case.get("claimed"):
            assert case["verdict"] == "inconclusive" and "machine" in case["note"]

    # The slowdown run is tried up to eight times: a process here can land in a slow mode for
    # its whole life, and one unlucky run may (rightly) say inconclusive. The unlucky run can be
    # the baseline as well, so each later attempt measures a baseline of its own: attempts that
    # shared one failed together. In hours when a fifth of this VM's processes ran in a slow
    # mode, one attempt caught the 1.3x in 44 of 60 pairs of stored runs (`python
    # benchmarks/bench_stored_aa.py --reps 60`), so eight independent attempts all miss about
    # once in 38,000; when a third did, in 32 of 60, so all eight miss about once in 440 (five
    # missed once in 45, and did in a fresh clone's CI on 2026-11-27, a day the VM ran 2-3x
    # slow; not every attempt reported the slow mode). The loop ends at the first catch, so
    # more attempts cost time only when they are needed. Those runs claimed a change of an
    # unchanged kernel in 3-4 of 120 comparisons (none on calm days): the method's error rate
    # on such a VM, which one false alarm in these attempts may be, two may not.
    runs, false_alarms, disturbed = ["quiet"], list[str](), list[str | None]()
    for attempt in range(ATTEMPTS):
        if attempt:
            runs.append(f"quiet{attempt}")
            code, _, err = cli("run", "--root", root, "--output-dir", tmp_path / runs[-1],
                               *settings)
            assert code == 0, err
        out = tmp_path / f"slow{attempt}"
        runs.append(out.name)
        code, _, err = cli("run", "--root", root, "--output-dir", out, *settings,
                           "--debug-inject-slowdown", "loop_b=1.3", "--baseline",
                           tmp_path / runs[-2], "--fail-on-regression")
        document = load(out / "comparison.json")
        verdicts = {c["kernel_name"]: c["verdict"] for c in document["cases"]}
        alarms = [f"{name} {verdicts[name]} in {out.name}" for name in ("loop_a", "loop_c")
                  if verdicts[name] in ("regressed", "improved")]
        false_alarms += alarms
        assert len(false_alarms) <= 1, false_alarms
        if verdicts["loop_b"] == "regressed" and not alarms:
            assert code == 1, err
            return
        disturbed.append(disturbance([tmp_path / run for run in runs[-2:]], document))
    # This machine is shared: when something else ran during an attempt's two runs, kernbench
    # rightly declines to call it, and that attempt cannot test detection. So when a third of
    # loop_b's processes on a side ran in the VM's slow mode: in the moodiest hour measured
    # here a third of all processes did, and one attempt caught the 1.3x about half the time.
    # Only when every attempt was disturbed is detection untested; otherwise a miss fails.
    if all(disturbed):
        pytest.skip(f"every attempt ran on a disturbed machine (the last: {disturbed[-1]})")
    pytest.fail(f"a 1.3x slowdown on a quiet machine was not caught in {ATTEMPTS} runs: "
                + (out / "regressions.md").read_text(encoding="utf-8"))
