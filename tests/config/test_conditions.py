"""Tests for kernbench.config.conditions: the safe skip-condition evaluator."""

from __future__ import annotations

import ast
import builtins
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings

from kernbench.config import conditions, expressions, probes
from kernbench.config.conditions import Condition, ConditionError, parse_condition
from kernbench.config.probes import PROBES, describe_probes
from kernbench.errors import ConfigError, KernbenchError
from support.gpus import cuda_available
from support.no_execution import called_builtins, forbid_code_execution, hostile_texts

SOURCE = "bench.yaml"
KEY = "skip_conditions[0].check"


def const(value: object) -> Callable[..., object]:
    return lambda *args: value


class Recorder:
    """Fake probes that remember every call (name, args)."""

    def __init__(self, **values: object) -> None:
        self.values = values
        self.calls: list[tuple[str, tuple[object, ...]]] = []

    def probe(self, name: str) -> Callable[..., object]:
        def fake(*args: object) -> object:
            self.calls.append((name, args))
            return self.values[name]

        return fake

    def mapping(self) -> dict[str, Callable[..., object]]:
        return {name: self.probe(name) for name in self.values}

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


def check(text: str, **fakes: object) -> bool:
    probes = {name.replace("__", "."): const(value) for name, value in fakes.items()}
    return parse_condition(text, SOURCE, KEY).evaluate(probes)


# ---------------------------------------------------------------------------- seed form


@pytest.mark.parametrize(("available", "expected"), [(True, False), (False, True)])
def test_seed_condition_both_ways(available: bool, expected: bool) -> None:
    cond = parse_condition("not torch.cuda.is_available()", SOURCE, KEY)
    assert cond.evaluate({"torch.cuda.is_available": const(available)}) is expected
    assert cond.probe_names() == frozenset({"torch.cuda.is_available"})
    assert cond.text == "not torch.cuda.is_available()"


def test_condition_is_frozen_and_compares_by_text() -> None:
    a = parse_condition("1 < 2", "a.yaml", "k")
    b = parse_condition("1 < 2", "b.yaml", "other")
    assert a == b
    assert isinstance(a, Condition)
    with pytest.raises(AttributeError):
        a.text = "x"  # type: ignore[misc]


# ---------------------------------------------------------------------------- boolean logic


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("True and False", False),
        ("True or False", True),
        ("not True or True", True),  # (not True) or True
        ("not (True or True)", False),
        ("False and False or True", True),  # (False and False) or True
        ("False and (False or True)", False),
        ("True or True and False", True),  # True or (True and False)
        ("(True or True) and False", False),
        ("not not True", True),
        ("not 1 == 2", True),  # not binds looser than ==
        ("0 or ''", False),
        ("'x' and 3", True),
        ("None", False),
        ("()", False),
        ("(1,)", True),
    ],
)
def test_boolean_logic_and_precedence(text: str, expected: bool) -> None:
    assert check(text) is expected


def test_and_or_with_probes() -> None:
    text = "torch.cuda.is_available() and torch.cuda.device_count() >= 2"
    assert check(text, torch__cuda__is_available=True, torch__cuda__device_count=2)
    assert not check(text, torch__cuda__is_available=True, torch__cuda__device_count=1)
    assert not check(text, torch__cuda__is_available=False, torch__cuda__device_count=8)
    text = "jax.default_backend() == 'cpu' or jax.device_count() == 0"
    assert check(text, jax__default_backend="cpu", jax__device_count=4)
    assert check(text, jax__default_backend="gpu", jax__device_count=0)
    assert not check(text, jax__default_backend="tpu", jax__device_count=8)


# ---------------------------------------------------------------------------- comparisons


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 == 1", True),
        ("1 != 1", False),
        ("1 < 2", True),
        ("2 <= 2", True),
        ("3 > 4", False),
        ("4 >= 5", False),
        ("1 < 2 < 3", True),
        ("1 < 3 < 2", False),
        ("3 > 2 > 1 >= 1", True),
        ("1 == 1 != 2", True),
        ("1 == 1 == 2", False),
        ("'linux' in ('linux', 'darwin')", True),
        ("'win32' in ['linux', 'darwin']", False),
        ("'win32' not in ('linux', 'darwin')", True),
        ("'cu' in 'cuda'", True),
        ("None is None", True),
        ("None is not None", False),
        ("True is True", True),
        ("-1 < 0", True),
        ("1.5 > 1", True),
        ("(3, 10) < (3, 11)", True),
        ("((1, 2), 3) == ((1, 2), 3)", True),
    ],
)
def test_comparisons(text: str, expected: bool) -> None:
    assert check(text) is expected


@pytest.mark.parametrize(
    ("platform", "expected"), [("linux", False), ("darwin", False), ("win32", True)]
)
def test_in_tuple_with_probe(platform: str, expected: bool) -> None:
    assert check("sys.platform not in ('linux', 'darwin')", sys__platform=platform) is expected


@pytest.mark.parametrize(
    ("cuda", "expected"), [(None, True), ("12.4", False)]
)
def test_is_none(cuda: str | None, expected: bool) -> None:
    assert check("torch.version.cuda is None", torch__version__cuda=cuda) is expected
    assert check("torch.version.cuda is not None", torch__version__cuda=cuda) is not expected


@pytest.mark.parametrize(
    ("version", "expected"),
    [((3, 9, 18), False), ((3, 10, 0), True), ((3, 12, 1), True), ((2, 7, 18), False)],
)
def test_version_tuple_compare(version: tuple[int, int, int], expected: bool) -> None:
    assert check("sys.version_info >= (3, 10)", sys__version_info=version) is expected
    assert check("(3, 10) <= sys.version_info < (4,)", sys__version_info=version) is expected


def test_real_version_info_is_a_plain_tuple() -> None:
    value = PROBES["sys.version_info"].read()
    assert value == tuple(sys.version_info[:3])
    assert type(value) is tuple
    assert parse_condition("sys.version_info >= (3, 10)").evaluate()


def test_list_literal_acts_as_tuple() -> None:
    assert check("sys.version_info >= [3, 10]", sys__version_info=(3, 11, 0))


@pytest.mark.parametrize(
    "text",
    ["env('X') < 1", "1 in 2", "'a' < 1", "sys.version_info < 'x'", "env('X') in env('Y')"],
)
def test_incompatible_comparison_raises_condition_error(text: str) -> None:
    cond = parse_condition(text, SOURCE, KEY)
    with pytest.raises(ConditionError) as info:
        cond.evaluate({"env": const(None), "sys.version_info": const((3, 11, 0))})
    message = str(info.value)
    assert text in message or repr(text) in message
    assert SOURCE in message and KEY in message
    assert isinstance(info.value, KernbenchError)


def test_fake_probe_that_raises_becomes_condition_error() -> None:
    def boom() -> object:
        raise RuntimeError("driver exploded")

    with pytest.raises(ConditionError, match="driver exploded"):
        parse_condition("torch.cuda.is_available()").evaluate({"torch.cuda.is_available": boom})


def test_unknown_override_name_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"torch\.cuda\.is_availble"):
        parse_condition("True").evaluate({"torch.cuda.is_availble": const(True)})


# ---------------------------------------------------------------------------- laziness


def test_unreferenced_probe_is_not_called() -> None:
    rec = Recorder(**{"torch.cuda.is_available": True, "jax.device_count": 1})
    assert parse_condition("jax.device_count() == 1").evaluate(rec.mapping())
    assert rec.names() == ["jax.device_count"]


@pytest.mark.parametrize(
    ("text", "called"),
    [
        ("torch.cuda.is_available() and jax.device_count() > 0", ["torch.cuda.is_available"]),
        ("not torch.cuda.is_available() or jax.device_count() > 0", ["torch.cuda.is_available"]),
        ("False and jax.device_count()", []),
        ("True or jax.device_count()", []),
        ("1 > 2 > jax.device_count()", []),  # a chain stops at the first false link
        ("torch.cuda.is_available() or jax.device_count() > 0",
         ["torch.cuda.is_available", "jax.device_count"]),
    ],
)
def test_short_circuit_skips_right_side(text: str, called: list[str]) -> None:
    rec = Recorder(**{"torch.cuda.is_available": False, "jax.device_count": 0})
    cond = parse_condition(text)
    cond.evaluate(rec.mapping())
    assert rec.names() == called


def test_probe_called_once_per_evaluation_and_again_next_time() -> None:
    rec = Recorder(env="2")
    cond = parse_condition("env('MODE') == '1' or env('MODE') == '2'")
    assert cond.evaluate(rec.mapping())
    assert rec.calls == [("env", ("MODE",))]
    assert cond.evaluate(rec.mapping())
    assert len(rec.calls) == 2


def test_parse_evaluates_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    imported: list[str] = []
    monkeypatch.setattr(probes, "_import", lambda name: imported.append(name))
    cond = parse_condition("torch.cuda.is_available() and jax.default_backend() == 'gpu'")
    assert imported == []
    assert cond.probe_names() == {"torch.cuda.is_available", "jax.default_backend"}


def test_probe_arguments_are_passed_through() -> None:
    rec = Recorder(module_available=True, env="1")
    cond = parse_condition('module_available("cupy") and env("KB_FORCE") == "1"')
    assert cond.evaluate(rec.mapping())
    assert rec.calls == [("module_available", ("cupy",)), ("env", ("KB_FORCE",))]


def test_importing_conditions_does_not_import_frameworks() -> None:
    code = (
        "import sys\n"
        "from kernbench.config.conditions import parse_condition\n"
        "c = parse_condition('not torch.cuda.is_available() and jax.device_count() == 0')\n"
        "assert c.evaluate({'torch.cuda.is_available': lambda: False,"
        " 'jax.device_count': lambda: 0})\n"
        "bad = [m for m in ('torch', 'jax', 'cupy') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    src = str(Path(conditions.__file__).resolve().parents[2])
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False,
        env={"PYTHONPATH": src}, timeout=120,
    )
    assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------------------- rejections


REJECTED = [
    ("__import__('os').system('x')", "__import__"),
    ("open('f')", "open"),
    ("os.system('x')", "os.system"),
    ("torch.cuda.is_available().real", ".real"),
    ("sys.argv[0]", "subscript"),
    ("sys.version_info[0] >= 3", "subscript"),
    ("(1, 2)[0]", "subscript"),
    ("lambda: True", "lambda"),
    ("(lambda: 1)()", "lambda"),
    ("[x for x in (1, 2)]", "comprehension"),
    ("any(x for x in (1, 2))", "any"),
    ("{x for x in ()}", "comprehension"),
    ("1 + 1", "operator"),
    ("2 ** 10", "operator"),
    ("os.cpu_count() * 2 > 4", "operator"),
    ("~1", "unary operator"),
    ("foo", "foo"),
    ("torch", "torch"),
    ("torch.cuda", "torch.cuda"),
    ("True and foo", "foo"),
    ("torch.cuda.set_device(0)", "set_device"),
    ("module_available()", "module_available()"),
    ("module_available('a', 'b')", "module_available"),
    ("env(name='X')", "env"),
    ("torch.cuda.is_available(1)", "is_available"),
    ("module_available(x)", "x"),
    ("module_available(1)", "1"),
    ("module_available('not a module')", "not a module"),
    ("env('')", "env"),
    ("module_available(*('os',))", "module_available"),
    ("f'{1}'", "f-string"),
    ("f'{sys.platform}' == 'linux'", "f-string"),
    ("(x := 1)", ":="),
    ("1 +", "syntax"),
    ("not", "syntax"),
    ("torch.cuda.is_available(", "syntax"),
    ("import os", "syntax"),
    ("x = 1", "syntax"),
    ("", ""),
    ("   ", ""),
    ("1 if True else 2", "conditional"),
    ("{'a': 1}", "dict"),
    ("{1, 2}", "set"),
    ("b'x' == b'x'", "constant"),
    ("1j == 1j", "constant"),
    ("... is None", "constant"),
    ("-True", "unary operator"),
    ("sys.platform is 'linux'", "'is'"),
    ("env('A') is not env('B')", "'is not'"),
    ("sys.platform()", "attribute probe"),
    ("torch.cuda.is_available", "call probe"),
    ("torch.cuda.is_available == True", "call probe"),
    ("__builtins__", "__builtins__"),
    ("().__class__.__bases__[0].__subclasses__()", "__subclasses__"),
    ("not " * 60 + "True", "nested"),
    ("x" * 3000, "characters"),
]


@pytest.mark.parametrize(("text", "offending"), REJECTED)
def test_rejected_constructs_raise_config_error(text: str, offending: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_condition(text, SOURCE, KEY)
    message = str(info.value)
    assert SOURCE in message
    assert KEY in message
    assert "expected" in message
    assert offending in message
    assert info.value.source == SOURCE and info.value.key == KEY


def test_rejection_says_what_is_allowed() -> None:
    with pytest.raises(ConfigError) as info:
        parse_condition("sys.argv[0] == 'x'", SOURCE, KEY)
    message = str(info.value)
    for word in ("not/and/or", "==", "not in", "is not", "torch.cuda.is_available()",
                 "sys.version_info", 'module_available("name")'):
        assert word in message


def test_non_string_text_is_config_error() -> None:
    with pytest.raises(ConfigError, match="condition string"):
        parse_condition(True, SOURCE, KEY)  # type: ignore[arg-type]


def test_accepted_whitespace_and_newlines() -> None:
    assert check("  (True\n and\n True)  \n")
    assert check("\nnot False\n")


# ---------------------------------------------------------------------------- real probes


@pytest.mark.parametrize("name", sorted(PROBES))
def test_real_probes_do_not_raise(name: str) -> None:
    probe = PROBES[name]
    args = {"module_available": ("numpy",), "env": ("PATH",)}.get(name, ())
    value = probe.read(*args)
    assert value is None or isinstance(value, (bool, int, str, tuple))
    parse_condition(f"{probe.usage.replace('name', 'numpy').replace('NAME', 'PATH')}").evaluate()


@pytest.mark.skipif(cuda_available(), reason="a CUDA device is present")
def test_real_cuda_is_unavailable_here() -> None:
    assert parse_condition("torch.cuda.is_available()").evaluate() is False
    assert parse_condition("not torch.cuda.is_available()").evaluate() is True
    assert parse_condition("torch.cuda.device_count() == 0").evaluate()
    assert parse_condition("cupy.is_available()").evaluate() is False


def test_real_probe_values_here() -> None:
    assert parse_condition(f"sys.platform == '{sys.platform}'").evaluate()
    assert parse_condition("os.cpu_count() >= 1").evaluate()
    assert parse_condition("platform.system() != ''").evaluate()
    assert parse_condition("jax.default_backend() in ('cpu', 'gpu', 'tpu', '')").evaluate()
    assert parse_condition("module_available('numpy.linalg')").evaluate()
    assert not parse_condition("module_available('kb_surely_missing_module_xyz')").evaluate()


def test_module_available_does_not_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "kb_cond_probe_mod.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "kb_cond_probe_mod", raising=False)
    assert parse_condition("module_available('kb_cond_probe_mod.sub')").evaluate()
    assert "kb_cond_probe_mod" not in sys.modules
    assert not marker.exists()


def test_real_env_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KB_COND_TEST", "yes")
    monkeypatch.delenv("KB_COND_UNSET", raising=False)
    assert parse_condition("env('KB_COND_TEST') == 'yes'").evaluate()
    assert parse_condition("env('KB_COND_UNSET') is None").evaluate()


@pytest.mark.parametrize(
    ("name", "absent"),
    [
        ("torch.cuda.is_available", False),
        ("torch.cuda.device_count", 0),
        ("torch.backends.mps.is_available", False),
        ("torch.version.cuda", None),
        ("torch.version.hip", None),
        ("jax.default_backend", ""),
        ("jax.device_count", 0),
        ("cupy.is_available", False),
    ],
)
def test_missing_framework_gives_absent_value(
    monkeypatch: pytest.MonkeyPatch, name: str, absent: object
) -> None:
    for module in ("torch", "jax", "cupy"):
        monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    assert PROBES[name].read() == absent
    assert type(PROBES[name].read()) is type(absent)


def test_probe_table_is_read_only_and_described() -> None:
    with pytest.raises(TypeError):
        PROBES["evil"] = PROBES["env"]  # type: ignore[index]
    line = describe_probes()
    assert "\n" not in line
    for probe in PROBES.values():
        assert probe.usage in line
    assert PROBES["sys.platform"].kind == "attribute"
    assert PROBES["module_available"].arity == 1
    assert PROBES["torch.cuda.is_available"].usage == "torch.cuda.is_available()"


# ---------------------------------------------------------------------------- no eval


@pytest.fixture
def no_code_execution() -> Iterator[list[int]]:
    """Make eval/exec raise and allow compile only for AST-only parsing; yields compile flags."""
    real_compile = builtins.compile
    saved = (builtins.eval, builtins.exec, builtins.compile)
    flags_seen: list[int] = []

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("code execution attempted")

    def ast_only(source: Any, filename: Any, mode: Any, flags: int = 0,
                 *args: Any, **kwargs: Any) -> Any:
        flags_seen.append(flags)
        if not flags & ast.PyCF_ONLY_AST:
            raise AssertionError("compile to code attempted")
        return real_compile(source, filename, mode, flags, *args, **kwargs)

    builtins.eval, builtins.exec, builtins.compile = forbidden, forbidden, ast_only
    try:
        yield flags_seen
    finally:
        builtins.eval, builtins.exec, builtins.compile = saved


def test_no_eval_exec_or_code_compile(no_code_execution: list[int]) -> None:
    cond = parse_condition("not torch.cuda.is_available() and sys.version_info >= (3, 10)")
    assert no_code_execution, "parsing should go through ast.parse"
    assert cond.evaluate({"torch.cuda.is_available": const(False)}) is True
    with pytest.raises(ConfigError):
        parse_condition("__import__('os').system('echo pwned')")


def test_evaluate_never_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    cond = parse_condition("env('A') in ('1', 'yes') or not module_available('cupy')")

    def forbidden(*args: object, **kwargs: object) -> object:
        raise AssertionError("code execution attempted")

    for name in ("eval", "exec", "compile"):
        monkeypatch.setattr(builtins, name, forbidden)
    assert cond.evaluate({"env": const("yes"), "module_available": const(True)})
    assert not cond.evaluate({"env": const(None), "module_available": const(True)})


@pytest.mark.parametrize("module", [conditions, expressions, probes])
def test_module_source_has_no_eval_exec_or_compile_calls(module: ModuleType) -> None:
    assert not called_builtins(module.__file__) & {"eval", "exec", "compile", "__import__"}


# ---------------------------------------------------------------------------- property


TOKENS = [
    "not", "and", "or", "(", ")", ",", "==", "!=", "<", "<=", ">", ">=", "in", "is", "not in",
    "is not", "True", "False", "None", "0", "1", "-1", "3.5", "'linux'", "'x'", "(3, 10)",
    "[1, 2]", "torch.cuda.is_available()", "torch.cuda.device_count()", "sys.platform",
    "sys.version_info", "torch.version.cuda", "module_available('os')", "env('HOME')",
    "jax.default_backend()", "os.cpu_count()", "__import__('os')", ".system('x')", "open",
    "[0]", "lambda:", "+", "**", "foo", ":=", "f'{1}'", "for x in", ".real", "*", "{", "}",
]

FAKES: dict[str, Callable[..., object]] = {
    "torch.cuda.is_available": const(True),
    "torch.cuda.device_count": const(2),
    "torch.backends.mps.is_available": const(False),
    "torch.version.cuda": const("12.4"),
    "torch.version.hip": const(None),
    "jax.default_backend": const("cpu"),
    "jax.device_count": const(1),
    "cupy.is_available": const(False),
    "platform.system": const("Linux"),
    "platform.machine": const("x86_64"),
    "os.cpu_count": const(16),
    "sys.platform": const("linux"),
    "sys.version_info": const((3, 11, 7)),
    "module_available": const(True),
    "env": const(None),
}

texts = hostile_texts(TOKENS, max_tokens=14)


@settings(max_examples=400, deadline=None)
@given(text=texts)
def test_arbitrary_text_never_executes_code(text: str) -> None:
    error: ConfigError | None = None
    names: frozenset[str] = frozenset()
    result: object = None
    with forbid_code_execution(text):
        try:
            cond = parse_condition(text, SOURCE, KEY)
            names = cond.probe_names()
            result = cond.evaluate(FAKES)
        except ConfigError as exc:
            error = exc
        except ConditionError:
            result = False
    if error is not None:
        message = str(error)
        assert SOURCE in message and KEY in message and "expected" in message
    else:
        assert names <= set(PROBES)
        assert isinstance(result, bool)
