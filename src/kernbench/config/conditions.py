"""Safe evaluation of ``skip_conditions[].check`` strings from bench.yaml.

A condition such as ``not torch.cuda.is_available()`` is *data*: it is never handed to
``eval``, ``exec`` or ``compile`` to produce code.  :func:`parse_condition` parses it with
``ast.parse(text, mode="eval")`` and converts the syntax tree into a few small node types,
accepting only a whitelist:

* ``not``, ``and``, ``or`` and parentheses;
* comparisons ``== != < <= > >= in``, ``not in``, ``is``, ``is not`` (chains allowed;
  ``is``/``is not`` only against ``None``, ``True`` or ``False``);
* constants (str, int, float, bool, None, negative numbers) and tuples/lists of constants
  (a list literal is treated as a tuple);
* the probes in :data:`PROBES`, e.g. ``torch.cuda.is_available()``, ``module_available("cupy")``
  or ``sys.version_info``, each called with exactly its arity and string-literal arguments.

Anything else raises :class:`~kernbench.errors.ConfigError` at parse time, naming the file, the
key and what is allowed.  Probes run lazily, only when :meth:`Condition.evaluate` reaches them,
and never raise: a framework that is missing or fails to import yields its "absent" value
(False, 0, None or "").  Frameworks are imported inside the probe functions only.  Errors at
evaluation time (e.g. ``None < 1``) raise :class:`ConditionError`.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import operator
import os
import platform
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Literal

from kernbench.config.safe_ast import WhitelistParser, parse_expression
from kernbench.errors import KernbenchError

__all__ = [
    "PROBES",
    "Condition",
    "ConditionError",
    "Probe",
    "describe_probes",
    "parse_condition",
]

MAX_LENGTH = 2000
"""Longest condition text accepted (characters)."""

MAX_DEPTH = 40
"""Deepest nesting of expressions accepted."""


class ConditionError(KernbenchError):
    """A condition that parsed fine could not be evaluated (e.g. it compares ``None < 1``)."""


# --------------------------------------------------------------------------------------------
# Probes
# --------------------------------------------------------------------------------------------


def _any_text(value: str) -> bool:
    return True


@dataclass(frozen=True)
class Probe:
    """One whitelisted probe: a call ``f()`` / ``f("x")`` or an attribute read ``a.b``."""

    name: str
    func: Callable[..., object] = field(repr=False)
    kind: Literal["call", "attribute"] = "call"
    arg: str | None = None
    """Placeholder name of the single string argument (``"name"``), or None for no argument."""
    absent: object = None
    """What the probe returns when its framework is missing or the probe fails."""
    valid_arg: Callable[[str], bool] = field(default=_any_text, repr=False)

    @property
    def arity(self) -> int:
        return 0 if self.arg is None else 1

    @property
    def usage(self) -> str:
        """How the probe is written in a condition, e.g. ``module_available("name")``."""
        if self.kind == "attribute":
            return self.name
        return f'{self.name}("{self.arg}")' if self.arg is not None else f"{self.name}()"

    def read(self, *args: str) -> object:
        """Run the probe; any failure yields :attr:`absent` instead of an exception."""
        try:
            return self.func(*args)
        except Exception:
            return self.absent


def _import(name: str) -> Any:
    return importlib.import_module(name)


def _torch_cuda_available() -> bool:
    return bool(_import("torch").cuda.is_available())


def _torch_cuda_device_count() -> int:
    return int(_import("torch").cuda.device_count())


def _torch_mps_available() -> bool:
    return bool(_import("torch").backends.mps.is_available())


def _torch_version(attribute: str) -> Callable[[], str | None]:
    def probe() -> str | None:
        value = getattr(_import("torch").version, attribute, None)
        return value if isinstance(value, str) else None

    return probe


def _jax_default_backend() -> str:
    return str(_import("jax").default_backend())


def _jax_device_count() -> int:
    return int(_import("jax").device_count())


def _cupy_available() -> bool:
    return bool(_import("cupy").cuda.is_available())


def _cpu_count() -> int:
    return os.cpu_count() or 0


def _module_available(name: str) -> bool:
    root = name.partition(".")[0]
    if root in sys.modules:
        return True
    return importlib.util.find_spec(root) is not None


def _env(name: str) -> str | None:
    return os.environ.get(name)


def _version_info() -> tuple[int, int, int]:
    return (sys.version_info.major, sys.version_info.minor, sys.version_info.micro)


def _sys_platform() -> str:
    return sys.platform


def _is_module_name(value: str) -> bool:
    return all(part.isidentifier() for part in value.split("."))


def _is_env_name(value: str) -> bool:
    return value != "" and "=" not in value and "\0" not in value


def _probe_table(*probes: Probe) -> Mapping[str, Probe]:
    return MappingProxyType({probe.name: probe for probe in probes})


PROBES: Mapping[str, Probe] = _probe_table(
    Probe("torch.cuda.is_available", _torch_cuda_available, absent=False),
    Probe("torch.cuda.device_count", _torch_cuda_device_count, absent=0),
    Probe("torch.backends.mps.is_available", _torch_mps_available, absent=False),
    Probe("torch.version.cuda", _torch_version("cuda"), kind="attribute"),
    Probe("torch.version.hip", _torch_version("hip"), kind="attribute"),
    Probe("jax.default_backend", _jax_default_backend, absent=""),
    Probe("jax.device_count", _jax_device_count, absent=0),
    Probe("cupy.is_available", _cupy_available, absent=False),
    Probe("platform.system", platform.system, absent=""),
    Probe("platform.machine", platform.machine, absent=""),
    Probe("os.cpu_count", _cpu_count, absent=0),
    Probe("sys.platform", _sys_platform, kind="attribute", absent=""),
    Probe("sys.version_info", _version_info, kind="attribute", absent=()),
    Probe("module_available", _module_available, arg="name", absent=False,
          valid_arg=_is_module_name),
    Probe("env", _env, arg="NAME", valid_arg=_is_env_name),
)
"""The whitelist of probes, by dotted name (without ``()``)."""


def describe_probes() -> str:
    """One line listing every probe as it is written in a condition."""
    return ", ".join(probe.usage for probe in PROBES.values())


def _grammar() -> str:
    return (
        "a condition using only not/and/or, parentheses, comparisons "
        "(== != < <= > >= in, not in, is, is not), constants (str, int, float, bool, None), "
        f"tuples/lists of constants and the probes {describe_probes()}"
    )


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


@dataclass
class _Context:
    """State of one :meth:`Condition.evaluate` call: probe overrides and a per-call cache."""

    condition: Condition
    overrides: Mapping[str, Callable[..., object]]
    cache: dict[tuple[str, tuple[str, ...]], object] = field(default_factory=dict)

    def fail(self, detail: str) -> ConditionError:
        c = self.condition
        return ConditionError(
            f"{c.source}: key '{c.key}': cannot evaluate condition {c.text!r}: {detail}"
        )

    def read(self, name: str, args: tuple[str, ...]) -> object:
        if (name, args) not in self.cache:
            self.cache[(name, args)] = self._run(name, args)
        return self.cache[(name, args)]

    def _run(self, name: str, args: tuple[str, ...]) -> object:
        fake = self.overrides.get(name)
        if fake is None:
            return PROBES[name].read(*args)
        try:
            return fake(*args)
        except Exception as exc:
            raise self.fail(f"probe {name} raised {exc!r}") from exc

    def truth(self, value: object) -> bool:
        try:
            return bool(value)
        except Exception as exc:
            raise self.fail(f"cannot take the truth value of {value!r}: {exc}") from exc

    def compare(self, symbol: str, left: object, right: object) -> bool:
        try:
            return bool(_COMPARE_FUNCS[symbol](left, right))
        except Exception as exc:
            raise self.fail(f"cannot compute {left!r} {symbol} {right!r}: {exc}") from exc


def _contains(item: Any, container: Any) -> bool:
    return item in container


def _not_contains(item: Any, container: Any) -> bool:
    return item not in container


_COMPARE_FUNCS: Mapping[str, Callable[[Any, Any], object]] = MappingProxyType({
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "in": _contains,
    "not in": _not_contains,
    "is": operator.is_,
    "is not": operator.is_not,
})

_COMPARE_SYMBOLS: Mapping[type[ast.cmpop], str] = MappingProxyType({
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
})


class _Node(ABC):
    """A validated node of a condition."""

    @abstractmethod
    def value(self, ctx: _Context) -> object: ...

    def probe_names(self) -> frozenset[str]:
        return frozenset()


@dataclass(frozen=True)
class _Const(_Node):
    constant: object

    def value(self, ctx: _Context) -> object:
        return self.constant


@dataclass(frozen=True)
class _ProbeRef(_Node):
    name: str
    args: tuple[str, ...] = ()

    def value(self, ctx: _Context) -> object:
        return ctx.read(self.name, self.args)

    def probe_names(self) -> frozenset[str]:
        return frozenset({self.name})


@dataclass(frozen=True)
class _Not(_Node):
    operand: _Node

    def value(self, ctx: _Context) -> object:
        return not ctx.truth(self.operand.value(ctx))

    def probe_names(self) -> frozenset[str]:
        return self.operand.probe_names()


@dataclass(frozen=True)
class _BoolOp(_Node):
    """``and`` / ``or`` with Python's short-circuit semantics (returns the deciding operand)."""

    is_and: bool
    operands: tuple[_Node, ...]

    def value(self, ctx: _Context) -> object:
        for operand in self.operands[:-1]:
            result = operand.value(ctx)
            if ctx.truth(result) != self.is_and:
                return result
        return self.operands[-1].value(ctx)

    def probe_names(self) -> frozenset[str]:
        return frozenset().union(*(operand.probe_names() for operand in self.operands))


@dataclass(frozen=True)
class _Compare(_Node):
    """A comparison chain ``a < b <= c``: right operands are evaluated only while needed."""

    left: _Node
    symbols: tuple[str, ...]
    rights: tuple[_Node, ...]

    def value(self, ctx: _Context) -> object:
        left = self.left.value(ctx)
        for symbol, right_node in zip(self.symbols, self.rights, strict=True):
            right = right_node.value(ctx)
            if not ctx.compare(symbol, left, right):
                return False
            left = right
        return True

    def probe_names(self) -> frozenset[str]:
        return frozenset().union(self.left.probe_names(), *(r.probe_names() for r in self.rights))


@dataclass(frozen=True)
class Condition:
    """A parsed, validated condition; build it with :func:`parse_condition`."""

    text: str
    tree: _Node = field(repr=False)
    source: str = field(default="<condition>", compare=False)
    key: str = field(default="check", compare=False)

    def evaluate(self, probes: Mapping[str, Callable[..., object]] | None = None) -> bool:
        """Evaluate the condition; ``probes`` overrides real probes by dotted name (for tests).

        Raises :class:`ConditionError` when an operation fails (e.g. ``None < 1``).
        """
        overrides = dict(probes or {})
        unknown = sorted(set(overrides) - set(PROBES))
        if unknown:
            raise ValueError(f"unknown probe names {unknown}; known: {sorted(PROBES)}")
        ctx = _Context(self, overrides)
        return ctx.truth(self.tree.value(ctx))

    def probe_names(self) -> frozenset[str]:
        """Dotted names (without ``()``) of the probes this condition refers to."""
        return self.tree.probe_names()


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------

_NODE_NAMES: Mapping[type[ast.AST], str] = MappingProxyType({
    ast.Subscript: "subscript",
    ast.Slice: "slice",
    ast.Lambda: "lambda",
    ast.ListComp: "comprehension",
    ast.SetComp: "comprehension",
    ast.DictComp: "comprehension",
    ast.GeneratorExp: "generator expression",
    ast.JoinedStr: "f-string",
    ast.FormattedValue: "f-string",
    ast.NamedExpr: "assignment expression (:=)",
    ast.BinOp: "operator",
    ast.UnaryOp: "unary operator",
    ast.IfExp: "conditional expression",
    ast.Dict: "dict",
    ast.Set: "set",
    ast.Starred: "starred expression",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Call: "call",
    ast.Attribute: "attribute access",
    ast.Name: "name",
    ast.Constant: "constant",
})


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of plain names, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _is_singleton(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and (
        node.value is None or node.value is True or node.value is False
    )


_PLAIN_CONSTANT_TYPES = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class _Parser(WhitelistParser):
    NODE_NAMES: ClassVar[Mapping[type, str]] = _NODE_NAMES

    def grammar(self) -> str:
        return _grammar()

    def convert(self, node: ast.expr, depth: int = 0) -> _Node:
        if depth > MAX_DEPTH:
            raise self.reject(node, "expression nested too deeply",
                              f"at most {MAX_DEPTH} levels of nesting")
        if isinstance(node, ast.BoolOp):
            return _BoolOp(isinstance(node.op, ast.And),
                           tuple(self.convert(v, depth + 1) for v in node.values))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return _Not(self.convert(node.operand, depth + 1))
        if isinstance(node, ast.Compare):
            return self.compare(node, depth)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.attribute(node)
        return _Const(self.literal(node, depth))

    def literal(self, node: ast.expr, depth: int) -> object:
        if depth > MAX_DEPTH:
            raise self.reject(node, "literal nested too deeply",
                              f"at most {MAX_DEPTH} levels of nesting")
        if isinstance(node, ast.Constant) and type(node.value) in _PLAIN_CONSTANT_TYPES:
            return node.value
        if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
                and isinstance(node.operand, ast.Constant)):
            number = node.operand.value
            if isinstance(number, (int, float)) and not isinstance(number, bool):
                return -number
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.literal(element, depth + 1) for element in node.elts)
        raise self.reject(node)

    def compare(self, node: ast.Compare, depth: int) -> _Node:
        operands = [node.left, *node.comparators]
        symbols: list[str] = []
        for index, op in enumerate(node.ops):
            symbol = _COMPARE_SYMBOLS[type(op)]
            if symbol in ("is", "is not") and not (
                _is_singleton(operands[index]) or _is_singleton(operands[index + 1])
            ):
                raise self.reject(node, f"'{symbol}' between values",
                                  f"'{symbol}' only against None, True or False "
                                  "(use == or != to compare values)")
            symbols.append(symbol)
        converted = [self.convert(operand, depth + 1) for operand in operands]
        return _Compare(converted[0], tuple(symbols), tuple(converted[1:]))

    def probe(self, node: ast.expr, name: str | None, kind: str) -> Probe:
        if name is None:
            raise self.reject(node, f"{_NODE_NAMES[type(node)]} on a computed value")
        probe = PROBES.get(name)
        if probe is None:
            raise self.reject(node, f"unknown {_NODE_NAMES[type(node)]}",
                              f"one of the probes {describe_probes()}")
        if probe.kind != kind:
            how = "without ()" if probe.kind == "attribute" else "as a call"
            raise self.reject(node, f"{probe.kind} probe used as {kind}",
                              f"{probe.usage} ({probe.kind}, written {how})")
        return probe

    def attribute(self, node: ast.Name | ast.Attribute) -> _Node:
        probe = self.probe(node, _dotted(node), "attribute")
        return _ProbeRef(probe.name)

    def call(self, node: ast.Call) -> _Node:
        probe = self.probe(node, _dotted(node.func), "call")
        if node.keywords or len(node.args) != probe.arity:
            raise self.reject(node, "call with wrong arguments",
                              f"{probe.usage} with exactly {probe.arity} positional argument(s)")
        args: list[str] = []
        for arg in node.args:
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                    and probe.valid_arg(arg.value)):
                raise self.reject(arg, "argument",
                                  f"a valid string literal as argument of {probe.usage}")
            args.append(arg.value)
        return _ProbeRef(probe.name, tuple(args))


def parse_condition(text: str, source: str = "<condition>", key: str = "check") -> Condition:
    """Parse and fully validate ``text``; nothing is evaluated.

    Raises :class:`~kernbench.errors.ConfigError` naming ``source`` and ``key`` for text that
    is not a string, too long, not valid syntax, or uses anything outside the whitelist.
    """
    stripped, tree = parse_expression(text, source, key, "condition", _grammar(), MAX_LENGTH)
    node = _Parser(stripped, source, key).convert(tree.body)
    return Condition(text, node, source, key)
