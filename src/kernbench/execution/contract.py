"""The kernel contract, from the worker's side: import a kernel and bind its functions.

A kernel module defines ``run_benchmark`` (or the bench.yaml ``function_name``) and optionally
``setup`` (untimed; returns a dict of keyword arguments for the benchmark function),
``reference`` / ``reference_result`` (the trusted result, same parameters as the benchmark
function) and ``flops`` / ``bytes_moved`` (work counts, same parameters as ``setup``).

Arguments: bench.yaml ``problem_size`` items (a scalar arrives as ``problem_size``) must be
accepted; the harness arguments ``precision``, ``backend``, ``device`` and ``seed`` are passed
only to functions that declare them by name.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

REFERENCE_FUNCTIONS = ("reference", "reference_result")
SETUP_FUNCTION = "setup"


class ContractError(Exception):
    """The kernel does not fit the calling contract (unknown parameter, bad setup return)."""


def import_kernel(path: Path, root: Path, name: str) -> ModuleType:
    """Import a kernel file as a fresh module; its folder and the root are importable."""
    module_name = "kernbench_kernel_" + re.sub(r"\W", "_", name)
    for entry in (str(root), str(path.parent)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ContractError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.argv = [str(path)]
    spec.loader.exec_module(module)
    return module


def bind_arguments(function: Callable[..., Any], offered: Mapping[str, Any],
                   harness: Mapping[str, Any], origin: str) -> dict[str, Any]:
    """Keyword arguments for `function`: every `offered` item (it must accept them) plus the
    harness arguments it declares by name."""
    parameters = inspect.signature(function).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    named = {n for n, p in parameters.items()
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
    unknown = [key for key in offered if key not in named and not takes_any]
    if unknown:
        raise ContractError(f"{function.__name__}() has no parameter {unknown[0]!r} "
                            f"(passed from {origin})")
    kwargs = dict(offered)
    kwargs.update({k: v for k, v in harness.items() if k in named})
    return kwargs


def problem_kwargs(problem_size: Any) -> dict[str, Any]:
    """bench.yaml problem_size as keyword arguments: a mapping as is, a scalar as problem_size."""
    if problem_size is None:
        return {}
    if isinstance(problem_size, Mapping):
        return dict(problem_size)
    return {"problem_size": problem_size}


def _declared(function: Callable[..., Any]) -> set[str]:
    return set(inspect.signature(function).parameters)


@dataclass
class BoundKernel:
    """A kernel with `setup` done: zero-argument calls of its functions."""

    function: Callable[..., Any]
    run_kwargs: dict[str, Any]
    module: ModuleType
    sizes: dict[str, Any]
    harness: Mapping[str, Any]

    def call(self) -> object:
        return self.function(**self.run_kwargs)

    def bare_call(self) -> Callable[[], object]:
        """The zero-argument call the protocol times, with no layer of its own: the function
        itself, or a C-level ``functools.partial`` of it with its keyword arguments."""
        if not self.run_kwargs:
            return self.function
        return functools.partial(self.function, **self.run_kwargs)

    def reference_function(self) -> Callable[..., Any] | None:
        for name in REFERENCE_FUNCTIONS:
            candidate = getattr(self.module, name, None)
            if callable(candidate):
                return candidate  # type: ignore[no-any-return]
        return None

    def reference(self) -> object:
        """The kernel's own reference result, called like the benchmark function."""
        reference = self.reference_function()
        assert reference is not None
        kwargs = bind_arguments(reference, {k: v for k, v in self.run_kwargs.items()
                                            if k not in self.harness}, self.harness,
                                "the benchmark function's arguments")
        return reference(**kwargs)

    def work(self, name: str) -> float | None:
        """`flops` or `bytes_moved` from the kernel's function of that name, if it has one."""
        counter = getattr(self.module, name, None)
        if not callable(counter):
            return None
        value = counter(**bind_arguments(counter, self.sizes, self.harness,
                                         "bench.yaml problem_size"))
        return float(value)


Convert = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def bind_kernel(module: ModuleType, function: Callable[..., Any], problem_size: Any,
                harness: Mapping[str, Any], setup_name: str = SETUP_FUNCTION,
                convert: Convert | None = None) -> BoundKernel:
    """Run the setup function (if any; `setup_name`) and bind the benchmark function's
    arguments; `convert` turns setup's result into the function's inputs (see
    :mod:`kernbench.measure.convert`)."""
    sizes = problem_kwargs(problem_size)
    setup = getattr(module, setup_name, None)
    if callable(setup):
        prepared = setup(**bind_arguments(setup, sizes, harness, "bench.yaml problem_size"))
        if not isinstance(prepared, Mapping):
            raise ContractError(f"{setup_name}() must return a dict of keyword arguments for "
                                f"{function.__name__}(), got {type(prepared).__name__}")
        if convert is not None:
            prepared = convert(prepared)
        named = _declared(function)
        extra = {k: v for k, v in sizes.items() if k in named and k not in prepared}
        kwargs = bind_arguments(function, {**prepared, **extra}, harness, "setup()'s result")
    else:
        kwargs = bind_arguments(function, sizes, harness, "bench.yaml problem_size")
    return BoundKernel(function, kwargs, module, sizes, harness)
