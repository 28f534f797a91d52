"""Reading configuration: bench.yaml files and ``[tool.kernbench]`` in pyproject.toml.

A bench.yaml is data. It is parsed with :class:`DataLoader` (PyYAML's safe loader, reading
numbers as YAML 1.2 does), validated against
:data:`kernbench.config.schema.BENCH_YAML_SCHEMA`, and its ``skip_conditions[].check`` strings are
parsed by the safe evaluator in :mod:`kernbench.config.conditions`; nothing in it is executed.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from kernbench.config.conditions import parse_condition
from kernbench.config.formulas import parse_formula
from kernbench.config.schema import validate_bench_yaml
from kernbench.config.sweeps import expand_sweep
from kernbench.config.unknown_keys import key_path
from kernbench.errors import ConfigError, KernbenchError
from kernbench.results.model import (
    HARNESS_ARGS,
    BenchConfig,
    Implementation,
    SkipRule,
    SweepPoint,
    case_suffix,
)
from kernbench.results.vocabulary import canonical_precision

MAX_BENCH_YAML_BYTES = 1 << 20
MAX_SOURCE_BYTES = 16 << 20
"""A kernel file larger than this is refused unread (a generated table belongs in data)."""
PYPROJECT_KEYS = {"paths": "a list of folders (relative to the root) to scan for kernels"}


def read_source(path: Path) -> bytes:
    """A kernel file's (or a config file's) bytes, at most :data:`MAX_SOURCE_BYTES`: OSError
    for a FIFO or a device, ValueError for a larger file
    (:func:`kernbench.results.files.read_regular`)."""
    from kernbench.results.files import read_regular

    return read_regular(path, MAX_SOURCE_BYTES)


class DataLoader(yaml.SafeLoader):
    """PyYAML's safe loader (no tags that build objects, nothing evaluated), reading floats as
    YAML 1.2 does: YAML 1.1 wants a dot and a signed exponent, so ``1e-5`` and ``1.0e5`` would
    arrive as strings and a tolerance written that way would be refused as "not a number"."""


DataLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def parse_yaml(text: str, source: str) -> object:
    """Parse YAML text safely; a syntax error or a repeated key names the file, line and
    column."""
    try:
        loader = DataLoader(text)  # a SafeLoader subclass: still safe
        try:  # what yaml.load does, with a look at the nodes before they become values
            node = loader.get_single_node()
            if node is None:
                return None
            _refuse_duplicate_keys(node, source)
            _refuse_alias_bombs(node, source)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(where, "", f"valid YAML ({problem})") from exc
    except RecursionError as exc:
        raise ConfigError(source, "", "YAML nested less deeply") from exc
    except (ValueError, TypeError, LookupError, AttributeError) as exc:
        # PyYAML's constructors raise plain exceptions for values such as `!!int x`.
        raise ConfigError(source, "", f"valid YAML values ({type(exc).__name__}: {exc})") from exc


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _refuse_duplicate_keys(root: yaml.Node, source: str) -> None:
    """ConfigError for a key written twice in one mapping: YAML keeps the last silently, so
    `timeout_s: 5` then `timeout_s: 6` ran with 6. Keys a merge (`<<: *base`) brings in may be
    overridden; only keys written out count. Each node is walked once (aliases share nodes)."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, tuple[object, ...]]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in reversed(list(enumerate(node.value))))
        elif isinstance(node, yaml.MappingNode):
            _check_mapping_keys(node, path, source)
            stack.extend((value, path if key.tag == _MERGE_TAG else (*path, _key_text(key)))
                         for key, value in reversed(node.value))


MAX_YAML_VALUES = 1_000_000
"""The most values a YAML document may stand for once its aliases (``*name``) are expanded:
a 1 MiB file without aliases holds far fewer, and nine nested lists of nine aliases stand
for 387 million, which every check would walk."""


def _refuse_alias_bombs(root: yaml.Node, source: str) -> None:
    """ConfigError for a document whose aliases expand past :data:`MAX_YAML_VALUES` values or
    refer to themselves: counted over the nodes, each once, in time of the file's size."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        children = _children(node)
        if closing:
            open_nodes.discard(id(node))
            sizes[id(node)] = min(1 + sum(sizes[id(c)] for c in children), MAX_YAML_VALUES + 1)
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_nodes:
            raise ConfigError(source, "", "YAML without an alias inside its own anchor",
                              got="a recursive alias")
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)
    if sizes[id(root)] > MAX_YAML_VALUES:
        raise ConfigError(source, "", f"YAML that stands for at most {MAX_YAML_VALUES:,} values "
                          "once its aliases (*name) are expanded",
                          got=f"more than {MAX_YAML_VALUES:,}")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _key_text(key: yaml.Node) -> str:
    """A key's text for error paths (a list or mapping as a key is refused later)."""
    return str(key.value) if isinstance(key, yaml.ScalarNode) else "?"


def _check_mapping_keys(node: yaml.MappingNode, path: tuple[object, ...], source: str) -> None:
    first_line: dict[tuple[str, str], int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE_TAG:
            continue
        line = first_line.get((key.tag, key.value))
        if line is not None:
            where = f"{source}:{key.start_mark.line + 1}:{key.start_mark.column + 1}"
            raise ConfigError(where, key_path((*path, key.value)),
                              f"each key once in its mapping (it is already on line {line}; "
                              "YAML would keep only the last)")
        first_line[(key.tag, key.value)] = key.start_mark.line + 1


def _check_keys(value: object, source: str, path: tuple[object, ...] = ()) -> None:
    """Every mapping key must be a string: YAML also allows 1:, true: and null: as keys."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ConfigError(source, key_path(path) or "(top level)",
                                  "string keys in every mapping", got=key)
            _check_keys(item, source, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_keys(item, source, (*path, index))


def load_bench_config(path: Path, source: str) -> BenchConfig:
    """Read and validate one bench.yaml; `source` is how the file is named in errors."""
    from kernbench.results.files import read_regular

    try:
        text = read_regular(path, MAX_BENCH_YAML_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, "", f"a readable UTF-8 file ({exc})") from exc
    except ValueError as exc:  # over the limit: read no further than it
        raise ConfigError(source, "", f"a file under {MAX_BENCH_YAML_BYTES} bytes",
                          got=f"{path.stat().st_size} bytes") from exc
    data = parse_yaml(text, source)
    return bench_config_from_data({} if data is None else data, source)


def bench_config_from_data(data: object, source: str) -> BenchConfig:
    """Validate parsed bench.yaml data and build the immutable config."""
    _check_keys(data, source)
    validate_bench_yaml(data, source)
    assert isinstance(data, dict)
    problem_size = data.get("problem_size")
    if isinstance(problem_size, dict):
        clash = sorted(set(problem_size) & set(HARNESS_ARGS))
        if clash:
            raise ConfigError(source, f"problem_size.{clash[0]}",
                              f"a kernel parameter; {', '.join(HARNESS_ARGS)} are set by the "
                              "harness (use --precision/--backends/--seed)")
    implementations = _implementations(data.get("implementations"), data.get("framework"),
                                       source)
    sweep = _sweep(data.get("sweep"), problem_size, source)
    _check_golden_points(data.get("golden"), implementations, sweep, source)
    return BenchConfig(
        source=source,
        problem_size=problem_size,
        precisions=tuple(dict.fromkeys(
            canonical_precision(p) for p in data.get("precisions", ()))),
        backends=tuple(data.get("backends", ())),
        tolerances=data.get("tolerances", {}),
        skip_conditions=_skip_rules(data.get("skip_conditions", []), source),
        function_name=data.get("function_name"),
        framework=data.get("framework"),
        description=data.get("description"),
        timeout_s=data.get("timeout_s"),
        gpu_timing=data.get("gpu_timing"),
        reference=_reference(data.get("reference")),
        work=_work(data.get("work"), source),
        sweep=sweep,
        regression=data.get("regression"),
        golden=data.get("golden"),
        ignore_skus=tuple(data.get("ignore_skus", ())),
        implementations=implementations,
        reference_implementation=_reference_implementation(
            implementations, data.get("reference"), source),
        sys_path=_sys_path(data.get("sys_path", ()), source),
        raw=data,
    )


def _sys_path(entries: list[str], source: str) -> tuple[str, ...]:
    """bench.yaml `sys_path`: relative folders (discovery checks they stay in the root)."""
    for index, entry in enumerate(entries):
        if Path(entry).is_absolute() or entry.startswith("~"):
            raise ConfigError(source, f"sys_path[{index}]", "a folder relative to the kernel's "
                              "folder (inside the repository)", got=entry)
    return tuple(entries)


def _implementations(entry: dict[str, Any] | None, framework: str | None,
                     source: str) -> tuple[Implementation, ...]:
    """bench.yaml `implementations`, in their order; `compile` only for PyTorch ones. A
    framework left out is the top-level `framework`, else what discovery finds imported."""
    found = []
    for name, item in (entry or {}).items():
        impl_framework = item.get("framework") or framework
        if "compile" in item and impl_framework not in ("pytorch", None):
            raise ConfigError(source, f"implementations.{name}.compile",
                              "torch.compile options on a pytorch implementation only",
                              got=f"framework {impl_framework}")
        found.append(Implementation(
            name=name, function=item["function"], framework=impl_framework,
            setup=item.get("setup"), backends=tuple(item.get("backends", ())),
            compile=dict(item["compile"]) if "compile" in item else None))
    return tuple(found)


def _reference_implementation(implementations: tuple[Implementation, ...],
                              reference: dict[str, str] | None, source: str) -> str | None:
    """The implementation the others are checked against: `reference.implementation`, else
    the first one."""
    named = (reference or {}).get("implementation")
    names = [i.name for i in implementations]
    if named is None:
        return names[0] if names else None
    if named not in names:
        expected = f"one of the implementations ({', '.join(names)})" if names else \
            "an implementations key (this bench.yaml defines no `implementations`)"
        raise ConfigError(source, "reference.implementation", expected, got=named)
    return named


def case_points(implementations: tuple[Implementation, ...],
                sweep: tuple[SweepPoint, ...]) -> list[str]:
    """Every :func:`~kernbench.results.model.case_suffix` of the kernel's cases: the keys golden
    `points` may use."""
    impls: list[str | None] = [i.name for i in implementations] or [None]
    labels: list[str | None] = [p.label for p in sweep] or [None]
    suffixes = (case_suffix(label, impl) for impl in impls for label in labels)
    return [s for s in suffixes if s is not None]


def _check_golden_points(golden: dict[str, Any] | None, implementations: tuple[Implementation, ...],
                         sweep: tuple[SweepPoint, ...], source: str) -> None:
    """Golden `points` keys must name points of this kernel: a typo would silently fall back
    to the SKU's time_ms."""
    valid = set(case_points(implementations, sweep))
    for sku, entry in (golden or {}).items():
        for key in entry.get("points") or {}:
            if key not in valid:
                shown = ", ".join(sorted(valid)[:6]) + (", ..." if len(valid) > 6 else "")
                expected = (f"a point of this kernel ({shown})" if valid else
                            "no points: the kernel has neither a sweep nor implementations")
                raise ConfigError(source, f"golden.{sku}.points.{key}", expected, got=key)


def _reference(entry: dict[str, str] | None) -> dict[str, str] | None:
    if entry is None:
        return None
    return {k: canonical_precision(v) if k == "precision" else v for k, v in entry.items()}


def _work(entry: dict[str, str | float] | None, source: str) -> dict[str, str | float] | None:
    """Work formulas are parsed now (a bad one is a config error before anything runs)."""
    if entry is None:
        return None
    for key, value in entry.items():
        if isinstance(value, str):
            parse_formula(value, source=source, key=f"work.{key}")
    return dict(entry)


def _sweep(entry: dict[str, Any] | None, problem_size: object,
           source: str) -> tuple[SweepPoint, ...]:
    """The sweep's points (checked and counted now: a bad sweep is a config error)."""
    if entry is None:
        return ()
    if problem_size is not None and not isinstance(problem_size, dict):
        raise ConfigError(source, "problem_size", "a mapping, or no problem_size, with `sweep` "
                          "(each point's values are merged into it)", got=problem_size)
    return expand_sweep(entry, source)


def _skip_rules(entries: list[dict[str, Any]], source: str) -> tuple[SkipRule, ...]:
    rules = []
    for index, entry in enumerate(entries):
        check = entry.get("check")
        if check is not None:
            parse_condition(check, source=source, key=f"skip_conditions[{index}].check")
        precision = entry.get("precision")
        rules.append(SkipRule(reason=entry["reason"], backend=entry.get("backend"),
                              precision=canonical_precision(precision) if precision else None,
                              check=check))
    return tuple(rules)


def load_pyproject_settings(root: Path) -> dict[str, Any]:
    """The validated ``[tool.kernbench]`` table of `root`/pyproject.toml ({} if absent)."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return {}
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    source = str(path)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(source, "", f"valid TOML ({exc})") from exc
    tool = document.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(source, "tool", "a table", got=tool)
    table = tool.get("kernbench", {})
    if not isinstance(table, dict):
        raise ConfigError(source, "tool.kernbench", "a table")
    for key, value in table.items():
        if key not in PYPROJECT_KEYS:
            known = ", ".join(PYPROJECT_KEYS)
            raise ConfigError(source, f"tool.kernbench.{key}", f"a known key: {known}",
                              got=f"unknown key {key!r}")
        if key == "paths" and not (isinstance(value, list)
                                   and all(isinstance(v, str) for v in value)):
            raise ConfigError(source, "tool.kernbench.paths", PYPROJECT_KEYS["paths"], got=value)
    for index, folder in enumerate(table.get("paths", [])):
        resolved = (root / folder).resolve()
        if not resolved.is_relative_to(root.resolve()) or not resolved.is_dir():
            raise ConfigError(source, f"tool.kernbench.paths[{index}]",
                              "a folder inside the root that exists", got=folder)
    return table


def check_discovery_paths(root: Path, paths: Sequence[str], named: str = "--paths") -> None:
    """`--paths` (or a suite file's `paths`, `named` so): each a folder or kernel file that
    exists, named inside `root` (a link in it to a folder elsewhere is followed, as
    discovery follows it; `../x` and `/etc` are not inside); a KernbenchError naming the
    first that is not. Nothing to check when `root` is no folder: discovery says so."""
    if not root.is_dir():
        return
    base = Path(os.path.abspath(root))
    for entry in paths:
        named_path = Path(os.path.normpath(base / entry))
        if not named_path.is_relative_to(base) or not named_path.exists():
            raise KernbenchError(f"{named} {entry}: expected a folder or kernel file inside "
                                 f"--root {base} that exists (relative to it)")
