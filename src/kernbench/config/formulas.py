"""Safe arithmetic for the ``work`` formulas of bench.yaml.

A bench.yaml may declare how much work one call does::

    work:
      flops: "2*m*n*k"
      bytes: "itemsize*(m*k + k*n + m*n)"

The formula text is *data*: it is never handed to ``eval``, ``exec`` or ``compile`` to produce
code.  :func:`parse_formula` parses it with ``ast.parse(text, mode="eval")`` and converts the
syntax tree into a few small node types, accepting only a whitelist:

* int and float literals (not bool, str, bytes, complex or None);
* variable names, looked up in the mapping given to :meth:`Formula.evaluate`;
* ``+ - * / // % **``, unary ``+``/``-`` and parentheses;
* calls of the functions in :data:`FUNCTIONS` with positional arguments only:
  ``min``, ``max``, ``abs``, ``sqrt``, ``log`` (``log(x)`` or ``log(x, base)``), ``log2``,
  ``ceil``, ``floor``, and over a list/tuple ``prod``, ``len``, ``min(seq)``, ``max(seq)``.

A list value (e.g. ``grid_size: [64, 64]``) or a list literal ``[a, b]`` may only appear as
the single argument of ``prod``, ``len``, ``min`` or ``max``; there is no indexing.  Names of
the functions cannot be used as variables.

Anything else raises :class:`~kernbench.errors.ConfigError` at parse time, naming the file, the
key and what is allowed.  Evaluation is bounded so no formula can exhaust time or memory: an
exponent's magnitude is at most :data:`MAX_EXPONENT` and every intermediate result's magnitude
at most :data:`MAX_MAGNITUDE`.  Every failure during :meth:`Formula.evaluate` (unknown variable,
division by zero, a list used as a number, a result out of bounds, ...) also raises
:class:`~kernbench.errors.ConfigError`.
"""

from __future__ import annotations

import ast
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, TypeAlias

from kernbench.config.safe_ast import WhitelistParser, parse_expression
from kernbench.errors import ConfigError

__all__ = [
    "FUNCTIONS",
    "MAX_DEPTH",
    "MAX_EXPONENT",
    "MAX_LENGTH",
    "MAX_MAGNITUDE",
    "Formula",
    "describe_functions",
    "parse_formula",
]

MAX_LENGTH = 2000
"""Longest formula text accepted (characters)."""

MAX_DEPTH = 64
"""Deepest nesting of expressions accepted (a flat sum of n terms nests n - 1 deep)."""

MAX_EXPONENT = 64
"""Largest magnitude of the right operand of ``**``."""

MAX_MAGNITUDE = 1e30
"""Largest magnitude of any literal, variable or intermediate result."""

Scalar: TypeAlias = int | float
Value: TypeAlias = int | float | tuple[int | float, ...]
VariableValue: TypeAlias = float | int | Sequence[float | int]


# --------------------------------------------------------------------------------------------
# Functions
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Function:
    """One whitelisted function: what it takes and how it is written."""

    name: str
    usage: str
    sequence: bool = False
    """True when it takes one list/tuple (``prod``, ``len``); min/max take either form."""
    min_args: int = 1
    max_args: int | None = 1


FUNCTIONS: Mapping[str, _Function] = MappingProxyType({
    f.name: f for f in (
        _Function("min", "min(a, b, ...) or min(list)", min_args=1, max_args=None),
        _Function("max", "max(a, b, ...) or max(list)", min_args=1, max_args=None),
        _Function("abs", "abs(x)"),
        _Function("sqrt", "sqrt(x)"),
        _Function("log", "log(x) or log(x, base)", max_args=2),
        _Function("log2", "log2(x)"),
        _Function("ceil", "ceil(x)"),
        _Function("floor", "floor(x)"),
        _Function("prod", "prod(list)", sequence=True),
        _Function("len", "len(list)", sequence=True),
    )
})
"""The whitelist of callable functions, by name."""

_SEQUENCE_ARG_FUNCTIONS = frozenset({"prod", "len", "min", "max"})


def describe_functions() -> str:
    """One line listing every function as it is written in a formula."""
    return ", ".join(f.usage for f in FUNCTIONS.values())


def _grammar() -> str:
    return (
        "an arithmetic formula using only int/float numbers, variable names, "
        "+ - * / // % **, unary + -, parentheses and the functions "
        f"{describe_functions()}"
    )


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


@dataclass
class _Context:
    """State of one :meth:`Formula.evaluate` call."""

    formula: Formula
    variables: Mapping[str, object]

    def fail(self, detail: str, expected: str | None = None) -> ConfigError:
        f = self.formula
        return ConfigError(f.source, f.key,
                           expected or f"a formula {f.text!r} that evaluates to a finite number",
                           detail)

    def bounded(self, value: Scalar, what: str) -> Scalar:
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(f"{what} is not finite ({value!r})",
                            f"finite values within ±{MAX_MAGNITUDE:g}")
        if abs(value) > MAX_MAGNITUDE:
            raise self.fail(f"{what} has magnitude above {MAX_MAGNITUDE:g}",
                            f"values within ±{MAX_MAGNITUDE:g}")
        return value

    def number(self, raw: object, name: str) -> Scalar:
        if isinstance(raw, bool) or not isinstance(raw, numbers.Real):
            raise self.fail(f"variable {name!r} is {raw!r}",
                            f"variable {name!r} to be a number or a list of numbers")
        value: Scalar = int(raw) if isinstance(raw, numbers.Integral) else float(raw)
        return self.bounded(value, f"variable {name!r}")

    def scalar(self, value: Value, what: str) -> Scalar:
        if isinstance(value, tuple):
            raise self.fail(f"{what} is a list",
                            "a list only as the argument of prod(), len(), min() or max()")
        return value

    def sequence(self, value: Value, what: str) -> tuple[Scalar, ...]:
        if not isinstance(value, tuple):
            raise self.fail(f"{what} is a number, not a list",
                            f"a list or tuple as the argument of {what}")
        return value


class _Node(ABC):
    """A validated node of a formula."""

    @abstractmethod
    def value(self, ctx: _Context) -> Value: ...

    def names(self) -> frozenset[str]:
        return frozenset()


@dataclass(frozen=True)
class _Num(_Node):
    number: Scalar

    def value(self, ctx: _Context) -> Value:
        return self.number


@dataclass(frozen=True)
class _Var(_Node):
    name: str

    def value(self, ctx: _Context) -> Value:
        raw = ctx.variables[self.name]  # presence is checked before evaluation starts
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
            return ctx.number(raw, self.name)
        return tuple(ctx.number(item, f"{self.name}[{i}]") for i, item in enumerate(raw))

    def names(self) -> frozenset[str]:
        return frozenset({self.name})


@dataclass(frozen=True)
class _List(_Node):
    elements: tuple[_Node, ...]

    def value(self, ctx: _Context) -> Value:
        return tuple(ctx.scalar(e.value(ctx), "a list element") for e in self.elements)

    def names(self) -> frozenset[str]:
        return frozenset().union(*(e.names() for e in self.elements))


def _power(base: Scalar, exponent: Scalar) -> Scalar:
    if abs(exponent) > MAX_EXPONENT:
        raise OverflowError(f"exponent {exponent!r} has magnitude above {MAX_EXPONENT}")
    if base == 0 and exponent < 0:
        raise ZeroDivisionError("zero to a negative power")
    if base < 0 and not float(exponent).is_integer():
        raise ValueError("negative number to a fractional power")
    if isinstance(base, int) and isinstance(exponent, float) and exponent.is_integer():
        exponent = int(exponent)
    result: Scalar = base**exponent
    return result


_BINARY_FUNCS: Mapping[type[ast.operator], tuple[str, Callable[[Scalar, Scalar], Scalar]]] = (
    MappingProxyType({
        ast.Add: ("+", lambda a, b: a + b),
        ast.Sub: ("-", lambda a, b: a - b),
        ast.Mult: ("*", lambda a, b: a * b),
        ast.Div: ("/", lambda a, b: a / b),
        ast.FloorDiv: ("//", lambda a, b: a // b),
        ast.Mod: ("%", lambda a, b: a % b),
        ast.Pow: ("**", _power),
    })
)


@dataclass(frozen=True)
class _BinOp(_Node):
    symbol: str
    func: Callable[[Scalar, Scalar], Scalar] = field(repr=False)
    left: _Node
    right: _Node

    def value(self, ctx: _Context) -> Value:
        a = ctx.scalar(self.left.value(ctx), f"the left operand of {self.symbol}")
        b = ctx.scalar(self.right.value(ctx), f"the right operand of {self.symbol}")
        try:
            result = self.func(a, b)
        except (ArithmeticError, ValueError) as exc:
            raise ctx.fail(f"cannot compute {a!r} {self.symbol} {b!r}: {exc}") from exc
        return ctx.bounded(result, f"{a!r} {self.symbol} {b!r}")

    def names(self) -> frozenset[str]:
        return self.left.names() | self.right.names()


@dataclass(frozen=True)
class _Neg(_Node):
    operand: _Node
    negate: bool

    def value(self, ctx: _Context) -> Value:
        number = ctx.scalar(self.operand.value(ctx), "the operand of unary +/-")
        return -number if self.negate else number

    def names(self) -> frozenset[str]:
        return self.operand.names()


def _prod(items: tuple[Scalar, ...]) -> Scalar:
    """``math.prod`` that stops as soon as the running product leaves the bounds."""
    result: Scalar = 1
    for item in items:
        result *= item
        if abs(result) > MAX_MAGNITUDE:
            raise OverflowError(f"the running product exceeds {MAX_MAGNITUDE:g}")
    return result


def _log(x: Scalar, base: Scalar | None = None) -> Scalar:
    return math.log(x) if base is None else math.log(x, base)


_SCALAR_FUNCS: Mapping[str, Callable[..., Scalar]] = MappingProxyType({
    "abs": abs, "sqrt": math.sqrt, "log": _log, "log2": math.log2,
    "ceil": math.ceil, "floor": math.floor, "min": min, "max": max,
})
_SEQUENCE_FUNCS: Mapping[str, Callable[[tuple[Scalar, ...]], Scalar]] = MappingProxyType({
    "prod": _prod, "len": len, "min": min, "max": max,
})


@dataclass(frozen=True)
class _Call(_Node):
    name: str
    args: tuple[_Node, ...]

    def value(self, ctx: _Context) -> Value:
        values = [arg.value(ctx) for arg in self.args]
        if self.name in _SEQUENCE_FUNCS and (FUNCTIONS[self.name].sequence or len(values) == 1):
            items = ctx.sequence(values[0], f"{self.name}()")
            return self.apply(ctx, _SEQUENCE_FUNCS[self.name], items)
        return self.apply(ctx, _SCALAR_FUNCS[self.name],
                          *(ctx.scalar(v, f"an argument of {self.name}()") for v in values))

    def apply(self, ctx: _Context, func: Callable[..., Scalar], *args: object) -> Scalar:
        shown = ", ".join(repr(a) for a in args)
        try:
            result = func(*args)
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise ctx.fail(f"cannot compute {self.name}({shown}): {exc}") from exc
        return ctx.bounded(result, f"{self.name}({shown})")

    def names(self) -> frozenset[str]:
        return frozenset().union(*(arg.names() for arg in self.args))


@dataclass(frozen=True)
class Formula:
    """A parsed, validated work formula; build it with :func:`parse_formula`."""

    text: str
    tree: _Node = field(repr=False)
    source: str = field(default="<formula>", compare=False)
    key: str = field(default="formula", compare=False)

    def variables(self) -> frozenset[str]:
        """Names of the variables the formula reads (function names excluded)."""
        return self.tree.names()

    def evaluate(self, variables: Mapping[str, VariableValue]) -> float:
        """The formula's value for ``variables`` (numbers, or lists of numbers).

        Only the variables the formula uses are read (others may hold anything).  Raises
        :class:`~kernbench.errors.ConfigError` for an unknown variable (listing the available
        ones) and for any failure while computing.
        """
        missing = sorted(self.variables() - set(variables))
        if missing:
            available = ", ".join(sorted(str(k) for k in variables)) or "(none)"
            raise ConfigError(self.source, self.key,
                              f"formula {self.text!r} to use only the available variables: "
                              f"{available}",
                              f"unknown variable(s) {', '.join(missing)}")
        ctx = _Context(self, variables)
        result = self.tree.value(ctx)
        return float(ctx.scalar(result, "the formula's result"))


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
    ast.IfExp: "conditional expression",
    ast.BoolOp: "boolean operator",
    ast.Compare: "comparison",
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
    ast.List: "list",
    ast.Tuple: "tuple",
})


@dataclass(frozen=True)
class _Parser(WhitelistParser):
    NODE_NAMES: ClassVar[Mapping[type, str]] = _NODE_NAMES

    def grammar(self) -> str:
        return _grammar()

    def convert(self, node: ast.expr, depth: int = 0) -> _Node:
        if depth > MAX_DEPTH:
            raise self.reject(node, "expression nested too deeply",
                              f"at most {MAX_DEPTH} levels of nesting")
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.BinOp):
            return self.binary(node, depth)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
            return _Neg(self.convert(node.operand, depth + 1), isinstance(node.op, ast.USub))
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        if isinstance(node, ast.UnaryOp):
            raise self.reject(node, f"unary operator {type(node.op).__name__}")
        if isinstance(node, (ast.List, ast.Tuple)):
            raise self.reject(node, f"{_NODE_NAMES[type(node)]} outside prod/len/min/max",
                              "a list or tuple only as the single argument of "
                              "prod(), len(), min() or max()")
        raise self.reject(node)

    def constant(self, node: ast.Constant) -> _Node:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            what = "string constant" if isinstance(value, str) else "constant"
            raise self.reject(node, what, f"int or float numbers only: {_grammar()}")
        if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
            raise self.reject(node, "number out of range",
                              f"numbers within ±{MAX_MAGNITUDE:g}")
        return _Num(value)

    def name(self, node: ast.Name) -> _Node:
        if node.id in FUNCTIONS:
            raise self.reject(node, "function name used as a value",
                              f"a call such as {FUNCTIONS[node.id].usage}")
        return _Var(node.id)

    def binary(self, node: ast.BinOp, depth: int) -> _Node:
        entry = _BINARY_FUNCS.get(type(node.op))
        if entry is None:
            raise self.reject(node, f"operator {type(node.op).__name__}")
        symbol, func = entry
        left, right = self.convert(node.left, depth + 1), self.convert(node.right, depth + 1)
        if symbol == "**" and not right.names():
            self.check_exponent(node.right, right)
        return _BinOp(symbol, func, left, right)

    def check_exponent(self, node: ast.expr, exponent: _Node) -> None:
        """Reject a constant exponent out of bounds now rather than at evaluation."""
        ctx = _Context(Formula(self.text, exponent, self.source, self.key), {})
        value = exponent.value(ctx)
        if not isinstance(value, tuple) and abs(value) > MAX_EXPONENT:
            raise self.reject(node, "exponent too large",
                              f"exponents of magnitude at most {MAX_EXPONENT}")

    def call(self, node: ast.Call, depth: int) -> _Node:
        if not isinstance(node.func, ast.Name):
            raise self.reject(node, "call of a computed or dotted name",
                              f"one of the functions {describe_functions()}")
        function = FUNCTIONS.get(node.func.id)
        if function is None:
            raise self.reject(node, f"call of unknown function {node.func.id!r}",
                              f"one of the functions {describe_functions()}")
        count = len(node.args)
        if (node.keywords or any(isinstance(a, ast.Starred) for a in node.args)
                or count < function.min_args
                or (function.max_args is not None and count > function.max_args)):
            raise self.reject(node, "call with wrong arguments",
                              f"{function.usage} with positional arguments only")
        takes_sequence = function.name in _SEQUENCE_ARG_FUNCTIONS and count == 1
        return _Call(function.name,
                     tuple(self.argument(a, takes_sequence, depth) for a in node.args))

    def argument(self, node: ast.expr, takes_sequence: bool, depth: int) -> _Node:
        if not takes_sequence:
            return self.convert(node, depth + 1)
        if isinstance(node, (ast.List, ast.Tuple)):
            return _List(tuple(self.convert(e, depth + 2) for e in node.elts))
        if not isinstance(node, ast.Name):
            raise self.reject(node, "argument that is not a list",
                              "a list variable or a list/tuple literal as the single argument "
                              "of prod(), len(), min() or max()")
        return self.convert(node, depth + 1)


def parse_formula(text: str, source: str = "<formula>", key: str = "formula") -> Formula:
    """Parse and fully validate ``text``; nothing is evaluated.

    Raises :class:`~kernbench.errors.ConfigError` naming ``source`` and ``key`` for text that
    is not a string, too long, not valid syntax, or uses anything outside the whitelist.
    """
    stripped, tree = parse_expression(text, source, key, "formula", _grammar(), MAX_LENGTH)
    node = _Parser(stripped, source, key).convert(tree.body)
    return Formula(text, node, source, key)
