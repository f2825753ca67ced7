"""Reading chosen members of a zip (a wheel) over HTTP without downloading all of it.

A wheel is a zip: its central directory at the end lists every member with its offset. With HTTP
range requests the tail is read first (the end record and, for most wheels, the whole central
directory), then only the byte spans of the members wanted, neighbouring spans merged into one
request: a vLLM wheel of 438 MB yields its 3 MB of compressed Python in a handful of requests.
The zip itself is parsed by the standard library's ``zipfile`` over a file object whose reads
are served from the spans fetched (``_RemoteFile``), so zip64, compression methods and each
member's CRC-32 are checked as for a local file.

A server that ignores ``Range`` answers the first request with the whole file: it is kept (in a
temporary file) and read from there, and where the URL names the file's SHA-256 it is checked.
Every request after the first carries ``If-Range``, so a file replaced between two requests is
never read half old, half new. A ``file:`` URL is opened where it lies.

Nothing from the zip is trusted: member names that would leave the destination are skipped, a
member or a total larger than the limits is refused, and anything ``zipfile`` finds wrong (a
truncated file, a bad CRC, an encrypted member) is a :class:`CorruptZip` naming the member.
Callers unpack into a staging folder, so a failure leaves nothing half-unpacked behind.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import http.client
import io
import os
import re
import shutil
import struct
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3lint.common.escape import line_text

# The tail read first: the end record with the longest comment a zip may have, and most wheels'
# central directory with it.
TAIL_BYTES = 1 << 17
# Two spans closer than this are fetched in one request: a request costs a round trip, a few
# kilobytes of some other member cost less.
MERGE_GAP = 1 << 16
# A read outside every span fetched (zipfile's own look-ups) asks for at least this much.
MIN_FETCH = 1 << 14
# What may be fetched on demand besides the members' spans (a damaged member read past its span)
# and before them (the central directory, however large its end record says it is).
ON_DEMAND_BYTES = 64 << 20
MAX_MEMBER_BYTES = 64 << 20  # a Python file larger than this is no source file
MAX_TOTAL_BYTES = 2 << 30
TIMEOUT_S = 60
_CHUNK = 1 << 16

# (bytes received so far, bytes the transfer is expected to take, or None while unknown)
Progress = Callable[[int, "int | None"], None]
Opener = Callable[..., Any]


class FetchFailed(Exception):
    """The network or the server failed: the message names the host and the problem."""


class AuthNeeded(FetchFailed):
    """The server wants credentials this reader does not have (pip may: it is asked instead)."""


class CorruptZip(Exception):
    """Not a zip, a truncated one, or a member that does not read back as it should."""


@dataclass
class Transfer:
    """What a read cost: bytes received over the network, requests made, the file's size, and
    whether the server sent the whole file (it ignored ``Range``)."""

    received: int = 0
    requests: int = 0
    size: int | None = None
    whole: bool = False


def no_progress(received: int, planned: int | None) -> None:
    return None


class _Http:
    """GET requests on one URL, each retried once on a dropped connection."""

    def __init__(self, url: str, transfer: Transfer, progress: Progress, opener: Opener | None = None) -> None:
        self.url = url
        self.host = line_text(urllib.parse.urlsplit(url).netloc.rsplit("@", 1)[-1] or url)
        self.transfer = transfer
        self.progress = progress
        self.planned: int | None = None
        self.validator = ""  # the first answer's strong ETag or Last-Modified, for If-Range
        self._open = opener or urllib.request.urlopen

    def open(self, start: int | None = None, end: int | None = None, suffix: int | None = None) -> Any:
        """A response; ``start``/``end`` (inclusive) or ``suffix`` ask for a range."""
        headers = {"User-Agent": "eagle3lint", "Accept-Encoding": "identity"}
        if suffix is not None:
            headers["Range"] = f"bytes=-{suffix}"
        elif start is not None:
            headers["Range"] = f"bytes={start}-{end}"
            if self.validator:
                headers["If-Range"] = self.validator
        request = urllib.request.Request(self.url, headers=headers)
        for attempt in (1, 2):
            try:
                self.transfer.requests += 1
                return self._open(request, timeout=TIMEOUT_S)
            except urllib.error.HTTPError as exc:
                if exc.code == 416:
                    return exc  # the caller reads the status
                exc.close()
                if exc.code in (401, 403, 407):
                    raise AuthNeeded(f"{self.host} answered {exc.code} {_reason(exc)}") from None
                if exc.code < 500 or attempt == 2:
                    raise FetchFailed(f"{self.host} answered {exc.code} {_reason(exc)}") from None
            except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
                if attempt == 2:
                    raise FetchFailed(f"{self.host}: {_reason(exc)}") from None
            time.sleep(0.5)
        raise AssertionError("unreachable")

    def read_body(self, response: Any, into: Callable[[bytes], None], expected: int | None) -> int:
        """Read a response to its end, handing each chunk on; checks its length."""
        got = 0
        try:
            while True:
                chunk = response.read(_CHUNK)
                if not chunk:
                    break
                into(chunk)
                got += len(chunk)
                self.transfer.received += len(chunk)
                self.progress(self.transfer.received, self.planned)
        except (http.client.HTTPException, OSError) as exc:
            raise FetchFailed(f"{self.host}: the connection failed after {got} bytes ({_reason(exc)})") from None
        finally:
            response.close()
        if expected is not None and got != expected:
            raise FetchFailed(f"{self.host}: the connection closed after {got} of {expected} bytes")
        return got


def _reason(exc: BaseException) -> str:
    """What went wrong, in one line a server cannot put control characters into."""
    reason = getattr(exc, "reason", None)
    if isinstance(reason, BaseException):
        return _reason(reason)
    text = str(reason or exc) or type(exc).__name__
    return line_text(re.sub(r"\s+", " ", text)[:200])


_CONTENT_RANGE = re.compile(r"^\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*$")


def _content_range(response: Any) -> tuple[int, int, int | None] | None:
    match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
    if match is None:
        return None
    total = None if match.group(3) == "*" else int(match.group(3))
    return int(match.group(1)), int(match.group(2)), total


def _length(response: Any) -> int | None:
    value = response.headers.get("Content-Length")
    return int(value) if value and value.isdigit() else None


class RangesIgnored(Exception):
    """A later request got the whole file (or another range) back: read it whole instead."""


class _RemoteFile(io.RawIOBase):
    """A read-only, seekable file over the spans of a remote file fetched so far; a read outside
    them fetches what it needs."""

    def __init__(self, http: _Http, size: int) -> None:
        super().__init__()
        self.http = http
        self.size = size
        self.pos = 0
        self.budget = http.transfer.received + ON_DEMAND_BYTES
        self._starts: list[int] = []
        self._blocks: list[bytes] = []

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self.pos, os.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise OSError("seek before the start of the file")
        self.pos = base + offset
        return self.pos

    def add(self, start: int, data: bytes) -> None:
        at = bisect.bisect_left(self._starts, start)
        self._starts.insert(at, start)
        self._blocks.insert(at, data)

    def _block_at(self, offset: int) -> tuple[int, bytes] | None:
        at = bisect.bisect_right(self._starts, offset) - 1
        # Later blocks may overlap earlier ones: the first that covers the offset serves it.
        while at >= 0:
            start, data = self._starts[at], self._blocks[at]
            if start <= offset < start + len(data):
                return start, data
            at -= 1
        return None

    def missing(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """The parts of [start, end) no fetched span covers."""
        pos = start
        while pos < end:
            block = self._block_at(pos)
            if block is not None:
                pos = block[0] + len(block[1])
                continue
            nxt = bisect.bisect_right(self._starts, pos)
            stop = min(end, self._starts[nxt]) if nxt < len(self._starts) else end
            yield pos, stop
            pos = stop

    def fetch(self, start: int, end: int) -> None:
        """Fetch [start, end) into the spans."""
        if self.http.transfer.received + (end - start) > self.budget:
            raise CorruptZip(f"{_shown(self.http.url)}: reads reach far past what its directory lists: the zip is damaged")
        response = self.http.open(start, end - 1)
        status = _status(response)
        got = _content_range(response) if status == 206 else None
        if got is None or got[0] > start or got[1] < end - 1:
            response.close()
            raise RangesIgnored(f"asked for bytes {start}-{end - 1}, got status {status}")
        parts: list[bytes] = []
        self.http.read_body(response, parts.append, got[1] - got[0] + 1)
        self.add(got[0], b"".join(parts))

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        end = min(self.pos + len(view), self.size)
        if end <= self.pos:
            return 0
        for start, stop in list(self.missing(self.pos, end)):
            self.fetch(start, min(max(stop, start + MIN_FETCH), self.size))
        done = 0
        while self.pos < end:
            block = self._block_at(self.pos)
            assert block is not None  # fetched just above
            start, data = block
            take = min(end, start + len(data)) - self.pos
            view[done : done + take] = data[self.pos - start : self.pos - start + take]
            done += take
            self.pos += take
        return done


def member_spans(archive: zipfile.ZipFile, members: list[zipfile.ZipInfo]) -> list[tuple[int, int]]:
    """The byte spans that hold ``members`` (local header, data, descriptor: up to the next
    member's header or the central directory), neighbours closer than ``MERGE_GAP`` merged."""
    offsets = sorted({info.header_offset for info in archive.infolist()})
    end_of_data = getattr(archive, "start_dir", None) or (offsets[-1] if offsets else 0)
    spans = []
    for info in members:
        at = bisect.bisect_right(offsets, info.header_offset)
        stop = offsets[at] if at < len(offsets) else end_of_data
        # Header (30 bytes, the name, an extra field of at most 64 KiB), data, descriptor: a gap
        # before the next member holds nothing of this one.
        least = info.header_offset + 30 + len(info.filename.encode()) + info.compress_size
        stop = max(min(stop, least + 0xFFFF + 24), least)
        spans.append((info.header_offset, stop))
    merged: list[list[int]] = []
    for start, stop in sorted(spans):
        if merged and start - merged[-1][1] <= MERGE_GAP:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    return [(a, b) for a, b in merged]


def read_members(
    url: str,
    wanted: Callable[[str], bool],
    dest: Path,
    spool: Path,
    label: str,
    progress: Progress = no_progress,
    sha256: str | None = None,
    opener: Opener | None = None,
) -> tuple[list[str], Transfer]:
    """Write the members of the zip at ``url`` (``http``, ``https`` or ``file``) that ``wanted``
    accepts under ``dest`` (a new, empty folder) and return their names and what the transfer
    cost. ``spool`` holds the whole file for as long as it is read, when the server ignores
    ``Range``; ``sha256`` (from the index) is checked whenever the whole file is read."""
    transfer = Transfer()
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "file":
        path = Path(urllib.request.url2pathname(parts.path))
        with _zip_at(path, url) as archive:
            transfer.size = path.stat().st_size
            return extract(archive, wanted, dest, _nothing_to_fetch, label), transfer
    if parts.scheme not in ("http", "https"):
        raise FetchFailed(f"{_shown(url)}: cannot read a {parts.scheme or 'schemeless'} URL")
    http = _Http(url, transfer, progress, opener)
    try:
        return _read_ranges(http, wanted, dest, spool, label, sha256), transfer
    except RangesIgnored:
        # The server stopped honouring ranges, or the file changed between two requests (its
        # If-Range no longer matched): what was written goes, and the file is read whole.
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        return _read_whole(http, http.open(), wanted, dest, spool, label, sha256), transfer


def _nothing_to_fetch(members: list[zipfile.ZipInfo]) -> None:
    return None


def _read_ranges(http: _Http, wanted: Callable[[str], bool], dest: Path, spool: Path, label: str, sha256: str | None) -> list[str]:
    response = http.open(suffix=TAIL_BYTES)
    status = _status(response)
    got = _content_range(response) if status == 206 else None
    if status != 206:
        # A server that ignores Range sends the whole file now: it is read, not asked again.
        return _read_whole(http, response, wanted, dest, spool, label, sha256)
    if got is None or got[2] is None:
        response.close()  # a range without the file's size to place it in: the whole file
        return _read_whole(http, http.open(), wanted, dest, spool, label, sha256)
    http.transfer.size = got[2]
    http.validator = _validator(response)
    tail: list[bytes] = []
    http.read_body(response, tail.append, got[1] - got[0] + 1)
    remote = _RemoteFile(http, got[2])
    remote.add(got[0], b"".join(tail))
    with _zip_over(remote, http.url) as archive:

        def prefetch(members: list[zipfile.ZipInfo]) -> None:
            spans = member_spans(archive, members)
            planned = sum(b - a for a, b in spans)
            http.planned = http.transfer.received + planned
            # A damaged member's reads past its span are fetched on demand, up to a bound.
            remote.budget = http.transfer.received + planned + ON_DEMAND_BYTES
            for start, stop in spans:
                for a, b in list(remote.missing(start, stop)):
                    remote.fetch(a, b)

        return extract(archive, wanted, dest, prefetch, label)


def _read_whole(http: _Http, response: Any, wanted: Callable[[str], bool], dest: Path, spool: Path, label: str, sha256: str | None) -> list[str]:
    status = _status(response)
    if status == 416:  # no suffix to give: an empty file
        response.close()
        raise CorruptZip(f"{_shown(http.url)}: the server has an empty file there, not a wheel")
    if status != 200:
        response.close()
        raise FetchFailed(f"{http.host} answered {status} where the file was expected")
    http.transfer.whole = True
    with _spooled(http, response, spool, sha256) as path, _zip_at(path, http.url) as archive:
        http.transfer.size = path.stat().st_size
        return extract(archive, wanted, dest, _nothing_to_fetch, label)


def _status(response: Any) -> int:
    return int(getattr(response, "status", None) or response.getcode())


def _validator(response: Any) -> str:
    etag = response.headers.get("ETag", "")
    if etag and not etag.startswith("W/"):
        return str(etag)
    return str(response.headers.get("Last-Modified", ""))


@contextlib.contextmanager
def _spooled(http: _Http, response: Any, spool: Path, sha256: str | None) -> Iterator[Path]:
    """The whole response in a temporary file (removed after), its SHA-256 checked when known."""
    expected = _length(response)
    http.planned = http.transfer.received + expected if expected is not None else None
    digest = hashlib.sha256()
    fd, name = tempfile.mkstemp(dir=spool, prefix=".wheel-", suffix=".zip")
    try:
        with os.fdopen(fd, "wb") as out:

            def write(chunk: bytes) -> None:
                out.write(chunk)
                digest.update(chunk)

            http.read_body(response, write, expected)
        if sha256 and digest.hexdigest() != sha256.lower():
            raise CorruptZip(f"{_shown(http.url)}: its SHA-256 is not the one the index gives: the download is damaged")
        yield Path(name)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


@contextlib.contextmanager
def _zip_at(path: Path, url: str) -> Iterator[zipfile.ZipFile]:
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, after what the caller does with it
    except OSError as exc:
        raise FetchFailed(f"{_shown(url)}: {exc.strerror or exc}") from None
    with handle, _zip_over(handle, url) as archive:
        yield archive


@contextlib.contextmanager
def _zip_over(handle: Any, url: str) -> Iterator[zipfile.ZipFile]:
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, struct.error) as exc:
        raise CorruptZip(f"{_shown(url)}: not a valid zip (truncated or damaged: {exc})") from None
    with archive:
        yield archive


def _shown(url: str) -> str:
    """A URL as said in a message: credentials and query left out."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return line_text(urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", "")) if parts.scheme else url)


def safe_member_path(name: str) -> str | None:
    """The relative path a member may be written to, or None for a name that could leave the
    destination (absolute, ``..``, a drive, a backslash, a NUL)."""
    if not name or name.startswith("/") or "\\" in name or "\0" in name or re.match(r"^[A-Za-z]:", name):
        return None
    parts = name.split("/")
    if any(p in ("", ".", "..") for p in parts[:-1]) or parts[-1] in ("", ".", ".."):
        return None
    return name


def extract(
    archive: zipfile.ZipFile,
    wanted: Callable[[str], bool],
    dest: Path,
    prefetch: Callable[[list[zipfile.ZipInfo]], None],
    label: str,
) -> list[str]:
    """Write the members ``wanted`` accepts under ``dest``; returns their names. Every member is
    read to its end, so ``zipfile`` checks its CRC-32; a damaged one raises :class:`CorruptZip`
    (the caller's staging folder then goes, with whatever was written)."""
    chosen = [info for info in archive.infolist() if not info.is_dir() and safe_member_path(info.filename) and wanted(info.filename)]
    total = 0
    for info in chosen:
        if info.file_size > MAX_MEMBER_BYTES:
            raise CorruptZip(f"{label}: {info.filename!r} says it holds {info.file_size} bytes: not a source file, refused")
        total += info.file_size
    if total > MAX_TOTAL_BYTES:
        raise CorruptZip(f"{label}: the files wanted would take {total} bytes unpacked: refused")
    prefetch(chosen)
    written = []
    for info in chosen:
        target = dest / info.filename
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out, _CHUNK)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError, struct.error) as exc:
            raise CorruptZip(f"{label}: {info.filename!r} is damaged: {exc}") from None
        written.append(info.filename)
    return written
