"""Reading a file named by the user or an analysed tree without trusting it.

A path may name a folder, a named pipe, a device (``/dev/zero`` never ends), a link swapped in
meanwhile, or a file far too large: each is refused with a reason, never waited on or read
without bound. Settings, baselines, checkpoints and prompt files all come through here. The
files eagle3lint keeps for itself (cache entries, release metadata) are written whole or not at
all (:func:`write_atomic`).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


class NotRegularFile(OSError):
    """A path that exists but is a folder, pipe, socket or device: never read as a file."""


class FileTooLarge(OSError):
    """A file larger than the reader accepts."""


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words (for "is not a regular file (a named pipe)")."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a plain file"


def open_regular_file(path: Path, follow_symlinks: bool = True) -> int:
    """A descriptor on the regular file ``path``, opened for reading without blocking.

    The path is stat'ed before it is opened (opening some devices acts on them), and opened
    without blocking and checked again (a named pipe swapped in meanwhile would block a read,
    ``/dev/zero`` would never end). ``follow_symlinks=False`` refuses a link in the last
    component (``O_NOFOLLOW``): for a path the caller has already resolved and confined, a
    link swapped in afterwards must not lead elsewhere. Raises :class:`NotRegularFile` or the
    ``OSError`` of the system call (``FileNotFoundError`` among them)."""
    mode = os.stat(path, follow_symlinks=follow_symlinks).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFile(f"is not a regular file ({file_kind(mode)})")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"is not a regular file ({file_kind(info.st_mode)})")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_upto(fd: int, count: int) -> bytes:
    """At most ``count`` bytes from ``fd``; fewer only at the end of the file."""
    chunks: list[bytes] = []
    left = count
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_regular_file(path: Path, max_bytes: int, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` (see
    :func:`open_regular_file`). Raises :class:`NotRegularFile`, :class:`FileTooLarge`, or the
    ``OSError`` of the system call (``FileNotFoundError`` among them)."""
    fd = open_regular_file(path, follow_symlinks)
    try:
        if os.fstat(fd).st_size > max_bytes:
            raise FileTooLarge(f"is larger than {_size(max_bytes)}")
        data = read_upto(fd, max_bytes + 1)  # one byte more tells a file that grew past the limit
        if len(data) > max_bytes:
            raise FileTooLarge(f"is larger than {_size(max_bytes)}")
        return data
    finally:
        os.close(fd)


def _size(count: int) -> str:
    mib = 1024 * 1024
    return f"{count // mib} MiB" if count >= mib and count % mib == 0 else f"{count} bytes"


def os_problem(exc: OSError) -> str:
    """An ``OSError`` as the tail of "<file>: <problem>"."""
    if isinstance(exc, (NotRegularFile, FileTooLarge)):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    return f"cannot be read: {exc.strerror or exc}"


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a ``.tmp-`` file beside it, replaced into place: a
    reader sees the old file or the new one, never part of it, and an interrupted write leaves
    no temporary file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
