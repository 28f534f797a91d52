"""The typed boundary between the parent and a case's worker process.

The parent writes one :class:`WorkerJob` to a JSON file and starts
``python -m kernbench.execution.worker JOB.json``; the worker writes one :class:`WorkerReply` to
the job's ``result_path``. Both are frozen dataclasses with a version, and this module is their
only codec: :func:`dump_job`/:func:`load_job` and :func:`dump_reply`/:func:`load_reply` check
every field against its annotation, on the way out and on the way in, so a misspelt, missing
or ill-typed field is a clear :class:`~kernbench.errors.KernbenchError` naming the file and
the field instead of a silent ``None``. These files are private to one run: the record formats
users see (summary.json, kernels/*.json) are built from a reply by
:mod:`kernbench.execution.outcomes`, not written here.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kernbench.errors import KernbenchError
from kernbench.results.files import write_text_atomic
from kernbench.results.measurement import ProtocolSettings, SkipRule

JOB_VERSION = 2
"""Version of the job file; a worker refuses any other (parent and worker out of step)."""
REPLY_VERSION = 2
"""Version of the reply file; the parent refuses any other."""
REPLY_STATUSES = ("ok", "skipped", "failed", "invalid")
SCALARS: dict[Any, tuple[type, ...]] = {str: (str,), bool: (bool,), int: (int,),
                                        float: (int, float)}
"""JSON values each scalar annotation accepts (a bool is never taken for a number)."""


@dataclass(frozen=True)
class JobImplementation:
    """What the worker needs of a bench.yaml implementation."""

    name: str
    setup: str | None = None
    """Its own setup function; None: the kernel's setup, converted to its framework."""
    compile: Mapping[str, Any] | None = None
    """torch.compile options, with the run's --compile-mode already applied; None: eager."""


@dataclass(frozen=True)
class ProfileRequest:
    """--profile for one case: extra calls under a profiler after the samples."""

    kind: str
    iterations: int
    directory: Path
    case_id: str


@dataclass(frozen=True)
class WorkerJob:
    """Everything a worker process needs to run one case, and nothing it must look up."""

    kernel_file: Path
    root: Path
    kernel_name: str
    function_name: str
    framework: str
    backend: str
    precision: str
    settings: ProtocolSettings
    result_path: Path
    """Where the worker writes its :class:`WorkerReply`."""
    problem_size: Any = None
    implementation: JobImplementation | None = None
    skip_rules: tuple[SkipRule, ...] = ()
    tolerances: Mapping[str, Any] = field(default_factory=dict)
    work: Mapping[str, Any] | None = None
    """bench.yaml `work` formulas (flops, bytes)."""
    config_source: str | None = None
    """The bench.yaml the rules, tolerances and formulas came from (for error messages)."""
    trace_python: bool = False
    flush_l2: bool = True
    gpu_timing: str = "cold"
    """The GPU timing mode (kernbench.measure.gpu_timing); CPU cases ignore it."""
    fake_call_ms: float | None = None
    slowdown: float | None = None
    skip_accuracy: bool = False
    """A later process of the case: the first one checked accuracy already."""
    reference_only: bool = False
    """Only compute and save the output (a reference the run does not include as a case)."""
    is_reference: bool = False
    save_output_path: Path | None = None
    reference_output_path: Path | None = None
    reference_label: str = "reference case"
    reference_error: str | None = None
    """Why the reference output is missing: accuracy is then not checked."""
    profile: ProfileRequest | None = None
    sys_path: tuple[Path, ...] = ()
    """bench.yaml `sys_path` folders (absolute, inside the root), put first on sys.path."""
    version: int = JOB_VERSION


@dataclass(frozen=True)
class WorkerReply:
    """What the worker found. Measurement fields are None where nothing was measured (a skip,
    a failure before the samples, a reference-only job)."""

    status: str
    """"ok", "skipped", "failed" or "invalid" (bench.yaml asks what the kernel cannot take);
    a timeout or a crash leaves no reply at all."""
    reason: str | None = None
    traceback: str | None = None
    backend_unavailable: bool = False
    """The framework cannot use the device kind here: later cases of it are skipped unrun."""
    reference_only: bool = False
    samples_ns: tuple[float, ...] | None = None
    inner_loops: int | None = None
    warmup_ns: tuple[float, ...] | None = None
    warmup_s: float | None = None
    timer: str | None = None
    timer_overhead_ns: float | None = None
    timer_resolution_ns: float | None = None
    memory: Mapping[str, Any] | None = None
    energy: Mapping[str, Any] | None = None
    accuracy: Mapping[str, Any] | None = None
    output: Mapping[str, Any] | None = None
    device: Mapping[str, Any] | None = None
    l2_flush: bool | None = None
    work: Mapping[str, Any] | None = None
    machine: Mapping[str, Any] | None = None
    gpu_state: Mapping[str, Any] | None = None
    gpu_timing: Mapping[str, Any] | None = None
    """Each GPU timing mode's samples (kernbench.measure.gpu_record); None off the GPU."""
    compile: Mapping[str, Any] | None = None
    profile: Mapping[str, Any] | None = None
    version: int = REPLY_VERSION


VERSIONS: dict[type, int] = {WorkerJob: JOB_VERSION, WorkerReply: REPLY_VERSION}


def dump_job(job: WorkerJob, path: Path) -> None:
    """Write `job` to `path`, checked as the worker will check it."""
    _write(job, path)


def load_job(path: Path) -> WorkerJob:
    """The job at `path`, checked field by field (the worker's first step)."""
    return _read(WorkerJob, path)


def dump_reply(reply: WorkerReply, path: Path) -> None:
    """Write `reply` atomically: the parent never reads half a reply."""
    _write(reply, path)


def load_reply(path: Path) -> WorkerReply | None:
    """The reply at `path`; None when the worker wrote none (it died, or timed out)."""
    if not path.is_file():
        return None
    return _read(WorkerReply, path)


def to_data(value: object) -> Any:
    """A job or reply as plain JSON data (paths as strings, tuples as lists)."""
    if value is None or isinstance(value, (str, int, float)):  # most values: at once
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (tuple, list)):
        return [to_data(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): to_data(v) for k, v in value.items()}
    return value


T = TypeVar("T")


def from_data(kind: type[T], data: object, source: str) -> T:
    """Build `kind` from JSON data, checking its version, every field and that no field is
    unknown; a KernbenchError names `source` and the field otherwise."""
    if not isinstance(data, dict):
        raise KernbenchError(f"{source}: expected a JSON object, got {type(data).__name__}")
    expected = VERSIONS[kind]
    if data.get("version") != expected:
        raise KernbenchError(f"{source}: field 'version': expected {expected}, got "
                             f"{data.get('version')!r} (the parent and the worker come from "
                             "different versions of kernbench)")
    return _decode(data, kind, source, "")  # type: ignore[no-any-return]


def _write(value: WorkerJob | WorkerReply, path: Path) -> None:
    data = to_data(value)
    from_data(type(value), data, str(path))  # refuse to write what the reader would refuse
    # A scratch file the other process reads at once: atomic, but not flushed to disk.
    write_text_atomic(path, json.dumps(data, allow_nan=True), durable=False)


def _read(kind: type[T], path: Path) -> T:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise KernbenchError(f"{path}: cannot read the worker file: {exc}") from exc
    return from_data(kind, data, str(path))


def _decode(value: object, hint: Any, source: str, where: str, index: int | None = None) -> Any:
    """`value` checked against the annotation `hint` (and converted: lists to tuples, strings
    to paths, objects to dataclasses); `where` (with `index`, an item of it) names it in an
    error. What the annotation asks is worked out once per annotation (:func:`_shape`)."""
    kind, inner = _shape(hint)
    if kind == "any":
        return value
    if kind == "union":
        nullable, single = inner
        if value is None and nullable:
            return None
        if single is not None:
            return _decode(value, single, source, where, index)
    elif kind == "dataclass" and isinstance(value, dict):
        return _decode_fields(value, hint, source, _at(where, index))
    elif kind == "tuple" and isinstance(value, list):
        if inner is float and all(type(v) is float or type(v) is int for v in value):
            return tuple(value)  # raw samples: checked without a call per number
        at = _at(where, index)  # an item of a nested tuple: every index named
        return tuple(_decode(v, inner, source, at, i) for i, v in enumerate(value))
    elif kind == "mapping" and isinstance(value, dict):
        return value
    elif kind == "path" and isinstance(value, str):
        return Path(value)
    elif kind == "scalar" and isinstance(value, inner) and (
            hint is bool or not isinstance(value, bool)):
        return value
    raise KernbenchError(f"{source}: field '{_at(where, index)}': expected {_name(hint)}, "
                         f"got {type(value).__name__} {value!r:.80}")


def _at(where: str, index: int | None) -> str:
    return where if index is None else f"{where}[{index}]"


@functools.cache
def _shape(hint: Any) -> tuple[str, Any]:
    """What `hint` asks of a JSON value: (kind, what the kind needs to check it)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return "any", None
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        return "union", (type(None) in args, options[0] if len(options) == 1 else None)
    if dataclasses.is_dataclass(hint):
        return "dataclass", None
    if origin is tuple:
        return "tuple", args[0]
    if origin is Mapping:
        return "mapping", None
    if hint is Path:
        return "path", None
    if hint in SCALARS:
        return "scalar", SCALARS[hint]
    return "unknown", None


@functools.cache
def _fields_of(kind: Any) -> tuple[dict[str, Any], dict[str, dataclasses.Field[Any]]]:
    """A dataclass's resolved annotations and fields, worked out once per class (resolving
    the string annotations costs milliseconds, and every job and reply is decoded)."""
    return typing.get_type_hints(kind), {f.name: f for f in dataclasses.fields(kind)}


def prepare_codec(kind: Any = None) -> None:
    """Resolve the annotations of the job, the reply and every dataclass inside them now: a
    fork server calls it before forking, so no forked worker pays for it."""
    if kind is None:
        prepare_codec(WorkerJob)
        prepare_codec(WorkerReply)
        return
    hints, _ = _fields_of(kind)
    for hint in hints.values():
        for inner in (hint, *typing.get_args(hint)):
            _shape(inner)
            if dataclasses.is_dataclass(inner) and isinstance(inner, type):
                prepare_codec(inner)


def _decode_fields(data: dict[str, Any], kind: Any, source: str, where: str) -> Any:
    hints, fields = _fields_of(kind)
    prefix = f"{where}." if where else ""
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise KernbenchError(f"{source}: field '{prefix}{unknown[0]}': unknown "
                             f"(expected one of {', '.join(fields)})")
    values = {}
    for name, spec in fields.items():
        if name not in data:
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise KernbenchError(f"{source}: field '{prefix}{name}': missing")
            continue
        values[name] = _decode(data[name], hints[name], source, prefix + name)
    if kind is WorkerReply and values["status"] not in REPLY_STATUSES:
        raise KernbenchError(f"{source}: field 'status': expected one of "
                             f"{', '.join(REPLY_STATUSES)}, got {values['status']!r}")
    return kind(**values)


def _name(hint: Any) -> str:
    """An annotation as error messages show it: `str`, `tuple[float, ...]`."""
    return str(hint).replace("typing.", "").replace("collections.abc.", "").replace(
        "pathlib.", "") if typing.get_origin(hint) else getattr(hint, "__name__", str(hint))
