"""Writing a proven file: atomically, keeping its mode, and never over a file that changed on
disk since the fixer read it."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile


class WriteRefused(Exception):
    """The file was not written (changed on disk, vanished, or not writable)."""


def write_atomically(path: str, new_data: bytes, expected_old: bytes) -> None:
    """Replace ``path`` with ``new_data`` if it still holds ``expected_old``.

    A temporary file in the same folder is written, flushed and fsynced, given the original's
    mode bits, and renamed over the original (atomic on POSIX); the folder is fsynced too.
    """
    try:
        with open(path, "rb") as handle:
            current = handle.read()
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError as exc:
        raise WriteRefused(f"cannot re-read the file before writing: {exc.strerror or exc}") from exc
    if current != expected_old:
        raise WriteRefused("the file changed on disk since it was read; run fix again")
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".eagle3lint-tmp", dir=folder)
    except OSError as exc:
        raise WriteRefused(f"cannot create a temporary file next to it: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(new_data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise WriteRefused(f"cannot write: {exc.strerror or exc}") from exc
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
