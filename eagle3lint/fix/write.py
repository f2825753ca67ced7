"""Writing a proven file: atomically, keeping its mode, owner and group, never over a file that
changed on disk since the fixer read it, and never over a file its user made read-only.

The temporary file beside it (``.<name>.<random>.eagle3lint-tmp``) is removed whatever ends
the write, an interrupt included; only a process killed outright leaves one, and the next
``fix --apply`` writing in that folder, or reading a model file in it, removes it once it is an
hour old.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import stat
import time

TEMP_SUFFIX = ".eagle3lint-tmp"
TEMP_ATTEMPTS = 100
# ".<name>.<tag>.eagle3lint-tmp": eight characters of tempfile.mkstemp's alphabet (which named
# them before), or of base 32 (which does now).
_TEMP_NAME = re.compile(r"\..+\.[a-z0-9_]{8}" + re.escape(TEMP_SUFFIX))
STALE_AFTER_S = 3600  # a write takes milliseconds; an hour-old one belongs to a dead run


class WriteRefused(Exception):
    """The file was not written (changed on disk, vanished, read-only, or not writable)."""


def write_target(path: str) -> str:
    """The file a write to ``path`` replaces: the file a symbolic link leads to (renaming over
    the link would turn it into a copy, and leave the file it shares untouched)."""
    return os.path.realpath(path) if os.path.islink(path) else path


def write_atomically(path: str, new_data: bytes, expected_old: bytes) -> None:
    """Replace ``path`` with ``new_data`` if it still holds ``expected_old``.

    A temporary file in the same folder is written, flushed and fsynced, given the original's
    owner, group and mode bits, and renamed over the original (atomic on POSIX); the folder is
    fsynced too. For a symbolic link all of it happens beside the file it leads to, and the link
    stays.
    """
    path = write_target(path)
    try:
        with open(path, "rb") as handle:
            current = handle.read()
        info = os.stat(path)
    except OSError as exc:
        raise WriteRefused(f"cannot re-read the file before writing: {exc.strerror or exc}") from exc
    if current != expected_old:
        raise WriteRefused("the file changed on disk since it was read; run fix again")
    if not _writable(path, info):
        raise WriteRefused("the file is read-only; make it writable to let fix change it")
    folder = os.path.dirname(os.path.abspath(path))
    # The name is chosen here, not by tempfile.mkstemp: an interrupt landing just after the file
    # is made, before mkstemp returned its name, would leave it behind.
    for _ in range(TEMP_ATTEMPTS):
        temp = os.path.join(folder, f".{os.path.basename(path)}.{_random_tag()}{TEMP_SUFFIX}")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise WriteRefused(f"cannot create a temporary file next to it: {exc.strerror or exc}") from exc
        except BaseException:  # an interrupt, maybe just after the file was made
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
    else:
        raise WriteRefused("cannot create a temporary file next to it: every name tried is taken")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(new_data)
            out.flush()
            os.fsync(out.fileno())
        _keep_owner(temp, info)
        os.chmod(temp, stat.S_IMODE(info.st_mode))  # after chown, which may clear setuid bits
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


def _random_tag() -> str:
    return base64.b32encode(os.urandom(5)).decode("ascii").lower()


def _writable(path: str, info: os.stat_result) -> bool:
    """Whether this user may write the file. The rename would replace a read-only file all the
    same (it needs only the folder to be writable), and root may write any file: a file without
    a write bit, or one ``access`` says this user cannot write, is the user's to keep."""
    return bool(info.st_mode & 0o222) and os.access(path, os.W_OK)


def _keep_owner(temp: str, info: os.stat_result) -> None:
    """The new file gets the original's owner and group. A fix run as root (a container over a
    bind-mounted checkout) would otherwise leave files the user cannot edit. Only root may give
    a file away; another user may still set a group of its own, else the file stays as made."""
    made = os.stat(temp)
    if (made.st_uid, made.st_gid) == (info.st_uid, info.st_gid):
        return
    try:
        os.chown(temp, info.st_uid, info.st_gid)
    except PermissionError:
        with contextlib.suppress(PermissionError):
            os.chown(temp, -1, info.st_gid)


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
