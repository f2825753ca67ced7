"""TEST DOUBLE: a package index (PEP 503 pages and the files they list) on 127.0.0.1, in a thread.

Files are served with or without ``Range`` support (one range per request, suffix ranges,
``If-Range`` against the file's ETag); a file may be made to fail: the connection dropped after
some bytes, a server error. Every request is recorded (path, Range header, bytes sent), so tests
can say what a reader fetched. pip is pointed at it through the environment (``pip_env``), with
the machine's own pip configuration set aside.
"""

from __future__ import annotations

import hashlib
import html
import io
import os
import re
import threading
import zipfile
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Served:
    data: bytes
    yanked: str | None = None  # a reason: the page marks the file yanked
    listed: bool = True  # on the project's page (a file may be reachable only by URL)


@dataclass
class Request:
    path: str
    range: str | None
    sent: int
    status: int


@dataclass
class FakeIndex:
    files: dict[str, Served] = field(default_factory=dict)
    ranges: bool = True
    # Files whose download fails: "drop" closes the connection after a few bytes, "error" is a
    # 500, "auth" a 401.
    failing: dict[str, str] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def add(self, filename: str, data: bytes, yanked: str | None = None) -> None:
        self.files[filename] = Served(data, yanked)

    def file_url(self, filename: str) -> str:
        return f"{self.url}/files/{filename}"

    def sent_for(self, filename: str) -> int:
        return sum(r.sent for r in self.requests if r.path == f"/files/{filename}")

    def file_requests(self, filename: str) -> list[Request]:
        return [r for r in self.requests if r.path == f"/files/{filename}"]

    def page(self, project: str) -> bytes:
        links = []
        for name, served in sorted(self.files.items()):
            if not served.listed or _project(name) != project:
                continue
            digest = hashlib.sha256(served.data).hexdigest()
            yanked = f' data-yanked="{html.escape(served.yanked)}"' if served.yanked is not None else ""
            links.append(f'<a href="/files/{name}#sha256={digest}"{yanked}>{html.escape(name)}</a><br/>')
        body = "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n"
        return body.encode()


def _project(filename: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"-\d", filename, maxsplit=1)[0]).lower()


def _handler(index: FakeIndex) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(self, status: int, body: bytes, headers: dict[str, str], drop_after: int | None = None) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            sent = len(body) if drop_after is None else min(drop_after, len(body))
            with index.lock:
                index.requests.append(Request(self.path, self.headers.get("Range"), sent, status))
            if self.command != "HEAD":
                self.wfile.write(body[:sent])
            if drop_after is not None:
                self.close_connection = True
                self.wfile.flush()
                self.connection.shutdown(2)

        def do_GET(self) -> None:
            path = self.path.split("#", 1)[0].split("?", 1)[0]
            if path.startswith("/simple/"):
                project = path[len("/simple/") :].strip("/")
                self._send(200, index.page(project), {"Content-Type": "text/html"})
                return
            name = path[len("/files/") :] if path.startswith("/files/") else ""
            served = index.files.get(name)
            if served is None:
                self._send(404, b"not found", {"Content-Type": "text/plain"})
                return
            failure = index.failing.get(name)
            if failure == "error":
                self._send(500, b"broken", {"Content-Type": "text/plain"})
                return
            if failure == "auth":
                self._send(401, b"who are you", {"Content-Type": "text/plain", "WWW-Authenticate": 'Basic realm="x"'})
                return
            data = served.data
            etag = '"' + hashlib.sha256(data).hexdigest()[:16] + '"'
            headers = {"Content-Type": "application/octet-stream", "ETag": etag}
            drop = 100 if failure == "drop" else None
            wanted = self.headers.get("Range")
            if_range = self.headers.get("If-Range")
            if not index.ranges or wanted is None or (if_range is not None and if_range != etag):
                self._send(200, data, headers, drop)
                return
            if index.ranges:
                headers["Accept-Ranges"] = "bytes"
            match = re.fullmatch(r"bytes=(\d*)-(\d*)", wanted.strip())
            if match is None:
                self._send(200, data, headers, drop)
                return
            first, last = match.groups()
            if first == "":
                start, end = max(len(data) - int(last), 0), len(data) - 1
            else:
                start, end = int(first), min(int(last) if last else len(data) - 1, len(data) - 1)
            if start >= len(data):
                self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                return
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            self._send(206, data[start : end + 1], headers, drop)

        do_HEAD = do_GET

    return Handler


class running:
    """``with running(FakeIndex()) as index:``: serve it on a free port for the block."""

    def __init__(self, index: FakeIndex) -> None:
        self.index = index
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(index))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeIndex:
        self.thread.start()
        self.index.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        return self.index

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=30)


def pip_env(index: FakeIndex, base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose pip asks this index only: the machine's pip configuration (files,
    ``PIP_*`` variables, find-links) set aside, no pip cache."""
    env = {k: v for k, v in (base if base is not None else os.environ).items() if not k.startswith("PIP_")}
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_INDEX_URL=f"{index.url}/simple",
        PIP_NO_CACHE_DIR="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_DEFAULT_TIMEOUT="20",
        PIP_RETRIES="0",
    )
    return env


def wheel(name: str, version: str, files: dict[str, str | bytes], blob: int = 0) -> bytes:
    """A wheel of ``files`` (paths inside the wheel) with its metadata; ``blob`` bytes of an
    incompressible extension module in the middle, as a binary wheel has (what a range reader
    must not fetch)."""
    out = io.BytesIO()
    dist = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        names = sorted(files)
        half = len(names) // 2
        for n, path in enumerate(names):
            if n == half and blob:
                archive.writestr(f"{name}/_kernels.abi3.so", os.urandom(blob), compress_type=zipfile.ZIP_STORED)
            archive.writestr(path, files[path])
        archive.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Dist: torch\n")
        archive.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: fake\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{dist}/RECORD", "")
    return out.getvalue()


def tree_files(root: Path, prefix: str = "") -> dict[str, str | bytes]:
    """Every file under ``root`` as wheel members (paths relative to ``root``'s parent)."""
    return {
        f"{prefix}{path.relative_to(root.parent).as_posix()}": path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }
