"""Tests for kernbench.config.loading: bench.yaml and [tool.kernbench] in pyproject.toml."""

from __future__ import annotations

import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.config.loading import (
    MAX_BENCH_YAML_BYTES,
    bench_config_from_data,
    load_bench_config,
    load_pyproject_settings,
)
from kernbench.errors import ConfigError
from kernbench.results.model import BenchConfig, SkipRule

SOURCE = "kernels/demo/bench.yaml"

QUASIM_EXAMPLE = """\
problem_size: {grid_size: [64, 64, 64], max_iterations: 50, tolerance: 1.0e-5}
precisions: [fp32, fp16]
backends: [cpu, cuda]
tolerances: {rmse: 1.0e-3, relative_error: 1.0e-2}
skip_conditions:
  - backend: cuda
    reason: "CUDA not available"
    check: "not torch.cuda.is_available()"
"""


# -- helpers ---------------------------------------------------------------------------------


def bench_file(tmp_path: Path, text: str, name: str = "bench.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(tmp_path: Path, text: str) -> BenchConfig:
    return load_bench_config(bench_file(tmp_path, text), SOURCE)


def load_error(tmp_path: Path, text: str) -> str:
    """The message of the ConfigError that loading `text` raises."""
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    message = str(info.value)
    assert message.startswith(SOURCE), message
    return message


def pyproject(tmp_path: Path, text: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


# -- bench.yaml: valid files -----------------------------------------------------------------


def test_quasim_example_loads(tmp_path: Path) -> None:
    config = load(tmp_path, QUASIM_EXAMPLE)
    assert config.source == SOURCE
    assert config.problem_size == {"grid_size": [64, 64, 64], "max_iterations": 50,
                                   "tolerance": 1.0e-5}
    assert config.precisions == ("fp32", "fp16")
    assert config.backends == ("cpu", "cuda")
    assert config.tolerances == {"rmse": 1.0e-3, "relative_error": 1.0e-2}
    assert config.skip_conditions == (SkipRule(reason="CUDA not available", backend="cuda",
                                               check="not torch.cuda.is_available()"),)
    assert config.function_name is None
    assert config.raw["precisions"] == ["fp32", "fp16"]


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n", "null\n"])
def test_empty_file_gives_defaults(tmp_path: Path, text: str) -> None:
    assert load(tmp_path, text) == BenchConfig(source=SOURCE)


def test_all_optional_keys(tmp_path: Path) -> None:
    config = load(tmp_path, """\
        function_name: compute
        framework: jax
        description: "A demo kernel"
        timeout_s: 12.5
        gpu_timing: graph
        problem_size: 1024
        """)
    assert config.gpu_timing == "graph"
    assert config.function_name == "compute"
    assert config.framework == "jax"
    assert config.description == "A demo kernel"
    assert config.timeout_s == 12.5
    assert config.problem_size == 1024


def test_fp8_is_canonicalised(tmp_path: Path) -> None:
    config = load(tmp_path, """\
        precisions: [fp8, fp32]
        skip_conditions:
          - precision: fp8
            reason: no fp8 here
        """)
    assert config.precisions == ("fp8_e4m3", "fp32")
    assert config.skip_conditions[0].precision == "fp8_e4m3"


def test_aliases_of_one_precision_are_merged(tmp_path: Path) -> None:
    assert load(tmp_path, "precisions: [fp8, fp8_e4m3, fp16]\n").precisions == (
        "fp8_e4m3", "fp16")


def test_per_precision_tolerances_are_accepted(tmp_path: Path) -> None:
    config = load(tmp_path, """\
        tolerances:
          rmse: 1.0e-4
          fp16: {rmse: 1.0e-2, max_error: 0.5}
          bf16: {relative_error: 5.0e-2}
        """)
    assert config.tolerances["fp16"] == {"rmse": 1.0e-2, "max_error": 0.5}
    assert config.tolerances["bf16"] == {"relative_error": 5.0e-2}
    assert config.tolerances["rmse"] == 1.0e-4


def test_skip_condition_without_check_always_applies(tmp_path: Path) -> None:
    config = load(tmp_path, "skip_conditions:\n  - reason: broken on rocm\n    backend: rocm\n")
    assert config.skip_conditions == (SkipRule(reason="broken on rocm", backend="rocm"),)


def test_file_at_the_size_limit_is_accepted(tmp_path: Path) -> None:
    line = "# padding\n"
    text = "precisions: [fp32]\n"
    text += line * ((MAX_BENCH_YAML_BYTES - len(text)) // len(line))
    text += "#" * (MAX_BENCH_YAML_BYTES - len(text) - 1) + "\n"
    path = tmp_path / "bench.yaml"
    path.write_text(text, encoding="utf-8")
    assert path.stat().st_size == MAX_BENCH_YAML_BYTES
    assert load_bench_config(path, SOURCE).precisions == ("fp32",)


# -- bench.yaml: errors ----------------------------------------------------------------------


def test_file_over_one_mib_is_rejected(tmp_path: Path) -> None:
    assert MAX_BENCH_YAML_BYTES == 1 << 20
    path = tmp_path / "bench.yaml"
    path.write_text("precisions: [fp32]\n" + "#" * MAX_BENCH_YAML_BYTES + "\n")
    with pytest.raises(ConfigError, match="bytes") as info:
        load_bench_config(path, SOURCE)
    assert str(info.value).startswith(SOURCE)


BILLION_LAUGHS = "".join(
    ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n']
    + [f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n"
       for p, n in zip("abcdefgh", "bcdefghi", strict=True)]
    + ["problem_size: {x: *i}\n"])


def test_aliases_that_expand_past_a_million_values_are_refused_at_once(tmp_path: Path) -> None:
    """374 bytes that stand for 387 million values: every check walked them, and discovery
    of the whole repository hung."""
    message = load_error(tmp_path, BILLION_LAUGHS)
    assert message.startswith(f"{SOURCE}: expected YAML that stands for at most 1,000,000 "
                              "values once its aliases (*name) are expanded"), message
    assert "(got 'more than 1,000,000')" in message, message
    recursive = load_error(tmp_path, "problem_size: &p {x: 1, y: *p}\n")
    assert "expected YAML without an alias inside its own anchor" in recursive
    shared = "tol: &t {rmse: 0.1}\ntolerances: {fp32: *t, fp64: *t}\n"  # a plain alias is fine
    assert "tol" in load_error(tmp_path, shared)  # refused for its unknown key only


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_bench_yaml_that_is_no_regular_file_is_refused_unread(tmp_path: Path,
                                                                kind: str) -> None:
    """A FIFO's read waited for a writer forever; /dev/zero's never ended."""
    import os

    path = tmp_path / "bench.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="a FIFO, not a regular file" if kind == "fifo"
                       else "a device, not a regular file"):
        load_bench_config(path, SOURCE)


def test_malformed_yaml_names_line_and_column(tmp_path: Path) -> None:
    message = load_error(tmp_path, "precisions: [fp32]\nbackends:\n  - cpu\n - cuda\n")
    assert message.startswith(f"{SOURCE}:4:2:"), message
    assert "valid YAML" in message


def test_unterminated_flow_sequence_names_line(tmp_path: Path) -> None:
    message = load_error(tmp_path, "precisions: [fp32, fp16]\nbackends: [cpu\ntolerances: {}\n")
    assert message.startswith(f"{SOURCE}:3:"), message


@pytest.mark.parametrize(("text", "where", "key", "first"), [
    ("timeout_s: 5\ntimeout_s: 6\n", "2:1", "timeout_s", 1),
    ("timeout_s: 5\n'timeout_s': 6\n", "2:1", "timeout_s", 1),
    ("tolerances: {rmse: 1.0e-3, rmse: 1.0e-2}\n", "1:28", "tolerances.rmse", 1),
    ("skip_conditions:\n  - reason: a\n  - reason: b\n    reason: c\n", "4:5",
     "skip_conditions[1].reason", 3),
])
def test_a_key_written_twice_names_file_line_and_key(tmp_path: Path, text: str, where: str,
                                                     key: str, first: int) -> None:
    """YAML keeps the last of two equal keys silently: `timeout_s: 5` then `timeout_s: 6`
    ran with 6."""
    message = load_error(tmp_path, text)
    assert message.startswith(f"{SOURCE}:{where}: key '{key}': expected each key once in its "
                              f"mapping (it is already on line {first}"), message


def test_a_merged_key_may_be_overridden(tmp_path: Path) -> None:
    config = load(tmp_path, "problem_size:\n  <<: {n: 1, m: 2}\n  n: 3\n")
    assert config.problem_size == {"n": 3, "m": 2}


def test_python_tags_are_not_constructed(tmp_path: Path) -> None:
    message = load_error(tmp_path, "description: !!python/object/apply:os.getcwd []\n")
    assert "valid YAML" in message


def test_non_utf8_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_bytes(b"description: \xff\xfe\n")
    with pytest.raises(ConfigError, match="UTF-8"):
        load_bench_config(path, SOURCE)


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="readable"):
        load_bench_config(tmp_path / "absent.yaml", SOURCE)


def test_unknown_key_suggests_the_close_one(tmp_path: Path) -> None:
    message = load_error(tmp_path, "precision: [fp32]\n")
    assert "key 'precision'" in message
    assert "did you mean 'precisions'" in message
    assert "expected" in message


def test_unknown_nested_key_names_its_path(tmp_path: Path) -> None:
    message = load_error(tmp_path, "tolerances: {rmse: 0.1, rmsee: 0.2}\n")
    assert "key 'tolerances.rmsee'" in message
    assert "did you mean 'rmse'" in message


@pytest.mark.parametrize(("text", "key", "expected"), [
    ("precisions: fp32\n", "precisions", "a list"),
    ("precisions: [fp33]\n", "precisions[0]", "one of"),
    ("precisions: []\n", "precisions", "expected"),
    ("precisions: [fp32, fp32]\n", "precisions", "expected"),
    ("backends: [gpu]\n", "backends[0]", "cuda"),
    ("backends: cpu\n", "backends", "a list"),
    ("tolerances: {rmse: x}\n", "tolerances.rmse", "a number"),
    ("tolerances: {rmse: -1}\n", "tolerances.rmse", "expected"),
    ("tolerances: {fp16: {rmse: bad}}\n", "tolerances.fp16.rmse", "a number"),
    ("tolerances: [1]\n", "tolerances", "a mapping"),
    ("skip_conditions:\n  - backend: cuda\n", "skip_conditions[0].reason", "present"),
    ("skip_conditions:\n  - reason: ''\n", "skip_conditions[0].reason", "expected"),
    ("skip_conditions:\n  - reason: r\n    backend: gpu\n", "skip_conditions[0].backend",
     "cuda"),
    ("skip_conditions:\n  - reason: r\n    when: x\n", "skip_conditions[0].when", "known key"),
    ("skip_conditions: {reason: r}\n", "skip_conditions", "a list"),
    ("function_name: 1bad\n", "function_name", "identifier"),
    ("function_name: '1bad'\n", "function_name", "identifier"),
    ("function_name: run-bench\n", "function_name", "identifier"),
    ("framework: keras\n", "framework", "pytorch"),
    ("timeout_s: 0\n", "timeout_s", "expected"),
    ("timeout_s: fast\n", "timeout_s", "a number"),
    ("timeout_s: 1e10\n", "timeout_s", "seconds, a number > 0 and at most 604800 (one week)"),
    ("timeout_s: 604801\n", "timeout_s", "at most 604800"),
    ("gpu_timing: warm\n", "gpu_timing", "one of cold, hot, graph, kernel, sync, all"),
    ("description: [a]\n", "description", "a string"),
    ("problem_size: {grid-size: 4}\n", "problem_size", "identifier"),
    ("problem_size: {precision: fp32}\n", "problem_size.precision", "harness"),
    ("problem_size: {n: 4, seed: 1}\n", "problem_size.seed", "harness"),
    ("problem_size: {device: cuda}\n", "problem_size.device", "harness"),
    ("problem_size: {backend: cpu}\n", "problem_size.backend", "harness"),
])
def test_wrong_values_name_file_key_and_expectation(
        tmp_path: Path, text: str, key: str, expected: str) -> None:
    message = load_error(tmp_path, text)
    assert f"key '{key}'" in message
    assert "expected" in message
    assert expected in message


@pytest.mark.parametrize(("text", "key"), [
    ("timeout_s: .nan\n", "timeout_s"),
    ("timeout_s: .inf\n", "timeout_s"),
    ("timeout_s: 1e400\n", "timeout_s"),
    ("tolerances: {rmse: .nan}\n", "tolerances.rmse"),
    ("tolerances: {fp16: {relative_error: .inf}}\n", "tolerances.fp16.relative_error"),
    ("regression: {latency: .nan}\n", "regression.latency"),
    ("regression: {accuracy_drift: .inf}\n", "regression.accuracy_drift"),
    ("work: {flops: .inf}\n", "work.flops"),
    ("golden: {H100: {time_ms: .nan}}\n", "golden.H100.time_ms"),
])
def test_non_finite_numbers_are_refused(tmp_path: Path, text: str, key: str) -> None:
    """`.nan` passed `exclusiveMinimum: 0` (every case then "timed out after nan s") and
    `.inf` crashed the run; no numeric key of a bench.yaml means anything by them."""
    message = load_error(tmp_path, text)
    assert f"key '{key}': expected " in message
    assert "a finite number" in message


def test_an_integer_key_is_not_a_float(tmp_path: Path) -> None:
    message = load_error(tmp_path, "sweep: {matrix_shapes: [{name: pow2, min_power: 6.0}]}\n")
    assert "key 'sweep.matrix_shapes[0].min_power': expected an integer (got 6.0)" in message


@pytest.mark.parametrize("text", ["- fp32\n- fp16\n", "just a string\n", "42\n"])
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str) -> None:
    assert "a mapping" in load_error(tmp_path, text)


@pytest.mark.parametrize("check", [
    "__import__('os').system('touch {marker}')",
    "open('{marker}', 'w')",
    "(lambda: __import__('os').system('touch {marker}'))()",
])
def test_check_code_is_rejected_and_never_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check: str) -> None:
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "X"
    text = check.format(marker=marker).replace('"', '\\"')
    message = load_error(tmp_path, f'skip_conditions:\n  - reason: r\n    check: "{text}"\n')
    assert "key 'skip_conditions[0].check'" in message
    assert not marker.exists()
    assert not (tmp_path / "touch").exists()


def test_check_must_be_a_string(tmp_path: Path) -> None:
    message = load_error(tmp_path, "skip_conditions:\n  - reason: r\n    check: 1\n")
    assert "skip_conditions[0].check" in message


def test_second_skip_condition_is_named_by_index(tmp_path: Path) -> None:
    message = load_error(tmp_path, """\
        skip_conditions:
          - reason: fine
            check: "sys.platform == 'linux'"
          - reason: bad
            check: "eval('1')"
        """)
    assert "skip_conditions[1].check" in message


@pytest.mark.parametrize("text", [
    "1: x\n",
    "true: 1\n",
    "null: 1\n",
    "precisions: [fp32]\n2: x\n",
    "tolerances: {1: 0.5}\n",
    "skip_conditions:\n  - {reason: r, 3: 4}\n",
])
def test_non_string_keys_are_config_errors(tmp_path: Path, text: str) -> None:
    assert "expected" in load_error(tmp_path, text)


@pytest.mark.parametrize("text", [
    "timeout_s: !!int\n",
    "timeout_s: !!int x\n",
    "timeout_s: !!float x\n",
    "description: !!bool maybe\n",
    "description: !!timestamp yesterday\n",
])
def test_bad_explicit_yaml_tags_are_config_errors(tmp_path: Path, text: str) -> None:
    load_error(tmp_path, text)


def test_deeply_nested_yaml_is_a_config_error(tmp_path: Path) -> None:
    load_error(tmp_path, "problem_size: " + "[" * 5000 + "]" * 5000 + "\n")


# -- bench_config_from_data ------------------------------------------------------------------


def test_bench_config_from_data_keeps_raw() -> None:
    data = {"precisions": ["fp16"], "problem_size": {"n": 3}}
    config = bench_config_from_data(data, SOURCE)
    assert config.raw == data
    assert config.precisions == ("fp16",)


@pytest.mark.parametrize("data", [None, [], "x", 3, 1.5, True])
def test_bench_config_from_data_needs_a_mapping(data: object) -> None:
    with pytest.raises(ConfigError, match="a mapping"):
        bench_config_from_data(data, SOURCE)


# -- fuzzing: only ConfigError, never another exception --------------------------------------

YAML_TOKENS = [
    "precisions", "backends", "tolerances", "skip_conditions", "problem_size", "function_name",
    "framework", "timeout_s", "description", "reason", "check", "backend", "precision", "rmse",
    "fp32", "fp8", "cuda", "cpu", "gpu", "jax", "1", "-2", "0.5", "1e-3", "null", "true", "~",
    ": ", ":", "- ", "-", "[", "]", "{", "}", ", ", "\n", "\n  ", "\n    ", " ", "\t", "#",
    "'", '"', "&a ", "*a", "!!str ", "!!int ", "!!python/name:os.system ", "? ", "|", ">",
    "---", "...", "%YAML 1.1\n", "not torch.cuda.is_available()", "__import__('os')",
]
yamlish_text = st.lists(st.sampled_from(YAML_TOKENS) | st.text(max_size=4),
                        max_size=40).map("".join)

scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
           | st.text(max_size=8)
           | st.sampled_from(["fp32", "fp8", "cuda", "cpu", "numpy", "run", "precision",
                              "not torch.cuda.is_available()", "os.system('x')"]))
string_keys = st.text(max_size=8) | st.sampled_from(
    ["precisions", "backends", "tolerances", "skip_conditions", "problem_size",
     "function_name", "framework", "timeout_s", "description", "reason", "check", "backend",
     "precision", "rmse", "fp16", "max_error"])


def nested(keys: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.recursive(scalars, lambda children: st.lists(children, max_size=4)
                        | st.dictionaries(keys, children, max_size=4), max_leaves=20)


def assert_only_config_errors(call: object) -> None:
    assert callable(call)
    try:
        result = call()
    except ConfigError:
        return
    assert isinstance(result, BenchConfig)


@settings(max_examples=300, deadline=None)
@given(text=yamlish_text)
def test_fuzz_load_bench_config_raises_only_config_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        assert_only_config_errors(lambda: load_bench_config(path, SOURCE))


@settings(max_examples=300, deadline=None)
@given(data=nested(string_keys))
def test_fuzz_bench_config_from_data_with_string_keys(data: object) -> None:
    assert_only_config_errors(lambda: bench_config_from_data(data, SOURCE))


@settings(max_examples=300, deadline=None)
@given(data=st.dictionaries(string_keys, nested(string_keys), max_size=5))
def test_fuzz_bench_config_from_data_with_known_top_level_keys(data: object) -> None:
    assert_only_config_errors(lambda: bench_config_from_data(data, SOURCE))


@settings(max_examples=300, deadline=None)
@given(data=nested(string_keys | st.integers() | st.none() | st.booleans()))
def test_fuzz_bench_config_from_data_with_any_scalar_keys(data: object) -> None:
    assert_only_config_errors(lambda: bench_config_from_data(data, SOURCE))


# -- pyproject.toml --------------------------------------------------------------------------


def test_pyproject_absent_gives_empty_settings(tmp_path: Path) -> None:
    assert load_pyproject_settings(tmp_path) == {}


def test_pyproject_without_kernbench_table_gives_empty_settings(tmp_path: Path) -> None:
    pyproject(tmp_path, '[project]\nname = "x"\n[tool.ruff]\nline-length = 100\n')
    assert load_pyproject_settings(tmp_path) == {}


def test_pyproject_paths(tmp_path: Path) -> None:
    for folder in ("benches", "more/kernels"):
        (tmp_path / folder).mkdir(parents=True)
    pyproject(tmp_path, '[tool.kernbench]\npaths = ["benches", "more/kernels"]\n')
    assert load_pyproject_settings(tmp_path) == {"paths": ["benches", "more/kernels"]}


@pytest.mark.parametrize("folder", ["nope", "../outside"])
def test_pyproject_paths_must_be_folders_inside_the_root(tmp_path: Path, folder: str) -> None:
    root = tmp_path / "root"
    (root / "benches").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    pyproject(root, f'[tool.kernbench]\npaths = ["benches", "{folder}"]\n')
    with pytest.raises(ConfigError) as info:
        load_pyproject_settings(root)
    assert str(info.value) == (f"{root / 'pyproject.toml'}: key 'tool.kernbench.paths[1]': "
                               f"expected a folder inside the root that exists (got '{folder}')")


def test_pyproject_unknown_key(tmp_path: Path) -> None:
    pyproject(tmp_path, '[tool.kernbench]\npath = ["benches"]\n')
    with pytest.raises(ConfigError) as info:
        load_pyproject_settings(tmp_path)
    message = str(info.value)
    assert "pyproject.toml" in message
    assert "tool.kernbench.path" in message
    assert "paths" in message


@pytest.mark.parametrize("value", ['"benches"', "[1, 2]", '["a", 3]', "true", "{a = 1}"])
def test_pyproject_paths_wrong_type(tmp_path: Path, value: str) -> None:
    pyproject(tmp_path, f"[tool.kernbench]\npaths = {value}\n")
    with pytest.raises(ConfigError, match=r"tool\.kernbench\.paths'.*expected"):
        load_pyproject_settings(tmp_path)


def test_pyproject_kernbench_not_a_table(tmp_path: Path) -> None:
    pyproject(tmp_path, '[tool]\nkernbench = "yes"\n')
    with pytest.raises(ConfigError, match=r"tool\.kernbench"):
        load_pyproject_settings(tmp_path)


def test_pyproject_tool_not_a_table(tmp_path: Path) -> None:
    pyproject(tmp_path, 'tool = "yes"\n')
    with pytest.raises(ConfigError, match=r"pyproject\.toml"):
        load_pyproject_settings(tmp_path)


def test_pyproject_invalid_toml(tmp_path: Path) -> None:
    pyproject(tmp_path, "[tool.kernbench\npaths = [\n")
    with pytest.raises(ConfigError, match="valid TOML") as info:
        load_pyproject_settings(tmp_path)
    assert str(tmp_path / "pyproject.toml") in str(info.value)


# -- YAML numbers and unknown keys ------------------------------------------------------------


@pytest.mark.parametrize(("text", "value"), [
    ("1e-5", 1e-5), ("1E3", 1000.0), ("1.0e5", 1e5), ("-2.5e-3", -2.5e-3), (".5e-2", 0.005),
    ("+3e2", 300.0), ("1.0e-5", 1e-5), ("3", 3), ("0.25", 0.25)])
def test_yaml_numbers_with_an_exponent_are_numbers(text: str, value: float) -> None:
    from kernbench.config.loading import parse_yaml

    parsed = parse_yaml(f"x: {text}\n", SOURCE)
    assert parsed == {"x": value} and type(parsed["x"]) is type(value)  # type: ignore[index]


@pytest.mark.parametrize("text", ["e5", "1e", "abc1e5", "'1e-5'", "1e-5x", "v1.0e3"])
def test_yaml_text_that_only_looks_like_a_number_stays_text(text: str) -> None:
    from kernbench.config.loading import parse_yaml

    assert isinstance(parse_yaml(f"x: {text}\n", SOURCE), dict)
    assert isinstance(parse_yaml(f"x: {text}\n", SOURCE)["x"], str)  # type: ignore[index]


def test_a_tolerance_written_1e_5_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bench.yaml"
    path.write_text("tolerances: {relative_error: 1e-5, fp16: {rmse: 2e-2}}\n", encoding="utf-8")
    config = load_bench_config(path, SOURCE)
    assert config.tolerances == {"relative_error": 1e-5, "fp16": {"rmse": 0.02}}


def test_the_yaml_loader_stays_safe() -> None:
    from kernbench.config.loading import parse_yaml

    with pytest.raises(ConfigError):
        parse_yaml("x: !!python/object/apply:os.system ['true']\n", SOURCE)


def test_every_unknown_key_is_reported_at_once_with_its_nearest() -> None:
    data = {"precision": ["fp32"], "tolerance": {}, "backends": ["cpu"],
            "work": {"flop": "1"}}
    with pytest.raises(ConfigError) as raised:
        bench_config_from_data(data, SOURCE)
    message = raised.value.message
    assert message.startswith(f"{SOURCE}: 3 unknown keys: 'precision' (did you mean "
                              "'precisions'?), 'tolerance' (did you mean 'tolerances'?), "
                              "'work.flop' (did you mean 'flops'?); expected known keys: at "
                              "the top level: backends, ")
    assert message.endswith("; at work: bytes, flops")
    assert raised.value.source == SOURCE and raised.value.key == "precision"


def test_one_unknown_key_keeps_the_single_key_message() -> None:
    with pytest.raises(ConfigError) as raised:
        bench_config_from_data({"precision": ["fp32"]}, SOURCE)
    assert raised.value.message.startswith(f"{SOURCE}: key 'precision': expected a known key: ")
    assert "(did you mean 'precisions'?)" in raised.value.message
