"""The kernel contract, from the worker's side: import a kernel and bind its functions.

A kernel module defines ``run_benchmark`` (or the bench.yaml ``function_name``, which may name
a method: ``Class.method``) and optionally ``setup`` (untimed; returns a dict of keyword
arguments for the benchmark function), ``reset`` (untimed, before every timed call: restores
what an in-place kernel changed), ``reference`` / ``reference_result`` (the trusted result,
same parameters as the benchmark function) and ``flops`` / ``bytes_moved`` (work counts, same
parameters as ``setup``).

Arguments: each bench.yaml ``problem_size`` item (a scalar arrives as ``problem_size``) goes to
the functions that accept it (``**kwargs`` accepts all); an item nothing accepts is an error.
The harness arguments ``precision``, ``backend``, ``device`` and ``seed`` are passed only to
functions that declare them by name.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from kernbench.errors import ConfigError

REFERENCE_FUNCTIONS = ("reference", "reference_result")
SETUP_FUNCTION = "setup"
RESET_FUNCTION = "reset"
TEARDOWN_FUNCTION = "teardown"
WORK_FUNCTIONS = ("flops", "bytes_moved")


class ContractError(Exception):
    """The kernel does not fit the calling contract (unknown parameter, bad setup return)."""


def import_kernel(path: Path, root: Path, name: str,
                  extra_paths: Sequence[Path] = ()) -> ModuleType:
    """Import a kernel file as a fresh module; its folder, the root and bench.yaml `sys_path`
    folders (`extra_paths`, first on the path) are importable. A kernel inside a package
    (folders with ``__init__.py``) is imported as that package's module, so its relative
    imports (``from .helper import x``) work as they do for the package's users."""
    module_name = "kernbench_kernel_" + re.sub(r"\W", "_", name)
    package = _package_of(path)
    for entry in (str(root), str(path.parent), *([str(package[0])] if package else []),
                  *map(str, reversed(extra_paths))):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    if package is not None:
        importlib.import_module(package[1])
        module_name = f"{package[1]}.{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ContractError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.argv = [str(path)]
    spec.loader.exec_module(module)
    return module


def _package_of(path: Path) -> tuple[Path, str] | None:
    """(the folder above the top package, the dotted package) of a kernel file whose folder
    is a package, else None. None too where the name is no identifier, or names a module
    imported already from elsewhere (a folder called ``numpy`` must not shadow NumPy)."""
    parts: list[str] = []
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.name.isidentifier():
        parts.insert(0, folder.name)
        folder = folder.parent
    if not parts or not path.stem.isidentifier():
        return None
    loaded = sys.modules.get(parts[0])
    if loaded is not None and str(folder / parts[0]) not in list(getattr(loaded, "__path__", [])):
        return None
    return folder, ".".join(parts)


def resolve_function(module: ModuleType, name: str) -> Callable[..., Any]:
    """The module's function `name`, or with `Class.method` that method: a static or class
    method as it is, an instance method bound to ``Class()`` (made once, untimed). With
    ``other.module:attr`` the attribute is looked up in that module instead, imported from the
    kernel's folder, the root or a bench.yaml ``sys_path`` folder (all on ``sys.path``)."""
    elsewhere, colon, attribute = name.partition(":")
    if colon:
        try:
            module = importlib.import_module(elsewhere)
        except ImportError as exc:
            raise ContractError(f"function_name {name}: cannot import {elsewhere}: {exc}") \
                from exc
        name = attribute
    owner_name, _, method = name.rpartition(".")
    if not owner_name:
        function = getattr(module, name, None)
    else:
        owner = getattr(module, owner_name, None)
        if owner is None:
            raise ContractError(f"{owner_name} is not defined in {module.__file__}")
        raw = inspect.getattr_static(owner, method, None)
        if inspect.isclass(owner) and inspect.isfunction(raw):  # an instance method
            try:
                owner = owner()
            except TypeError as exc:
                raise ContractError(f"function_name {name}: {owner_name}() must be callable "
                                    f"without arguments to bind {method}() ({exc})") from exc
        function = getattr(owner, method, None)
    if not callable(function):
        raise ContractError(f"{name} is not a callable in {module.__file__}")
    return function  # type: ignore[no-any-return]


def accepted(function: Callable[..., Any], offered: Mapping[str, Any]) -> dict[str, Any]:
    """The items of `offered` that `function` takes by name (all of them with **kwargs)."""
    parameters = inspect.signature(function).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return dict(offered)
    named = {p.name for p in parameters
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)}
    return {k: v for k, v in offered.items() if k in named}


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


@dataclass
class BoundKernel:
    """A kernel with `setup` done: zero-argument calls of its functions."""

    function: Callable[..., Any]
    run_kwargs: dict[str, Any]
    module: ModuleType
    sizes: dict[str, Any]
    harness: Mapping[str, Any]
    inputs: Mapping[str, Any] | None = None
    """setup()'s result, all of it (`reset` may take keys the benchmark function does not,
    such as the pristine copy it restores from); None: the benchmark function's arguments."""

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
        """The kernel's own reference result, called like the benchmark function. With a
        `reset`, it also may take setup's keys only `reset` takes (the pristine copy an
        in-place kernel's input is restored from: the input itself is as the last call left
        it, and may be the very output being checked)."""
        reference = self.reference_function()
        assert reference is not None
        inputs = {k: v for k, v in self.run_kwargs.items() if k not in self.harness}
        if self.inputs is not None and self.reset_call() is not None:
            inputs = accepted(reference, {**self.inputs, **inputs})
        kwargs = bind_arguments(reference, inputs, self.harness,
                                "the benchmark function's arguments")
        return reference(**kwargs)

    def work(self, name: str) -> float | None:
        """`flops` or `bytes_moved` from the kernel's function of that name, if it has one;
        it gets the problem-size items it accepts."""
        counter = getattr(self.module, name, None)
        if not callable(counter):
            return None
        value = counter(**bind_arguments(counter, accepted(counter, self.sizes), self.harness,
                                         "bench.yaml problem_size"))
        return float(value)

    def teardown(self) -> None:
        """The module's `teardown`, if it has one, called once after everything else: with
        the keys of setup's result (what it made: files, handles), the problem-size items
        and the harness arguments it names, as asv and pytest-benchmark call theirs."""
        teardown = getattr(self.module, TEARDOWN_FUNCTION, None)
        if not callable(teardown):
            return
        inputs = {**self.sizes, **(self.inputs if self.inputs is not None else {
            k: v for k, v in self.run_kwargs.items() if k not in self.harness})}
        teardown(**bind_arguments(teardown, accepted(teardown, inputs), self.harness,
                                  "setup()'s result"))

    def reset_call(self) -> Callable[[], object] | None:
        """The module's `reset`, bound to the benchmark function's arguments it accepts (the
        arrays an in-place kernel changes, and what to restore them from); None without one."""
        reset = getattr(self.module, RESET_FUNCTION, None)
        if not callable(reset):
            return None
        inputs = self.inputs if self.inputs is not None else {
            k: v for k, v in self.run_kwargs.items() if k not in self.harness}
        return functools.partial(reset, **bind_arguments(reset, accepted(reset, inputs),
                                                         self.harness, "the inputs"))


Convert = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def bind_kernel(module: ModuleType, function: Callable[..., Any], problem_size: Any,
                harness: Mapping[str, Any], setup_name: str = SETUP_FUNCTION,
                convert: Convert | None = None, formulas: Iterable[str] = (),
                source: str = "bench.yaml") -> BoundKernel:
    """Run the setup function (if any; `setup_name`) and bind the benchmark function's
    arguments; `convert` turns setup's result into the function's inputs (see
    :mod:`kernbench.measure.convert`). Each problem-size item goes where it is accepted; one
    that no function takes and no `formulas` (bench.yaml work) names is a
    :class:`~kernbench.errors.ConfigError` of `source` (the bench.yaml), raised before setup
    runs."""
    sizes = problem_kwargs(problem_size)
    setup = getattr(module, setup_name, None)
    _check_all_taken(problem_size, module, formulas, function,
                     setup_name if callable(setup) else None, source)
    if callable(setup):
        given = accepted(setup, sizes)
        prepared = setup(**bind_arguments(setup, given, harness, "bench.yaml problem_size"))
        if not isinstance(prepared, Mapping):
            raise ContractError(f"{setup_name}() must return a dict of keyword arguments for "
                                f"{function.__name__}(), got {type(prepared).__name__}")
        if convert is not None:
            prepared = convert(prepared)
        extra = {k: v for k, v in accepted(function, sizes).items() if k not in prepared}
        kwargs = bind_arguments(function, {**_for_function(module, function, prepared),
                                           **extra}, harness, "setup()'s result")
    else:
        prepared = None
        kwargs = bind_arguments(function, accepted(function, sizes), harness,
                                "bench.yaml problem_size")
    return BoundKernel(function, kwargs, module, sizes, harness, prepared)


def _for_function(module: ModuleType, function: Callable[..., Any],
                  prepared: Mapping[str, Any]) -> dict[str, Any]:
    """setup()'s result less the keys only `reset` takes (what it restores from)."""
    reset = getattr(module, RESET_FUNCTION, None)
    if not callable(reset):
        return dict(prepared)
    mine, resets = accepted(function, prepared), accepted(reset, prepared)
    return {k: v for k, v in prepared.items() if k in mine or k not in resets}


def _check_all_taken(problem_size: Any, module: ModuleType, formulas: Iterable[str],
                     function: Callable[..., Any], setup: str | None, source: str) -> None:
    """A problem-size item no function accepts and no work formula reads is a typo (`nn: 512`
    would silently run the default size): a configuration error, naming the bench.yaml key."""
    sizes = problem_kwargs(problem_size)
    takers = [n for n in (setup, function.__name__) if n]
    taken = set(accepted(function, sizes))
    if setup is not None:
        taken |= set(accepted(getattr(module, setup), sizes))
    for name in WORK_FUNCTIONS:
        counter = getattr(module, name, None)
        if callable(counter):
            taken |= set(accepted(counter, sizes))
            takers.append(name)
    taken |= {word for text in formulas for word in re.findall(r"[A-Za-z_]\w*", text)}
    unused = [key for key in sizes if key not in taken]
    if not unused:
        return
    functions = " or ".join(f"{name}()" for name in takers)
    if isinstance(problem_size, Mapping):
        raise ConfigError(source, f"problem_size.{unused[0]}", f"a parameter of {functions}, or "
                          "a variable a work formula reads", got=unused[0])
    raise ConfigError(source, "problem_size", "a mapping of keyword arguments (a scalar is "
                      f"passed as problem_size=, which is not a parameter of {functions}, and "
                      "no work formula reads it)", got=problem_size)
