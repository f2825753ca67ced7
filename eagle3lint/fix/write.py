"""Writing a proven file: atomically, keeping its mode, and never over a file that changed on
disk since the fixer read it.

The temporary file beside it (``.<name>.<random>.eagle3lint-tmp``) is removed whatever ends
the write, an interrupt included; only a process killed outright leaves one, and the next
``fix --apply`` writing in that folder removes it once it is an hour old.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import time

TEMP_SUFFIX = ".eagle3lint-tmp"
# tempfile.mkstemp(prefix=".<name>.", suffix=TEMP_SUFFIX): eight characters of its alphabet.
_TEMP_NAME = re.compile(r"\..+\.[a-z0-9_]{8}" + re.escape(TEMP_SUFFIX))
STALE_AFTER_S = 3600  # a write takes milliseconds; an hour-old one belongs to a dead run


class WriteRefused(Exception):
    """The file was not written (changed on disk, vanished, or not writable)."""


def write_target(path: str) -> str:
    """The file a write to ``path`` replaces: the file a symbolic link leads to (renaming over
    the link would turn it into a copy, and leave the file it shares untouched)."""
    return os.path.realpath(path) if os.path.islink(path) else path


def write_atomically(path: str, new_data: bytes, expected_old: bytes) -> None:
    """Replace ``path`` with ``new_data`` if it still holds ``expected_old``.

    A temporary file in the same folder is written, flushed and fsynced, given the original's
    mode bits, and renamed over the original (atomic on POSIX); the folder is fsynced too. For
    a symbolic link all of it happens beside the file it leads to, and the link stays.
    """
    path = write_target(path)
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
        fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=TEMP_SUFFIX, dir=folder)
    except OSError as exc:
        raise WriteRefused(f"cannot create a temporary file next to it: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(new_data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException as exc:  # Ctrl-C or SIGTERM (see fix/cli.py) too: nothing left behind
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(exc, OSError):
            raise WriteRefused(f"cannot write: {exc.strerror or exc}") from exc
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def stale_temp_files(folder: str, now: float | None = None) -> list[str]:
    """Temporary files of interrupted writes in ``folder``: named as :func:`write_atomically`
    names them, regular files of this user, older than ``STALE_AFTER_S``."""
    now = time.time() if now is None else now
    found = []
    try:
        with os.scandir(folder) as listing:
            entries = [e for e in listing if _TEMP_NAME.fullmatch(e.name)]
    except OSError:
        return []
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and now - info.st_mtime > STALE_AFTER_S:
            found.append(entry.path)
    return sorted(found)


def remove_stale_temp_files(folders: set[str], now: float | None = None) -> list[str]:
    """Remove :func:`stale_temp_files` of ``folders`` (those a fix is about to write in);
    returns the paths removed."""
    removed = []
    for folder in sorted(folders):
        for path in stale_temp_files(folder, now):
            with contextlib.suppress(OSError):
                os.unlink(path)
                removed.append(path)
    return removed
