"""Tests for kernbench.config.formulas: the safe evaluator of bench.yaml work formulas."""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.config import formulas
from kernbench.config.formulas import (
    FUNCTIONS,
    MAX_EXPONENT,
    MAX_LENGTH,
    MAX_MAGNITUDE,
    Formula,
    describe_functions,
    parse_formula,
)
from kernbench.errors import ConfigError
from support.no_execution import called_builtins, forbid_code_execution, hostile_texts

SOURCE = "kernels/matmul/bench.yaml"
KEY = "work.flops"


def value(text: str, **variables: Any) -> float:
    return parse_formula(text, SOURCE, KEY).evaluate(variables)


def rejected(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_formula(text, SOURCE, KEY)
    return info.value


def failed(text: str, **variables: Any) -> ConfigError:
    formula = parse_formula(text, SOURCE, KEY)
    with pytest.raises(ConfigError) as info:
        formula.evaluate(variables)
    return info.value


# ---------------------------------------------------------------------------- arithmetic


@pytest.mark.parametrize(("text", "expected"), [
    ("1 + 2 * 3", 7.0),
    ("(1 + 2) * 3", 9.0),
    ("2 ** 3 ** 2", 512.0),          # ** is right-associative
    ("-2 ** 2", -4.0),               # unary minus binds looser than **
    ("(-2) ** 2", 4.0),
    ("2 ** -1", 0.5),
    ("10 - 4 - 3", 3.0),             # left-associative
    ("7 / 2", 3.5),
    ("7 // 2", 3.0),
    ("-7 // 2", -4.0),
    ("7 % 3", 1.0),
    ("+5", 5.0),
    ("1.5e3", 1500.0),
    ("2 * 3 + 4 * 5 - 6 / 3", 24.0),
])
def test_arithmetic_and_precedence(text: str, expected: float) -> None:
    assert value(text) == expected


def test_result_is_a_float() -> None:
    result = value("2 * 3")
    assert isinstance(result, float) and result == 6.0


def test_matmul_work_formulas() -> None:
    sizes = {"m": 128, "n": 256, "k": 512, "itemsize": 4}
    assert value("2*m*n*k", **sizes) == 2 * 128 * 256 * 512
    assert value("itemsize*(m*k + k*n + m*n)", **sizes) == 4 * (128 * 512 + 512 * 256 + 128 * 256)


def test_large_integer_products_are_exact() -> None:
    # 2*m*n*k with m = n = k = 2**20 is 2**61: exact with ints, beyond float's 53-bit mantissa.
    assert value("2*m*n*k - 2**61 + 1", m=2**20, n=2**20, k=2**20) == 1.0


def test_functions() -> None:
    assert value("min(3, 1, 2) + max(3, 1, 2)") == 4.0
    assert value("abs(-3.5)") == 3.5
    assert value("sqrt(16)") == 4.0
    assert value("log2(1024)") == 10.0
    assert value("log(8, 2)") == pytest.approx(3.0)
    assert value("log(e)", e=math.e) == pytest.approx(1.0)
    assert value("ceil(2.1) + floor(2.9)") == 5.0


def test_lists_through_prod_len_min_max() -> None:
    grid = [64, 32, 2]
    assert value("prod(grid)", grid=grid) == 4096.0
    assert value("len(grid)", grid=grid) == 3.0
    assert value("min(grid) + max(grid)", grid=grid) == 66.0
    assert value("prod(grid) * threads", grid=(4, 4), threads=256) == 4096.0
    assert value("prod([m, n, 2])", m=3, n=5) == 30.0
    assert value("prod((2, 3))") == 6.0
    assert value("prod([])") == 1.0
    assert value("len([])") == 0.0


def test_variables_lists_only_variable_names() -> None:
    formula = parse_formula("itemsize*(m*k + k*n) + prod(grid) + max(a, b)")
    assert formula.variables() == frozenset({"itemsize", "m", "k", "n", "grid", "a", "b"})
    assert parse_formula("2 + 3").variables() == frozenset()


def test_numpy_and_fraction_values_are_numbers() -> None:
    assert value("m * n", m=np.int64(3), n=np.float32(2.5)) == 7.5
    assert value("x * 4", x=Fraction(1, 4)) == 1.0


def test_unused_variables_may_hold_anything() -> None:
    assert value("2 * m", m=3, dtype="float32", shape=None, nested=[[1]]) == 6.0


def test_formula_keeps_text_and_equality() -> None:
    a, b = parse_formula("2*m", SOURCE, KEY), parse_formula("2*m")
    assert a.text == "2*m" and a.source == SOURCE and a.key == KEY
    assert a == b  # source/key are not part of equality
    assert a != parse_formula("3*m")


# ---------------------------------------------------------------------------- parse-time rejection


@pytest.mark.parametrize(("text", "label"), [
    ("a.b", "attribute access"),
    ("math.sqrt(4)", "dotted name"),
    ("os.system('x')", "dotted name"),
    ("foo(1)", "unknown function 'foo'"),
    ("__import__('os')", "unknown function '__import__'"),
    ("eval('1')", "unknown function 'eval'"),
    ("x[0]", "subscript"),
    ("[1, 2][0]", "subscript"),
    ("lambda: 1", "lambda"),
    ("[i for i in x]", "comprehension"),
    ("{i for i in x}", "comprehension"),
    ("(i for i in x)", "generator expression"),
    ("'abc'", "string constant"),
    ("b'abc'", "constant"),
    ("1j", "constant"),
    ("True", "constant"),
    ("None", "constant"),
    ("...", "constant"),
    ("f'{m}'", "f-string"),
    ("(y := 3)", "assignment expression"),
    ("a if b else c", "conditional expression"),
    ("a < b", "comparison"),
    ("a and b", "boolean operator"),
    ("not a", "unary operator Not"),
    ("~a", "unary operator Invert"),
    ("a @ b", "operator MatMult"),
    ("a << 2", "operator LShift"),
    ("a | b", "operator BitOr"),
    ("{1: 2}", "dict"),
    ("{1, 2}", "set"),
    ("[1, 2]", "list outside prod/len/min/max"),
    ("(1, 2)", "tuple outside prod/len/min/max"),
    ("m + [1]", "list outside prod/len/min/max"),
    ("max([1], [2])", "list outside prod/len/min/max"),
    ("sqrt", "function name used as a value"),
    ("prod + 1", "function name used as a value"),
    ("prod(2*m)", "argument that is not a list"),
    ("len(3)", "argument that is not a list"),
    ("min(3)", "argument that is not a list"),
    ("sqrt(x=4)", "call with wrong arguments"),
    ("sqrt(1, 2)", "call with wrong arguments"),
    ("sqrt()", "call with wrong arguments"),
    ("log(1, 2, 3)", "call with wrong arguments"),
    ("prod(a, b)", "call with wrong arguments"),
    ("max(*grid)", "call with wrong arguments"),
    ("sqrt(4)(2)", "call of a computed or dotted name"),
    ("1e31", "number out of range"),
    ("1e400", "number out of range"),
    ("2 ** 65", "exponent too large"),
    ("2 ** -65", "exponent too large"),
    ("m ** (8 * 9)", "exponent too large"),
    ("await x", "await"),
])
def test_rejected_constructs(text: str, label: str) -> None:
    error = rejected(text)
    message = str(error)
    assert message.startswith(f"{SOURCE}: key '{KEY}': expected ")
    assert label in message
    assert error.source == SOURCE and error.key == KEY


def test_rejection_message_names_the_whitelist() -> None:
    message = str(rejected("a.b"))
    assert describe_functions() in message
    assert "+ - * / // % **" in message
    assert "`a.b`" in message


@pytest.mark.parametrize("text", ["", "   ", "2 +", "(1", "m n", "1 = 2", "import os",
                                  "x = 1", "def f(): pass", "\x00"])
def test_syntax_errors_and_statements(text: str) -> None:
    error = rejected(text)
    assert SOURCE in str(error) and KEY in str(error)


def test_non_string_text() -> None:
    with pytest.raises(ConfigError, match="a formula string"):
        parse_formula(42, SOURCE, KEY)  # type: ignore[arg-type]


def test_too_long_text() -> None:
    with pytest.raises(ConfigError, match=f"at most {MAX_LENGTH} characters"):
        parse_formula("1+" * MAX_LENGTH + "1")


def test_deep_nesting_is_rejected() -> None:
    with pytest.raises(ConfigError, match="nested too deeply"):
        parse_formula("(" * 90 + "1" + ")" * 90 + " + " + "-" * 90 + "1")
    with pytest.raises(ConfigError, match="nested too deeply"):
        parse_formula("+".join(["m"] * 200))


def test_leading_blanks_are_fine() -> None:
    assert value("   2 * 3\n") == 6.0


def test_huge_exponent_is_rejected_quickly() -> None:
    start = time.perf_counter()
    error = rejected("10**10**10")
    assert "exponent too large" in str(error)
    with pytest.raises(ConfigError, match="magnitude above 64"):
        parse_formula("x ** y").evaluate({"x": 10, "y": 10**10})
    with pytest.raises(ConfigError):
        parse_formula("9 ** 9 ** 9 ** 9")
    assert time.perf_counter() - start < 1.0


# ---------------------------------------------------------------------------- evaluation errors


def test_unknown_variable_lists_the_available_ones() -> None:
    error = failed("2*m*q*z", m=1, n=2, k=3)
    message = str(error)
    assert "unknown variable(s) q, z" in message
    assert "available variables: k, m, n" in message
    assert message.startswith(f"{SOURCE}: key '{KEY}'")


def test_unknown_variable_with_no_variables_at_all() -> None:
    assert "available variables: (none)" in str(failed("m"))


@pytest.mark.parametrize(("text", "variables", "detail"), [
    ("1 / 0", {}, "division by zero"),
    ("1 // m", {"m": 0}, "cannot compute 1 // 0"),
    ("m % 0", {"m": 3}, "cannot compute 3 % 0"),
    ("0 ** -1", {}, "zero to a negative power"),
    ("(-8) ** 0.5", {}, "negative number to a fractional power"),
    ("sqrt(-1)", {}, "cannot compute sqrt(-1)"),
    ("log(0)", {}, "cannot compute log(0)"),
    ("log(8, 1)", {}, "cannot compute log(8, 1)"),
    ("min([])", {}, "cannot compute min(())"),
    ("m + grid", {"m": 1, "grid": [1, 2]}, "the right operand of + is a list"),
    ("-grid", {"grid": [1, 2]}, "operand of unary +/- is a list"),
    ("sqrt(grid)", {"grid": [4]}, "an argument of sqrt() is a list"),
    ("grid", {"grid": [4]}, "the formula's result is a list"),
    ("prod(m)", {"m": 4}, "prod() is a number, not a list"),
    ("prod([grid])", {"grid": [4]}, "a list element is a list"),
    ("m * 2", {"m": "64"}, "variable 'm' is '64'"),
    ("m * 2", {"m": True}, "variable 'm' is True"),
    ("m * 2", {"m": None}, "variable 'm' is None"),
    ("m * 2", {"m": float("nan")}, "variable 'm' is not finite"),
    ("m * 2", {"m": float("inf")}, "variable 'm' is not finite"),
    ("m * 2", {"m": 10**31}, "variable 'm' has magnitude above"),
    ("prod(g)", {"g": [1, [2]]}, "variable 'g[1]' is [2]"),
    ("prod(g)", {"g": np.zeros(2)}, "variable 'g' is"),
    ("m * m", {"m": 10**16}, "has magnitude above 1e+30"),
    ("m ** 2", {"m": 1e16}, "has magnitude above 1e+30"),
    ("1 / m", {"m": 1e-31}, "has magnitude above 1e+30"),
    ("prod(g)", {"g": [1e20] * 3}, "the running product exceeds"),
    ("m ** 64", {"m": 1e30}, "cannot compute"),
])
def test_evaluation_errors(text: str, variables: dict[str, Any], detail: str) -> None:
    error = failed(text, **variables)
    assert detail in str(error)
    assert error.source == SOURCE and error.key == KEY


def test_bounds_allow_realistic_work_counts() -> None:
    assert value("2*m*n*k", m=65536, n=65536, k=65536) == 2.0 * 65536**3
    assert value("m ** 64", m=2) == 2.0**64
    assert MAX_MAGNITUDE >= 1e30 and MAX_EXPONENT == 64


def test_every_function_is_documented() -> None:
    line = describe_functions()
    for function in FUNCTIONS.values():
        assert function.usage in line


# ---------------------------------------------------------------------------- no code execution


def test_module_source_has_no_eval_exec_or_compile_calls() -> None:
    assert not called_builtins(formulas.__file__) & {"eval", "exec", "compile", "__import__"}


TOKENS = [
    "m", "n", "k", "grid", "itemsize", "0", "1", "2", "64", "65", "1.5", "1e30", "-", "+", "*",
    "/", "//", "%", "**", "(", ")", "[", "]", ",", "prod", "len", "min", "max", "sqrt", "log",
    "log2", "ceil", "floor", "abs", "'s'", "__import__('os')", ".real", "lambda:", "for x in",
    "if", "else", "==", "<", "and", "not", "@", "~", "{", "}", ":=", "f'{m}'", "True", "None",
    "10**10**10", "x",
]
VARIABLES: dict[str, Any] = {"m": 3, "n": 0, "k": 2.5, "grid": [4, 8], "itemsize": 4}

texts = hostile_texts(TOKENS, max_tokens=16)


@settings(max_examples=500, deadline=None)
@given(text=texts)
def test_arbitrary_text_gives_a_formula_or_config_error_only(text: str) -> None:
    formula: Formula | None = None
    result: float | None = None
    errors: list[ConfigError] = []
    with forbid_code_execution(text):
        try:
            formula = parse_formula(text, SOURCE, KEY)
            result = formula.evaluate(VARIABLES)
        except ConfigError as exc:
            errors.append(exc)
    if errors:
        message = str(errors[0])
        assert SOURCE in message and KEY in message and "expected" in message
    else:
        assert formula is not None and isinstance(result, float)
        assert math.isfinite(result) and abs(result) <= MAX_MAGNITUDE
        assert formula.variables() <= set(VARIABLES)


@settings(max_examples=300, deadline=None)
@given(a=st.integers(-10**6, 10**6), b=st.integers(-10**6, 10**6),
       c=st.integers(1, 1000))
def test_matches_python_arithmetic_on_integers(a: int, b: int, c: int) -> None:
    text = "a * b + c - (a - b) // c + a % c + abs(a) ** 2"
    expected = a * b + c - (a - b) // c + a % c + abs(a) ** 2
    assert value(text, a=a, b=b, c=c) == float(expected)
