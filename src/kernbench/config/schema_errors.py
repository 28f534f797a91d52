"""A schema's complaints about a configuration file, in words: the file, the key, what was
expected and what was found; every problem of the file at once, so a file with a typo and a
wrong type takes one edit, not two runs."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from typing import Any

from kernbench.config.unknown_keys import UnknownKeysError, key_path, unknown_keys
from kernbench.errors import ConfigError

__all__ = ["ConfigErrors", "config_error", "raise_errors"]


class ConfigErrors(ConfigError):
    """Several problems in one file: each with its key and what it expected. Its `key` and
    `expected` are the first problem's."""

    def __init__(self, source: str, problems: list[ConfigError]) -> None:
        first = problems[0]
        super().__init__(source, first.key, first.expected)
        self.problems = tuple(problems)
        self.message = (f"{source}: {len(problems)} problems: "
                        + "; ".join(p.message.removeprefix(f"{source}: ") for p in problems))
        self.args = (self.message,)


def raise_errors(errors: Iterable[Any], source: str, pattern_words: Mapping[str, str]) -> None:
    """Raise for `errors` (jsonschema ValidationErrors), if any: several unknown keys alone as
    :class:`UnknownKeysError` (each with the nearest known key), else the first problem at
    each key, shallowest first, one as a ConfigError and several as :class:`ConfigErrors`."""
    ordered = sorted(errors, key=lambda e: (len(e.path), [str(p) for p in e.path]))
    unknown = [found for e in ordered if e.validator == "additionalProperties"
               for found in unknown_keys(e)]
    others = [e for e in ordered if e.validator != "additionalProperties"]
    if len(unknown) > 1 and not others:
        raise UnknownKeysError(source, unknown)
    problems: dict[str, ConfigError] = {}
    for found in unknown:
        problems.setdefault(found.path, ConfigError(
            source, found.path, found.expected,
            got=f"unknown key {found.path.removeprefix(found.parent).lstrip('.')!r}"))
    for error in others:
        problem = config_error(error, source, pattern_words)
        problems.setdefault(problem.key, problem)
    if len(problems) == 1:
        raise next(iter(problems.values()))
    if problems:
        raise ConfigErrors(source, list(problems.values()))


_TYPE_WORDS = {"object": "a mapping", "array": "a list", "string": "a string",
               "integer": "an integer", "number": "a number", "boolean": "true or false",
               "null": "null"}


def config_error(error: Any, source: str, pattern_words: Mapping[str, str]) -> ConfigError:
    """One jsonschema ValidationError (not an unknown key's: see :func:`raise_errors`) as a
    ConfigError: the file, the key, what was expected."""
    key = key_path(error.absolute_path)
    kind, value, instance = error.validator, error.validator_value, error.instance
    if kind == "required":
        missing = [k for k in value if k not in instance]
        return ConfigError(source, key_path([*error.absolute_path, missing[0]]),
                           "this key to be present", got="missing")
    if kind == "type":
        types = [value] if isinstance(value, str) else value
        words = dict(_TYPE_WORDS)
        if isinstance(instance, float) and not math.isfinite(instance):
            words["number"] = "a finite number"
        expected = " or ".join(words.get(t, t) for t in types)
        return ConfigError(source, key, expected, got=instance)
    if "description" in error.schema:  # the fragment says in words what it wants
        return ConfigError(source, key, error.schema["description"], got=instance)
    if kind == "enum":
        return ConfigError(source, key, f"one of {', '.join(map(str, value))}"
                           f"{did_you_mean(instance, value)}", got=instance)
    if kind == "pattern":
        return ConfigError(source, key, pattern_words.get(value, f"text matching {value}"),
                           got=instance)
    if kind in ("minimum", "exclusiveMinimum", "maximum"):
        relation = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<="}[kind]
        return ConfigError(source, key, f"a number {relation} {value}", got=instance)
    if kind in ("minItems", "maxItems", "minProperties", "maxProperties"):
        what = "a mapping with" if kind.endswith("Properties") else "a list of"
        bound = "at least" if kind.startswith("min") else "at most"
        noun = "key" if kind.endswith("Properties") else "item"
        return ConfigError(source, key, f"{what} {bound} {value} {noun}{'s' * (value != 1)}",
                           got=instance)
    if kind == "uniqueItems":
        return ConfigError(source, key, "a list without repeated values", got=instance)
    if kind == "propertyNames":
        return ConfigError(source, key, "keys that are Python identifiers (they become keyword "
                           "arguments)", got=instance)
    return ConfigError(source, key, error.message)


def did_you_mean(instance: object, allowed: Iterable[object]) -> str:
    """` (did you mean 'fp32'?)` for a near miss of one of `allowed`, else ""."""
    if not isinstance(instance, str):
        return ""
    lowered = {str(a).lower(): str(a) for a in allowed}  # FP32 is a near miss of fp32
    hint = difflib.get_close_matches(instance.lower(), list(lowered), n=1)
    return f" (did you mean '{lowered[hint[0]]}'?)" if hint else ""
