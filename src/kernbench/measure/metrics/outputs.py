"""Kernel outputs as NumPy trees: converted from any framework, flattened, saved and loaded safely.

A kernel returns an array, a scalar, or tuples / lists / dicts of them (nested), from NumPy,
PyTorch, JAX or CuPy. :func:`to_numpy` turns that into the same tree with NumPy leaves, so
accuracy checks and saved outputs never depend on the framework::

    to_numpy((torch_tensor, {"w": jax_array, "n": 3}))  # -> (ndarray, {"w": ndarray, "n": ndarray})

Leaves: torch tensors are detached and moved to the CPU; dtypes NumPy cannot hold (bfloat16, the
float8 family, and ml_dtypes' small floats) become float32, ml_dtypes' small ints become int64;
Python and NumPy scalars become 0-d arrays; ``None`` stays ``None``. Anything else (strings, object
arrays, arbitrary objects) raises :class:`TypeError` naming where in the tree it was found.
PyTorch and JAX are never imported here: their arrays are recognised by duck typing.

:func:`save_output` writes an ``.npz`` archive of the leaves plus a JSON entry describing the tree
(containers, dict keys, each leaf's path and original dtype), atomically; :func:`load_output`
rebuilds the tree. Neither ever pickles: every array is written and read with
``allow_pickle=False``, so loading a file cannot run code.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from kernbench.results.files import atomic_writer

MAX_DEPTH = 32
"""Deepest nesting of containers accepted (guards against self-referencing containers)."""
STRUCTURE_ENTRY = "__kernbench_structure__"
"""Name of the archive entry (JSON as uint8 bytes) that describes the tree."""
FORMAT = "kernbench-output"
FORMAT_VERSION = 1
_NUMERIC_KINDS = frozenset("biufc")
_NUMPY_FLOATS = frozenset({"float16", "float32", "float64"})


class Leaf(NamedTuple):
    """One array of a flattened output: its path in the tree, its values, its original dtype."""

    path: str
    array: np.ndarray[Any, Any]
    dtype: str
    """Framework-neutral name of the returned dtype ("bfloat16", not "torch.bfloat16")."""


# --- leaves ---------------------------------------------------------------------------------


def _where(path: str) -> str:
    return f"at {path}" if path else "at the top level"


def _is_torch(value: object) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "detach")


def _is_cupy(value: object) -> bool:
    return type(value).__module__.startswith("cupy") and callable(getattr(value, "get", None))


def _torch_to_numpy(tensor: Any, path: str) -> tuple[np.ndarray[Any, Any], str]:
    """CPU NumPy copy of a tensor; floating dtypes NumPy lacks (bf16, fp8) become float32."""
    t = tensor.detach()
    name = str(t.dtype).removeprefix("torch.")
    if getattr(t, "is_quantized", False):
        t = t.dequantize()
    if str(getattr(t, "layout", "torch.strided")) != "torch.strided":
        t = t.to_dense()
    t = t.cpu().resolve_conj().resolve_neg()
    if name == "complex32":
        t = t.cfloat()
    elif t.is_floating_point() and str(t.dtype).removeprefix("torch.") not in _NUMPY_FLOATS:
        t = t.float()
    try:
        return t.numpy(), name
    except (TypeError, RuntimeError) as exc:
        raise TypeError(f"cannot convert a torch tensor of dtype {name} "
                        f"{_where(path)} to NumPy: {exc}") from exc


def _upcast(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """ml_dtypes arrays (bfloat16, float8_*, int4...) as float32 / int64; others unchanged."""
    if not array.dtype.type.__module__.startswith("ml_dtypes"):
        return array
    wide = np.int64 if "int" in array.dtype.name else np.float32
    return array.astype(wide)


def _convert_leaf(value: object, path: str, copy: bool) -> tuple[np.ndarray[Any, Any], str]:
    """(numeric NumPy array, original dtype name) of one leaf; TypeError for anything else.

    With `copy`, the array never shares memory with `value` (a kernel may reuse its buffers).
    """
    fresh = False
    if isinstance(value, np.ndarray):
        array, name = value, value.dtype.name
    elif isinstance(value, (bool, int, float, complex, np.generic)):
        array, fresh = np.asarray(value), True
        name = array.dtype.name
    elif _is_torch(value):
        array, name = _torch_to_numpy(value, path)
    elif _is_cupy(value):
        array, fresh = np.asarray(value.get()), True  # type: ignore[attr-defined]
        name = array.dtype.name
    elif hasattr(value, "__array__") and not isinstance(value, (str, bytes)):
        array = np.asarray(value)  # JAX arrays (device to host), other array-likes
        name = array.dtype.name
    else:
        raise TypeError(f"cannot convert a {type(value).__name__} {_where(path)} to a NumPy "
                        "array: expected an array, a tensor, a number, None, or a tuple, list "
                        "or dict of them")
    upcast = _upcast(array)
    fresh = fresh or upcast is not array
    if upcast.dtype.kind not in _NUMERIC_KINDS:
        raise TypeError(f"the leaf {_where(path)} has dtype {upcast.dtype}, not a number "
                        "(bool, integer, float or complex)")
    if copy and not fresh:
        upcast = upcast.copy()
    return upcast, name


# --- trees ----------------------------------------------------------------------------------


def _join(prefix: str, key: object) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def _check_depth(depth: int, path: str) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"output nested deeper than {MAX_DEPTH} containers {_where(path)} "
                         "(a container that contains itself?)")


def _items(value: object) -> list[tuple[object, object]] | None:
    """(key, child) pairs of a tuple, list or mapping; None for a leaf."""
    if isinstance(value, (tuple, list)):
        return list(enumerate(value))
    if isinstance(value, Mapping):
        return list(value.items())
    return None


def _to_numpy(value: object, path: str, depth: int) -> object:
    _check_depth(depth, path)
    if value is None:
        return None
    if isinstance(value, Mapping):
        return {key: _to_numpy(item, _join(path, key), depth + 1) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        items = [_to_numpy(item, _join(path, i), depth + 1) for i, item in enumerate(value)]
        return tuple(items) if isinstance(value, tuple) else items
    return _convert_leaf(value, path, copy=True)[0]


def to_numpy(value: object) -> object:
    """The same tree (tuples, lists, dicts; None kept) with every leaf a fresh NumPy array.

    Named tuples come back as plain tuples and mappings as dicts. Raises TypeError for a leaf
    that is not numeric and ValueError for nesting deeper than :data:`MAX_DEPTH`.
    """
    return _to_numpy(value, "", 0)


def _walk(value: object, path: str, depth: int) -> Iterator[tuple[str, object]]:
    """(path, raw leaf) for every leaf that is not None, in container order."""
    _check_depth(depth, path)
    if value is None:
        return
    items = _items(value)
    if items is None:
        yield path, value
        return
    for key, item in items:
        yield from _walk(item, _join(path, key), depth + 1)


def flatten_leaves(value: object) -> list[Leaf]:
    """Every leaf of `value` as a :class:`Leaf`; arrays may share memory with `value`.

    Paths join the index or key of each level with dots ("0", "1.weight"); a single array at the
    top level has the path "". None leaves are skipped. Two leaves with the same path (keys 1 and
    "1" in one dict) raise ValueError.
    """
    leaves: list[Leaf] = []
    seen: set[str] = set()
    for path, raw in _walk(value, "", 0):
        if path in seen:
            raise ValueError(f"two leaves share the path {path!r}")
        seen.add(path)
        array, dtype = _convert_leaf(raw, path, copy=False)
        leaves.append(Leaf(path, array, dtype))
    return leaves


def flatten(value: object) -> list[tuple[str, np.ndarray[Any, Any]]]:
    """(path, array) for every leaf, in container order; see :func:`flatten_leaves`."""
    return [(leaf.path, leaf.array) for leaf in flatten_leaves(value)]


# --- saving ---------------------------------------------------------------------------------


def _encode(value: object, path: str, depth: int, leaves: list[Leaf]) -> dict[str, Any]:
    """JSON description of the tree; appends the converted leaves to `leaves`."""
    _check_depth(depth, path)
    if value is None:
        return {"kind": "none"}
    if isinstance(value, Mapping):
        entries = []
        for key, item in value.items():
            if not isinstance(key, (str, int)):
                raise TypeError(f"dict key {key!r} {_where(path)} cannot be saved: "
                                "only str and int keys can")
            entries.append([key, _encode(item, _join(path, key), depth + 1, leaves)])
        return {"kind": "dict", "items": entries}
    if isinstance(value, (tuple, list)):
        kind = "tuple" if isinstance(value, tuple) else "list"
        return {"kind": kind, "items": [_encode(item, _join(path, i), depth + 1, leaves)
                                        for i, item in enumerate(value)]}
    array, dtype = _convert_leaf(value, path, copy=False)
    leaves.append(Leaf(path, array, dtype))
    return {"kind": "leaf", "index": len(leaves) - 1}


def _describe(value: object) -> tuple[dict[str, Any], list[Leaf]]:
    """(the JSON structure entry, the leaves) of an output."""
    leaves: list[Leaf] = []
    tree = _encode(value, "", 0, leaves)
    described = [{"path": leaf.path, "dtype": leaf.dtype, "stored_dtype": leaf.array.dtype.name,
                  "shape": list(leaf.array.shape)} for leaf in leaves]
    return {"format": FORMAT, "version": FORMAT_VERSION, "tree": tree, "leaves": described}, leaves


def _write_npz(handle: Any, arrays: Mapping[str, np.ndarray[Any, Any]]) -> None:
    """What np.savez writes (a zip of .npy members), with pickling refused on every member."""
    with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)


def save_output(value: object, path: Path) -> None:
    """Write `value` (any output :func:`to_numpy` accepts) to `path` as an ``.npz`` archive.

    Entries ``leaf_0``, ``leaf_1``... hold the converted leaves; the entry
    :data:`STRUCTURE_ENTRY` holds JSON: the containers and dict keys (str or int), and for each
    leaf its path, original dtype, stored dtype and shape. The file is written beside `path`
    and moved into place (:func:`~kernbench.results.files.atomic_writer`), so readers never
    see half a file. `path` is used
    as given (no ``.npz`` is appended).
    """
    path = Path(path)
    meta, leaves = _describe(value)
    arrays = {f"leaf_{i}": leaf.array for i, leaf in enumerate(leaves)}
    arrays[STRUCTURE_ENTRY] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    with atomic_writer(path) as handle:
        _write_npz(handle, arrays)


# --- loading --------------------------------------------------------------------------------


def _decode(node: object, arrays: list[np.ndarray[Any, Any]], used: set[int]) -> object:
    """Rebuild one node of the JSON structure; ValueError if it is malformed."""
    if not isinstance(node, dict):
        raise ValueError(f"malformed structure node {node!r}")
    kind = node.get("kind")
    if kind == "none":
        return None
    if kind == "leaf":
        index = node.get("index")
        if not isinstance(index, int) or not 0 <= index < len(arrays) or index in used:
            raise ValueError(f"bad leaf index {index!r}")
        used.add(index)
        return arrays[index]
    items = node.get("items")
    if not isinstance(items, list):
        raise ValueError(f"structure node of kind {kind!r} has no item list")
    if kind in ("tuple", "list"):
        decoded = [_decode(item, arrays, used) for item in items]
        return tuple(decoded) if kind == "tuple" else decoded
    if kind == "dict":
        if not all(isinstance(e, list) and len(e) == 2 and isinstance(e[0], (str, int))
                   for e in items):
            raise ValueError("malformed dict entries")
        return {key: _decode(item, arrays, used) for key, item in items}
    raise ValueError(f"unknown structure node kind {kind!r}")


def _read_leaves(data: Any, described: object) -> list[np.ndarray[Any, Any]]:
    """The leaf arrays of an open archive, checked against their description."""
    if not isinstance(described, list):
        raise ValueError("the structure entry has no leaf list")
    arrays = []
    for i, info in enumerate(described):
        array = data[f"leaf_{i}"]
        if not isinstance(info, dict) or list(array.shape) != info.get("shape"):
            raise ValueError(f"leaf {i} does not match its description")
        if array.dtype.kind not in _NUMERIC_KINDS:
            raise ValueError(f"leaf {i} has dtype {array.dtype}, not a number")
        arrays.append(array)
    return arrays


def _read_archive(path: Path) -> object:
    loaded = np.load(path, allow_pickle=False)
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise ValueError("not an .npz archive")
    with loaded as data:
        if STRUCTURE_ENTRY not in data.files:
            raise ValueError("no structure entry: not written by kernbench's save_output")
        raw = data[STRUCTURE_ENTRY]
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise ValueError("malformed structure entry")
        meta = json.loads(raw.tobytes().decode("utf-8"))
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise ValueError("the structure entry is not a kernbench output description")
        arrays = _read_leaves(data, meta.get("leaves"))
    return _decode(meta.get("tree"), arrays, set())


def load_output(path: Path) -> object:
    """The tree of NumPy arrays saved by :func:`save_output` at `path`.

    Never unpickles (``np.load(..., allow_pickle=False)``); a corrupt, truncated, foreign or
    pickle-bearing file raises ValueError naming `path`. A missing file raises
    FileNotFoundError. Leaves come back with their stored dtype (bf16 outputs as float32).
    """
    path = Path(path)
    try:
        return _read_archive(path)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, EOFError, KeyError, IndexError, TypeError,
            zipfile.BadZipFile) as exc:
        raise ValueError(f"cannot load the kernel output {path}: {exc}") from exc
