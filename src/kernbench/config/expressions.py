"""The one safe evaluator behind kernbench's small expression languages (``skip_conditions``
checks and ``work`` formulas).

An expression in bench.yaml is *data*: it is never handed to ``eval``, ``exec`` or ``compile``
to produce code. :func:`parse_tree` checks the raw text, parses it with ``ast.parse`` in eval
mode and converts the syntax tree into the few node types below. A language is a subclass of
:class:`ExpressionParser` whose ``on_<AstType>`` methods are its allow-list: a Python node type
without such a method is rejected with a :class:`~kernbench.errors.ConfigError` naming the file,
the key and the language's grammar. Evaluation walks the converted tree and asks a
:class:`Context` - the language's semantics - for every name, call and operator, so one walker
serves every language and each language says only what its names and operators mean.
"""

from __future__ import annotations

import ast
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar

from kernbench.errors import ConfigError

__all__ = [
    "NODE_NAMES",
    "Binary",
    "BoolOp",
    "Call",
    "Compare",
    "Const",
    "Context",
    "Expression",
    "ExpressionParser",
    "Node",
    "Not",
    "Ref",
    "Seq",
    "Unary",
    "parse_expression",
    "parse_tree",
]


# --------------------------------------------------------------------------------------------
# Semantics: what a language's names, calls and operators mean
# --------------------------------------------------------------------------------------------


class Context:
    """The semantics of one evaluation. A language overrides the hooks its parser can produce
    nodes for; the defaults are never reached, because its parser rejects everything else."""

    def lookup(self, name: str, args: tuple[str, ...]) -> object:
        raise NotImplementedError(f"name {name!r} is not part of this language")

    def call(self, name: str, values: tuple[object, ...]) -> object:
        raise NotImplementedError(f"call {name}() is not part of this language")

    def operand(self, value: object, what: str) -> object:
        """Check one operand of an operator before it is applied (e.g. a number, not a list)."""
        return value

    def unary(self, symbol: str, value: object) -> object:
        raise NotImplementedError(f"unary {symbol} is not part of this language")

    def binary(self, symbol: str, left: object, right: object) -> object:
        raise NotImplementedError(f"operator {symbol} is not part of this language")

    def item(self, value: object) -> object:
        """Check one element of a list literal."""
        return value

    def truth(self, value: object) -> bool:
        raise NotImplementedError("truth values are not part of this language")

    def compare(self, symbol: str, left: object, right: object) -> bool:
        raise NotImplementedError(f"comparison {symbol} is not part of this language")


# --------------------------------------------------------------------------------------------
# The converted tree and its one walker
# --------------------------------------------------------------------------------------------


class Node(ABC):
    """A validated node of an expression."""

    @abstractmethod
    def value(self, ctx: Context) -> object: ...

    def names(self) -> frozenset[str]:
        """The names (variables, probes) this subtree looks up."""
        return frozenset()


def _names(nodes: tuple[Node, ...]) -> frozenset[str]:
    return frozenset().union(*(node.names() for node in nodes))


@dataclass(frozen=True)
class Const(Node):
    constant: object

    def value(self, ctx: Context) -> object:
        return self.constant


@dataclass(frozen=True)
class Ref(Node):
    """A name the language resolves: a variable, or a probe with string-literal arguments."""

    name: str
    args: tuple[str, ...] = ()

    def value(self, ctx: Context) -> object:
        return ctx.lookup(self.name, self.args)

    def names(self) -> frozenset[str]:
        return frozenset({self.name})


@dataclass(frozen=True)
class Call(Node):
    """A call of one of the language's functions; every argument is evaluated first."""

    name: str
    args: tuple[Node, ...]

    def value(self, ctx: Context) -> object:
        return ctx.call(self.name, tuple(arg.value(ctx) for arg in self.args))

    def names(self) -> frozenset[str]:
        return _names(self.args)


@dataclass(frozen=True)
class Unary(Node):
    symbol: str
    operand: Node

    def value(self, ctx: Context) -> object:
        return ctx.unary(self.symbol, self.operand.value(ctx))

    def names(self) -> frozenset[str]:
        return self.operand.names()


@dataclass(frozen=True)
class Binary(Node):
    """``left <symbol> right``; each operand is checked as soon as it is computed."""

    symbol: str
    left: Node
    right: Node

    def value(self, ctx: Context) -> object:
        a = ctx.operand(self.left.value(ctx), f"the left operand of {self.symbol}")
        b = ctx.operand(self.right.value(ctx), f"the right operand of {self.symbol}")
        return ctx.binary(self.symbol, a, b)

    def names(self) -> frozenset[str]:
        return self.left.names() | self.right.names()


@dataclass(frozen=True)
class Seq(Node):
    """A list or tuple literal whose elements are computed."""

    elements: tuple[Node, ...]

    def value(self, ctx: Context) -> object:
        return tuple(ctx.item(element.value(ctx)) for element in self.elements)

    def names(self) -> frozenset[str]:
        return _names(self.elements)


@dataclass(frozen=True)
class Not(Node):
    operand: Node

    def value(self, ctx: Context) -> object:
        return not ctx.truth(self.operand.value(ctx))

    def names(self) -> frozenset[str]:
        return self.operand.names()


@dataclass(frozen=True)
class BoolOp(Node):
    """``and`` / ``or`` with Python's short-circuit semantics (returns the deciding operand)."""

    is_and: bool
    operands: tuple[Node, ...]

    def value(self, ctx: Context) -> object:
        for operand in self.operands[:-1]:
            result = operand.value(ctx)
            if ctx.truth(result) != self.is_and:
                return result
        return self.operands[-1].value(ctx)

    def names(self) -> frozenset[str]:
        return _names(self.operands)


@dataclass(frozen=True)
class Compare(Node):
    """A comparison chain ``a < b <= c``: right operands are evaluated only while needed."""

    left: Node
    symbols: tuple[str, ...]
    rights: tuple[Node, ...]

    def value(self, ctx: Context) -> object:
        left = self.left.value(ctx)
        for symbol, right_node in zip(self.symbols, self.rights, strict=True):
            right = right_node.value(ctx)
            if not ctx.compare(symbol, left, right):
                return False
            left = right
        return True

    def names(self) -> frozenset[str]:
        return self.left.names() | _names(self.rights)


@dataclass(frozen=True)
class Expression:
    """A parsed, validated expression: its text, its tree and where it came from."""

    text: str
    tree: Node = field(repr=False)
    source: str = field(default="<expression>", compare=False)
    key: str = field(default="expression", compare=False)


# --------------------------------------------------------------------------------------------
# Parsing: the front end and the allow-list walker
# --------------------------------------------------------------------------------------------


def parse_expression(text: object, source: str, key: str, what: str, grammar: str,
                     max_length: int) -> tuple[str, ast.Expression]:
    """(stripped text, tree) of `text`, or a ConfigError naming `source` and `key`.

    `what` names the language in messages ("condition", "formula"); `grammar` says what is
    allowed. Nothing is compiled or evaluated here."""
    if not isinstance(text, str):
        raise ConfigError(source, key, f"a {what} string", text)
    if len(text) > max_length:
        raise ConfigError(source, key, f"a {what} of at most {max_length} characters",
                          f"{len(text)} characters")
    stripped = text.strip()  # leading blanks are an IndentationError in eval mode
    if not stripped:
        raise ConfigError(source, key, f"a non-empty {what}: {grammar}", text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. invalid escape sequences in string literals
            return stripped, ast.parse(stripped, filename=source, mode="eval")
    except SyntaxError as exc:
        got = f"syntax error: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        got = f"unparsable text: {type(exc).__name__}"
    raise ConfigError(source, key, f"a valid expression: {grammar}", got)


NODE_NAMES: Mapping[type[ast.AST], str] = MappingProxyType({
    ast.Subscript: "subscript", ast.Slice: "slice", ast.Lambda: "lambda",
    ast.ListComp: "comprehension", ast.SetComp: "comprehension", ast.DictComp: "comprehension",
    ast.GeneratorExp: "generator expression", ast.JoinedStr: "f-string",
    ast.FormattedValue: "f-string", ast.NamedExpr: "assignment expression (:=)",
    ast.BinOp: "operator", ast.UnaryOp: "unary operator", ast.IfExp: "conditional expression",
    ast.BoolOp: "boolean operator", ast.Compare: "comparison", ast.Dict: "dict", ast.Set: "set",
    ast.Starred: "starred expression", ast.Await: "await", ast.Yield: "yield",
    ast.YieldFrom: "yield", ast.Call: "call", ast.Attribute: "attribute access",
    ast.Name: "name", ast.Constant: "constant", ast.List: "list", ast.Tuple: "tuple",
})
"""How a rejected construct is named in messages."""


@dataclass(frozen=True)
class ExpressionParser:
    """Walks a Python syntax tree over one language's allow-list.

    A subclass sets `WHAT`, `MAX_LENGTH`, `MAX_DEPTH` and :meth:`grammar`, and accepts a Python
    node type by defining ``on_<TypeName>(node, depth)``; every other node type is rejected."""

    text: str
    source: str
    key: str

    WHAT: ClassVar[str] = "expression"
    MAX_LENGTH: ClassVar[int] = 2000
    MAX_DEPTH: ClassVar[int] = 40

    @classmethod
    def grammar(cls) -> str:
        raise NotImplementedError

    def convert(self, node: ast.expr, depth: int = 0) -> Node:
        if depth > self.MAX_DEPTH:
            raise self.reject(node, "expression nested too deeply",
                              f"at most {self.MAX_DEPTH} levels of nesting")
        accept: Callable[[ast.expr, int], Node] | None = getattr(
            self, f"on_{type(node).__name__}", None)
        if accept is None:
            raise self.reject(node)
        return accept(node, depth)

    def reject(self, node: ast.AST, what: str | None = None,
               expected: str | None = None) -> ConfigError:
        label = what or NODE_NAMES.get(type(node), type(node).__name__)
        return ConfigError(self.source, self.key, expected or self.grammar(),
                           f"{label} `{self.snippet(node)}`")

    def snippet(self, node: ast.AST) -> str:
        text = ast.get_source_segment(self.text, node) or ast.unparse(node)
        return text if len(text) <= 80 else text[:77] + "..."


def parse_tree(parser: type[ExpressionParser], text: object, source: str, key: str) -> Node:
    """Parse and fully validate `text` in the language of `parser`; nothing is evaluated."""
    stripped, tree = parse_expression(text, source, key, parser.WHAT, parser.grammar(),
                                      parser.MAX_LENGTH)
    return parser(stripped, source, key).convert(tree.body)
