"""The range reader against a local server: only the members wanted are fetched, a server that
ignores ``Range`` is read whole (once), and a damaged or truncated zip, a dropped connection or a
file replaced between two requests is named or read consistently, never half-written."""

from __future__ import annotations

import io
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eagle3lint.fetch import remote_zip
from tests.fakes.fake_index import FakeIndex, running, wheel

NAME = "sglang-9.9.9-py3-none-any.whl"
SOURCES = {f"sglang/srt/models/m{n:02}.py": f"class M{n}ForCausalLM:\n    x = {n!r}\n" * 20 for n in range(40)}
BLOB = 3 << 20  # an incompressible extension module between the sources, as binary wheels have


def _python(name: str) -> bool:
    return name.endswith(".py")


@pytest.fixture()
def index() -> Iterator[FakeIndex]:
    fake = FakeIndex()
    fake.add(NAME, wheel("sglang", "9.9.9", SOURCES, blob=BLOB))
    with running(fake) as served:
        yield served


def _read(index: FakeIndex, dest: Path, **kwargs: Any) -> tuple[list[str], remote_zip.Transfer]:
    return remote_zip.read_members(index.file_url(NAME), _python, dest, dest.parent, "sglang==9.9.9", **kwargs)


def _written(dest: Path) -> dict[str, str]:
    return {p.relative_to(dest).as_posix(): p.read_text() for p in dest.rglob("*") if p.is_file()}


def test_only_the_wanted_members_are_fetched(index: FakeIndex, tmp_path: Path) -> None:
    names, transfer = _read(index, tmp_path / "out")
    assert sorted(names) == sorted(SOURCES) and _written(tmp_path / "out") == SOURCES
    size = len(index.files[NAME].data)
    assert transfer.size == size and not transfer.whole
    # The tail (the directory with it), then the sources in one or two merged spans.
    requests = index.file_requests(NAME)
    assert all(r.status == 206 and r.range for r in requests) and 2 <= len(requests) <= 4
    assert transfer.received == index.sent_for(NAME) < size // 10
    # None of them reached into the middle of the extension module.
    archive = zipfile.ZipFile(io.BytesIO(index.files[NAME].data))
    blob = next(i for i in archive.infolist() if i.filename.endswith(".so"))
    middle = blob.header_offset + BLOB // 2
    for r in requests:
        first, _, last = r.range.removeprefix("bytes=").partition("-")  # type: ignore[union-attr]
        if first:
            assert not int(first) <= middle <= int(last), r.range


def test_a_server_that_ignores_range_sends_the_whole_file_read_once(index: FakeIndex, tmp_path: Path) -> None:
    index.ranges = False
    _, transfer = _read(index, tmp_path / "out")
    assert _written(tmp_path / "out") == SOURCES
    assert transfer.whole and len(index.file_requests(NAME)) == 1
    assert transfer.received == len(index.files[NAME].data)
    # The spooled copy is gone.
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_the_whole_file_is_checked_against_the_index_digest(index: FakeIndex, tmp_path: Path) -> None:
    index.ranges = False
    (tmp_path / "out").mkdir()
    with pytest.raises(remote_zip.CorruptZip, match="SHA-256"):
        _read(index, tmp_path / "out", sha256="0" * 64)
    assert list(tmp_path.joinpath("out").iterdir()) == []


@pytest.mark.parametrize("ranges", [True, False])
def test_a_truncated_zip_is_named(index: FakeIndex, tmp_path: Path, ranges: bool) -> None:
    index.ranges = ranges
    data = index.files[NAME].data
    index.add(NAME, data[: len(data) // 2])
    (tmp_path / "out").mkdir()
    with pytest.raises(remote_zip.CorruptZip, match="not a valid zip"):
        _read(index, tmp_path / "out")
    assert list(tmp_path.joinpath("out").iterdir()) == []


def test_a_damaged_member_is_named(index: FakeIndex, tmp_path: Path) -> None:
    data = bytearray(index.files[NAME].data)
    archive = zipfile.ZipFile(io.BytesIO(bytes(data)))
    victim = archive.getinfo("sglang/srt/models/m33.py")
    start = victim.header_offset + 30 + len(victim.filename) + len(victim.extra) + 5
    data[start : start + 8] = bytes(b ^ 0xFF for b in data[start : start + 8])
    index.add(NAME, bytes(data))
    with pytest.raises(remote_zip.CorruptZip, match=r"m33\.py"):
        _read(index, tmp_path / "out")


def test_a_dropped_connection_is_a_fetch_failure_naming_the_server(index: FakeIndex, tmp_path: Path) -> None:
    index.failing[NAME] = "drop"
    with pytest.raises(remote_zip.FetchFailed, match=r"127\.0\.0\.1:\d+: the connection (failed|closed) after"):
        _read(index, tmp_path / "out")


def test_credentials_wanted_are_said_as_such(index: FakeIndex, tmp_path: Path) -> None:
    index.failing[NAME] = "auth"
    with pytest.raises(remote_zip.AuthNeeded, match="401"):
        _read(index, tmp_path / "out")


def test_a_file_replaced_between_two_requests_is_read_whole_from_its_new_content(index: FakeIndex, tmp_path: Path) -> None:
    newer = {path: text.replace("x =", "y =") for path, text in SOURCES.items()}
    calls = []

    def opener(request: urllib.request.Request, timeout: float) -> Any:
        calls.append(request.get_header("Range"))
        if len(calls) == 2:  # after the tail: the file changes under the reader
            index.add(NAME, wheel("sglang", "9.9.9", newer, blob=BLOB))
        return urllib.request.urlopen(request, timeout=timeout)

    _, transfer = _read(index, tmp_path / "out", opener=opener)
    # If-Range no longer matched: the server sent the new file whole, and only it was read.
    assert transfer.whole and _written(tmp_path / "out") == newer


def test_member_names_that_would_leave_the_folder_are_skipped(tmp_path: Path) -> None:
    hostile = tmp_path / "hostile.whl"
    with zipfile.ZipFile(hostile, "w") as archive:
        for name in ("../escaped.py", "/absolute.py", "sglang/../../up.py", "sglang\\back.py", "sglang/ok.py"):
            archive.writestr(name, "x = 1\n")
    (tmp_path / "out").mkdir()
    names, _ = remote_zip.read_members(hostile.as_uri(), _python, tmp_path / "out", tmp_path, "hostile")
    assert names == ["sglang/ok.py"]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.py")) == ["out/sglang/ok.py"]
