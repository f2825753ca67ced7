"""Old namespaces in ``.eagle3lint_cache/`` are removed when a run opens the cache.

Every upgrade of eagle3lint, and every change of the settings that shape results, starts a new
namespace folder; the old one would stay forever. A run marks its own namespace as used (its
modification time) and removes the others that were not used for ``STALE_AFTER_S``, and the
least recently used beyond ``MAX_NAMESPACES``.

The summaries every engine tree shares live in one namespace per eagle3lint build; it is marked
used by every run, and ``prune_entries`` keeps its ``MAX_SHARED_ENTRIES`` most recently used
entries (a hit marks an entry used at most once a day), listing it only when a run added some.

Only the top level is listed on every run. A folder is removed only when it is certainly one
eagle3lint wrote: the cache folder carries eagle3lint's ``CACHEDIR.TAG``, the folder's name is
a namespace digest, and everything in it is an entry file (or a temporary file of an
interrupted write). Anything else, and ``.gitignore`` and the tag, is left alone. Failures (a
read-only cache, another run removing the same folder) are ignored: pruning is housekeeping.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from pathlib import Path

STALE_AFTER_S = 7 * 24 * 3600
MAX_NAMESPACES = 32  # the run's own included: one per engine tree and settings a project checks
# The summaries every tree shares (``cache.Cache``): the least recently used beyond this many
# entries go when a run adds some (a summary is a few kilobytes; a release adds hundreds).
MAX_SHARED_ENTRIES = 20_000

# A write this old is not under way: its process was killed.
ABANDONED_WRITE_S = 3600

NAMESPACE_NAME = re.compile(r"[0-9a-f]{20}")
_ENTRY_NAME = re.compile(r"[0-9a-f]{32}\.pickle|\.tmp-[A-Za-z0-9_]+")
_TAG_MARK = b"cache directory tag created by eagle3lint"


def open_namespace(folder: Path, namespace: str | tuple[str, ...], now: float | None = None) -> list[str]:
    """Mark ``namespace`` (one or several) used and prune its siblings; returns the names removed."""
    kept = (namespace,) if isinstance(namespace, str) else namespace
    for name in kept:
        with contextlib.suppress(OSError, NotImplementedError):
            os.utime(folder / name, follow_symlinks=False)
    try:
        return prune_namespaces(folder, kept, time.time() if now is None else now)
    except OSError:
        return []


def prune_namespaces(folder: Path, keep: str | tuple[str, ...], now: float) -> list[str]:
    kept = (keep,) if isinstance(keep, str) else keep
    if not _is_our_cache(folder):
        return []
    others: list[tuple[float, str]] = []
    with os.scandir(folder) as listing:
        for item in listing:
            if item.name in kept or not NAMESPACE_NAME.fullmatch(item.name):
                continue
            with contextlib.suppress(OSError):
                if item.is_dir(follow_symlinks=False):
                    others.append((item.stat(follow_symlinks=False).st_mtime, item.name))
    others.sort(reverse=True)  # most recently used first
    removed = []
    for rank, (used, name) in enumerate(others):
        # The run's own namespaces take places too.
        if now - used > STALE_AFTER_S or rank >= MAX_NAMESPACES - len(kept):
            if _remove_namespace(folder / name):
                removed.append(name)
    return removed


def _is_our_cache(folder: Path) -> bool:
    """Whether the tag is ours: a regular file, never a link (to a file of someone else's) nor a
    named pipe (opening or reading one would wait for a writer that never comes)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(folder / "CACHEDIR.TAG", flags)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and _TAG_MARK in os.read(fd, 512)
    except OSError:
        return False
    finally:
        os.close(fd)


def prune_entries(namespace: Path, limit: int = MAX_SHARED_ENTRIES) -> int:
    """Remove the least recently used entries of a namespace beyond ``limit`` (down to nine
    tenths of it, so that the next runs do not each list the folder again); returns how many."""
    return _prune(namespace, limit)[0]


def room_after_pruning(namespace: Path, limit: int = MAX_SHARED_ENTRIES) -> int:
    """Prune as :func:`prune_entries` does; how many entries may be added before the namespace
    passes ``limit`` again (a run lists the folder only when it has added that many)."""
    _, left = _prune(namespace, limit)
    return limit - left


def _prune(namespace: Path, limit: int) -> tuple[int, int]:
    """(entries removed, entries left)."""
    if not _is_our_cache(namespace.parent):
        return 0, 0
    entries: list[tuple[float, str]] = []
    try:
        with os.scandir(namespace) as listing:
            for item in listing:
                if not _ENTRY_NAME.fullmatch(item.name):
                    continue
                with contextlib.suppress(OSError):
                    if not item.is_file(follow_symlinks=False):
                        continue
                    used = item.stat(follow_symlinks=False).st_mtime
                    if not item.name.startswith(".tmp-"):
                        entries.append((used, item.path))
                    elif time.time() - used > ABANDONED_WRITE_S:
                        # A parse worker killed while writing (Ctrl-C stops them outright).
                        os.unlink(item.path)
    except OSError:
        return 0, 0
    if len(entries) <= limit:
        return 0, len(entries)
    entries.sort()
    removed = 0
    for _, path in entries[: len(entries) - limit * 9 // 10]:
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed += 1
    return removed, len(entries) - removed


def _remove_namespace(path: Path) -> bool:
    """Remove a namespace folder holding only entry files; leave anything else untouched."""
    try:
        with os.scandir(path) as listing:
            entries = list(listing)
        if not all(_ENTRY_NAME.fullmatch(e.name) and e.is_file(follow_symlinks=False) for e in entries):
            return False
        for entry in entries:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
        os.rmdir(path)
    except OSError:
        return False
    return True
