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
* the probes in :data:`kernbench.config.probes.PROBES`, e.g. ``torch.cuda.is_available()``,
  ``module_available("cupy")`` or ``sys.version_info``, each called with exactly its arity
  and string-literal arguments.

Anything else raises :class:`~kernbench.errors.ConfigError` at parse time, naming the file, the
key and what is allowed.  Probes run lazily, only when :meth:`Condition.evaluate` reaches them,
and never raise (see :mod:`kernbench.config.probes`).  Errors at evaluation time (e.g.
``None < 1``) raise :class:`ConditionError`.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from kernbench.config.expressions import (
    NODE_NAMES,
    BoolOp,
    Compare,
    Const,
    Context,
    Expression,
    ExpressionParser,
    Node,
    Not,
    Ref,
    parse_tree,
)
from kernbench.config.probes import PROBES, Probe, describe_probes
from kernbench.errors import KernbenchError

__all__ = ["Condition", "ConditionError", "parse_condition"]

MAX_LENGTH = 2000
"""Longest condition text accepted (characters)."""

MAX_DEPTH = 40
"""Deepest nesting of expressions accepted."""


class ConditionError(KernbenchError):
    """A condition that parsed fine could not be evaluated (e.g. it compares ``None < 1``)."""


def _grammar() -> str:
    return (
        "a condition using only not/and/or, parentheses, comparisons "
        "(== != < <= > >= in, not in, is, is not), constants (str, int, float, bool, None), "
        f"tuples/lists of constants and the probes {describe_probes()}"
    )


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


def _contains(item: Any, container: Any) -> bool:
    return item in container


def _not_contains(item: Any, container: Any) -> bool:
    return item not in container


_COMPARE_FUNCS: Mapping[str, Callable[[Any, Any], object]] = MappingProxyType({
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge, "in": _contains, "not in": _not_contains,
    "is": operator.is_, "is not": operator.is_not,
})

_COMPARE_SYMBOLS: Mapping[type[ast.cmpop], str] = MappingProxyType({
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
})


@dataclass
class _ConditionContext(Context):
    """State of one :meth:`Condition.evaluate` call: probe overrides and a per-call cache."""

    condition: Condition
    overrides: Mapping[str, Callable[..., object]]
    cache: dict[tuple[str, tuple[str, ...]], object] = field(default_factory=dict)

    def fail(self, detail: str) -> ConditionError:
        c = self.condition
        return ConditionError(
            f"{c.source}: key '{c.key}': cannot evaluate condition {c.text!r}: {detail}"
        )

    def lookup(self, name: str, args: tuple[str, ...]) -> object:
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


@dataclass(frozen=True)
class Condition(Expression):
    """A parsed, validated condition; build it with :func:`parse_condition`."""

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
        ctx = _ConditionContext(self, overrides)
        return ctx.truth(self.tree.value(ctx))

    def probe_names(self) -> frozenset[str]:
        """Dotted names (without ``()``) of the probes this condition refers to."""
        return self.tree.names()


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


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
class _Parser(ExpressionParser):
    """The condition language: each ``on_*`` method accepts one Python node type."""

    WHAT: ClassVar[str] = "condition"
    MAX_LENGTH: ClassVar[int] = MAX_LENGTH
    MAX_DEPTH: ClassVar[int] = MAX_DEPTH

    @classmethod
    def grammar(cls) -> str:
        return _grammar()

    def on_BoolOp(self, node: ast.BoolOp, depth: int) -> Node:
        return BoolOp(isinstance(node.op, ast.And),
                      tuple(self.convert(v, depth + 1) for v in node.values))

    def on_UnaryOp(self, node: ast.UnaryOp, depth: int) -> Node:
        if isinstance(node.op, ast.Not):
            return Not(self.convert(node.operand, depth + 1))
        return self.on_Constant(node, depth)

    def on_Constant(self, node: ast.expr, depth: int) -> Node:
        """Constants, negative numbers and tuples/lists of constants."""
        return Const(self.literal(node, depth))

    on_Tuple = on_List = on_Constant

    def on_Name(self, node: ast.Name | ast.Attribute, depth: int) -> Node:
        return Ref(self.probe(node, _dotted(node), "attribute").name)

    on_Attribute = on_Name

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

    def on_Compare(self, node: ast.Compare, depth: int) -> Node:
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
        return Compare(converted[0], tuple(symbols), tuple(converted[1:]))

    def probe(self, node: ast.expr, name: str | None, kind: str) -> Probe:
        if name is None:
            raise self.reject(node, f"{NODE_NAMES[type(node)]} on a computed value")
        probe = PROBES.get(name)
        if probe is None:
            raise self.reject(node, f"unknown {NODE_NAMES[type(node)]}",
                              f"one of the probes {describe_probes()}")
        if probe.kind != kind:
            how = "without ()" if probe.kind == "attribute" else "as a call"
            raise self.reject(node, f"{probe.kind} probe used as {kind}",
                              f"{probe.usage} ({probe.kind}, written {how})")
        return probe

    def on_Call(self, node: ast.Call, depth: int) -> Node:
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
        return Ref(probe.name, tuple(args))


def parse_condition(text: str, source: str = "<condition>", key: str = "check") -> Condition:
    """Parse and fully validate ``text``; nothing is evaluated.

    Raises :class:`~kernbench.errors.ConfigError` naming ``source`` and ``key`` for text that
    is not a string, too long, not valid syntax, or uses anything outside the whitelist.
    """
    return Condition(text, parse_tree(_Parser, text, source, key), source, key)
