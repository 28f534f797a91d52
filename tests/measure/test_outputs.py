"""Tests for kernbench.measure.metrics.outputs: outputs of any framework as NumPy trees, saved
safely."""

from __future__ import annotations

import json
import re
import zipfile
from collections import namedtuple
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernbench.measure.metrics.outputs import (
    STRUCTURE_ENTRY,
    flatten,
    flatten_leaves,
    load_output,
    save_output,
    to_numpy,
)


def same_tree(a: object, b: object) -> bool:
    """Same containers (tuple vs list matters), keys, shapes, dtypes and values."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(same_tree(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list))
        return len(a) == len(b) and all(same_tree(x, y) for x, y in zip(a, b, strict=True))
    if a is None:
        return True
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


# --- to_numpy -------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "dtype"), [
    (1.5, np.float64), (3, np.int64), (True, np.bool_), (1 + 2j, np.complex128),
    (np.float32(2.5), np.float32), (np.int8(-3), np.int8),
])
def test_scalars_become_0d_arrays(value: object, dtype: type) -> None:
    result = to_numpy(value)
    assert isinstance(result, np.ndarray)
    assert result.shape == () and result.dtype == dtype and result.item() == value


def test_containers_keep_their_structure() -> None:
    value = (np.ones(2), [np.zeros(1), None, 4.0], {"w": np.arange(3), "b": {"c": (1,)}})
    result = to_numpy(value)
    expected = (np.ones(2), [np.zeros(1), None, np.asarray(4.0)],
                {"w": np.arange(3), "b": {"c": (np.asarray(1),)}})
    assert same_tree(result, expected)


def test_none_and_empty_containers_stay() -> None:
    assert to_numpy(None) is None
    assert to_numpy(((), [], {})) == ((), [], {})


def test_named_tuples_become_plain_tuples() -> None:
    Pair = namedtuple("Pair", "a b")
    result = to_numpy(Pair(np.ones(1), 2.0))
    assert type(result) is tuple
    assert same_tree(result, (np.ones(1), np.asarray(2.0)))


def test_arrays_are_copied_so_later_writes_do_not_leak() -> None:
    buffer = np.zeros(3)
    result = to_numpy([buffer])
    buffer[:] = 7.0
    assert isinstance(result, list)
    assert np.array_equal(result[0], np.zeros(3))


def test_numpy_float16_is_kept() -> None:
    result = to_numpy(np.array([1.0, 2.0], dtype=np.float16))
    assert isinstance(result, np.ndarray) and result.dtype == np.float16


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_ml_dtypes_arrays_are_upcast_to_float32(name: str) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    small = np.array([0.5, -1.0, 2.0], dtype=getattr(ml_dtypes, name))
    result = to_numpy(small)
    assert isinstance(result, np.ndarray) and result.dtype == np.float32
    assert result.tolist() == [0.5, -1.0, 2.0]


@pytest.mark.parametrize("value", ["text", b"bytes", object(), np.array(["a"]),
                                   np.array([object()], dtype=object)])
def test_other_objects_raise_type_error(value: object) -> None:
    with pytest.raises(TypeError, match=r"at 1\.x"):
        to_numpy((0, {"x": value}))


def test_a_container_that_contains_itself_is_refused() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="nested deeper"):
        to_numpy(loop)


# --- torch and jax --------------------------------------------------------------------------


def test_torch_tensors_are_detached_and_converted() -> None:
    torch = pytest.importorskip("torch")
    weight = torch.tensor([1.0, 2.0], requires_grad=True)
    result = to_numpy({"w": weight * 2, "i": torch.arange(3, dtype=torch.int8)})
    assert isinstance(result, dict)
    assert result["w"].dtype == np.float32 and result["w"].tolist() == [2.0, 4.0]
    assert result["i"].dtype == np.int8 and result["i"].tolist() == [0, 1, 2]


@pytest.mark.parametrize(("name", "expected"), [
    ("bfloat16", np.float32), ("float8_e4m3fn", np.float32), ("float8_e5m2", np.float32),
    ("float16", np.float16), ("float64", np.float64),
])
def test_torch_dtypes_numpy_lacks_are_upcast(name: str, expected: type) -> None:
    torch = pytest.importorskip("torch")
    tensor = torch.tensor([0.5, -1.5, 3.0]).to(getattr(torch, name))
    result = to_numpy(tensor)
    assert isinstance(result, np.ndarray) and result.dtype == expected
    assert result.tolist() == [0.5, -1.5, 3.0]


def test_torch_conjugate_views_are_resolved() -> None:
    torch = pytest.importorskip("torch")
    result = to_numpy(torch.tensor([1 + 2j]).conj())
    assert isinstance(result, np.ndarray) and result.tolist() == [1 - 2j]


def test_torch_tensor_converted_without_sharing_memory() -> None:
    torch = pytest.importorskip("torch")
    tensor = torch.zeros(2)
    result = to_numpy(tensor)
    tensor += 5
    assert isinstance(result, np.ndarray) and result.tolist() == [0.0, 0.0]


@pytest.mark.gpu
def test_cuda_tensors_are_moved_to_the_cpu() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    result = to_numpy((torch.tensor([0.5, 2.0], dtype=torch.bfloat16, device="cuda"),))
    assert isinstance(result, tuple)
    assert result[0].dtype == np.float32 and result[0].tolist() == [0.5, 2.0]


@pytest.mark.parametrize(("name", "expected"), [("float32", np.float32),
                                                ("bfloat16", np.float32),
                                                ("int32", np.int32)])
def test_jax_arrays_are_converted(name: str, expected: type) -> None:
    jnp = pytest.importorskip("jax.numpy")
    result = to_numpy([jnp.asarray([1, 2, 3], dtype=getattr(jnp, name))])
    assert isinstance(result, list)
    assert result[0].dtype == expected and result[0].tolist() == [1, 2, 3]


# --- flatten --------------------------------------------------------------------------------


def test_flatten_paths_are_stable_and_dotted() -> None:
    value = (np.ones(2), {"weight": np.zeros(1), "extra": [None, 3.0]})
    paths = [path for path, _ in flatten(value)]
    assert paths == ["0", "1.weight", "1.extra.1"]
    assert all(isinstance(array, np.ndarray) for _, array in flatten(value))


def test_flatten_of_a_single_leaf_has_the_empty_path() -> None:
    [(path, array)] = flatten(np.arange(4))
    assert path == "" and array.tolist() == [0, 1, 2, 3]


def test_flatten_leaves_records_the_original_dtype() -> None:
    torch = pytest.importorskip("torch")
    leaves = flatten_leaves([torch.ones(2, dtype=torch.bfloat16), np.ones(1, np.float16), 2])
    assert [leaf.dtype for leaf in leaves] == ["bfloat16", "float16", "int64"]
    assert leaves[0].array.dtype == np.float32


def test_flatten_refuses_two_leaves_with_one_path() -> None:
    with pytest.raises(ValueError, match="share the path"):
        flatten({1: np.ones(1), "1": np.ones(1)})


# --- save and load --------------------------------------------------------------------------

TREES: dict[str, object] = {
    "array": np.arange(6, dtype=np.float32).reshape(2, 3),
    "scalar": 2.5,
    "0-d": np.array(7, dtype=np.int8),
    "tuple": (np.ones(2), np.zeros(3, dtype=np.int64)),
    "list": [np.ones(2, dtype=np.float16), True],
    "dict": {"b": np.ones(1), "a": np.array([1 + 1j])},
    "int keys": {0: np.ones(1), 5: np.zeros(2)},
    "nested": ({"x": [np.ones(2), (None, np.zeros((0, 3)))]}, []),
    "empty": ((), [], {}),
    "none": None,
    "nan": np.array([np.nan, np.inf, -np.inf, 1.0]),
    "odd paths": {"a.b": np.ones(1), "": np.zeros(1), "ü": np.ones(2)},
}


@pytest.mark.parametrize("name", list(TREES))
def test_round_trip(tmp_path: Path, name: str) -> None:
    path = tmp_path / "out.npz"
    save_output(TREES[name], path)
    assert same_tree(load_output(path), to_numpy(TREES[name]))


def test_round_trip_of_bf16_torch_tensors_upcasts(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    value = {"y": torch.tensor([1.5, -2.0], dtype=torch.bfloat16), "n": torch.tensor(3)}
    save_output(value, tmp_path / "out.npz")
    loaded = load_output(tmp_path / "out.npz")
    assert isinstance(loaded, dict)
    assert loaded["y"].dtype == np.float32 and loaded["y"].tolist() == [1.5, -2.0]
    assert loaded["n"].dtype == np.int64 and loaded["n"].item() == 3


def test_the_structure_entry_describes_paths_and_original_dtypes(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    save_output((torch.ones(2, dtype=torch.bfloat16), {"w": np.ones((1, 2))}),
                tmp_path / "out.npz")
    with np.load(tmp_path / "out.npz", allow_pickle=False) as data:
        meta = json.loads(data[STRUCTURE_ENTRY].tobytes())
    assert meta["leaves"] == [
        {"path": "0", "dtype": "bfloat16", "stored_dtype": "float32", "shape": [2]},
        {"path": "1.w", "dtype": "float64", "stored_dtype": "float64", "shape": [1, 2]},
    ]


def test_save_writes_exactly_the_path_given(tmp_path: Path) -> None:
    save_output(np.ones(1), tmp_path / "result.bin")
    assert [p.name for p in tmp_path.iterdir()] == ["result.bin"]


def test_save_is_atomic_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "out.npz"
    save_output(np.ones(2), path)
    with pytest.raises(TypeError):
        save_output([np.zeros(2), "not a number"], path)
    assert [p.name for p in tmp_path.iterdir()] == ["out.npz"]
    assert same_tree(load_output(path), np.ones(2))


def test_save_refuses_keys_json_cannot_hold(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="only str and int keys"):
        save_output({(1, 2): np.ones(1)}, tmp_path / "out.npz")


def test_load_calls_np_load_with_allow_pickle_false(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    save_output([np.ones(2)], tmp_path / "out.npz")
    calls: list[dict[str, Any]] = []
    real_load = np.load

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(np, "load", spy)  # the module object outputs.py calls
    load_output(tmp_path / "out.npz")
    assert calls == [{"allow_pickle": False}]


UNPICKLED: list[str] = []


def _mark_unpickled() -> str:
    UNPICKLED.append("ran")
    return "payload"


class Payload:
    """Unpickling an instance calls _mark_unpickled: proof that code ran on load."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return (_mark_unpickled, ())


def test_a_pickled_object_array_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "evil.npz"
    meta = {"format": "kernbench-output", "version": 1, "tree": {"kind": "leaf", "index": 0},
            "leaves": [{"path": "", "dtype": "object", "stored_dtype": "object", "shape": [1]}]}
    structure = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    entries: dict[str, Any] = {"leaf_0": np.array([Payload()], dtype=object),
                               STRUCTURE_ENTRY: structure}
    np.savez(path, **entries)
    with pytest.raises(ValueError, match=r"evil\.npz"):
        load_output(path)
    assert UNPICKLED == []


def test_a_plain_pickle_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "evil.npz"
    with path.open("wb") as handle:
        np.save(handle, np.array([Payload()], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match=r"evil\.npz"):
        load_output(path)
    assert UNPICKLED == []


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "npy", "foreign npz",
                                    "bad json", "shape lie", "missing leaf", "text leaf"])
def test_corrupt_files_raise_value_error_naming_the_path(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "out.npz"
    save_output({"a": np.arange(100.0), "b": [np.ones(3)]}, path)
    good = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"\x00not an archive at all" * 10)
    elif damage == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "npy":
        with path.open("wb") as handle:
            np.save(handle, np.ones(3))
    elif damage == "foreign npz":
        with path.open("wb") as handle:
            np.savez(handle, x=np.ones(3))
    else:
        with np.load(path, allow_pickle=False) as data:
            entries = {name: data[name] for name in data.files}
        meta = json.loads(entries[STRUCTURE_ENTRY].tobytes())
        if damage == "bad json":
            entries[STRUCTURE_ENTRY] = np.frombuffer(b"{not json", dtype=np.uint8)
        elif damage == "shape lie":
            meta["leaves"][0]["shape"] = [99]
        elif damage == "text leaf":
            entries["leaf_0"] = np.array(["x"] * 100)
        else:
            del entries["leaf_1"]
        if damage != "bad json":
            entries[STRUCTURE_ENTRY] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        with path.open("wb") as handle:
            np.savez(handle, **entries)
    with pytest.raises(ValueError, match=re.escape(str(path))):
        load_output(path)


def test_a_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_output(tmp_path / "absent.npz")


def test_the_archive_is_a_standard_npz(tmp_path: Path) -> None:
    path = tmp_path / "out.npz"
    save_output([np.arange(3)], path)
    assert zipfile.is_zipfile(path)
    with np.load(path, allow_pickle=False) as data:
        assert sorted(data.files) == [STRUCTURE_ENTRY, "leaf_0"]
        assert data["leaf_0"].tolist() == [0, 1, 2]
