"""What the pytest plugin keeps for one session: the measured cases, the saved report set, the
comparison with a saved one, and the table at the end of the terminal report.

Imported when pytest configures the plugin, so only the standard library loads at import;
measuring, saving and comparing import kernbench's rooms when they first run.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kernbench.api.bench import BenchOptions
    from kernbench.api.display import BenchResult
    from kernbench.results.inputs import LoadedRun

__all__ = ["PluginSession", "case_name", "json_params"]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def case_name(node: pytest.Item) -> str:
    """A test's kernel name: ``cpu.test_ops.TestMatmul.test_small`` (the module's path from the
    root directory, dotted, then its class and function without the parameters): file-name
    safe, the same in every session, and one per test, so ``cpu/test_ops.py`` and
    ``gpu/test_ops.py`` with the same test do not share a name (and verdict)."""
    try:
        module = node.path.relative_to(node.config.rootpath).with_suffix("").parts
    except ValueError:  # a test file outside the root directory
        module = (node.path.stem,)
    parts = list(module)
    cls = getattr(node, "cls", None)
    if cls is not None:
        qualified = getattr(cls, "__qualname__", cls.__name__)
        parts.append(cls.__name__ if "<" in qualified else qualified)
    parts.append(getattr(node, "originalname", None) or node.name)
    return ".".join(parts)


def json_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """A parametrized test's parameters as a problem size: JSON values as they are, a function
    or class by its qualified name (``<function f_sum>``: two of them must not share a case),
    any other object by its ``str`` (its type's name where that str names a memory address,
    which would differ from one session to the next)."""
    found: dict[str, Any] = {}
    for key, value in params.items():
        try:
            json.dumps(value)
            found[key] = value
        except (TypeError, ValueError):
            text = str(value)
            named = getattr(value, "__qualname__", None)  # a function or class: by its name
            found[key] = (f"<{type(value).__name__} {named}>" if isinstance(named, str) else
                          f"<{type(value).__name__}>" if " at 0x" in text else text)
    return found


class PluginSession:
    """The session's cases, and what ``--kernbench-save`` / ``--kernbench-compare`` made of
    them."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: list[BenchResult] = []
        self.kernels: dict[str, tuple[str, str]] = {}
        """Kernel name -> (test file relative to the root, test function)."""
        self.started = _now()
        self.notes: list[str] = []
        self.cases: list[dict[str, Any]] = []
        """The comparison's cases (comparison.json's layout), when one was made."""
        self.machine: Any = None
        """The machine around the session (a calibration before and after), where it is saved
        or compared: a comparison of two sessions then says when the machine changed."""
        if not self.disabled and (self.option("save") is not None
                                  or self.option("compare") is not None):
            from kernbench.measure.machine import RunState

            self.machine = RunState()

    def option(self, name: str) -> Any:
        return self.config.getoption(f"kernbench_{name}")

    @property
    def disabled(self) -> bool:
        return bool(self.option("disable"))

    def options_for_session(self) -> BenchOptions:
        """The defaults with the command line's settings over them."""
        from kernbench.api.bench import BenchOptions

        given = {"iterations": self.option("iterations"), "warmup": self.option("warmup"),
                 "isolation": self.option("isolation")}
        return BenchOptions.from_mapping({k: v for k, v in given.items() if v is not None},
                                         "--kernbench options")

    def options_for(self, node: pytest.Item) -> BenchOptions:
        """The command line's settings, then the test's marker over them."""
        from kernbench.api.bench import BenchOptions

        base = self.options_for_session()
        marker = node.get_closest_marker("kernbench")
        if marker is None:
            return base
        source = f"{node.nodeid}: @pytest.mark.kernbench"
        if marker.args:
            raise pytest.UsageError(f"{source}: takes keyword arguments only, got "
                                    f"{marker.args!r}")
        return BenchOptions.from_mapping(marker.kwargs, source, base)

    def measure(self, node: pytest.Item, fn: Callable[..., Any], args: tuple[Any, ...],
                kwargs: Mapping[str, Any]) -> tuple[BenchResult, Any]:
        from kernbench.api.bench import measure_function

        options = self.options_for(node)
        name = options.name or case_name(node)
        callspec = getattr(node, "callspec", None)
        path = node.path.relative_to(self.config.rootpath).as_posix() \
            if node.path.is_relative_to(self.config.rootpath) else str(node.path)
        result, value = measure_function(
            fn, args, kwargs, dataclasses.replace(options, name=name), kernel_path=path,
            problem_size=json_params(callspec.params) if callspec else None,
            point=callspec.id if callspec else None, entry_point="pytest")
        # the test's node id, which pytest-benchmark's export calls the benchmark's fullname
        result = type(result)(dataclasses.replace(
            result.case, worker={**result.case.worker, "node_id": node.nodeid}))
        if options.isolation == "fork":  # the timed calls ran in the children
            value = fn(*args, **kwargs)
        self.results.append(result)
        self.kernels.setdefault(name, (path, getattr(node, "originalname", node.name)))
        return result, value

    def test_failed(self, node_id: str, why: str) -> None:
        """The test whose case `node_id` measured failed afterwards: the case is failed."""
        for index, result in enumerate(self.results):
            if result.case.worker.get("node_id") == node_id and result.case.status == "ok":
                self.results[index] = type(result)(dataclasses.replace(
                    result.case, status="failed",
                    reason=f"the test failed after kernbench measured it: {why}"))

    # ------------------------------------------------------------------ end of the session

    def finish(self, complete: bool = True) -> bool:
        """Compare and save as asked; True when the session must fail (a regression under
        ``--kernbench-compare-fail``, or a comparison that could not be made). A session
        that stopped early (Ctrl-C, ``-x``) is saved ``complete: false``: comparing with it
        says its cases are not all there."""
        from kernbench.errors import KernbenchError

        compare, save = self.option("compare"), self.option("save")
        if compare is None and save is None:
            return False
        state = self.machine.finish(complete) if self.machine is not None else None
        try:
            baseline = self._baseline(compare) if compare is not None else None
            saved = self._save(save, complete, state) if save is not None and self.results \
                else None
            if save is not None and not self.results:
                self.notes.append("nothing measured: no report set saved")
            if baseline is not None:
                self._compare(baseline, saved, {"source": "this session", "complete": complete,
                                                "machine_state": state, "runner": "pytest"})
        except (KernbenchError, OSError) as exc:  # a save that failed fails the session
            self.notes.append(f"error: {exc}")
            return bool(self.option("compare_fail")) or save is not None
        if compare is not None and self._say_what_was_compared(baseline):
            return True
        regressed = [str(c.get("label")) for c in self.cases if c.get("verdict") == "regressed"]
        if regressed and self.option("compare_fail"):
            self.notes.append(f"{len(regressed)} case(s) regressed ({', '.join(regressed[:5])}"
                              f"{', ...' if len(regressed) > 5 else ''}): the session fails "
                              "(--kernbench-compare-fail)")
        return bool(regressed) and bool(self.option("compare_fail"))

    def _say_what_was_compared(self, baseline: LoadedRun | None) -> bool:
        """`compared with <set>`; or, where no case had a saved one to be judged against,
        that nothing was compared, as a terminal line and a pytest warning. The session
        still passes, as pytest-benchmark's does (a first run has nothing saved), but never
        silently, --kernbench-compare-fail or not; True (fail it) where the warning filters
        make a KernbenchWarning an error (``-W error::...``, ``filterwarnings = error``)."""
        import warnings

        from kernbench.pytest_plugin import KernbenchWarning

        source = baseline.meta.get("source") if baseline is not None else None
        if any(c.get("verdict") not in ("new", "missing") for c in self.cases):
            self.notes.append(f"compared with {source}")
            return False
        there = sum(str(c.get("note") or "").startswith("the baseline did not run")
                    for c in self.cases)
        why = (f"nothing saved in {self._storage()}" if baseline is None else
               "no kernbench case ran in this session" if not self.results else
               f"none of this session's {len(self.results)} case(s) ran in {source}" + (
                   f" ({there} are there, but failed or were skipped)" if there else ""))
        gate = ("; --kernbench-compare-fail had nothing to judge"
                if self.option("compare_fail") else "")
        message = f"nothing compared: {why}{gate}"
        self.notes.append(message)
        try:
            warnings.warn(KernbenchWarning(message), stacklevel=2)
        except KernbenchWarning:  # a traceback at the end of the session helps nobody
            self.notes.append("the warning filters make a KernbenchWarning an error: failed")
            return True
        return False

    def _storage(self) -> Path:
        return self.config.rootpath / str(self.option("storage"))

    def _baseline(self, name: str) -> LoadedRun | None:
        from kernbench.results.inputs import load_run

        storage = self._storage()
        if name:
            return load_run(storage / name)
        saved = sorted(storage.glob("*/summary.json"), key=lambda p: p.stat().st_mtime)
        if not saved:
            return None  # said by _say_what_was_compared
        return load_run(saved[-1].parent)

    def _save(self, name: str, complete: bool = True,
              machine_state: Mapping[str, Any] | None = None) -> Path:
        from kernbench.api.reports import render_reports, write_report_set
        from kernbench.errors import KernbenchError
        from kernbench.measure.environment import collect_environment
        from kernbench.reporting.formats import parse_formats
        from kernbench.results.model import KernelSpec, RunResult
        from kernbench.results.serialize import manifest_dict

        directory = self._storage() / name  # a plain name: checked when pytest configured
        if directory.exists():
            if not (directory / "summary.json").is_file():
                raise KernbenchError(f"--kernbench-save: {directory} exists and is not a "
                                     "kernbench report set; not overwriting it")
            shutil.rmtree(directory)
        root = self.config.rootpath
        specs = [KernelSpec(name=kernel, path=path, function_name=function)
                 for kernel, (path, function) in self.kernels.items()]
        defaults = self.options_for_session()
        settings = {"runner": "pytest", "iterations": defaults.iterations,
                    "warmup": defaults.warmup, "isolation": defaults.isolation, "seed": None,
                    "note": "a test's @pytest.mark.kernbench may set its own"}
        environment = collect_environment(root)
        if machine_state is not None:
            environment["machine_state"] = dict(machine_state)
        run = RunResult(started_at=self.started, finished_at=_now(), complete=complete,
                        settings=settings, environment=environment,
                        kernels=tuple(specs), results=tuple(r.case for r in self.results))
        write_report_set(directory, run, manifest_dict(str(root), sorted(
            {path for path, _ in self.kernels.values()}), specs))
        formats = self.option("format")
        if formats:
            render_reports(directory, parse_formats(formats))
        self.notes.append(f"saved {len(self.results)} case(s) to {directory}" + (
            "" if complete else " (complete: false: the session stopped before its end)"))
        return directory

    def _compare(self, baseline: LoadedRun, saved: Path | None,
                 meta: dict[str, Any]) -> None:
        """This session against `baseline`, as ``kernbench compare`` judges two runs: with
        the machine checks, whose warnings (the machine changed, a side did not finish) are
        said in the terminal with the verdicts."""
        from kernbench.analysis.compare import Thresholds, case_key
        from kernbench.api.compare import run_comparison, write_run_comparison
        from kernbench.results.inputs import LoadedRun, load_run

        current = [r.case for r in self.results]
        keys = {case_key(r) for r in current}
        kept = [r for r in baseline.results if case_key(r) in keys]
        if len(kept) < len(baseline.results):
            self.notes.append(f"{len(baseline.results) - len(kept)} saved case(s) not run in "
                              "this session were left out of the comparison")
        base = LoadedRun(kept, baseline.meta)
        thresholds = Thresholds(latency=float(self.option("threshold")))
        if saved is not None:
            document = write_run_comparison(base, load_run(saved), saved, thresholds)
        else:
            document = run_comparison(base, LoadedRun(current, meta), thresholds)
        self.cases = list(document["cases"])
        self.notes.extend(f"warning: {w}" for w in document.get("warnings") or [])
        if any(_optimistic(c) for c in self.cases):
            self.notes.append(OPTIMISTIC_NOTE)

    # ------------------------------------------------------------------ the table

    def summary(self, reporter: Any) -> None:
        if not self.results and not self.notes:
            return
        reporter.write_sep("-", "kernbench")
        if self.results:
            for line in table(self.results, self.cases):
                reporter.write_line(line)
        for note in self.notes:
            reporter.write_line(f"kernbench: {note}")


def table(results: Sequence[BenchResult], cases: Sequence[Mapping[str, Any]]) -> list[str]:
    """The measured cases, one row each, every time in its own unit; with a comparison, each
    case's ratio to the baseline (its time / the saved time), its interval and the verdict."""
    from kernbench.api.display import format_ms

    by_label = {str(c.get("label")): c for c in cases}
    header = ["case", "median", "IQR", "min", "samples"] + (["vs saved", "verdict"] if cases
                                                            else [])
    rows = [header]
    for result in results:
        timing = result.timing
        row = [result.name, format_ms(result.median_ms), format_ms(result.iqr_ms),
               format_ms(timing["latency_ms_min"]),
               f"{result.n} x {result.case.inner_loops}"]
        if cases:
            case = by_label.get(result.name) or {}
            row += [_ratio(case), str(case.get("verdict", "new")) + "*" * _optimistic(case)]
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in rows]


OPTIMISTIC_NOTE = (
    "* one session a side: its samples were compared (Mann-Whitney), which cannot see how "
    "far a new session moves a figure, so a verdict so marked is optimistic and unchanged "
    "code can read as regressed on a shared machine; for one to trust, compare runs of "
    "several processes (kernbench run --processes 3 --compare-to REF, or --ab REF)")


def _optimistic(case: Mapping[str, Any]) -> bool:
    """A verdict of the samples' test, which does not measure the noise between sessions."""
    from kernbench.analysis.stats_compare import MANN_WHITNEY

    return case.get("method") == MANN_WHITNEY and case.get("verdict") not in (
        "new", "missing", "inconclusive")


def _ratio(case: Mapping[str, Any]) -> str:
    ratio, low, high = case.get("ratio"), case.get("ci_low"), case.get("ci_high")
    if not isinstance(ratio, (int, float)):
        return "-"
    if isinstance(low, (int, float)) and isinstance(high, (int, float)):
        return f"{ratio:.3f}x [{low:.3f}, {high:.3f}]"
    return f"{ratio:.3f}x"
