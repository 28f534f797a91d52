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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, TypeAlias

from kernbench.config.expressions import (
    NODE_NAMES,
    Binary,
    Call,
    Const,
    Context,
    Expression,
    ExpressionParser,
    Node,
    Ref,
    Seq,
    Unary,
    parse_tree,
)
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


_BINARY_SYMBOLS: Mapping[type[ast.operator], str] = MappingProxyType({
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Pow: "**",
})
_BINARY_FUNCS: Mapping[str, Callable[[Scalar, Scalar], Scalar]] = MappingProxyType({
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "**": _power,
})


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


@dataclass
class _FormulaContext(Context):
    """The arithmetic of one :meth:`Formula.evaluate` call: bounded numbers, lists only where
    a function takes one, every failure a ConfigError naming the formula."""

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

    def operand(self, value: object, what: str) -> Scalar:
        if isinstance(value, tuple):
            raise self.fail(f"{what} is a list",
                            "a list only as the argument of prod(), len(), min() or max()")
        assert isinstance(value, (int, float))  # the parser builds nothing else
        return value

    def sequence(self, value: object, what: str) -> tuple[Scalar, ...]:
        if not isinstance(value, tuple):
            raise self.fail(f"{what} is a number, not a list",
                            f"a list or tuple as the argument of {what}")
        return value

    def lookup(self, name: str, args: tuple[str, ...]) -> Value:
        raw = self.variables[name]  # presence is checked before evaluation starts
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
            return self.number(raw, name)
        return tuple(self.number(item, f"{name}[{i}]") for i, item in enumerate(raw))

    def item(self, value: object) -> Scalar:
        return self.operand(value, "a list element")

    def unary(self, symbol: str, value: object) -> Scalar:
        number = self.operand(value, "the operand of unary +/-")
        return -number if symbol == "-" else number

    def binary(self, symbol: str, left: object, right: object) -> Scalar:
        a, b = self.operand(left, "left operand"), self.operand(right, "right operand")
        try:
            result = _BINARY_FUNCS[symbol](a, b)
        except (ArithmeticError, ValueError) as exc:
            raise self.fail(f"cannot compute {a!r} {symbol} {b!r}: {exc}") from exc
        return self.bounded(result, f"{a!r} {symbol} {b!r}")

    def call(self, name: str, values: tuple[object, ...]) -> Scalar:
        if name in _SEQUENCE_FUNCS and (FUNCTIONS[name].sequence or len(values) == 1):
            items = self.sequence(values[0], f"{name}()")
            return self.apply(name, _SEQUENCE_FUNCS[name], items)
        return self.apply(name, _SCALAR_FUNCS[name],
                          *(self.operand(v, f"an argument of {name}()") for v in values))

    def apply(self, name: str, func: Callable[..., Scalar], *args: object) -> Scalar:
        shown = ", ".join(repr(a) for a in args)
        try:
            result = func(*args)
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise self.fail(f"cannot compute {name}({shown}): {exc}") from exc
        return self.bounded(result, f"{name}({shown})")


@dataclass(frozen=True)
class Formula(Expression):
    """A parsed, validated work formula; build it with :func:`parse_formula`."""

    source: str = field(default="<formula>", compare=False)
    key: str = field(default="formula", compare=False)

    def variables(self) -> frozenset[str]:
        """Names of the variables the formula reads (function names excluded)."""
        return self.tree.names()

    def check_variables(self, available: Iterable[str]) -> None:
        """ConfigError, listing `available`, when the formula reads a variable not in it."""
        names = {str(name) for name in available}
        if missing := sorted(self.variables() - names):
            raise ConfigError(self.source, self.key, f"formula {self.text!r} to use only the "
                              f"available variables: {', '.join(sorted(names)) or '(none)'}",
                              f"unknown variable(s) {', '.join(missing)}")

    def evaluate(self, variables: Mapping[str, VariableValue]) -> float:
        """The formula's value for ``variables`` (numbers, or lists of numbers; only those it
        uses are read). Raises :class:`~kernbench.errors.ConfigError` for an unknown variable
        (:meth:`check_variables`) and for any failure while computing."""
        self.check_variables(variables)
        ctx = _FormulaContext(self, variables)
        return float(ctx.operand(self.tree.value(ctx), "the formula's result"))


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Parser(ExpressionParser):
    """The formula language: each ``on_*`` method accepts one Python node type."""

    WHAT: ClassVar[str] = "formula"
    MAX_LENGTH: ClassVar[int] = MAX_LENGTH
    MAX_DEPTH: ClassVar[int] = MAX_DEPTH

    @classmethod
    def grammar(cls) -> str:
        return _grammar()

    def on_Constant(self, node: ast.Constant, depth: int) -> Node:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            what = "string constant" if isinstance(value, str) else "constant"
            raise self.reject(node, what, f"int or float numbers only: {_grammar()}")
        if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
            raise self.reject(node, "number out of range",
                              f"numbers within ±{MAX_MAGNITUDE:g}")
        return Const(value)

    def on_Name(self, node: ast.Name, depth: int) -> Node:
        if node.id in FUNCTIONS:
            raise self.reject(node, "function name used as a value",
                              f"a call such as {FUNCTIONS[node.id].usage}")
        return Ref(node.id)

    def on_UnaryOp(self, node: ast.UnaryOp, depth: int) -> Node:
        if not isinstance(node.op, (ast.UAdd, ast.USub)):
            raise self.reject(node, f"unary operator {type(node.op).__name__}")
        symbol = "-" if isinstance(node.op, ast.USub) else "+"
        return Unary(symbol, self.convert(node.operand, depth + 1))

    def on_List(self, node: ast.List | ast.Tuple, depth: int) -> Node:
        raise self.reject(node, f"{NODE_NAMES[type(node)]} outside prod/len/min/max",
                          "a list or tuple only as the single argument of "
                          "prod(), len(), min() or max()")

    on_Tuple = on_List

    def on_BinOp(self, node: ast.BinOp, depth: int) -> Node:
        symbol = _BINARY_SYMBOLS.get(type(node.op))
        if symbol is None:
            raise self.reject(node, f"operator {type(node.op).__name__}")
        left, right = self.convert(node.left, depth + 1), self.convert(node.right, depth + 1)
        if symbol == "**" and not right.names():
            self.check_exponent(node.right, right)
        return Binary(symbol, left, right)

    def check_exponent(self, node: ast.expr, exponent: Node) -> None:
        """Reject a constant exponent out of bounds now rather than at evaluation."""
        ctx = _FormulaContext(Formula(self.text, exponent, self.source, self.key), {})
        value = exponent.value(ctx)
        if not isinstance(value, tuple) and abs(ctx.operand(value, "the exponent")) > MAX_EXPONENT:
            raise self.reject(node, "exponent too large",
                              f"exponents of magnitude at most {MAX_EXPONENT}")

    def on_Call(self, node: ast.Call, depth: int) -> Node:
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
        return Call(function.name,
                    tuple(self.argument(a, takes_sequence, depth) for a in node.args))

    def argument(self, node: ast.expr, takes_sequence: bool, depth: int) -> Node:
        if not takes_sequence:
            return self.convert(node, depth + 1)
        if isinstance(node, (ast.List, ast.Tuple)):
            return Seq(tuple(self.convert(e, depth + 2) for e in node.elts))
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
    return Formula(text, parse_tree(_Parser, text, source, key), source, key)
