"""The pytest plugin, run as users run it: real inner pytest sessions (pytester)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kernbench.results.schema import SCHEMA_VERSION

pytest_plugins = ["pytester"]

FAST = ("--kernbench-iterations", "6", "--kernbench-warmup", "1", "-p", "no:cacheprovider")

KERNELS = '''
import os
import pytest

def work(n):
    return sum(range(n))

SIZE = int(os.environ.get("WORK_SIZE", "10"))

def test_sum(kernbench):
    assert kernbench(work, SIZE) == SIZE * (SIZE - 1) // 2

@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.kernbench(iterations=4, precision="int64")
def test_param(kernbench, n):
    assert kernbench(work, n) == n * (n - 1) // 2

def test_plain():
    assert work(3) == 3
'''


def _summary(pytester: pytest.Pytester, name: str) -> dict:
    path = pytester.path / ".kernbench" / name / "summary.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_fixture_measures_and_the_table_shows_the_cases(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kernels=KERNELS)
    outcome = pytester.runpytest_subprocess(*FAST)
    outcome.assert_outcomes(passed=4)
    outcome.stdout.fnmatch_lines([
        "*- kernbench -*", "case*median*IQR*min*samples",
        "test_kernels.test_sum?cpu,native?  *6 x *",
        "test_kernels.test_param?cpu,int64,3?  *4 x *",
        "test_kernels.test_param?cpu,int64,5?  *4 x *"])


def test_save_writes_the_run_report_set(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kernels=KERNELS)
    pytester.runpytest_subprocess(*FAST, "--kernbench-save", "base",
                       "--kernbench-format", "md,bmf").assert_outcomes(passed=4)
    summary = _summary(pytester, "base")
    assert summary["schema_version"] == SCHEMA_VERSION and summary["counts"]["ok"] == 3
    by_id = {r["case_id"]: r for r in summary["results"]}
    assert set(by_id) == {"test_kernels.test_sum[cpu,native]",
                          "test_kernels.test_param[cpu,int64,3]",
                          "test_kernels.test_param[cpu,int64,5]"}
    param = by_id["test_kernels.test_param[cpu,int64,3]"]
    assert param["problem_size"] == {"n": 3} and len(param["timing"]["samples_ms"]) == 4
    assert param["kernel_path"] == "test_kernels.py"
    # the hint names the plugin's knobs, not kernbench run's --iters
    assert [w["message"] for w in param["warnings"] if w["code"] == "too_few_samples"] == [
        "only 4 samples; use --kernbench-iterations 10 (or the marker's iterations=10) or more"]
    folder = pytester.path / ".kernbench" / "base"
    assert (folder / "kernels" / "test_kernels.test_param.json").is_file()
    assert (folder / "summary.md").is_file() and (folder / "bmf.json").is_file()
    # test_param's marker took 4 samples: the protocol line says so, and no "seed None"
    markdown = (folder / "summary.md").read_text(encoding="utf-8")
    assert "6 samples after 1 warmup calls per case unless a test's" in markdown
    assert "seed None" not in markdown
    from kernbench.results.inputs import load_run

    assert len(load_run(folder).results) == 3  # kernbench's own reader takes it back


def test_compare_judges_against_the_saved_set(pytester: pytest.Pytester,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_kernels=KERNELS)
    args = (*FAST, "--kernbench-iterations", "20", "-k", "test_sum")
    monkeypatch.setenv("WORK_SIZE", "10")
    fast = pytester.runpytest_subprocess(*args, "--kernbench-save", "fast",
                                         "--kernbench-compare", "--kernbench-compare-fail")
    # nothing saved yet: it passes, as pytest-benchmark does, but says so twice
    fast.assert_outcomes(passed=1, deselected=3, warnings=1)
    fast.stdout.fnmatch_lines([
        "*KernbenchWarning: nothing compared: nothing saved in *.kernbench; "
        "--kernbench-compare-fail had nothing to judge",
        "kernbench: nothing compared: nothing saved in *.kernbench; "
        "--kernbench-compare-fail had nothing to judge"])
    monkeypatch.setenv("WORK_SIZE", "20000")  # about a thousand times the work
    slow = pytester.runpytest_subprocess(*args, "--kernbench-compare", "--kernbench-compare-fail",
                              "--kernbench-save", "slow")
    (case,) = json.loads((pytester.path / ".kernbench" / "slow" / "comparison.json")
                         .read_text(encoding="utf-8"))["cases"]
    if case["verdict"] == "inconclusive" and case.get("claimed") == "regressed":
        # the machine checks, as kernbench compare makes them, saw a busy or changed machine
        assert "the machine" in case["note"], case["note"]
        pytest.skip(f"the machine was disturbed: {case['note'][:200]}")
    slow.stdout.fnmatch_lines(["*vs saved*verdict*", "test_kernels.test_sum*regressed[*]",
                               "kernbench: [*] one session a side: its samples were compared "
                               "(Mann-Whitney)*optimistic*--ab REF)",
                               "kernbench: compared with *fast*",
                               "kernbench: 1 case(s) regressed (test_kernels.test_sum*): the "
                               "session fails (--kernbench-compare-fail)"])
    assert slow.ret == pytest.ExitCode.TESTS_FAILED
    document = json.loads((pytester.path / ".kernbench" / "slow" / "comparison.json")
                          .read_text(encoding="utf-8"))
    assert document["counts"]["regressed"] == 1
    without_fail = pytester.runpytest_subprocess(*args, "--kernbench-compare", "fast")
    assert without_fail.ret == pytest.ExitCode.OK


def test_a_comparison_that_judged_no_case_says_nothing_was_compared(
        pytester: pytest.Pytester) -> None:
    """A saved set without any of this session's cases: every case is `new`. The session
    said `compared with <set>` and passed silently under --kernbench-compare-fail."""
    pytester.makepyfile(test_kernels=KERNELS)
    pytester.runpytest_subprocess(*FAST, "-k", "test_sum", "--kernbench-save", "sum")
    other = pytester.runpytest_subprocess(*FAST, "-k", "test_param", "--kernbench-compare",
                                          "--kernbench-compare-fail")
    other.assert_outcomes(passed=2, deselected=2, warnings=1)
    other.stdout.fnmatch_lines([
        "*KernbenchWarning: nothing compared: none of this session's 2 case(s) ran in "
        "*sum*summary.json; --kernbench-compare-fail had nothing to judge"])
    other.stdout.no_fnmatch_line("kernbench: compared with*")
    # a demanding user's warning filter makes it fail the session (not a traceback)
    strict = pytester.runpytest_subprocess(*FAST, "-k", "test_param", "--kernbench-compare",
                                           "-W", "error::kernbench.pytest_plugin.KernbenchWarning")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(["kernbench: nothing compared: none of this session's *",
                                 "kernbench: the warning filters make a KernbenchWarning an "
                                 "error: failed"])


def test_fork_isolation_returns_the_value_and_keeps_replicates(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_forked='''
import os
import pytest

@pytest.mark.kernbench(isolation="fork", processes=2, iterations=3)
def test_forked(kernbench):
    assert kernbench(os.getpid) == os.getpid()  # one untimed call in the pytest process
    case = kernbench.result.case
    assert case.process_sample_counts == (3, 3) and case.worker["pid"] != os.getpid()
''')
    pytester.runpytest_subprocess(*FAST).assert_outcomes(passed=1)


def test_a_marker_with_an_unknown_option_fails_the_test_by_name(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad='''
import pytest

@pytest.mark.kernbench(iters=3)
def test_bad(kernbench):
    kernbench(len, "abc")
''')
    outcome = pytester.runpytest_subprocess(*FAST)
    outcome.assert_outcomes(failed=1)
    outcome.stdout.fnmatch_lines(["*test_bad.py::test_bad: @pytest.mark.kernbench: unknown "
                                  "option(s) 'iters'*"])


def test_disable_calls_once_untimed_and_a_second_call_is_an_error(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_calls='''
calls = []

def test_once(kernbench):
    kernbench(calls.append, 1)
    assert kernbench.result is None and calls == [1]
''', test_twice='''
def test_twice(kernbench):
    kernbench(len, "a")
    kernbench(len, "b")
''')
    disabled = pytester.runpytest_subprocess(*FAST, "--kernbench-disable", "test_calls.py")
    disabled.assert_outcomes(passed=1)
    assert "- kernbench -" not in disabled.stdout.str()
    twice = pytester.runpytest_subprocess(*FAST, "test_twice.py")
    twice.assert_outcomes(failed=1)
    twice.stdout.fnmatch_lines(["*measures one function per test; it was called twice*"])


def test_a_session_without_the_fixture_gets_no_table(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    outcome = pytester.runpytest_subprocess(*FAST)
    outcome.assert_outcomes(passed=1)
    assert "- kernbench -" not in outcome.stdout.str()


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    code = ("import sys, kernbench.pytest_plugin\n"
            "print(sorted(m for m in ('numpy', 'scipy', 'jinja2', 'torch', 'jax', "
            "'kernbench.api', 'kernbench.measure') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "[]"


def test_the_entry_point_is_registered() -> None:
    from importlib.metadata import entry_points

    found = {e.name: e.value for e in entry_points(group="pytest11")}
    assert found.get("kernbench") == "kernbench.pytest_plugin"


def test_tests_of_the_same_name_in_two_folders_are_two_cases(pytester: pytest.Pytester) -> None:
    """cpu/test_ops.py and gpu/test_ops.py: one name for both gave the unchanged one the
    changed one's verdict, and exports kept one of the two."""
    for folder, size in (("cpu", 10), ("gpu", 20)):
        pytester.mkpydir(folder)
        (pytester.path / folder / "test_ops.py").write_text(
            f"def test_x(kernbench):\n    kernbench(sum, range({size}))\n", encoding="utf-8")
    outcome = pytester.runpytest_subprocess(*FAST, "--kernbench-save", "base")
    outcome.assert_outcomes(passed=2)
    names = sorted(r["case_id"] for r in _summary(pytester, "base")["results"])
    assert names == ["cpu.test_ops.test_x[cpu,native]", "gpu.test_ops.test_x[cpu,native]"]


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--kernbench-threshold", "nan", "expected a finite number > 0"),
    ("--kernbench-threshold", "-1", "expected a finite number > 0"),
    ("--kernbench-warmup", "-1", "expected an integer >= 0"),
    # the bound and words of `kernbench run --iters` (one parser for both)
    ("--kernbench-iterations", "1000000", "expected an integer from 1 to 100000, got 1000000"),
    ("--kernbench-save", "../base", "must be a plain directory name"),
    ("--kernbench-format", "bogus", "--kernbench-format: unknown format 'bogus'"),
    # a typo in the saved set's name compared nothing and passed, exit 0
    ("--kernbench-compare", "nosuch", "--kernbench-compare nosuch: no saved report set"),
    ("--kernbench-compare", "../x", "--kernbench-compare: '../x' must be a saved set's name"),
    # options that would do nothing on their own
    ("--kernbench-format", "md", "--kernbench-format renders into the saved report set"),
])
def test_bad_options_are_usage_errors_before_any_test_runs(
        pytester: pytest.Pytester, option: str, value: str, message: str) -> None:
    pytester.makepyfile(test_kernels=KERNELS)
    outcome = pytester.runpytest_subprocess(*FAST, option, value)
    assert outcome.ret == pytest.ExitCode.USAGE_ERROR
    assert message in outcome.stderr.str()
    outcome.stdout.no_fnmatch_line("*passed*")


def test_a_test_that_fails_after_measuring_is_saved_as_a_failed_case(
        pytester: pytest.Pytester) -> None:
    # It was saved as ok: a clean baseline, "every case ran" in summary.md, no JUnit failure.
    pytester.makepyfile(test_fail="""
def test_wrong(kernbench):
    assert kernbench(sum, [1, 2]) == 4

def test_right(kernbench):
    assert kernbench(sum, [1, 2]) == 3
""")
    outcome = pytester.runpytest_subprocess(*FAST, "--kernbench-save", "base")
    outcome.assert_outcomes(passed=1, failed=1)
    by_name = {r["case_id"].split("[")[0]: r for r in _summary(pytester, "base")["results"]}
    wrong, right = by_name["test_fail.test_wrong"], by_name["test_fail.test_right"]
    assert wrong["status"] == "failed"
    assert wrong["reason"].startswith("the test failed after kernbench measured it: "
                                      "AssertionError")
    assert right["status"] == "ok"
    assert _summary(pytester, "base")["counts"]["failed"] == 1
    # fixed, it has nothing to be judged against: the saved case failed
    pytester.makepyfile(test_fail="""
def test_wrong(kernbench):
    assert kernbench(sum, [1, 2]) == 3
""")
    fixed = pytester.runpytest_subprocess(*FAST, "--kernbench-compare", "base")
    fixed.stdout.fnmatch_lines(["kernbench: nothing compared: none of this session's 1 case(s) "
                                "ran in *base*summary.json (1 are there, but failed or were "
                                "skipped)"])


def test_a_save_that_fails_fails_the_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kernels=KERNELS)
    (pytester.path / ".kernbench" / "base").mkdir(parents=True)  # a folder of the user's
    (pytester.path / ".kernbench" / "base" / "notes.txt").write_text("mine")
    outcome = pytester.runpytest_subprocess(*FAST, "--kernbench-save", "base")
    assert outcome.ret != 0
    outcome.stdout.fnmatch_lines(["*error:*not a kernbench report set; not overwriting it*"])
    assert (pytester.path / ".kernbench" / "base" / "notes.txt").read_text() == "mine"


def test_the_pytest_benchmark_export_names_each_case_by_its_node_id(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kernels=KERNELS)
    pytester.runpytest_subprocess(*FAST, "--kernbench-save", "base", "--kernbench-format",
                                  "pytest-benchmark").assert_outcomes(passed=4)
    export = pytester.path / ".kernbench" / "base" / "pytest_benchmark.json"
    names = sorted(b["fullname"] for b in json.loads(export.read_text())["benchmarks"])
    assert names == ["test_kernels.py::test_param[3]", "test_kernels.py::test_param[5]",
                     "test_kernels.py::test_sum"]


def test_compare_fail_without_compare_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_kernels=KERNELS)
    outcome = pytester.runpytest_subprocess(*FAST, "--kernbench-compare-fail")
    assert outcome.ret == pytest.ExitCode.USAGE_ERROR
    assert "--kernbench-compare-fail needs --kernbench-compare" in outcome.stderr.str()


def test_a_session_stopped_early_is_saved_incomplete_and_xfail_is_no_clean_case(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_stop="""
import pytest

def f_sum(values):
    return sum(values)

def f_max(values):
    return max(values)

@pytest.mark.parametrize("fn", [f_sum, f_max])
def test_fn(kernbench, fn):
    kernbench(fn, [1, 2])

@pytest.mark.xfail(reason="known wrong")
def test_known(kernbench):
    assert kernbench(sum, [1, 2]) == 4

def test_stop():
    assert False

def test_never(kernbench):
    kernbench(sum, [1])
""")
    outcome = pytester.runpytest_subprocess(*FAST, "-x", "--kernbench-save", "early")
    outcome.assert_outcomes(passed=2, xfailed=1, failed=1)
    outcome.stdout.fnmatch_lines(["kernbench: saved 3 case(s) to *early (complete: false: the "
                                  "session stopped before its end)"])
    summary = _summary(pytester, "early")
    assert summary["complete"] is False
    by_point = {r["case_id"]: r for r in summary["results"]}
    # two functions as parameters are two cases, not one key seen twice
    sizes = sorted(str(r["problem_size"]) for r in summary["results"] if r["problem_size"])
    assert sizes == ["{'fn': '<function f_max>'}", "{'fn': '<function f_sum>'}"]
    known = next(r for c, r in by_point.items() if c.startswith("test_stop.test_known"))
    assert known["status"] == "failed"


def test_saving_under_xdist_is_a_usage_error(pytester: pytest.Pytester) -> None:
    # pytest-xdist's -n (its option's dest is numprocesses): each worker process ran its own
    # session and saved over the others' cases
    pytester.makeconftest("""
def pytest_addoption(parser):
    parser.addoption("--numprocesses", dest="numprocesses", default=None)
""")
    pytester.makepyfile(test_kernels=KERNELS)
    outcome = pytester.runpytest_subprocess(*FAST, "--numprocesses", "2", "--kernbench-save",
                                            "base")
    assert outcome.ret == pytest.ExitCode.USAGE_ERROR
    assert "cannot run under pytest-xdist (-n)" in outcome.stderr.str()


def test_a_comparison_with_an_incomplete_saved_set_says_so(pytester: pytest.Pytester) -> None:
    """A set saved by a session stopped with -x lacks cases: comparing with it said nothing
    of that, though its missing cases then show as new."""
    pytester.makepyfile(test_x="""
import pytest

@pytest.mark.kernbench(iterations=5)
def test_a(kernbench):
    kernbench(sum, [1, 2, 3])

def test_b():
    assert False

@pytest.mark.kernbench(iterations=5)
def test_c(kernbench):
    kernbench(sum, [1, 2, 3])
""")
    stopped = pytester.runpytest_subprocess(*FAST, "-x", "--kernbench-save", "xstop")
    assert stopped.ret == pytest.ExitCode.TESTS_FAILED
    again = pytester.runpytest_subprocess(*FAST, "--kernbench-compare", "xstop")
    again.stdout.fnmatch_lines(["kernbench: warning: incomplete run on the baseline side: *"])


def test_a_bad_marker_key_and_an_unusable_storage_are_said_without_kernbench_frames(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m="""
import pytest

@pytest.mark.kernbench(bogus=1)
def test_a(kernbench):
    kernbench(sum, [1, 2, 3])
""")
    bad = pytester.runpytest_subprocess(*FAST)
    bad.assert_outcomes(failed=1)
    bad.stdout.fnmatch_lines(["*@pytest.mark.kernbench*unknown option*'bogus'*"])
    assert "kernbench/api/bench.py" not in bad.stdout.str()  # it showed kernbench's frames
    (pytester.path / "blocked").write_text("a file, not a folder")
    storage = pytester.runpytest_subprocess(*FAST, "--kernbench-storage", "blocked/sets",
                                            "--kernbench-save", "s")
    assert storage.ret == pytest.ExitCode.USAGE_ERROR  # before any test ran, not after
    storage.stderr.fnmatch_lines(["*--kernbench-storage*blocked*not a folder*"])
