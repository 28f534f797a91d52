"""The architecture, checked: import directions between rooms, sizes, the typed worker boundary
and the package's top level (see ARCHITECTURE.md).

Pure AST and text: nothing of kernbench is imported, so a broken module still gets a clear
message here. Each checker returns `Violation`s naming file:line and the rule; the tests at the
end run them on small synthetic trees to show that every check can fail.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kernbench"

ALLOWED: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "results": frozenset({"errors"}),
    "config": frozenset({"results", "errors"}),
    "analysis": frozenset({"results", "config", "errors"}),
    "discovery": frozenset({"config", "results", "errors"}),
    "measure": frozenset({"results", "config", "analysis", "errors"}),
    "execution": frozenset({"measure", "discovery", "config", "results", "analysis", "errors"}),
    "reporting": frozenset({"results", "analysis", "config", "errors"}),
    "ci": frozenset({"reporting", "results", "analysis", "config", "errors"}),
    "api": frozenset({"execution", "measure", "discovery", "config", "results", "analysis",
                      "reporting", "ci", "errors"}),
}
"""Room -> the rooms it may import (besides itself). ARCHITECTURE.md draws the same doors."""
ANY_ROOM = frozenset({"cli"})
"""Rooms that may import every other: the command line sits on top of everything."""
BESIDE_CLI: dict[str, frozenset[str]] = {"pytest_plugin": frozenset(ALLOWED)}
"""Rooms beside the command line, over the library API: they may import every room but cli
(the pytest plugin measures through `api` as the CLI does)."""
STABLE_PATHS = {"precision.py": "kernbench.measure.precision",
                "model.py": "kernbench.results.model"}
"""Documented import paths kept for users (`from kernbench.precision import dtype_for` in a
kernel, `from kernbench.model import ProtocolSettings`): re-exports of a room's module."""
EXEMPT = frozenset({"__init__.py", "__main__.py", *STABLE_PATHS})
"""Top-level files outside the rooms: the public API (lazy re-exports), `python -m` and the
stable import paths."""
ROOMS = frozenset(ALLOWED) | ANY_ROOM | frozenset(BESIDE_CLI)
PACKAGE_ROOMS = ROOMS - {"errors"}
TOP_FILES = frozenset({"__init__.py", "__main__.py", "errors.py", "py.typed", *STABLE_PATHS})
TOP_DIRS = PACKAGE_ROOMS | {"__pycache__"}
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
FORBIDDEN = "job.get("
"""The worker's job is a typed WorkerJob, read by attribute, never a dict read by key."""


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: [{self.rule}] {self.detail}"


def _modules(root: Path) -> Iterator[tuple[Path, str]]:
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" not in path.parts:
            yield path, path.relative_to(root).as_posix()


def _shown(root: Path, rel: str) -> str:
    return f"{root.name}/{rel}"


def room_of(rel: str) -> str | None:
    """The room of a module path relative to the package (None for the exempt files)."""
    first = rel.split("/")[0]
    if first in EXEMPT:
        return None
    return first.removesuffix(".py")


def _target(module: str) -> str | None:
    """The room a dotted `kernbench.x...` name lies in; None for the package itself."""
    parts = module.split(".")
    if parts[0] != "kernbench" or len(parts) < 2:
        return None
    return parts[1]


def _relative_base(rel: str, level: int) -> list[str]:
    package = ["kernbench", *rel.split("/")[:-1]]
    return package[:len(package) - (level - 1)] if level > 1 else package


def imported_rooms(tree: ast.AST, rel: str) -> Iterator[tuple[int, str, str]]:
    """(line, imported name, its room) of every kernbench import, at any depth (imports inside
    functions too), relative imports resolved, plus importlib.import_module("kernbench...")."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt | ast.expr):
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _relative_base(rel, node.level) if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            names = [f"{module}.{a.name}" if module == "kernbench" else module
                     for a in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names = [node.args[0].value]
        for name in names:
            room = _target(name)
            if room is not None and room in ROOMS:
                yield node.lineno, name, room


def import_violations(root: Path) -> list[Violation]:
    found = []
    for path, rel in _modules(root):
        room = room_of(rel)
        if room is None or room in ANY_ROOM:
            continue
        allowed = ALLOWED.get(room, BESIDE_CLI.get(room))
        for line, name, target in imported_rooms(ast.parse(path.read_text()), rel):
            if allowed is None:
                found.append(Violation(_shown(root, rel), line, "layering",
                                       f"{room!r} is not a room of the layering table"))
            elif target != room and target not in allowed:
                doors = ", ".join(sorted(allowed)) or "nothing"
                found.append(Violation(_shown(root, rel), line, "layering",
                                       f"{room} may not import {name} (it may import {doors})"))
    return found


def size_violations(root: Path, max_module: int = MAX_MODULE_LINES,
                    max_function: int = MAX_FUNCTION_LINES) -> list[Violation]:
    found = []
    for path, rel in _modules(root):
        text = path.read_text()
        lines = len(text.splitlines())
        if lines > max_module:
            found.append(Violation(_shown(root, rel), 1, "module size",
                                   f"{lines} lines, more than {max_module}"))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > max_function:
                    found.append(Violation(_shown(root, rel), node.lineno, "function size",
                                           f"{node.name} has {length} lines, more than "
                                           f"{max_function}"))
    return found


def text_violations(root: Path, needle: str = FORBIDDEN) -> list[Violation]:
    return [Violation(_shown(root, rel), number, "typed worker boundary",
                      f"{needle!r}: read the WorkerJob's attributes instead")
            for path, rel in _modules(root)
            for number, line in enumerate(path.read_text().splitlines(), start=1)
            if needle in line]


def top_level_violations(root: Path) -> list[Violation]:
    found = []
    for entry in sorted(root.iterdir()):
        name = entry.name
        if entry.is_dir() and name not in TOP_DIRS:
            rooms = ", ".join(sorted(PACKAGE_ROOMS))
            found.append(Violation(_shown(root, name), 0, "top level",
                                   f"directory {name!r} is not a room ({rooms})"))
        elif entry.is_dir() and name != "__pycache__" and not (entry / "__init__.py").is_file():
            found.append(Violation(_shown(root, name), 0, "top level",
                                   f"room {name!r} has no __init__.py"))
        elif entry.is_file() and name not in TOP_FILES:
            found.append(Violation(_shown(root, name), 0, "top level",
                                   f"{name!r} belongs in a room; the top level holds only "
                                   f"{', '.join(sorted(TOP_FILES))}"))
    return found


def _report(violations: list[Violation]) -> str:
    return "\n".join(str(v) for v in violations)


def _fail_on(violations: list[Violation]) -> None:
    if violations:
        pytest.fail(f"{len(violations)} violation(s):\n{_report(violations)}", pytrace=False)


# --- the package -------------------------------------------------------------------------------


def test_imports_go_only_through_the_allowed_doors() -> None:
    _fail_on(import_violations(SRC))


def test_modules_and_functions_are_small() -> None:
    _fail_on(size_violations(SRC))


def test_no_job_dict_is_read_by_key() -> None:
    _fail_on(text_violations(SRC))


def test_the_top_level_holds_only_the_api_and_the_rooms() -> None:
    _fail_on(top_level_violations(SRC))


def test_the_table_names_every_room_once_and_only_known_rooms() -> None:
    for room, doors in ALLOWED.items():
        assert room not in doors, f"{room} lists itself"
        assert doors <= set(ALLOWED), f"{room} may import unknown rooms {doors - set(ALLOWED)}"
        assert not doors & {"cli", "api"}, f"{room} may not import the rooms above it"
    for room, doors in BESIDE_CLI.items():
        assert room not in ALLOWED and "cli" not in doors, f"{room} is not beside the CLI"


# --- the checkers can fail ---------------------------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> Path:
    package = root / "kernbench"
    for rel, text in files.items():
        path = package / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


@pytest.mark.parametrize("source", [
    "from kernbench.measure.environment import machine_fingerprint\n",
    "import kernbench.execution.runner\n",
    "from kernbench import cli\n",
    "from ..analysis import stats\n",
    "def late():\n    from kernbench.analysis.stats import percentile\n",
    "import importlib\nimportlib.import_module('kernbench.reporting.html')\n",
])
def test_an_import_through_a_closed_door_is_named(tmp_path: Path, source: str) -> None:
    root = _tree(tmp_path, {"results/__init__.py": "", "results/history.py": source})
    violations = import_violations(root)
    assert len(violations) == 1, _report(violations)
    assert violations[0].rule == "layering"
    assert str(violations[0]).startswith("kernbench/results/history.py:")
    assert "results may not import kernbench." in violations[0].detail


def test_open_doors_and_exempt_files_pass(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "__init__.py": "from kernbench.api import run_suite\n",
        "results/model.py": "from kernbench.errors import KernbenchError\n"
                            "from kernbench import __version__\n"
                            "from .schema import migrate\n",
        "analysis/stats.py": "from kernbench.results.model import CaseResult\n",
        "cli/main.py": "from kernbench.execution.runner import Runner\n",
    })
    assert import_violations(root) == []


def test_a_module_or_function_too_long_is_named(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(5))
    root = _tree(tmp_path, {"results/big.py": "def long():\n" + body + "\n" * 3})
    violations = size_violations(root, max_module=8, max_function=5)
    assert [(v.rule, v.line) for v in violations] == [("module size", 1), ("function size", 1)]
    assert "long has 6 lines, more than 5" in str(violations[1])
    assert size_violations(root, max_module=9, max_function=6) == []


def test_a_job_read_by_key_is_named(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"execution/worker.py": "x = 1\nn = job.get('iterations')\n"})
    (violation,) = text_violations(root)
    assert str(violation).startswith("kernbench/execution/worker.py:2: [typed worker boundary]")


def test_a_stray_top_level_module_or_folder_is_named(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"__init__.py": "", "errors.py": "", "py.typed": "",
                            "results/__init__.py": "", "api/__init__.py": "", "stats.py": "",
                            "misc/util.py": "", "measure/protocol.py": ""})
    found = {v.path: v.detail for v in top_level_violations(root)}
    assert set(found) == {"kernbench/stats.py", "kernbench/misc", "kernbench/measure"}
    assert "no __init__.py" in found["kernbench/measure"]


@pytest.mark.parametrize(("name", "home"), sorted(STABLE_PATHS.items()))
def test_a_stable_import_path_re_exports_its_home_and_defines_nothing(name: str,
                                                                      home: str) -> None:
    import importlib

    stable = importlib.import_module(f"kernbench.{name.removesuffix('.py')}")
    source = importlib.import_module(home)
    for exported in source.__all__:
        assert getattr(stable, exported) is getattr(source, exported), exported
    tree = ast.parse((SRC / name).read_text())
    defined = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert defined == [], f"{name} defines code; it may only re-export {home}"
