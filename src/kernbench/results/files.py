"""Files written so that a reader never sees half of one: the one home of atomic writes.

Every write goes to a temporary file beside the target and is renamed into place
(``os.replace``), so a run killed half-way leaves either the old file or the new one. Files
that must outlive a crash of the machine (reports, history) are also flushed to disk before
the rename; scratch files that a process hands to another and that are gone when the run ends
(a worker's job and reply) are not: the rename alone keeps readers from half a file, and a
flush costs about 0.5 ms a file here.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = [
    "atomic_writer",
    "check_output_dir",
    "default_cache_dir",
    "live_scratch",
    "memory_scratch_dir",
    "read_json_object",
    "safe_filename",
    "sweep_dead_scratch",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_json_items_atomic",
    "write_text_atomic",
]


def default_cache_dir() -> Path:
    """kernbench's cache folder: ``$XDG_CACHE_HOME/kernbench``, else ``~/.cache/kernbench``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernbench"


MEMORY_SCRATCH = "/dev/shm"
MEMORY_SCRATCH_FREE_BYTES = 64 << 20
"""Free space ``/dev/shm`` must have to be used (a container's is often 64 MiB in all)."""
TMPDIR_VARIABLES = ("TMPDIR", "TEMP", "TMP")


def memory_scratch_dir() -> str | None:
    """Where small scratch files that one process hands to another (a worker's job and
    reply) may go: ``/dev/shm``, a file system in memory, where creating, renaming and
    deleting such a file costs ~20 us instead of ~250 us on an ext4 disk (each worker process
    makes a folder and three files). None, for the system's temporary folder, where the user
    chose one (``TMPDIR``, ``TEMP``, ``TMP``) or ``/dev/shm`` is not a writable folder with
    MEMORY_SCRATCH_FREE_BYTES free. Large files (saved reference outputs) never go there: it
    is memory, often small."""
    if any(os.environ.get(name) for name in TMPDIR_VARIABLES):
        return None
    try:
        usable = os.access(MEMORY_SCRATCH, os.W_OK | os.X_OK) and os.path.isdir(MEMORY_SCRATCH)
        free = os.statvfs(MEMORY_SCRATCH)
    except OSError:
        return None
    return MEMORY_SCRATCH if usable and free.f_bavail * free.f_frsize >= \
        MEMORY_SCRATCH_FREE_BYTES else None


SCRATCH_TRIES = 3
"""Folders :func:`live_scratch` makes before giving up (one swept before its lock was taken
is made again)."""


@contextmanager
def live_scratch(place: Path, prefix: str) -> Iterator[Path]:
    """A new folder ``<place>/<prefix><pid>-<random>``, removed at the end, that
    :func:`sweep_dead_scratch` leaves alone while it is held: a lock on the folder says it is
    live, not the pid alone (a run in another PID namespace that shares ``/dev/shm``, as
    containers started with ``--ipc=host`` do, has a pid that names no process here). An
    OSError where none can be made."""
    import fcntl
    import shutil
    import tempfile

    for _ in range(SCRATCH_TRIES):
        folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=place))
        held = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(held, fcntl.LOCK_SH)  # waits while a sweep removes it
            if os.fstat(held).st_nlink:  # not swept before the lock was taken
                break
        except BaseException:
            os.close(held)
            raise
        os.close(held)
    else:
        raise OSError(f"{place}: each scratch folder made was removed at once")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os.close(held)


def sweep_dead_scratch(place: Path, prefix: str) -> list[Path]:
    """Remove the folders ``<place>/<prefix><pid>-*`` whose run (process `pid`) is gone: a
    run killed outright (SIGKILL) cannot remove its own, and in ``/dev/shm`` a leftover
    holds memory until the machine restarts. A folder of a live process, one a live run holds
    (:func:`live_scratch`: its pid may be another PID namespace's), another user's, or one
    whose name holds no pid is left alone. Returns the folders removed."""
    import fcntl
    import shutil

    removed = []
    for folder in place.glob(f"{prefix}*"):
        pid = folder.name[len(prefix):].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            if folder.is_symlink() or folder.stat().st_uid != os.getuid():
                continue
            held = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a live run holds it
            os.close(held)
            continue
        try:
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            os.close(held)
        removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def check_output_dir(path: Path, flag: str = "--output-dir") -> None:
    """Raise a KernbenchError (exit 2) unless `path` is a folder or can be created as one:
    checked before any work, so that a run never measures its whole suite and then fails
    to write. The folder itself is not created here."""
    from kernbench.errors import KernbenchError

    for folder in (path, *path.parents):
        if folder.is_dir():
            if not os.access(folder, os.W_OK | os.X_OK):  # a read-only mount, say
                what = "" if folder == path else f" (in {folder})"
                raise KernbenchError(f"{flag} {path}: cannot be written{what}; expected a "
                                     "folder this user can write")
            break
        if folder.exists() or folder.is_symlink():
            what = "is" if folder == path else f"cannot be created: {folder} is"
            raise KernbenchError(f"{flag} {path} {what} not a folder; expected a folder "
                                 "(created if missing)")


def check_apart_from_kernels(path: Path, root: Path, kernel_paths: Iterable[str],
                             flag: str = "--output-dir") -> None:
    """Raise a KernbenchError (exit 2) when the output folder `path` holds one of the kernel
    folders (`kernel_paths`, under `root`) or lies inside one: a run rewrites its kernels/
    and reports there, and would write into (or over) the kernels it measures."""
    from kernbench.errors import KernbenchError

    out = path.resolve()
    for relative in kernel_paths:
        folder = (root / relative).resolve()
        if not folder.is_dir():
            continue
        if out == folder or folder in out.parents or out in folder.parents:
            where = "holds" if out in folder.parents else "is inside"
            raise KernbenchError(f"{flag} {path} {where} the kernel folder {folder}: a run "
                                 "writes its kernels/*.json and reports there; expected a "
                                 "folder of its own (the default is reports/ in the working "
                                 "directory)")


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of the regular file `path` (a symlink followed), at most `limit` of them:
    OSError for a FIFO, a device (``/dev/zero``) or a folder, which a read would wait on or
    never finish, and ValueError for a file over `limit`, read no further than that."""
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO's open would wait for a writer
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if (
                stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) else "not a regular file"
            raise OSError(f"{path} is {kind}, not a regular file")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise ValueError(f"{path} is over {limit} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


LOCK_NAME = ".kernbench-lock"
"""The file in an output folder that the run writing it holds locked."""


@contextmanager
def output_lock(path: Path) -> Iterator[None]:
    """Hold `path` (an output folder, created) for one run or merge: a second one writing the
    same folder at once would mix its records into the first one's report. The lock is the
    kernel's (``flock``), so a run killed outright leaves none behind. Taken again by the
    process that holds it (``run --shards`` holds its folder, then merges into it), it is
    already held."""
    import fcntl

    from kernbench.errors import KernbenchError

    path.mkdir(parents=True, exist_ok=True)
    key = path.resolve()
    if key in _HELD:
        yield
        return
    fd = os.open(path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    _HELD.add(key)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            raise KernbenchError(f"{path}: another kernbench run (pid {holder}) is writing this "
                                 "folder; give this one its own --output-dir") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        try:
            yield
        finally:  # still held: no report set keeps a stray lock file
            (path / LOCK_NAME).unlink(missing_ok=True)
    finally:
        _HELD.discard(key)
        os.close(fd)


_HELD: set[Path] = set()
"""Output folders this process holds the lock of (:func:`output_lock`)."""


@contextmanager
def atomic_writer(path: Path, durable: bool = True) -> Iterator[IO[bytes]]:
    """A binary handle on a new temporary file beside `path` (folders are created).

    When the block ends normally the file is flushed to disk (unless not `durable`) and
    renamed over `path`; when it
    raises, the temporary file is removed and `path` is left as it was. The temporary name is
    unique per process and call (so two writers never share one) and the file gets the usual
    permissions of a new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # os.urandom, not secrets: importing secrets (hmac, hashlib) costs every worker ~3.5 ms
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}-{os.urandom(4).hex()}")
    try:
        with open(tmp, "xb") as handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.filename is None:  # a full disk names no file: say which one failed
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: Path, data: bytes, durable: bool = True) -> Path:
    with atomic_writer(path, durable) as handle:
        handle.write(data)
    return path


def write_text_atomic(path: Path, text: str, durable: bool = True) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"), durable)


def write_json_atomic(path: Path, data: Any, *, one_line_items: bool = False) -> Path:
    """`data` as indented JSON. With `one_line_items` (a large document such as a merged
    summary), each item of a top-level list is written on one line, one at a time: the same
    JSON, written by the C encoder (``indent`` makes the json module use its pure-Python one,
    ~10x slower) and never held whole in memory."""
    if not (one_line_items and isinstance(data, dict)):
        return write_text_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")
    lists = {key: map(json.dumps, value) for key, value in data.items()
             if isinstance(value, list) and value}
    return write_json_items_atomic(path, data, lists)


def write_json_items_atomic(path: Path, data: dict[str, Any],
                            lists: Mapping[str, Iterable[str]]) -> Path:
    """`data` as :func:`write_json_atomic` writes it with `one_line_items`, but each key of
    `lists` holds the JSON texts it gives (one item each, on one line), whatever `data` holds
    under that key: a merge streams records through it without holding them."""
    with atomic_writer(path) as handle:
        for index, (key, value) in enumerate(data.items()):
            handle.write(f"{'{' if index == 0 else ','}\n  {json.dumps(key)}: ".encode())
            if key in lists:
                _write_items(handle, lists[key])
            else:
                handle.write(json.dumps(value, indent=2).replace("\n", "\n  ").encode())
        handle.write(b"\n}\n" if data else b"{}\n")
    return path


def _write_items(handle: IO[bytes], items: Iterable[str]) -> None:
    """A JSON list of the item texts, one a line (written about 1 MB at a time); ``[]`` when
    there are none."""
    batch: list[str] = []
    size, first = 0, True
    for text in items:
        batch.append(text)
        size += len(text)
        if size > 1 << 20:
            first = _write_batch(handle, batch, first)
            batch, size = [], 0
    if batch:
        first = _write_batch(handle, batch, first)
    handle.write(b"[]" if first else b"\n  ]")


def _write_batch(handle: IO[bytes], batch: list[str], first: bool) -> bool:
    handle.write((b"[\n    " if first else b",\n    ") + ",\n    ".join(batch).encode())
    return False


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, or None when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def safe_filename(name: str) -> str:
    """A kernel name as a file name: only [A-Za-z0-9._-], no leading dot, never empty.

    A name that had to change gets a short hash of the original, so two names that clean up
    alike ("a b" and "a_b") still get different files."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".")[:120]
    if cleaned and cleaned == name:
        return cleaned
    import hashlib  # only for names that need cleaning (workers import this module)

    digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned or '_'}-{digest}"
