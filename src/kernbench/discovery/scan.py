"""Kernel discovery: find benchmark functions by reading source with `ast`, never importing.

A kernel is a ``.py`` file under a discovery path (not ``__*``, not ``test_*``) that defines, at
module level, ``run_benchmark`` or the function its bench.yaml names in ``function_name``.
Configuration comes from ``<stem>.bench.yaml`` beside the file, else ``bench.yaml`` in its
folder. Files that fail to parse, and kernels whose bench.yaml is invalid, are kept in the
manifest with status ``invalid`` and the error: nothing is dropped silently.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from kernbench.config.loading import load_bench_config, load_pyproject_settings, read_source
from kernbench.discovery.elsewhere import spec_elsewhere
from kernbench.discovery.source import find_function, spec_from_tree
from kernbench.errors import ConfigError, KernbenchError
from kernbench.results.model import BenchConfig, KernelSpec
from kernbench.results.vocabulary import GPU_CAPABLE_FRAMEWORKS

DEFAULT_PATHS: tuple[str, ...] = (
    "kernels",
    "src/kernels",
    "quasim/kernels",
    "integrations/kernels",
    "autonomous_systems_platform/services/backend/quasim/kernels",
)
DEFAULT_FUNCTION = "run_benchmark"

_SKIPPED_DIRS = {"__pycache__", "node_modules", "site-packages"}
_FUNCTION_NAME_RE = re.compile(r"\bfunction(?:_name)?\s*:\s*['\"]?([A-Za-z_][\w.:]*)",
                               re.MULTILINE)

Log = Callable[[str], None]


@dataclass(frozen=True)
class _Found:
    """A candidate file and the discovery path it was found under."""

    path: Path
    base: Path


class KernelDiscovery:
    """Scans a repository's discovery paths for kernels."""

    KERNEL_PATHS = DEFAULT_PATHS

    def __init__(self, root: str | os.PathLike[str] = ".", paths: Iterable[str] | None = None,
                 log: Log | None = None) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise KernbenchError(f"--root {root}: not a directory")
        self._explicit_paths = tuple(paths) if paths is not None else None
        self._log = log or (lambda message: None)
        self._configs: dict[Path, BenchConfig | ConfigError | None] = {}
        self._listings: dict[Path, frozenset[str]] = {}
        self._misses: dict[Path, list[_Found]] = {}
        """bench.yaml naming its functions -> the files it applies to that define none."""

    @property
    def paths(self) -> tuple[str, ...]:
        """The discovery paths in use: explicit ones, else the defaults plus pyproject's."""
        if self._explicit_paths is not None:
            return self._explicit_paths
        extra = load_pyproject_settings(self.root).get("paths", [])
        return tuple(dict.fromkeys([*self.KERNEL_PATHS, *extra]))

    def discover(self) -> list[KernelSpec]:
        """Every kernel under the discovery paths, sorted by name, names unique."""
        specs = []
        for found in self._candidates():
            spec = self._inspect(found)
            if spec is not None:
                specs.append(spec)
        specs.extend(self._unmatched_function_names(specs))
        specs.extend(self._orphaned_config_errors(specs))
        return sorted(_assign_names(specs), key=lambda s: s.name)

    def _unmatched_function_names(self, specs: list[KernelSpec]) -> list[KernelSpec]:
        """A bench.yaml that names its kernel's function (`function_name`, `implementations`)
        where no file it applies to defines one is a configuration error: the kernel is
        `invalid`, not silently missing."""
        used = {s.config_path for s in specs}
        unmatched = []
        for config_file, misses in self._misses.items():
            rel, config = self._relative(config_file), self._configs.get(config_file)
            if rel in used or not isinstance(config, BenchConfig):
                continue
            found = next((f for f in misses if f.path.stem == config_file.parent.name),
                         misses[0])
            names = _function_names(config, found.path)
            files = [self._relative(f.path) for f in misses]
            self._log(f"discovery: {rel}: {' or '.join(names)}() defined in none of "
                      f"{', '.join(files)}")
            spec = _invalid(self._relative(found.path), names[0],
                            _no_such_function(rel, config, names, files))
            unmatched.append(replace(spec, config_path=rel, name=_base_name(
                found.path.relative_to(found.base).as_posix())))
        return unmatched

    def _orphaned_config_errors(self, specs: list[KernelSpec]) -> list[KernelSpec]:
        """A broken bench.yaml no kernel file was found for (its error may be what hides the
        kernel, e.g. a bad `implementations`) is an invalid entry of its own, not silence."""
        used = {s.config_path for s in specs}
        orphans = []
        for path, config in self._configs.items():
            rel = self._relative(path)
            if isinstance(config, ConfigError) and rel not in used:
                self._log(f"discovery: {rel}: broken, and no kernel file found for it")
                orphans.append(replace(_invalid(rel, DEFAULT_FUNCTION, config.message),
                                       name=path.parent.name or rel, config_path=rel))
        return orphans

    # -- walking ---------------------------------------------------------------------------

    def _candidates(self) -> Iterator[_Found]:
        seen: set[Path] = set()
        for rel in self.paths:
            base = (self.root / rel).resolve()
            if not base.exists():
                self._log(f"discovery: {rel}: not present, skipped")
                continue
            files = [base] if base.is_file() else self._walk(base)
            for path in files:
                if path not in seen:
                    seen.add(path)
                    yield _Found(path, base.parent if base.is_file() else base)

    def _walk(self, base: Path) -> Iterator[Path]:
        """The .py files under `base`, symlinked folders followed (each real folder once)."""
        visited = {base.resolve()}
        for folder, dirs, files in os.walk(base, followlinks=True):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS
                             and self._first_visit(Path(folder, d), visited))
            self._listings[Path(folder)] = frozenset(files)  # spares a stat per config lookup
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                if name.startswith(("__", "test_")):
                    self._log(f"discovery: {Path(folder, name)}: ignored (name starts with "
                              f"'{name[:2] if name.startswith('__') else 'test_'}')")
                    continue
                yield Path(folder, name)

    def _first_visit(self, folder: Path, visited: set[Path]) -> bool:
        real = folder.resolve()
        if real in visited:
            self._log(f"discovery: {folder}: skipped (a link to {real}, walked already)")
            return False
        visited.add(real)
        return True

    # -- one file --------------------------------------------------------------------------

    def _inspect(self, found: _Found) -> KernelSpec | None:
        spec = self._inspect_file(found.path)
        if spec is None:
            self._note_miss(found)
            return None
        short = _base_name(found.path.relative_to(found.base).as_posix())
        return replace(spec, name=short)

    def _note_miss(self, found: _Found) -> None:
        """Remember a file that is no kernel although its bench.yaml names the function."""
        config_file = self._config_file(found.path)
        config = self._configs.get(config_file) if config_file is not None else None
        if config_file is not None and isinstance(config, BenchConfig) and (
                config.function_name is not None or config.implementations):
            self._misses.setdefault(config_file, []).append(found)

    def _inspect_file(self, path: Path) -> KernelSpec | None:
        rel = self._relative(path)
        config = self._config_for(path)
        candidates = _function_names(config, path)
        try:
            source = read_source(path)
        except (OSError, ValueError) as exc:
            return _invalid(rel, candidates[0], f"{rel}: cannot read: {exc}")
        elsewhere = next((name for name in candidates if ":" in name), None)
        if elsewhere is not None:
            return self._inspect_elsewhere(path, rel, elsewhere, config)
        present = [name for name in candidates  # Class.method: the class may be imported
                   if name.partition(".")[0].encode() in source]
        if not present:
            self._log(f"discovery: {rel}: no {' or '.join(candidates)}(), not a kernel")
            return None
        try:
            tree = ast.parse(source, filename=rel)
        except (SyntaxError, ValueError) as exc:
            return _invalid(rel, present[0], _syntax_message(rel, exc))
        function, definition = next(
            ((name, found) for name in present
             if (found := find_function(tree, name)) is not None), (present[0], None))
        if definition is None:
            self._log(f"discovery: {rel}: mentions {' or '.join(present)} but does not define "
                      "it at module level, not a kernel")
            return None
        spec = spec_from_tree(rel, tree, function, definition)
        spec = replace(spec, config_path=self._config_path_text(path))
        if isinstance(config, ConfigError):
            return replace(spec, status="invalid", error=config.message)
        if config is not None:
            outside = _sys_path_outside(config, path, self.root)
            if outside is not None:
                return replace(spec, status="invalid", error=outside)
            spec = _apply_config(spec, config)
            missing = _missing_implementation_function(tree, config)
            if missing:
                return replace(spec, status="invalid", error=f"{missing} in {rel}")
        self._log(f"discovery: {rel}: kernel ({spec.framework}; backends "
                  f"{', '.join(spec.backends)}; function {function})")
        return spec

    def _inspect_elsewhere(self, path: Path, rel: str, name: str,
                           config: BenchConfig | ConfigError | None) -> KernelSpec:
        """A kernel whose function_name is ``module:attr``: the spec from that module."""
        config_path = self._config_path_text(path)  # also when invalid: its bench.yaml's entry
        if isinstance(config, ConfigError):
            return replace(_invalid(rel, name, config.message), config_path=config_path)
        extra = tuple(path.parent / entry for entry in config.sys_path) if config else ()
        found = spec_elsewhere(rel, name, (*extra, path.parent, self.root))
        if isinstance(found, str):
            return replace(_invalid(rel, name, found), config_path=config_path)
        spec = replace(found, config_path=config_path)
        if config is not None:
            outside = _sys_path_outside(config, path, self.root)
            if outside is not None:
                return replace(spec, status="invalid", error=outside)
            spec = _apply_config(spec, config)
        return spec

    def _relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    def _config_file(self, path: Path) -> Path | None:
        listing = self._listings.get(path.parent)
        for name in (f"{path.stem}.bench.yaml", "bench.yaml"):
            exists = name in listing if listing is not None else (path.parent / name).is_file()
            if exists:
                return path.parent / name
        return None

    def _config_path_text(self, path: Path) -> str | None:
        config_file = self._config_file(path)
        return self._relative(config_file) if config_file else None

    def _config_for(self, path: Path) -> BenchConfig | ConfigError | None:
        config_file = self._config_file(path)
        if config_file is None:
            return None
        if config_file not in self._configs:
            try:
                self._configs[config_file] = load_bench_config(config_file,
                                                               self._relative(config_file))
            except ConfigError as exc:
                self._configs[config_file] = exc
        return self._configs[config_file]


def _function_names(config: BenchConfig | ConfigError | None, path: Path) -> tuple[str, ...]:
    """The functions that make a file a kernel, any one of them defined at module level:
    bench.yaml `function_name`, else its implementations' functions, else run_benchmark. With
    a broken bench.yaml, the `function_name:` and `function:` lines still readable in it (so
    the kernel is reported invalid rather than silently missed)."""
    if isinstance(config, BenchConfig):
        if config.function_name is None and config.implementations:
            return tuple(dict.fromkeys(i.function for i in config.implementations))
        return (config.function_name or DEFAULT_FUNCTION,)
    if isinstance(config, ConfigError):
        config_file = path.with_name(f"{path.stem}.bench.yaml")
        if not config_file.is_file():
            config_file = path.with_name("bench.yaml")
        try:
            text = read_source(config_file).decode(errors="replace")
        except (OSError, ValueError):
            text = ""
        named = [m.group(1) for m in _FUNCTION_NAME_RE.finditer(text)]
        return tuple(dict.fromkeys([*named, DEFAULT_FUNCTION]))
    return (DEFAULT_FUNCTION,)


def _syntax_message(rel: str, exc: SyntaxError | ValueError) -> str:
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        return f"{rel}:{exc.lineno}:{exc.offset or 0}: syntax error: {exc.msg}"
    if isinstance(exc, SyntaxError):
        return f"{rel}: syntax error: {exc.msg}"
    return f"{rel}: cannot parse: {exc}"


def _invalid(rel: str, function: str, error: str) -> KernelSpec:
    return KernelSpec(name=rel, path=rel, function_name=function, status="invalid", error=error)


def _no_such_function(rel: str, config: BenchConfig, names: tuple[str, ...],
                      files: list[str]) -> str:
    """The error of a bench.yaml whose named function no file it applies to defines."""
    key = ("function_name" if config.function_name is not None
           else f"implementations.{config.implementations[0].name}.function")
    where = " or ".join(files)
    lacks = "which has no" if len(files) == 1 else "none of which has"
    wanted = " or ".join(f"{name}()" for name in names)
    return (f"{rel}: key '{key}': expected a function defined at module level in {where}, "
            f"{lacks} {wanted}")


def _sys_path_outside(config: BenchConfig, path: Path, root: Path) -> str | None:
    """The first bench.yaml `sys_path` entry that is not a folder inside the root, as an
    error; None when all are."""
    for index, entry in enumerate(config.sys_path):
        folder = (path.parent / entry).resolve()
        if not folder.is_relative_to(root) or not folder.is_dir():
            return str(ConfigError(config.source, f"sys_path[{index}]", "a folder, relative to "
                                   f"the kernel's, inside the repository {root}", got=entry))
    return None


def _missing_implementation_function(tree: ast.Module, config: BenchConfig) -> str | None:
    """The first `implementations` function or setup the kernel's file does not define at
    module level, as an error message; None when all are there."""
    for impl in config.implementations:
        for key, name in (("function", impl.function), ("setup", impl.setup)):
            if name is not None and ":" not in name and find_function(tree, name) is None:
                return (f"{config.source}: key 'implementations.{impl.name}.{key}': expected a "
                        f"module-level function, got {name!r}, which is not defined")
    return None


def _resolve_implementations(config: BenchConfig, framework: str,
                             backends: tuple[str, ...]) -> BenchConfig:
    """Fill in each implementation's framework (the kernel's, when bench.yaml leaves it out)
    and backends (the kernel's, less the GPUs for a CPU-only framework)."""
    resolved = []
    for impl in config.implementations:
        impl_framework = impl.framework or framework
        impl_backends = impl.backends or tuple(
            b for b in backends if b == "cpu" or impl_framework in GPU_CAPABLE_FRAMEWORKS)
        resolved.append(replace(impl, framework=impl_framework, backends=impl_backends))
    return replace(config, implementations=tuple(resolved))


def _apply_config(spec: KernelSpec, config: BenchConfig) -> KernelSpec:
    backends = config.backends or spec.backends
    framework = config.framework or spec.framework
    if config.implementations:
        config = _resolve_implementations(config, framework, tuple(backends))
        used = {i.framework or framework for i in config.implementations}
        framework = used.pop() if len(used) == 1 else "mixed"
    spec = replace(spec, config=config, backends=tuple(backends), framework=framework)
    if config.precisions and spec.precision_unread:
        return replace(spec, status="invalid", error=(
            f"{config.source}: key 'precisions': expected a kernel that reads its `precision` "
            f"parameter; {spec.path} declares it in {spec.function_name}() or setup() but never "
            "reads it, so every precision would be timed at the one it computes in"))
    reference_backend = (config.reference or {}).get("backend")
    if reference_backend is not None and reference_backend not in spec.backends:
        return replace(spec, status="invalid", error=(
            f"{config.source}: key 'reference.backend': expected one of the kernel's backends "
            f"({', '.join(spec.backends)}), got {reference_backend!r}: no case of the kernel "
            "could compute the reference, so no case would be checked"))
    if config.precisions and spec.signature_known and not spec.takes_precision:
        return replace(spec, status="invalid", error=(
            f"{config.source}: key 'precisions': expected a kernel that takes a `precision` "
            f"parameter (in {spec.function_name}() or setup()); {spec.path} declares none, "
            "so it can only run at its native precision"))
    return spec


def _base_name(rel: str) -> str:
    """`gemm/gemm.py` -> `gemm`; `linalg/norm.py` -> `linalg.norm` (a repeated tail collapses)."""
    parts = rel.removesuffix(".py").split("/")
    if len(parts) >= 2 and parts[-1] == parts[-2]:
        parts = parts[:-1]
    return ".".join(parts)


def _assign_names(specs: list[KernelSpec]) -> list[KernelSpec]:
    """Keep each kernel's short name unless it collides; colliding kernels take their dotted
    full path, and in the rare case that still collides, their path itself (always unique)."""
    for rename in (lambda s: _base_name(s.path), lambda s: s.path):
        counts: dict[str, int] = {}
        for spec in specs:
            counts[spec.name] = counts.get(spec.name, 0) + 1
        if all(n == 1 for n in counts.values()):
            break
        specs = [spec if counts[spec.name] == 1 else replace(spec, name=rename(spec))
                 for spec in specs]
    return specs
