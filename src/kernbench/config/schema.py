"""The schemas of what users write: bench.yaml, suite files, golden values (all jsonschema).

An error names the file, the key path, what was expected and what was found. This module imports
nothing else of the package but :mod:`kernbench.errors`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any

from kernbench.config.options import MAX_PROCESSES, MAX_TIMEOUT_S
from kernbench.config.values import MAX_ITERATIONS
from kernbench.results.vocabulary import (
    BACKEND_NAMES,
    COMPILE_MODE_NAMES,
    FRAMEWORK_NAMES,
    GPU_TIMING_CHOICES,
    PRECISION_NAMES,
)

IDENTIFIER = "^[A-Za-z_][A-Za-z0-9_]*$"
FUNCTION = ("^([A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*:)?"
            "[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)?$")
"""A kernel function: a module-level name, or `Class.method`, either one optionally in another
module (`module:Class.method`)."""

TIMEOUT_SCHEMA: dict[str, Any] = {
    "type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT_S,
    "description": f"seconds, a number > 0 and at most {MAX_TIMEOUT_S} (one week)"}
"""bench.yaml's and the suite file's ``timeout_s``, bounded as ``--timeout`` is."""

_TOLERANCE = {"type": "number", "minimum": 0, "description": "a finite number >= 0"}
"""NaN passes `minimum` (every comparison with it is false) and .inf is >= 0: a `number` is
finite (see :func:`_validator_class`), which refuses both."""
_TOLERANCE_VALUES = {"rmse": _TOLERANCE, "relative_error": _TOLERANCE, "max_error": _TOLERANCE}
_TOLERANCES = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        **_TOLERANCE_VALUES,
        **{p: {"type": "object", "additionalProperties": False, "properties": _TOLERANCE_VALUES}
           for p in PRECISION_NAMES},
    },
}
_SKIP_CONDITION = {
    "type": "object",
    "additionalProperties": False,
    "required": ["reason"],
    "properties": {
        "backend": {"enum": list(BACKEND_NAMES)},
        "precision": {"enum": list(PRECISION_NAMES)},
        "reason": {"type": "string", "minLength": 1},
        "check": {"type": "string", "minLength": 1},
    },
}
_GOLDEN_VALUES: dict[str, Any] = {
    "time_ms": {"type": "number", "exclusiveMinimum": 0},
    "tolerance_multiplier": {"type": "number", "minimum": 1},
    "size_bytes": {"type": "integer", "minimum": 0},
}
GOLDEN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "minProperties": 1,
    "additionalProperties": {
        "type": "object",
        "additionalProperties": False,
        "minProperties": 1,
        "properties": {
            **_GOLDEN_VALUES,
            "points": {
                "type": "object", "minProperties": 1,
                "propertyNames": {"minLength": 1, "maxLength": 300},
                "additionalProperties": {"type": "object", "additionalProperties": False,
                                         "required": ["time_ms"], "properties": _GOLDEN_VALUES},
            },
        },
        "anyOf": [{"required": ["time_ms"]}, {"required": ["points"]}],
    },
}
"""JSON-schema fragment for bench.yaml's ``golden``: SKU -> {time_ms?, tolerance_multiplier?,
size_bytes?, points?}, where ``points`` maps a case's point (what its case id holds after
backend and precision, e.g. ``m=64,k=64,n=64`` or ``impl=jax,cols=256``) to its own values;
an entry needs ``time_ms`` or ``points``."""

SWEEP_GENERATORS = ("custom", "llama", "pow2", "pow2_extended", "sweep")
"""`sweep.matrix_shapes[].name`: the shape generators of the seed's microbenchmark runner."""
POINT_TEXT = "^[A-Za-z0-9_.+-]{1,64}$"
"""A string `sweep.params` value: it becomes part of case ids, so file-name safe text."""

_DIM = {"type": "integer", "minimum": 1}
_DIMS = {"type": "array", "minItems": 1, "uniqueItems": True, "items": _DIM}
_POWER = {"type": "integer", "minimum": 0, "maximum": 40}
_POWER_FROM_1 = {"type": "integer", "minimum": 1, "maximum": 40}
_GENERATOR_OPTIONS: dict[str, dict[str, Any]] = {
    "custom": {"shapes": {"type": "array", "minItems": 1, "items": {
        "type": "array", "minItems": 3, "maxItems": 3, "items": _DIM,
        "description": "[m, k, n]: a list of three positive integers"}}},
    "llama": {"m": _DIMS, "tensor_parallel": {"enum": [1, 2, 4, 8]}},
    "pow2": {"min_power": _POWER, "max_power": _POWER},
    "pow2_extended": {"min_power": _POWER_FROM_1, "max_power": _POWER_FROM_1},
    "sweep": {"min_power": _POWER, "max_power": _POWER, "m": _DIMS, "k": _DIMS, "n": _DIMS},
}
_MATRIX_SHAPES = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": {"enum": list(SWEEP_GENERATORS)}},
    "allOf": [{"if": {"properties": {"name": {"const": name}}, "required": ["name"]},
               "then": {"additionalProperties": False,
                        "required": ["shapes"] if name == "custom" else [],
                        "properties": {"name": {"const": name}, **options}}}
              for name, options in _GENERATOR_OPTIONS.items()],
}
def _sweep_lists(unique: bool) -> dict[str, Any]:
    return {"type": "object", "minProperties": 1, "propertyNames": {"pattern": IDENTIFIER},
            "additionalProperties": {
                "type": "array", "minItems": 1, "uniqueItems": unique,
                "items": {"type": ["integer", "number", "boolean", "string"],
                          "pattern": POINT_TEXT}}}


SWEEP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "matrix_shapes": {"type": "array", "minItems": 1, "items": _MATRIX_SHAPES},
        "params": _sweep_lists(unique=True),
        "zip": _sweep_lists(unique=False),  # a value may repeat; a row may not
    },
}
"""JSON-schema fragment for bench.yaml's ``sweep``: ``matrix_shapes`` generators, ``params``
lists (their product) and ``zip`` lists (paired, of one length; checks jsonschema cannot make
are in :mod:`kernbench.config.sweeps`)."""

IMPL_NAME = "^[A-Za-z_][A-Za-z0-9_-]{0,39}$"
"""An implementation's name: it becomes part of case ids and file names."""
IMPLEMENTATIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "minProperties": 1,
    "maxProperties": 32,
    "propertyNames": {"pattern": IMPL_NAME},
    "additionalProperties": {
        "type": "object",
        "additionalProperties": False,
        "required": ["function"],
        "properties": {
            "function": {"type": "string", "pattern": FUNCTION},
            "framework": {"enum": list(FRAMEWORK_NAMES)},
            "setup": {"type": "string", "pattern": IDENTIFIER},
            "backends": {"type": "array", "minItems": 1, "uniqueItems": True,
                         "items": {"enum": list(BACKEND_NAMES)}},
            "compile": {
                "type": "object", "additionalProperties": False,
                "properties": {"mode": {"enum": list(COMPILE_MODE_NAMES)},
                               "fullgraph": {"type": "boolean"},
                               "dynamic": {"type": ["boolean", "null"]},
                               "backend": {"type": "string", "pattern": IDENTIFIER}},
            },
        },
    },
}
"""JSON-schema fragment for bench.yaml's ``implementations``: name -> {function, framework?,
setup?, backends?, compile?} (cross-key checks are in :mod:`kernbench.config.loading`)."""

IGNORE_SKUS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "uniqueItems": True,
    "items": {"type": "string", "minLength": 1},
}
"""JSON-schema fragment for bench.yaml's ``ignore_skus``: a list of SKU names."""

BENCH_YAML_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "bench.yaml",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "problem_size": {
            "type": ["object", "integer", "number", "string", "array", "boolean"],
            "propertyNames": {"pattern": IDENTIFIER},
        },
        "precisions": {"type": "array", "minItems": 1, "uniqueItems": True,
                       "items": {"enum": list(PRECISION_NAMES)}},
        "backends": {"type": "array", "minItems": 1, "uniqueItems": True,
                     "items": {"enum": list(BACKEND_NAMES)}},
        "tolerances": _TOLERANCES,
        "skip_conditions": {"type": "array", "items": _SKIP_CONDITION},
        "function_name": {"type": "string", "pattern": FUNCTION},
        "sys_path": {"type": "array", "minItems": 1, "uniqueItems": True,
                     "items": {"type": "string", "minLength": 1}},
        "framework": {"enum": list(FRAMEWORK_NAMES)},
        "description": {"type": "string"},
        "timeout_s": TIMEOUT_SCHEMA,
        "gpu_timing": {"enum": list(GPU_TIMING_CHOICES)},
        "reference": {
            "type": "object", "additionalProperties": False, "minProperties": 1,
            "properties": {"backend": {"enum": list(BACKEND_NAMES)},
                           "precision": {"enum": list(PRECISION_NAMES)},
                           "implementation": {"type": "string", "pattern": IMPL_NAME}},
        },
        "golden": GOLDEN_SCHEMA,
        "ignore_skus": IGNORE_SKUS_SCHEMA,
        "regression": {
            "type": "object", "additionalProperties": False, "minProperties": 1,
            "properties": {"latency": {"type": "number", "exclusiveMinimum": 0},
                           "accuracy_drift": {"type": "number", "minimum": 0}},
        },
        "work": {
            "type": "object", "additionalProperties": False, "minProperties": 1,
            "properties": {"flops": {"type": ["string", "number"]},
                           "bytes": {"type": ["string", "number"]}},
        },
        "sweep": SWEEP_SCHEMA,
        "implementations": IMPLEMENTATIONS_SCHEMA,
    },
}

def suite_schema(format_names: Iterable[str]) -> dict[str, Any]:
    """JSON schema of a suite file (`kernbench run --config`): run options by name.

    `format_names` are the report formats (:mod:`kernbench.reporting.formats`, which this
    module does not import); :mod:`kernbench.config.suite` maps each key to its command-line
    flag."""
    def names(values: Iterable[str]) -> dict[str, Any]:
        return {"type": "array", "minItems": 1, "uniqueItems": True,
                "items": {"enum": list(values)}}

    texts = {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"type": "string"}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "suite file",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "root": {"type": "string"},
            "paths": texts,
            "kernels": texts,
            "output_dir": {"type": "string"},
            "iterations": {"type": "integer", "minimum": 1, "maximum": MAX_ITERATIONS},
            "warmup": {"type": "integer", "minimum": 0},
            "warmup_time_s": {"type": "number", "minimum": 0},
            "isolation": {"enum": ["fork", "spawn"]},
            "seed": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1},
            "timeout_s": TIMEOUT_SCHEMA,
            "gpu_timing": {"enum": list(GPU_TIMING_CHOICES)},
            "processes": {"type": "integer", "minimum": 1, "maximum": MAX_PROCESSES},
            "interleave": {"type": "boolean"},
            "backends": names(BACKEND_NAMES),
            "precisions": names(PRECISION_NAMES),
            "formats": names(format_names),
            "sku": {"type": "string", "minLength": 1},
            "testbed": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,63}$"},
            "trace_memory": {"type": "boolean"},
            "save_history": {"type": "boolean"},
            "compare_to": {"type": "string", "minLength": 1},
            "threshold": {"type": "number", "exclusiveMinimum": 0},
            "fail_on_regression": {"type": "boolean"},
            "profile": {"enum": ["cprofile", "torch", "jax"]},
            "profile_iters": {"type": "integer", "minimum": 1},
            "compile_mode": {"enum": list(COMPILE_MODE_NAMES)},
            "sweeps": {"type": "object", "minProperties": 1, "additionalProperties": SWEEP_SCHEMA},
            "max_memory": {"type": ["string", "integer"]},
            "shards": {"type": "integer", "minimum": 1},
            "executor": {"enum": ["local", "slurm", "ray"]},
            "jobs": {"type": "integer", "minimum": 1},
            "partition": {"type": "string"},
            "gpus_per_task": {"type": "integer", "minimum": 0},
            "time": {"type": "integer", "minimum": 1},
            "exclusive": {"type": "boolean"},
            "slurm_args": texts,
            "ray_address": {"type": "string"},
            "gpus_per_shard": {"type": "number", "minimum": 0},
            "ray_resources": texts,
        },
    }


def _is_integer(checker: object, instance: object) -> bool:
    return isinstance(instance, int) and not isinstance(instance, bool)


def _is_finite_number(checker: object, instance: object) -> bool:
    if isinstance(instance, bool) or not isinstance(instance, (int, float)):
        return False
    return isinstance(instance, int) or math.isfinite(instance)


@functools.cache
def _validator_class() -> Any:
    """Draft 2020-12, with the types the command-line flags have: an ``integer`` is written
    without a decimal point (JSON Schema would take ``5.0``, which then fails deep in the
    run), and a ``number`` is finite (``.nan``, ``.inf`` and ``1e400`` are no limit, size or
    threshold; ``exclusiveMinimum: 0`` lets NaN through)."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_finite_number})
    extend: Callable[..., Any] = validators.extend  # untyped in types-jsonschema
    return extend(Draft202012Validator, type_checker=checker)


def validate_suite_config(data: object, source: str, format_names: Iterable[str]) -> None:
    """Raise ConfigError for the problems in a parsed suite file, as for bench.yaml."""
    validator = _validator_class()(suite_schema(tuple(format_names)))
    _raise_first(validator.iter_errors(data), source)


@functools.cache
def _bench_yaml_validator() -> Any:
    return _validator_class()(BENCH_YAML_SCHEMA)


def validate_bench_yaml(data: object, source: str) -> None:
    """Raise ConfigError for the problems in a parsed bench.yaml (file, key, expectation)."""
    _raise_first(_bench_yaml_validator().iter_errors(data), source)


def _raise_first(errors: Iterable[Any], source: str) -> None:
    """Raise ConfigError for `errors` (jsonschema ValidationErrors), if any: every problem at
    once (:func:`kernbench.config.schema_errors.raise_errors`)."""
    from kernbench.config.schema_errors import raise_errors

    raise_errors(errors, source, _PATTERN_WORDS)


_PATTERN_WORDS = {
    IDENTIFIER: f"an identifier (letters, digits, _; pattern {IDENTIFIER})",
    FUNCTION: "an identifier (a module-level function) or Class.method, optionally after "
              "module: (module:Class.method), of letters, digits and _",
    IMPL_NAME: "an implementation name of letters, digits, _ and - (at most 40, starting with a "
               "letter or _; it names cases)",
    POINT_TEXT: "numbers, true/false, or text of letters, digits and _ . + - (at most 64 "
                "characters): sweep values name the cases",
}
