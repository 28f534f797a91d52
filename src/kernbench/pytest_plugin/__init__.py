"""The pytest plugin (entry point ``pytest11: kernbench``): a kernel's benchmark beside its tests.

* the ``kernbench`` fixture: ``kernbench(fn, *args, **kwargs)`` measures ``fn(*args,
  **kwargs)`` under kernbench's protocol (warmup, calibrated inner loop, samples; in this
  process unless isolation ``fork`` is asked) and returns what `fn` returned, as
  pytest-benchmark's ``benchmark`` fixture does; the measurement is ``kernbench.result``;
* ``@pytest.mark.kernbench(iterations=, warmup=, backend=, gpu_timing=, precision=,
  isolation=, processes=, timeout_s=, name=)``: a test's own protocol settings and labels;
* ``--kernbench-save NAME`` writes the session's results as a kernbench report set
  (summary.json, env.json, kernels/*.json: the versioned JSON of ``kernbench run``) under
  ``--kernbench-storage`` (default ``.kernbench``); ``--kernbench-compare [NAME]`` judges each
  case against a saved set (the newest by default) with kernbench's comparison statistics,
  and ``--kernbench-compare-fail`` fails the session when one regressed;
* a table of the measured cases (and verdicts) at the end of the terminal report.

This module imports only pytest, the standard library and the option parsers it shares with
the CLI (:mod:`kernbench.config.values`, standard library only): the plugin loads in every pytest
session of an environment where kernbench is installed, and a session that never asks for the
fixture pays nothing more (:mod:`kernbench.pytest_plugin.session` and the measuring code load
on first use).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kernbench.config.values import MAX_ITERATIONS, positive_float, positive_int

if TYPE_CHECKING:
    from kernbench.api.display import BenchResult
    from kernbench.pytest_plugin.session import PluginSession

__all__ = ["KernbenchFixture", "KernbenchWarning"]


class KernbenchWarning(pytest.PytestWarning):
    """Said in pytest's warnings summary: e.g. ``--kernbench-compare`` that compared nothing."""

MARKER = ("kernbench(**options): kernbench protocol settings and labels for the kernbench "
          "fixture: iterations, warmup, backend, gpu_timing, precision, isolation ('none' or "
          "'fork'), processes, timeout_s, name")
_SESSION: pytest.StashKey[PluginSession] = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kernbench", "kernbench: kernel benchmarks beside the tests")
    add = group.addoption
    add("--kernbench-storage", metavar="DIR", default=".kernbench",
        help="where --kernbench-save writes and --kernbench-compare reads report sets "
             "(default: .kernbench)")
    add("--kernbench-save", metavar="NAME",
        help="save this session's results as the report set DIR/NAME (summary.json, env.json, "
             "kernels/*.json)")
    add("--kernbench-compare", metavar="NAME", nargs="?", const="", default=None,
        help="compare every case with the saved report set NAME (default: the newest one)")
    add("--kernbench-compare-fail", action="store_true",
        help="fail the session when the comparison finds a regression")
    add("--kernbench-threshold", metavar="R", type=positive_float(), default=0.10,
        help="practical threshold of a comparison: the relative change of the median that "
             "counts (default 0.10 = 10%%)")
    add("--kernbench-format", metavar="F[,F]", default=None,
        help="also render these report formats into the saved set (e.g. md,html,bmf)")
    add("--kernbench-iterations", metavar="N", type=positive_int(1, MAX_ITERATIONS),
        default=None, help=f"timed samples per case (default 30, at most {MAX_ITERATIONS}; a "
                           "marker's iterations wins)")
    add("--kernbench-warmup", metavar="N", type=positive_int(0), default=None,
        help="warmup calls per case (default 3; a marker's warmup wins)")
    add("--kernbench-isolation", choices=("none", "fork"), default=None,
        help="measure in this process (none, the default) or in a forked child (fork)")
    add("--kernbench-disable", action="store_true",
        help="call each benchmarked function once, untimed: a quick correctness run")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    _check_save_options(config)
    config.stash[_SESSION] = _new_session(config)


def _check_save_options(config: pytest.Config) -> None:
    """A usage error before any test runs, not a note after the whole session."""
    from kernbench.errors import KernbenchError

    name = config.getoption("kernbench_save", None)
    if name is not None and (not name or Path(name).name != name or name.startswith(".")):
        raise pytest.UsageError(f"--kernbench-save: {name!r} must be a plain directory name")
    compare = config.getoption("kernbench_compare", None)
    storage = config.rootpath / str(config.getoption("kernbench_storage", ".kernbench"))
    if name is not None:  # a save into a folder that cannot be made: before, not after
        from kernbench.results.files import check_output_dir

        try:
            check_output_dir(storage, "--kernbench-storage")
        except KernbenchError as exc:
            raise pytest.UsageError(exc.message) from None
    if config.getoption("kernbench_compare_fail", False) and compare is None:
        raise pytest.UsageError("--kernbench-compare-fail needs --kernbench-compare [NAME]: "
                                "without a comparison there is nothing to fail on")
    if compare and (Path(compare).name != compare or compare.startswith(".")):
        raise pytest.UsageError(f"--kernbench-compare: {compare!r} must be a saved set's name")
    if compare and not (storage / compare / "summary.json").is_file():
        saved = sorted(p.parent.name for p in storage.glob("*/summary.json"))
        raise pytest.UsageError(f"--kernbench-compare {compare}: no saved report set "
                                f"{storage / compare} (saved: {', '.join(saved) or 'none'})")
    formats = config.getoption("kernbench_format", None)
    if formats:
        from kernbench.reporting.formats import check_libraries, parse_formats

        try:
            check_libraries(parse_formats(formats))
        except KernbenchError as exc:
            raise pytest.UsageError(exc.message.replace("--format", "--kernbench-format",
                                                        1)) from None
    if config.getoption("kernbench_format", None) and name is None:
        raise pytest.UsageError("--kernbench-format renders into the saved report set: give "
                                "--kernbench-save NAME")
    if (name is not None or compare is not None) and config.getoption("numprocesses", None):
        raise pytest.UsageError("--kernbench-save and --kernbench-compare cannot run under "
                                "pytest-xdist (-n): each worker would save over the others, "
                                "and timings taken side by side disturb each other; run the "
                                "benchmarks without -n")


def _new_session(config: pytest.Config) -> PluginSession:
    from kernbench.pytest_plugin.session import PluginSession

    return PluginSession(config)


class KernbenchFixture:
    """``kernbench(fn, *args, **kwargs)``: measure the call once per test; returns what `fn`
    returned (with isolation ``fork``, from one untimed call in the pytest process)."""

    def __init__(self, node: pytest.Item, session: PluginSession) -> None:
        self._node = node
        self._session = session
        self.result: BenchResult | None = None
        """The measurement, once the fixture was called."""

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        from kernbench.errors import KernbenchError

        if self.result is not None:
            pytest.fail(f"{self._node.nodeid}: the kernbench fixture measures one function per "
                        "test; it was called twice", pytrace=False)
        if self._session.disabled:
            return fn(*args, **kwargs)
        try:
            self.result, value = self._session.measure(self._node, fn, args, kwargs)
        except KernbenchError as exc:  # a bad marker key, a refused call: the words alone,
            pytest.fail(exc.message, pytrace=False)  # not kernbench's frames above them
        return value


@pytest.fixture
def kernbench(request: pytest.FixtureRequest) -> Iterator[KernbenchFixture]:
    """Measure a function under kernbench's protocol: ``kernbench(fn, *args, **kwargs)``."""
    node = request.node
    assert isinstance(node, pytest.Item)
    yield KernbenchFixture(node, request.config.stash[_SESSION])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    """A test that failed after measuring: its case is saved as failed, not as a clean ok."""
    outcome: Any = yield
    report = outcome.get_result()
    plugin = item.config.stash.get(_SESSION, None)
    xfailed = report.when == "call" and hasattr(report, "wasxfail") and report.skipped
    if plugin is not None and report.when == "call" and (report.failed or xfailed):
        why = call.excinfo.exconly() if call.excinfo is not None else "failed"
        plugin.test_failed(item.nodeid, why.splitlines()[0] if why else "failed")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    plugin = session.config.stash.get(_SESSION, None)
    complete = (exitstatus != pytest.ExitCode.INTERRUPTED and not session.shouldstop
                and not session.shouldfail)  # Ctrl-C, -x, --maxfail: tests were left out
    if plugin is not None and plugin.finish(complete) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    plugin = config.stash.get(_SESSION, None)
    if plugin is not None:
        plugin.summary(terminalreporter)
