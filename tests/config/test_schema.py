"""Tests for kernbench.results.schema: the bench.yaml schema and the versioned result JSON."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from test_config import QUASIM_EXAMPLE as QUASIM_TEXT

from kernbench.config import schema as config_schema
from kernbench.config.schema import BENCH_YAML_SCHEMA, validate_bench_yaml
from kernbench.config.unknown_keys import key_path
from kernbench.errors import ConfigError, KernbenchError
from kernbench.results import schema, vocabulary
from kernbench.results.schema import SCHEMA_VERSION, migrate

SOURCE = "kernels/quasim/bench.yaml"

QUASIM_EXAMPLE = yaml.safe_load(QUASIM_TEXT)


def error_for(data: object) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        validate_bench_yaml(data, SOURCE)
    return info.value


# -- key_path --------------------------------------------------------------------------------


@pytest.mark.parametrize(("parts", "text"), [
    ((), ""),
    (("precisions",), "precisions"),
    (("skip_conditions", 0, "check"), "skip_conditions[0].check"),
    (("tolerances", "fp16", "rmse"), "tolerances.fp16.rmse"),
    (("backends", 2), "backends[2]"),
    ((0,), "[0]"),
    (("a", 0, 1, "b"), "a[0][1].b"),
])
def test_key_path(parts: tuple[object, ...], text: str) -> None:
    assert key_path(parts) == text


def test_key_path_accepts_any_iterable() -> None:
    assert key_path(iter(["skip_conditions", 3, "reason"])) == "skip_conditions[3].reason"


# -- validate_bench_yaml ---------------------------------------------------------------------


def test_bench_yaml_schema_is_a_valid_json_schema() -> None:
    Draft202012Validator.check_schema(BENCH_YAML_SCHEMA)


def test_schema_precisions_match_the_precision_table() -> None:
    assert set(config_schema.PRECISION_NAMES) == set(vocabulary.PRECISION_NAMES)
    assert set(vocabulary.PRECISION_ALIASES) & set(config_schema.PRECISION_NAMES) <= {"fp8"}


def test_quasim_example_is_valid() -> None:
    assert validate_bench_yaml(copy.deepcopy(QUASIM_EXAMPLE), SOURCE) is None


def test_empty_mapping_is_valid() -> None:
    assert validate_bench_yaml({}, SOURCE) is None


@pytest.mark.parametrize("data", [
    {"problem_size": 4096},
    {"problem_size": [128, 256]},
    {"problem_size": "large"},
    {"problem_size": {"n": 4, "_private": True}},
    {"precisions": ["fp8", "fp8_e5m2", "bf16", "int8", "fp64"]},
    {"backends": ["rocm"]},
    {"tolerances": {"fp16": {"rmse": 0.1}, "max_error": 0}},
    {"skip_conditions": []},
    {"skip_conditions": [{"reason": "r", "precision": "bf16"}]},
    {"function_name": "_bench2"},
    {"framework": "python"},
    {"timeout_s": 0.5},
    {"description": ""},
])
def test_other_valid_documents(data: dict[str, Any]) -> None:
    assert validate_bench_yaml(data, SOURCE) is None


def test_unknown_top_level_key_suggests_a_known_one() -> None:
    error = error_for({**QUASIM_EXAMPLE, "backend": ["cpu"]})
    assert error.source == SOURCE
    assert error.key == "backend"
    assert "did you mean 'backends'" in error.message
    assert error.message.startswith(f"{SOURCE}: key 'backend': expected")


def test_unknown_key_without_close_match_lists_known_keys() -> None:
    error = error_for({"zzzz": 1})
    assert error.key == "zzzz"
    assert "did you mean" not in error.message
    assert "precisions" in error.message


@pytest.mark.parametrize(("data", "key", "words"), [
    ({"precisions": "fp32"}, "precisions", "a list"),
    ({"precisions": ["fp32", "fp12"]}, "precisions[1]", "one of fp64"),
    ({"backends": ["gpu"]}, "backends[0]", "one of cpu, cuda, rocm"),
    ({"tolerances": {"rmse": "x"}}, "tolerances.rmse", "a number"),
    ({"tolerances": {"fp32": {"rmse": True}}}, "tolerances.fp32.rmse", "a number"),
    ({"skip_conditions": [{"backend": "cuda"}]}, "skip_conditions[0].reason",
     "this key to be present"),
    ({"skip_conditions": [{"reason": "r", "check": 3}]}, "skip_conditions[0].check",
     "a string"),
    ({"function_name": "1bad"}, "function_name", "an identifier"),
    ({"framework": "keras"}, "framework", "one of numpy"),
    ({"problem_size": None}, "problem_size", "a mapping"),
    ({"problem_size": {"grid size": 1}}, "problem_size", "identifier"),
    ({"timeout_s": -1}, "timeout_s", "0"),
    ({"precisions": []}, "precisions", "expected"),
])
def test_errors_name_key_and_expectation(data: dict[str, Any], key: str, words: str) -> None:
    error = error_for(data)
    assert error.key == key
    assert words in error.message
    assert error.message.startswith(f"{SOURCE}: key '{key}': expected")


@pytest.mark.parametrize(("text", "key", "got"), [
    ("tolerances: {relative_error: .nan}", "tolerances.relative_error", "nan"),
    ("tolerances: {rmse: .inf}", "tolerances.rmse", "inf"),
    ("tolerances: {fp16: {max_error: .NaN}}", "tolerances.fp16.max_error", "nan"),
    ("tolerances: {fp32: {relative_error: .inf}}", "tolerances.fp32.relative_error", "inf"),
    ("tolerances: {rmse: -1.0}", "tolerances.rmse", "-1.0"),
])
def test_a_tolerance_must_be_finite(text: str, key: str, got: str) -> None:
    """NaN passes a `minimum` (every comparison with it is false) and .inf is >= 0: both would
    reach the worker and fail the case there, instead of making the kernel invalid."""
    error = error_for(yaml.safe_load(text))
    assert error.message.startswith(f"{SOURCE}: key '{key}': expected a finite number")
    assert error.message.endswith(f"(got {got})")


def test_every_problem_is_reported_at_once_the_shallowest_first() -> None:
    """A file with two wrong values takes one edit, not two runs."""
    error = error_for({"tolerances": {"rmse": "x"}, "precisions": "fp32"})
    assert error.key == "precisions"
    assert error.message == (f"{SOURCE}: 2 problems: key 'precisions': expected a list "
                             "(got 'fp32'); key 'tolerances.rmse': expected a number (got 'x')")


def test_unknown_keys_and_wrong_values_are_reported_together() -> None:
    error = error_for({"precisons": ["fp32"], "timeout_s": -1})
    assert error.message.startswith(f"{SOURCE}: 2 problems: key 'precisons': expected a known "
                                    "key: one of ")
    assert "(did you mean 'precisions'?) (got \"unknown key 'precisons'\")" in error.message
    assert "key 'timeout_s': expected" in error.message


@pytest.mark.parametrize("data", [None, [], "precisions: [fp32]", 1])
def test_document_must_be_a_mapping(data: object) -> None:
    error = error_for(data)
    assert error.key == ""
    assert "a mapping" in error.message


# -- migrate ---------------------------------------------------------------------------------


def test_current_version_passes_unchanged() -> None:
    document = {"schema_version": SCHEMA_VERSION, "results": [1, 2]}
    assert migrate(copy.deepcopy(document), "summary.json") == document


def test_newer_version_asks_for_an_upgrade() -> None:
    with pytest.raises(KernbenchError, match="upgrade") as info:
        migrate({"schema_version": SCHEMA_VERSION + 1}, "summary.json")
    assert "summary.json" in str(info.value)
    assert str(SCHEMA_VERSION + 1) in str(info.value)


@pytest.mark.parametrize("document", [
    {},
    {"schema_version": None},
    {"schema_version": "1"},
    {"schema_version": 1.0},
    {"schema_version": 0},
    {"schema_version": -3},
    {"schema_version": [1]},
])
def test_missing_or_bad_version_is_an_error(document: dict[str, Any]) -> None:
    with pytest.raises(KernbenchError, match="schema_version") as info:
        migrate(document, "results/x.json")
    assert "results/x.json" in str(info.value)


def test_boolean_version_is_not_an_integer() -> None:
    with pytest.raises(KernbenchError, match="schema_version"):
        migrate({"schema_version": True}, "summary.json")


def test_older_versions_are_migrated_step_by_step(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def step(version: int, rename: tuple[str, str]) -> Any:
        def migration(document: dict[str, Any]) -> dict[str, Any]:
            seen.append(document["schema_version"])
            assert document["schema_version"] == version
            old, new = rename
            document = dict(document)
            document[new] = document.pop(old)
            return document
        return migration

    monkeypatch.setattr(schema, "SCHEMA_VERSION", 3)
    monkeypatch.setitem(schema.MIGRATIONS, 1, step(1, ("a", "b")))
    monkeypatch.setitem(schema.MIGRATIONS, 2, step(2, ("b", "c")))
    result = migrate({"schema_version": 1, "a": 42}, "old.json")
    assert result == {"schema_version": 3, "c": 42}
    assert seen == [1, 2]


def test_schema_1_gpu_records_say_they_were_timed_with_a_sync_per_call() -> None:
    """Version 1 timed GPU cases with a host synchronise after every call; migrated records
    say so (mode "sync"), so no comparison puts them beside another mode's figures."""
    gpu = {"kernel_name": "k", "backend": "cuda", "precision": "fp32", "status": "ok",
           "l2_flush": True, "timing": {"samples_ms": [0.016, 0.017], "inner_loops": 100}}
    cpu = {"kernel_name": "k", "backend": "cpu", "precision": "fp32", "status": "ok",
           "timing": {"samples_ms": [1.0]}}
    compact = {"kernel_name": "k", "backend": "rocm", "precision": "fp32", "status": "ok",
               "samples_ms": [0.5]}
    skipped = {"kernel_name": "k", "backend": "cuda", "precision": "fp32", "status": "skipped",
               "timing": {"samples_ms": []}}
    document = migrate({"schema_version": 1, "results": [gpu, cpu, compact, skipped]},
                       "old.json")
    assert document["schema_version"] == SCHEMA_VERSION
    migrated_gpu, migrated_cpu, migrated_compact, migrated_skipped = document["results"]
    assert migrated_skipped["timing"] == {"samples_ms": []}  # nothing was timed
    assert migrated_cpu["timing"] == {"samples_ms": [1.0]}
    assert migrated_gpu["timing"]["mode"] == "sync"
    sync = migrated_gpu["timing"]["gpu_timing"]["modes"]["sync"]
    assert migrated_gpu["timing"]["gpu_timing"]["primary"] == "sync"
    assert sync["samples_us"] == pytest.approx([16.0, 17.0])
    assert sync["calls_per_sample"] == 100
    assert sync["flush"] == {"bytes": None, "per": "sample"}
    assert sync["reason"] == schema.SCHEMA_1_GPU_REASON
    assert migrated_compact["gpu_timing"]["modes"]["sync"]["samples_us"] == [500.0]


# -- versions 1 and 2 -> 3: records name their machine --------------------------------------------


def test_version_1_summary_gets_testbed_and_machine_per_record() -> None:
    old = {"schema_version": 1,
           "environment": {"fingerprint": "ab12", "hostname": "node7"},
           "settings": {"shards": ["shard-1", "shard-2"]},
           "results": [{"kernel_name": "gemm"}, {"kernel_name": "axpy", "testbed": "x"}]}
    new = migrate(old, "summary.json")
    assert new["schema_version"] == SCHEMA_VERSION == 3
    assert new["environment"]["testbed"] == "node7"
    assert new["results"] == [
        {"kernel_name": "gemm", "fingerprint": "ab12", "testbed": "node7"},
        {"kernel_name": "axpy", "fingerprint": "ab12", "testbed": "x"}]
    assert [s["source"] for s in new["settings"]["shards"]] == ["shard-1", "shard-2"]
    assert new["settings"]["shards"][0]["testbed"] is None


def test_version_1_env_and_history_record_and_manifest() -> None:
    env = migrate({"schema_version": 1, "hostname": "h", "fingerprint": "f"}, "env.json")
    assert env["testbed"] == "h"
    record = migrate({"schema_version": 1, "kind": "kernbench-history", "fingerprint": "f",
                      "results": [{"kernel_name": "k"}]}, "history")
    assert record["results"] == [{"kernel_name": "k", "fingerprint": "f", "testbed": None,
                                  "inner_loops": 0}]  # 0: the record did not say
    manifest = migrate({"schema_version": 1, "root": ".", "kernels": []}, "manifest")
    assert manifest == {"schema_version": 3, "root": ".", "kernels": []}
