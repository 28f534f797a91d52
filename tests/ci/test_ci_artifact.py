"""kernbench.ci.artifact: the comment bot's capped download of an untrusted run's artifact."""

from __future__ import annotations

import io
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernbench.ci.artifact import download_artifact, extract_zip
from kernbench.ci.github import main
from kernbench.ci.transport import Retry, UrllibTransport
from kernbench.errors import KernbenchError
from support.github_server import GitHubServer, running

TOKEN = "ghs_FAKE_TOKEN_artifact_0123456789"
REPO = "acme/kernels"
LIST = f"/repos/{REPO}/actions/runs/42/artifacts"
ZIP = f"/repos/{REPO}/actions/artifacts/7/zip"


def make_zip(files: dict[str, bytes], links: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


REPORT = make_zip({"summary.json": b'{"results": []}', "kernels/gemm.json": b"{}"})



@pytest.fixture
def storage() -> Iterator[GitHubServer]:
    with running() as server:
        yield server


def listed(size: int, name: str = "kernbench-reports", expired: bool = False) -> tuple:
    return 200, {"total_count": 1, "artifacts": [
        {"id": 7, "name": name, "size_in_bytes": size, "expired": expired}]}, {}


def client(github_api: GitHubServer) -> UrllibTransport:
    return UrllibTransport(TOKEN, github_api.url, retry=Retry(attempts=2, backoff_s=0.001),
                           sleep=lambda _: None)


def test_artifact_is_fetched_through_the_storage_redirect_without_the_token(
        github_api: GitHubServer, storage: GitHubServer, tmp_path: Path) -> None:
    github_api.add("GET", LIST, listed(len(REPORT)))
    github_api.add("GET", ZIP, (302, b"", {"Location": f"{storage.url}/blob/7.zip?sig=x"}))
    storage.add("GET", "/blob/7.zip", (200, REPORT, {"Content-Type": "application/zip"}))
    out = tmp_path / "artifact"
    assert download_artifact(client(github_api), REPO, 42, "kernbench-reports", out) == 2
    assert (out / "kernels" / "gemm.json").read_bytes() == b"{}"
    assert github_api.seen[0].query == {"name": "kernbench-reports", "per_page": "100"}
    assert github_api.seen[1].headers["authorization"] == f"Bearer {TOKEN}"
    assert "authorization" not in storage.seen[0].headers


def test_oversized_artifact_is_refused_before_downloading(github_api: GitHubServer,
                                                          tmp_path: Path) -> None:
    github_api.add("GET", LIST, listed(60_000_000))
    with pytest.raises(KernbenchError, match="60000000 bytes, over the limit of 50000000"):
        download_artifact(client(github_api), REPO, 42, "kernbench-reports", tmp_path / "a")
    assert [s.path for s in github_api.seen] == [LIST] and not (tmp_path / "a").exists()


def test_download_longer_than_announced_is_cut_off(github_api: GitHubServer,
                                                   tmp_path: Path) -> None:
    github_api.add("GET", LIST, listed(100))
    github_api.add("GET", ZIP, (200, b"x" * 5_000, {}))
    with pytest.raises(KernbenchError, match="over the limit of 1000"):
        download_artifact(client(github_api), REPO, 42, "kernbench-reports", tmp_path / "a",
                          max_zip_bytes=1_000)


@pytest.mark.parametrize(("artifacts", "found"), [
    ([], 0), ([{"id": 7, "name": "kernbench-reports", "expired": True}], 0),
    ([{"id": 7, "name": "other"}], 0),
    ([{"id": 7, "name": "kernbench-reports"}, {"id": 8, "name": "kernbench-reports"}], 2),
])
def test_artifact_must_be_exactly_one(github_api: GitHubServer, tmp_path: Path,
                                      artifacts: list[dict[str, object]], found: int) -> None:
    github_api.add("GET", LIST, (200, {"artifacts": artifacts}, {}))
    with pytest.raises(KernbenchError, match=f"expected one unexpired artifact.*found {found}"):
        download_artifact(client(github_api), REPO, 42, "kernbench-reports", tmp_path / "a")


@pytest.mark.parametrize(("data", "match"), [
    (make_zip({"big.json": b"0" * 2_000_000}), "more than 1000000 bytes once unpacked"),
    (make_zip({f"f{i}": b"" for i in range(30)}), "30 members, over the limit of 20"),
    (make_zip({"../escape.json": b"{}"}), "refusing the member name '../escape.json'"),
    (make_zip({"/etc/cron.d/x": b""}), "refusing the member name"),
    (make_zip({"a\\..\\b": b""}), "refusing the member name"),
    (make_zip({"ok.json": b"{}"}, links=("summary.json",)), "link or special file"),
    (b"PK\x03\x04 not really a zip", "not a zip archive"),
], ids=["big", "many", "dotdot", "absolute", "backslashes", "link", "not-a-zip"])
def test_hostile_archives_are_refused(tmp_path: Path, data: bytes, match: str) -> None:
    with pytest.raises(KernbenchError, match=match):
        extract_zip(data, tmp_path / "out", max_files=20, max_bytes=1_000_000)
    assert not (tmp_path / "escape.json").exists()


def test_cli_artifact_command(github_api: GitHubServer, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", github_api.url)
    github_api.add("GET", LIST, listed(len(REPORT)))
    github_api.add("GET", ZIP, (200, REPORT, {}))
    argv = ["artifact", "--repo", REPO, "--run-id", "42", "--name", "kernbench-reports",
            "--out", str(tmp_path / "artifact")]
    assert main(argv) == 0
    assert "unpacked 2 files" in capsys.readouterr().out
    github_api.add("GET", LIST, listed(10_000))
    assert main([*argv[:-1], str(tmp_path / "again"), "--max-bytes", "5000"]) == 1
    assert "over the limit of 5000; it was not downloaded" in capsys.readouterr().err


def test_a_member_below_a_file_of_its_name_is_a_clear_refusal(tmp_path: Path) -> None:
    data = make_zip({"a": b"file", "a/b": b"under it"})
    with pytest.raises(KernbenchError, match=r"artifact: 'a/b' cannot be unpacked \(.*: a file "
                                             r"holds its folder's name\)"):
        extract_zip(data, tmp_path / "out")
