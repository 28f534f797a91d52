"""bench.yaml ``sweep``: the points of ``matrix_shapes`` generators x ``params`` lists.

Each point becomes its own case: its values are merged over a mapping ``problem_size`` and its
label goes into the case id, ``gemm[cpu,fp32]`` -> ``gemm[cpu,fp32,m=64,k=64,n=64]``.

The shape generators are those of the seed's microbenchmark runner (DESIGN's seed 001 documents
them; the runner's ``get_shapes_for_config`` defines them), each giving ``[m, k, n]`` points:

* ``custom``: ``shapes``, a list of ``[m, k, n]``.
* ``llama``: the LLaMa 2 70B single-node weight shapes with fused ``attn.wqkv`` and
  ``ffn.w13``: hidden 8192, wqkv 8192 -> 10240, w0 8192 -> 8192, w13 8192 -> 57344, w2
  28672 -> 8192, split 8 ways (tensor parallel; the column-parallel wqkv and w13 split N, the
  row-parallel w0 and w2 split K), so (M, 8192, 1280), (M, 1024, 8192), (M, 8192, 7168),
  (M, 3584, 8192) with M = 4 x 4096 = 16384 tokens, as in the seed. ``m`` (a list of token
  counts) and ``tensor_parallel`` (1, 2, 4 or 8) change M and the split.
* ``pow2``: m = k = n = 2^p for p from ``min_power`` to ``max_power`` (defaults 10, 14).
* ``pow2_extended``: 2^p and 2^p + 2^(p-1) for each such p (1024, 1536, 2048, 3072, ...).
* ``sweep``: every (m, k, n) of the powers 2^p, p from ``min_power`` to ``max_power``
  (defaults 8, 15); ``m``, ``k`` or ``n`` given as a list replaces that dimension's powers.

Generators combine in order and a repeated shape is kept once, where it first appears.
``params`` maps names to lists of values; their cartesian product is taken with the shapes.
``zip`` maps names to lists of one length, paired element by element (``{m: [64, 128], n:
[32, 64]}`` is two points, not four); its rows are taken with the shapes and params' product.
Everything here is a pure function of the parsed bench.yaml (validated by
:data:`kernbench.config.schema.SWEEP_SCHEMA` first); nothing in it is evaluated.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from kernbench.errors import ConfigError
from kernbench.results.model import HARNESS_ARGS, MAX_SWEEP_POINTS, SweepPoint

LLAMA2_70B_LAYERS = (("attn.wqkv", 8192, 10240, "n"), ("attn.w0", 8192, 8192, "k"),
                     ("ffn.w13", 8192, 57344, "n"), ("ffn.w2", 28672, 8192, "k"))
"""(layer, K, N, the dimension tensor parallelism splits) of the unsplit model."""
LLAMA_TOKENS = 4 * 4096
"""The seed's M: batch 4 x sequence 4096."""
LLAMA_TENSOR_PARALLEL = 8
"""The seed's "single-node" split: one node of 8 GPUs."""
POWER_DEFAULTS = {"pow2": (10, 14), "pow2_extended": (10, 14), "sweep": (8, 15)}
"""(min_power, max_power) when bench.yaml leaves them out, as in the seed."""
SHAPE_KEYS = ("m", "k", "n")


class Shape(NamedTuple):
    """One [m, k, n] point; `label` names it when m=..,k=..,n=.. would not (llama layers)."""

    m: int
    k: int
    n: int
    label: str | None = None

    @property
    def name(self) -> str:
        return self.label or f"m={self.m},k={self.k},n={self.n}"


def custom(shapes: Sequence[Sequence[int]]) -> Iterator[Shape]:
    for m, k, n in shapes:
        yield Shape(int(m), int(k), int(n))


def llama(m: Sequence[int] = (LLAMA_TOKENS,),
          tensor_parallel: int = LLAMA_TENSOR_PARALLEL) -> Iterator[Shape]:
    split = tensor_parallel
    suffix = "" if split == LLAMA_TENSOR_PARALLEL else f"_tp{split}"
    for tokens in m:
        for layer, k, n, divided in LLAMA2_70B_LAYERS:
            k_part, n_part = (k, n // split) if divided == "n" else (k // split, n)
            yield Shape(int(tokens), k_part, n_part, f"{layer}_m{int(tokens)}{suffix}")


def pow2(min_power: int = 10, max_power: int = 14) -> Iterator[Shape]:
    for power in range(min_power, max_power + 1):
        yield Shape(2**power, 2**power, 2**power)


def pow2_extended(min_power: int = 10, max_power: int = 14) -> Iterator[Shape]:
    for power in range(min_power, max_power + 1):
        for size in (2**power, 2**power + 2 ** (power - 1)):
            yield Shape(size, size, size)


def sweep(min_power: int = 8, max_power: int = 15, m: Sequence[int] | None = None,
          k: Sequence[int] | None = None, n: Sequence[int] | None = None) -> Iterator[Shape]:
    powers = [2**power for power in range(min_power, max_power + 1)]
    for m_dim, k_dim, n_dim in itertools.product(m or powers, k or powers, n or powers):
        yield Shape(int(m_dim), int(k_dim), int(n_dim))


GENERATORS: dict[str, Callable[..., Iterator[Shape]]] = {
    "custom": custom, "llama": llama, "pow2": pow2, "pow2_extended": pow2_extended,
    "sweep": sweep}


def generate(entry: Mapping[str, Any], source: str = "bench.yaml",
             key: str = "sweep.matrix_shapes[0]") -> Iterator[Shape]:
    """The shapes of one ``matrix_shapes`` entry (``{name: ..., options}``), lazily."""
    name = str(entry["name"])
    options = {k: v for k, v in entry.items() if k != "name"}
    if name in POWER_DEFAULTS:
        low, high = (options.get(k, d) for k, d in zip(("min_power", "max_power"),
                                                         POWER_DEFAULTS[name], strict=True))
        if low > high:
            given = "" if "max_power" in options else ", the default"
            raise ConfigError(source, f"{key}.min_power",
                              f"min_power <= max_power ({high}{given})", got=low)
    return GENERATORS[name](**options)


def matrix_shapes(entries: Sequence[Mapping[str, Any]], source: str = "bench.yaml",
                  limit: int = MAX_SWEEP_POINTS) -> list[Shape]:
    """Every generator's shapes in order, a repeated [m, k, n] kept where it first appears.
    More than `limit` shapes before duplicates are removed is a ConfigError."""
    shapes = itertools.chain.from_iterable(
        generate(entry, source, f"sweep.matrix_shapes[{index}]")
        for index, entry in enumerate(entries))
    found = list(itertools.islice(shapes, limit + 1))
    if len(found) > limit:
        raise ConfigError(source, "sweep.matrix_shapes", f"at most {limit} shapes per kernel "
                          "(the limit keeps a typo from planning millions of cases)",
                          got=f"more than {limit}")
    unique: dict[tuple[int, int, int], Shape] = {}
    for shape in found:
        unique.setdefault(shape[:3], shape)
    return list(unique.values())


def value_text(value: object) -> str:
    """How a value reads in a point's label: YAML's true/false, Python's repr of a float."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _check_params(params: Mapping[str, Sequence[Any]], with_shapes: bool, source: str,
                  group: str = "params") -> None:
    for name, values in params.items():
        key = f"sweep.{group}.{name}"
        if name in HARNESS_ARGS:
            raise ConfigError(source, key, f"a kernel parameter; {', '.join(HARNESS_ARGS)} are "
                              "set by the harness (use --precision/--backends/--seed)")
        if name == "impl":
            raise ConfigError(source, key, "a name other than impl: case ids name a kernel's "
                              "implementation with impl=")
        if with_shapes and name in SHAPE_KEYS:
            raise ConfigError(source, key, "a name other than m, k, n: sweep.matrix_shapes "
                              "sets them")
        for index, value in enumerate(values):
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(source, f"{key}[{index}]", "a finite number", got=value)
        texts = [value_text(v) for v in values]
        if group == "params" and len(set(texts)) < len(texts):
            raise ConfigError(source, key, "values that read differently (each names its "
                              "cases)", got=values)


def expand_sweep(spec: Mapping[str, Any], source: str = "bench.yaml",
                 limit: int = MAX_SWEEP_POINTS) -> tuple[SweepPoint, ...]:
    """The points of a validated ``sweep`` mapping: shapes (outer) x params' product x zip's
rows (inner).
    More than `limit` points is a ConfigError naming the count."""
    shapes = matrix_shapes(spec.get("matrix_shapes") or [], source, limit)
    params: Mapping[str, Sequence[Any]] = spec.get("params") or {}
    _check_params(params, bool(shapes), source)
    paired = _zipped(spec.get("zip") or {}, params, bool(shapes), source)
    total = max(len(shapes), 1) * math.prod(len(v) for v in params.values()) * len(paired)
    if total > limit:
        raise ConfigError(source, "sweep", f"at most {limit} points per kernel (the limit "
                          "keeps a typo from planning millions of cases)",
                          got=f"{total} points")
    points = []
    rows: Sequence[Shape | None] = shapes or [None]
    for shape in rows:
        for combo, pair in itertools.product(itertools.product(*params.values()), paired):
            values = {**dict(zip(params, combo, strict=True)), **pair}
            labels = [f"{k}={value_text(v)}" for k, v in values.items()]
            if shape is not None:
                values = {**dict(zip(SHAPE_KEYS, shape[:3], strict=True)), **values}
                labels.insert(0, shape.name)
            points.append(SweepPoint(",".join(labels), values))
    return tuple(points)


def _zipped(lists: Mapping[str, Sequence[Any]], params: Mapping[str, Sequence[Any]],
            with_shapes: bool, source: str) -> list[dict[str, Any]]:
    """`zip`'s rows: the i-th value of every list together ([{}] without `zip`)."""
    if not lists:
        return [{}]
    _check_params(lists, with_shapes, source, "zip")
    both = sorted(set(lists) & set(params))
    if both:
        raise ConfigError(source, f"sweep.zip.{both[0]}", "a name that sweep.params does not "
                          "also set")
    lengths = {name: len(values) for name, values in lists.items()}
    if len(set(lengths.values())) > 1:
        raise ConfigError(source, "sweep.zip", "lists of one length (they are paired element "
                          "by element)", got=", ".join(f"{n}: {c}" for n, c in lengths.items()))
    rows = [dict(zip(lists, row, strict=True)) for row in zip(*lists.values(), strict=True)]
    labels = [",".join(value_text(v) for v in row.values()) for row in rows]
    if len(set(labels)) < len(labels):
        raise ConfigError(source, "sweep.zip", "rows that read differently (each names its "
                          "cases)", got=lists)
    return rows


def problem_size_at(problem_size: object, point: SweepPoint) -> dict[str, Any]:
    """A point's problem size: its values merged over a mapping `problem_size` (or alone)."""
    base = problem_size if isinstance(problem_size, Mapping) else {}
    return {**base, **point.values}
