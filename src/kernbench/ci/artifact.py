"""Fetch a workflow run's artifact with hard caps, before a byte of it is trusted or read.

The comment workflow used to download the artifact of a pull request's run with
`actions/download-artifact`, which writes whatever the run uploaded (any size) to disk before
kernbench could look at it. Here the artifact's size is read from the API first and refused
over `max_zip_bytes`; the zip is then fetched into memory with the same cap (GitHub answers
with a redirect to storage; the token is not sent there) and unpacked with caps on the number
of files and on the bytes actually decompressed, refusing links, absolute paths and ``..``.
:func:`kernbench.reporting.validate.validate_report_dir` then checks what came out.
"""

from __future__ import annotations

import io
import stat
import zipfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Protocol, runtime_checkable

from kernbench.errors import KernbenchError

__all__ = ["MAX_FILES", "MAX_UNZIPPED_BYTES", "MAX_ZIP_BYTES", "Downloader", "download_artifact",
           "extract_zip", "find_artifact"]

MAX_ZIP_BYTES = 50_000_000
MAX_UNZIPPED_BYTES = 50_000_000
"""The same total as :func:`~kernbench.reporting.validate.validate_report_dir` allows."""
MAX_FILES = 10_000
_CHUNK = 1 << 16


@runtime_checkable
class Downloader(Protocol):
    """What this module needs of :class:`kernbench.ci.transport.UrllibTransport`."""

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None,
                params: Mapping[str, str] | None = None) -> tuple[int, Any]: ...

    def download(self, path: str, max_bytes: int) -> bytes: ...


def find_artifact(t: Downloader, repo: str, run_id: int, name: str) -> Mapping[str, Any]:
    """The one unexpired artifact called `name` of workflow run `run_id`."""
    _, data = t.request("GET", f"/repos/{repo}/actions/runs/{int(run_id)}/artifacts",
                        params={"name": name, "per_page": "100"})
    listed = data.get("artifacts") if isinstance(data, dict) else None
    found = [a for a in listed or [] if isinstance(a, dict) and a.get("name") == name
             and a.get("expired") is not True]
    if len(found) != 1:
        raise KernbenchError(f"run {run_id}: expected one unexpired artifact named {name!r}, "
                             f"found {len(found)}")
    return found[0]


def download_artifact(t: Downloader, repo: str, run_id: int, name: str, out: Path, *,
                      max_zip_bytes: int = MAX_ZIP_BYTES, max_files: int = MAX_FILES,
                      max_unzipped_bytes: int = MAX_UNZIPPED_BYTES) -> int:
    """Unpack artifact `name` of run `run_id` into the new directory `out`; the file count.

    The size GitHub reports is checked before anything is downloaded.
    """
    artifact = find_artifact(t, repo, run_id, name)
    size, artifact_id = artifact.get("size_in_bytes"), artifact.get("id")
    if not isinstance(size, int) or not isinstance(artifact_id, int):
        raise KernbenchError(f"run {run_id}: artifact {name!r} has no integer id and size")
    if size > max_zip_bytes:
        raise KernbenchError(f"run {run_id}: artifact {name!r} is {size} bytes, over the limit "
                             f"of {max_zip_bytes}; it was not downloaded")
    data = t.download(f"/repos/{repo}/actions/artifacts/{artifact_id}/zip", max_zip_bytes)
    return extract_zip(data, out, max_files=max_files, max_bytes=max_unzipped_bytes)


def _member_path(out: Path, name: str) -> Path:
    """Where member `name` goes under `out`; KernbenchError for a name that would leave it."""
    parts = PurePosixPath(name).parts
    if (not name or len(name) > 1_000 or not name.isprintable() or "\\" in name
            or name.startswith("/") or any(p in ("..", ".") for p in parts) or ":" in parts[0]):
        raise KernbenchError(f"artifact: refusing the member name {name[:200]!r}")
    return out.joinpath(*parts)


def _check_member(info: zipfile.ZipInfo) -> None:
    kind = stat.S_IFMT(info.external_attr >> 16)  # 0: no Unix type recorded (a plain file)
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise KernbenchError(f"artifact: {info.filename[:200]!r} is a link or special file")


def extract_zip(data: bytes, out: Path, *, max_files: int = MAX_FILES,
                max_bytes: int = MAX_UNZIPPED_BYTES) -> int:
    """Unpack the zip `data` into the new directory `out`; the number of files written.

    Caps are on what is actually decompressed, not on what the archive claims.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as error:
        raise KernbenchError(f"artifact: not a zip archive ({error})") from None
    out.mkdir(parents=True, exist_ok=False)
    with archive:
        members = archive.infolist()
        if len(members) > max_files:
            raise KernbenchError(f"artifact: {len(members)} members, over the limit of "
                                 f"{max_files}")
        written = 0
        for info in members:
            target = _member_path(out, info.filename)
            _check_member(info)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                if info.is_dir():
                    target.mkdir(exist_ok=True)
                    continue
            except OSError as error:  # a member named like a file unpacked before it (a, a/b)
                raise KernbenchError(f"artifact: {info.filename[:200]!r} cannot be unpacked "
                                     f"({error.strerror}: a file holds its folder's name)") \
                    from None
            written = _copy(archive, info, target, written, max_bytes)
    return sum(1 for info in members if not info.is_dir())


def _copy(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, written: int,
          max_bytes: int) -> int:
    """Decompress one member into the new file `target`; bytes written so far in all."""
    try:
        with archive.open(info) as source, open(target, "xb") as sink:
            while chunk := source.read(_CHUNK):
                written += len(chunk)
                if written > max_bytes:
                    raise KernbenchError(f"artifact: more than {max_bytes} bytes once "
                                         f"unpacked (at {info.filename[:200]!r})")
                sink.write(chunk)
    except (zipfile.BadZipFile, NotImplementedError, RuntimeError, OSError) as error:
        raise KernbenchError(f"artifact: {info.filename[:200]!r} cannot be unpacked "
                             f"({str(error)[:200]})") from None
    return written
