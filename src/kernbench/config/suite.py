"""Suite files: ``kernbench run --config suite.yml`` sets run options in YAML.

A suite file is a mapping of run options, each standing for one command-line flag
(:data:`SUITE_KEYS`, read from the option table of :mod:`kernbench.config.options`). It is
parsed with ``yaml.safe_load`` (nothing in it is evaluated) and validated against
:func:`kernbench.config.schema.suite_schema` like a bench.yaml: an error names the file and the
key and says what was expected. The CLI makes the file's values the defaults of the run parser,
so a flag given on the command line wins over the file, and the file wins over kernbench's
defaults. Relative paths in the file (``root``, ``paths``, ``output_dir``) mean what they mean
on the command line: relative to the working directory (``paths`` to ``root``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernbench.config.options import FORMAT_ALIASES, REPORT_FORMATS, suite_options
from kernbench.config.sizes import parse_size
from kernbench.errors import ConfigError, KernbenchError
from kernbench.results.model import SweepPoint

SUITE_OPTIONS = suite_options()
"""Suite-file key -> the run option it stands for, from the one option table."""
SUITE_KEYS: dict[str, tuple[str, str]] = {
    **{key: (option.dest, option.name) for key, option in SUITE_OPTIONS.items()},
    "sweeps": ("sweeps", "(suite file only)"),
}
"""Suite-file key -> (the run parser's dest, the flag it stands for)."""


@dataclass(frozen=True)
class SuiteConfig:
    """A validated suite file: where it came from and its values, by suite key."""

    source: str
    path: Path
    values: Mapping[str, Any]

    def parser_defaults(self) -> dict[str, Any]:
        """The file's values as run-parser defaults (dest -> value, already converted)."""
        return {SUITE_KEYS[key][0]: _convert(key, value) for key, value in self.values.items()}

    def record(self, args: Any) -> dict[str, Any]:
        """What summary.json keeps under ``settings.config``: the file, and each of its keys'
        resolved value (after command-line flags), with the keys a flag overrode."""
        defaults = self.parser_defaults()
        resolved = {key: _plain(getattr(args, SUITE_KEYS[key][0])) for key in self.values}
        overridden = [key for key in self.values
                      if getattr(args, SUITE_KEYS[key][0]) != defaults[SUITE_KEYS[key][0]]]
        return {"path": str(self.path.resolve()), "values": resolved,
                "overridden_by_flags": overridden}


def load_suite(path: Path) -> SuiteConfig:
    """Read, parse (safely) and validate a suite file; ConfigError/KernbenchError (exit 2)."""
    from kernbench.config.loading import parse_yaml
    from kernbench.config.schema import validate_suite_config

    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise KernbenchError(f"{source}: cannot read the suite file ({reason})") from exc
    data = parse_yaml(text, source)
    if data is None:
        raise ConfigError(source, "", "a mapping of run options (the file is empty)")
    validate_suite_config(data, source, (*REPORT_FORMATS, *FORMAT_ALIASES, "all"))
    assert isinstance(data, dict)  # the schema's top-level "type": "object"
    sweep_overrides(data.get("sweeps") or {}, source)  # checked now, before anything runs
    if "max_memory" in data:
        _check_size(data["max_memory"], source)
    return SuiteConfig(source, path, dict(data))


SweepOverrides = tuple[tuple[str, tuple[SweepPoint, ...]], ...]


def sweep_overrides(sweeps: Mapping[str, Any], source: str) -> SweepOverrides:
    """The suite file's `sweeps` (kernel-name glob -> a bench.yaml `sweep`), expanded: each
    replaces the sweep of the kernels it matches (the first matching glob wins)."""
    from kernbench.config.sweeps import expand_sweep

    return tuple((pattern, expand_sweep(spec, f"{source} (sweeps.{pattern})"))
                 for pattern, spec in sweeps.items())


def _check_size(value: object, source: str) -> None:
    try:
        parse_size(str(value), "max_memory")
    except KernbenchError as exc:
        raise ConfigError(source, "max_memory", "a size such as 512M or 2G, at least 64M",
                          got=value) from exc


def _convert(key: str, value: Any) -> Any:
    """A validated suite value as the run parser would have read it from its flag."""
    if key == "sweeps":
        return value
    option = SUITE_OPTIONS[key]
    if option.kind == "size":
        return parse_size(str(value), "max_memory")
    if option.kind == "path":
        return Path(value)
    if option.kind == "formats":  # the schema checked the names
        return REPORT_FORMATS if "all" in value else tuple(dict.fromkeys(
            FORMAT_ALIASES.get(name, name) for name in value))
    if option.kind in ("positive_float", "non_negative_float"):
        return float(value)
    if option.kind == "list":
        items = tuple(dict.fromkeys(str(v).strip() for v in value if str(v).strip()))
        return items or option.default  # --paths: nothing left is "the default paths"
    return value


def _plain(value: Any) -> Any:
    """JSON-ready: paths as text, tuples as lists."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value
