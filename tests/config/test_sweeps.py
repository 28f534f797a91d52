"""Tests for kernbench.config.sweeps: bench.yaml `sweep` generators, products, names and
validation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kernbench.config.loading import bench_config_from_data
from kernbench.config.sweeps import (
    custom,
    expand_sweep,
    generate,
    llama,
    matrix_shapes,
    pow2,
    pow2_extended,
    problem_size_at,
    sweep,
    value_text,
)
from kernbench.errors import ConfigError
from kernbench.results.model import MAX_SWEEP_POINTS, SweepPoint

SOURCE = "kernels/demo/bench.yaml"
SAFE_NAME = re.compile(r"^[A-Za-z0-9_.+=,-]+$")


def dims(shapes: Any) -> list[tuple[int, int, int]]:
    return [(s.m, s.k, s.n) for s in shapes]


def labels(spec: dict[str, Any]) -> list[str]:
    return [p.label for p in expand_sweep(spec, SOURCE)]


def error_for(data: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        bench_config_from_data(data, SOURCE)
    return info.value


# -- each generator ----------------------------------------------------------------------------


def test_custom_is_the_list_as_given() -> None:
    assert dims(custom([[1024, 1024, 1024], [2048, 4096, 1024]])) == [
        (1024, 1024, 1024), (2048, 4096, 1024)]


def test_llama_defaults_are_the_seed_runners_single_node_shapes() -> None:
    shapes = list(llama())
    assert dims(shapes) == [(16384, 8192, 1280), (16384, 1024, 8192),
                            (16384, 8192, 7168), (16384, 3584, 8192)]
    assert [s.name for s in shapes] == ["attn.wqkv_m16384", "attn.w0_m16384",
                                        "ffn.w13_m16384", "ffn.w2_m16384"]


def test_llama_unsplit_shapes_and_token_counts() -> None:
    shapes = list(llama(m=[1, 1024], tensor_parallel=1))
    assert len(shapes) == 8
    assert dims(shapes[4:]) == [(1024, 8192, 10240), (1024, 8192, 8192),
                                (1024, 8192, 57344), (1024, 28672, 8192)]
    assert shapes[4].name == "attn.wqkv_m1024_tp1"
    assert dims(shapes[:1]) == [(1, 8192, 10240)]


def test_pow2_is_square_powers_inclusive() -> None:
    assert dims(pow2(6, 8)) == [(64, 64, 64), (128, 128, 128), (256, 256, 256)]
    assert [s.m for s in pow2()] == [1024, 2048, 4096, 8192, 16384]  # seed defaults 10..14
    assert dims(pow2(0, 0)) == [(1, 1, 1)]


def test_pow2_extended_adds_the_power_plus_its_half() -> None:
    assert [s.m for s in pow2_extended(10, 11)] == [1024, 1536, 2048, 3072]
    assert all(s.m == s.k == s.n for s in pow2_extended(1, 3))
    assert [s.m for s in pow2_extended(1, 2)] == [2, 3, 4, 6]
    assert len(list(pow2_extended())) == 10


def test_sweep_is_every_combination_of_powers_m_then_k_then_n() -> None:
    assert dims(sweep(8, 9)) == [
        (256, 256, 256), (256, 256, 512), (256, 512, 256), (256, 512, 512),
        (512, 256, 256), (512, 256, 512), (512, 512, 256), (512, 512, 512)]
    assert len(list(sweep())) == 8**3  # seed defaults 8..15


def test_sweep_lists_replace_their_dimension() -> None:
    assert dims(sweep(m=[1, 16], k=[4096], n=[1024, 4096])) == [
        (1, 4096, 1024), (1, 4096, 4096), (16, 4096, 1024), (16, 4096, 4096)]
    assert dims(sweep(min_power=3, max_power=4, m=[5])) == [
        (5, 8, 8), (5, 8, 16), (5, 16, 8), (5, 16, 16)]


def test_generators_combine_in_order_and_drop_repeats_keeping_the_first() -> None:
    shapes = matrix_shapes([{"name": "pow2", "min_power": 2, "max_power": 3},
                            {"name": "custom", "shapes": [[8, 8, 8], [1, 2, 3], [4, 4, 4]]},
                            {"name": "llama", "m": [16384]},
                            {"name": "custom", "shapes": [[16384, 8192, 1280]]}], SOURCE)
    assert dims(shapes) == [(4, 4, 4), (8, 8, 8), (1, 2, 3), (16384, 8192, 1280),
                            (16384, 1024, 8192), (16384, 8192, 7168), (16384, 3584, 8192)]
    assert shapes[3].name == "attn.wqkv_m16384"


def test_generate_uses_the_defaults_it_documents() -> None:
    assert dims(generate({"name": "pow2", "min_power": 13})) == [(8192,) * 3, (16384,) * 3]


# -- products and names ------------------------------------------------------------------------


def test_params_alone_are_a_cartesian_product_in_yaml_order() -> None:
    points = expand_sweep({"params": {"block": [32, 64], "mode": ["a", "b", "c"]}}, SOURCE)
    assert [p.values for p in points] == [
        {"block": 32, "mode": "a"}, {"block": 32, "mode": "b"}, {"block": 32, "mode": "c"},
        {"block": 64, "mode": "a"}, {"block": 64, "mode": "b"}, {"block": 64, "mode": "c"}]
    assert [p.label for p in points][:2] == ["block=32,mode=a", "block=32,mode=b"]


def test_shapes_times_params_shapes_outer() -> None:
    points = expand_sweep({"matrix_shapes": [{"name": "pow2", "min_power": 3, "max_power": 4}],
                           "params": {"split": [1, 2]}}, SOURCE)
    assert [p.values for p in points] == [
        {"m": 8, "k": 8, "n": 8, "split": 1}, {"m": 8, "k": 8, "n": 8, "split": 2},
        {"m": 16, "k": 16, "n": 16, "split": 1}, {"m": 16, "k": 16, "n": 16, "split": 2}]
    assert [p.label for p in points] == ["m=8,k=8,n=8,split=1", "m=8,k=8,n=8,split=2",
                                         "m=16,k=16,n=16,split=1", "m=16,k=16,n=16,split=2"]


def test_every_name_is_unique_and_file_name_safe() -> None:
    spec = {"matrix_shapes": [{"name": "llama", "m": [1, 2048], "tensor_parallel": 2},
                              {"name": "llama"},
                              {"name": "pow2_extended", "min_power": 3, "max_power": 5},
                              {"name": "sweep", "min_power": 2, "max_power": 3},
                              {"name": "custom", "shapes": [[3, 5, 7]]}],
            "params": {"alpha": [0.5, 1e-05, -2], "fused": [True, False],
                       "layout": ["row-major", "col_major", "v1.2+x"]}}
    names = labels(spec)
    assert len(names) == (8 + 4 + 6 + 8 - 1 + 1) * 3 * 2 * 3  # sweep's 8x8x8 repeats one
    assert len(set(names)) == len(names)
    assert all(SAFE_NAME.match(name) for name in names), names
    assert "attn.w0_m2048_tp2,alpha=1e-05,fused=true,layout=v1.2+x" in names


def test_value_text() -> None:
    assert [value_text(v) for v in (True, False, 3, 0.25, "x")] == ["true", "false", "3",
                                                                     "0.25", "x"]


def test_problem_size_at_merges_over_a_mapping() -> None:
    point = SweepPoint("m=2,k=2,n=2", {"m": 2, "k": 2, "n": 2})
    assert problem_size_at({"m": 1, "layout": "row"}, point) == {"m": 2, "layout": "row",
                                                                 "k": 2, "n": 2}
    assert problem_size_at(None, point) == {"m": 2, "k": 2, "n": 2}


def test_bench_config_keeps_the_points_and_merges_nothing_yet() -> None:
    config = bench_config_from_data({"problem_size": {"layout": "row"}, "sweep": {
        "matrix_shapes": [{"name": "pow2", "min_power": 1, "max_power": 2}]}}, SOURCE)
    assert [p.label for p in config.sweep] == ["m=2,k=2,n=2", "m=4,k=4,n=4"]
    assert config.problem_size == {"layout": "row"}
    assert bench_config_from_data({"problem_size": {"n": 1}}, SOURCE).sweep == ()


# -- validation --------------------------------------------------------------------------------


def shapes_entry(**entry: Any) -> dict[str, Any]:
    return {"sweep": {"matrix_shapes": [entry]}}


@pytest.mark.parametrize(("data", "key", "words"), [
    (shapes_entry(name="pow"), "sweep.matrix_shapes[0].name", "did you mean 'pow2'"),
    (shapes_entry(name="small_sweep"), "sweep.matrix_shapes[0].name", "one of custom, llama"),
    (shapes_entry(name="pow2", min_pow=3), "sweep.matrix_shapes[0].min_pow",
     "did you mean 'min_power'"),
    (shapes_entry(name="llama", shapes=[[1, 2, 3]]), "sweep.matrix_shapes[0].shapes",
     "one of m, name, tensor_parallel"),
    (shapes_entry(name="pow2", min_power="10"), "sweep.matrix_shapes[0].min_power",
     "an integer"),
    (shapes_entry(name="pow2", min_power=1.5), "sweep.matrix_shapes[0].min_power",
     "an integer"),
    (shapes_entry(name="pow2", min_power=-1), "sweep.matrix_shapes[0].min_power", ">= 0"),
    (shapes_entry(name="pow2", max_power=41), "sweep.matrix_shapes[0].max_power", "<= 40"),
    (shapes_entry(name="pow2", min_power=9, max_power=8), "sweep.matrix_shapes[0].min_power",
     "min_power <= max_power (8)"),
    (shapes_entry(name="pow2", min_power=15), "sweep.matrix_shapes[0].min_power",
     "min_power <= max_power (14, the default)"),
    (shapes_entry(name="pow2_extended", min_power=0), "sweep.matrix_shapes[0].min_power",
     ">= 1"),
    (shapes_entry(name="custom"), "sweep.matrix_shapes[0].shapes", "this key to be present"),
    (shapes_entry(name="custom", shapes=[]), "sweep.matrix_shapes[0].shapes", "at least 1"),
    (shapes_entry(name="custom", shapes=[[1, 2]]), "sweep.matrix_shapes[0].shapes[0]",
     "[m, k, n]"),
    (shapes_entry(name="custom", shapes=[[1, 0, 2]]), "sweep.matrix_shapes[0].shapes[0][1]",
     ">= 1"),
    (shapes_entry(name="sweep", m=[]), "sweep.matrix_shapes[0].m", "at least 1 item"),
    (shapes_entry(name="sweep", k=[-4]), "sweep.matrix_shapes[0].k[0]", ">= 1"),
    (shapes_entry(name="sweep", n=[2, 2]), "sweep.matrix_shapes[0].n", "without repeated"),
    (shapes_entry(name="llama", tensor_parallel=3), "sweep.matrix_shapes[0].tensor_parallel",
     "one of 1, 2, 4, 8"),
    (shapes_entry(), "sweep.matrix_shapes[0].name", "this key to be present"),
    ({"sweep": {}}, "sweep", "a mapping with at least 1 key"),
    ({"sweep": [{"name": "pow2"}]}, "sweep", "a mapping"),
    ({"sweep": {"shapes": []}}, "sweep.shapes", "did you mean 'matrix_shapes'"),
    ({"sweep": {"matrix_shapes": []}}, "sweep.matrix_shapes", "at least 1 item"),
    ({"sweep": {"matrix_shapes": {"name": "pow2"}}}, "sweep.matrix_shapes", "a list"),
    ({"sweep": {"params": {}}}, "sweep.params", "at least 1 key"),
    ({"sweep": {"params": {"block": []}}}, "sweep.params.block", "at least 1 item"),
    ({"sweep": {"params": {"block": 32}}}, "sweep.params.block", "a list"),
    ({"sweep": {"params": {"block": [[1]]}}}, "sweep.params.block[0]", "a number"),
    ({"sweep": {"params": {"a b": [1]}}}, "sweep.params", "an identifier"),
    ({"sweep": {"params": {"mode": ["a/b"]}}}, "sweep.params.mode[0]", "letters, digits"),
    ({"sweep": {"params": {"mode": ["__import__('os')"]}}}, "sweep.params.mode[0]",
     "letters, digits"),
    ({"sweep": {"params": {"x": [1, "1"]}}}, "sweep.params.x", "read differently"),
    ({"sweep": {"params": {"x": [float("inf")]}}}, "sweep.params.x[0]", "a finite number"),
    ({"sweep": {"params": {"precision": ["fp32"]}}}, "sweep.params.precision",
     "set by the harness"),
    ({"sweep": {"matrix_shapes": [{"name": "pow2"}], "params": {"n": [1]}}}, "sweep.params.n",
     "sweep.matrix_shapes sets them"),
    ({"problem_size": 512, "sweep": {"params": {"x": [1]}}}, "problem_size", "a mapping"),
])
def test_errors_name_file_key_and_expectation(data: dict[str, Any], key: str,
                                              words: str) -> None:
    error = error_for(data)
    assert error.source == SOURCE
    assert error.key == key, error.message
    assert words in error.message, error.message
    assert error.message.startswith(f"{SOURCE}: key '{key}': expected")


def test_params_may_name_m_k_n_without_matrix_shapes() -> None:
    config = bench_config_from_data({"sweep": {"params": {"n": [1, 2]}}}, SOURCE)
    assert [p.label for p in config.sweep] == ["n=1", "n=2"]


# -- the cap on points -------------------------------------------------------------------------


def test_too_many_shapes_is_refused_without_expanding_them() -> None:
    error = error_for(shapes_entry(name="sweep", min_power=0, max_power=40))  # 68,921 shapes
    assert error.key == "sweep.matrix_shapes"
    assert f"at most {MAX_SWEEP_POINTS} shapes per kernel" in error.message
    error = error_for(shapes_entry(name="custom", shapes=[[1, 1, d] for d in range(1, 10_002)]))
    assert error.key == "sweep.matrix_shapes"


def test_too_many_points_names_the_count() -> None:
    data = {"sweep": {"matrix_shapes": [{"name": "pow2", "min_power": 0, "max_power": 9}],
                      "params": {"a": list(range(100)), "b": list(range(11))}}}
    error = error_for(data)
    assert error.key == "sweep"
    assert "at most 10000 points per kernel" in error.message
    assert "11000 points" in error.message


def test_the_cap_itself_is_allowed() -> None:
    config = bench_config_from_data({"sweep": {"params": {"a": list(range(100)),
                                                          "b": list(range(100))}}}, SOURCE)
    assert len(config.sweep) == MAX_SWEEP_POINTS
    assert len(expand_sweep({"params": {"a": [1, 2, 3]}}, SOURCE, limit=3)) == 3
    with pytest.raises(ConfigError):
        expand_sweep({"params": {"a": [1, 2, 3]}}, SOURCE, limit=2)


# -- the README's examples ---------------------------------------------------------------------


def readme_yaml_blocks(heading: str) -> list[str]:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return re.findall(r"```yaml\n(.*?)```", section, flags=re.DOTALL)


def test_the_readme_examples_are_valid_and_expand_as_documented() -> None:
    reference, example, zipped, generators = (
        readme_yaml_blocks("## bench.yaml reference")[0], *readme_yaml_blocks("### Sweeps"))
    assert [p.label for p in bench_config_from_data(yaml.safe_load(zipped), SOURCE).sweep] == [
        f"batch={b},heads={h},dim={d}" for b in (1, 8) for h, d in ((8, 128), (16, 64), (32, 64))]
    assert len(bench_config_from_data(yaml.safe_load(reference), SOURCE).sweep) == 3
    config = bench_config_from_data(yaml.safe_load(example), SOURCE)
    assert [p.label for p in config.sweep][:2] == ["m=64,k=64,n=64,block=32",
                                                   "m=64,k=64,n=64,block=64"]
    assert len(config.sweep) == 6
    shapes = bench_config_from_data({"sweep": yaml.safe_load(generators)}, SOURCE).sweep
    # custom 2, llama 4, pow2 3 - 1 repeat, pow2_extended 4 - 2 repeats, sweep 8, lists 3
    assert len(shapes) == 2 + 4 + 2 + 2 + 8 + 3
    assert shapes[2].label == "attn.wqkv_m16384"


# -- zip: paired axes ---------------------------------------------------------------------------


def test_zip_pairs_its_lists_instead_of_their_product() -> None:
    assert labels({"zip": {"m": [64, 128, 256], "n": [32, 64, 64]}}) == [
        "m=64,n=32", "m=128,n=64", "m=256,n=64"]  # a value may repeat in one list


def test_zip_rows_are_taken_with_params_and_shapes() -> None:
    spec = {"matrix_shapes": [{"name": "custom", "shapes": [[1, 2, 3]]}],
            "params": {"block": [8, 16]}, "zip": {"heads": [4, 8], "dim": [64, 32]}}
    assert labels(spec) == ["m=1,k=2,n=3,block=8,heads=4,dim=64",
                            "m=1,k=2,n=3,block=8,heads=8,dim=32",
                            "m=1,k=2,n=3,block=16,heads=4,dim=64",
                            "m=1,k=2,n=3,block=16,heads=8,dim=32"]
    point = expand_sweep(spec)[1]
    assert point.values == {"m": 1, "k": 2, "n": 3, "block": 8, "heads": 8, "dim": 32}


@pytest.mark.parametrize(("zipped", "params", "key", "expected"), [
    ({"m": [1, 2], "n": [1]}, {}, "sweep.zip", "lists of one length"),
    ({"m": [1, 1], "n": [2, 2]}, {}, "sweep.zip", "rows that read differently"),
    ({"block": [1, 2]}, {"block": [3]}, "sweep.zip.block", "a name that sweep.params"),
    ({"seed": [1, 2]}, {}, "sweep.zip.seed", "a kernel parameter"),
])
def test_bad_zips_are_config_errors(zipped: dict[str, Any], params: dict[str, Any], key: str,
                                    expected: str) -> None:
    data: dict[str, Any] = {"sweep": {"zip": zipped, **({"params": params} if params else {})}}
    error = error_for(data)
    assert error.key == key and expected in error.expected


def test_zip_counts_towards_the_point_limit() -> None:
    error = error_for({"sweep": {"params": {"a": list(range(200))},
                                 "zip": {"b": list(range(100)), "c": list(range(100))}}})
    assert error.key == "sweep" and "20000 points" in error.message
