"""Fetching a published engine release's source into a user cache (``--release sglang==0.5.9``).

Only the files the analysis reads are fetched: the engine package's ``.py`` files and the wheel's
``METADATA`` (its requirements say which transformers the release pins). The wheel's URL comes
from the package index pip is configured for (``pip_index``); its central directory and then
only those members are read with HTTP range requests (``remote_zip``): of a 438 MB vLLM wheel,
about 3 MB. A server that ignores ``Range`` sends the whole wheel, which is then read as it is;
one that wants credentials only pip holds gets ``pip download``. Everything is unpacked into a
staging folder first and moved into place whole, so a failure (a damaged zip, a lost connection)
leaves nothing half-unpacked in the cache.

The cache is an LRU of releases bounded by ``EAGLE3LINT_MAX_RELEASES`` (default 16). Libraries an
analysis reads beside an engine (transformers' model-type tables) are kept the same way in
``releases/libraries/``, only the files the analysis reads.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from eagle3lint.common.cache_dir import _COMPLETE, cache_root, is_cached_release
from eagle3lint.common.errors import ReleaseFetchError, UsageError
from eagle3lint.common.safe_io import write_atomic
from eagle3lint.source.plugins import normalize_name

if TYPE_CHECKING:
    # The network half (pip, HTTP, TLS) loads when something is fetched: a run that finds its
    # release in the cache never needs it.
    from eagle3lint.fetch import pip_index, remote_zip

__all__ = ["cache_root", "fetch_library", "fetch_package", "fetch_release", "read_wheel_files"]

# Every file unpacked, with its size: a cached entry whose files no longer match (a folder
# deleted, a file truncated) is fetched again rather than analysed as it is.
_MANIFEST = ".eagle3lint-manifest"
DEFAULT_MAX_RELEASES = 16


_WHEEL_METADATA = re.compile(r"^[^/]+\.dist-info/METADATA$")


def _python_sources(package: str, wanted: Callable[[str], bool] | None = None) -> Callable[[str], bool]:
    """The package's ``.py`` files (those ``wanted`` accepts, when given) and the wheel's
    ``METADATA``."""
    prefix = f"{package}/"

    def choose(name: str) -> bool:
        if _WHEEL_METADATA.match(name):
            return True
        return name.startswith(prefix) and name.endswith(".py") and (wanted is None or wanted(name))

    return choose


class _Progress:
    """Bytes received against bytes planned, on one line of a terminal rewritten in place (a
    tenth of a second at most between updates); nothing where standard error is no terminal."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.shown = 0.0
        self.active = bool(getattr(self.stream, "isatty", lambda: False)())

    def __call__(self, received: int, planned: int | None) -> None:
        now = time.monotonic()
        if not self.active or now - self.shown < 0.1:
            return
        self.shown = now
        of = f" of {_mb(planned)}" if planned else ""
        self._write(f"\r\x1b[K  {self.label}: {_mb(received)}{of}")

    def finish(self, transfer: remote_zip.Transfer | None) -> None:
        if not self.active:
            return
        if transfer is None or transfer.size is None:
            self._write("\r\x1b[K")
            return
        how = "the whole wheel (the server ignores ranges)" if transfer.whole else f"{transfer.requests} requests"
        self._write(f"\r\x1b[K  {self.label}: {_mb(transfer.received)} of a {_mb(transfer.size)} wheel, {how}\n")

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.stream.write(text)
            self.stream.flush()


def _mb(count: int) -> str:
    return f"{count / 1e6:.1f} MB"


def read_wheel_files(
    name: str,
    version: str,
    wanted: Callable[[str], bool],
    staging: Path,
    progress: remote_zip.Progress | None = None,
) -> remote_zip.Transfer:
    """Unpack the members of ``name==version``'s wheel that ``wanted`` accepts into ``staging``
    (a new folder): ranges of the wheel the index names, else the whole wheel pip downloads.
    Raises :class:`ReleaseFetchError` (``pip_index.NoWheel`` for a release with only a source
    distribution, ``pip_index.NoSuchRelease`` for none) naming what failed. ``progress``: none
    drawn unless given (whoever draws a progress line must also finish it)."""
    from eagle3lint.fetch import pip_index, remote_zip

    label = f"{name}=={version}"
    link = _wheel_link(name, version)
    staging.mkdir(parents=True, exist_ok=True)
    spool = staging.parent
    try:
        if link is not None and link.readable:
            try:
                _, transfer = remote_zip.read_members(link.url, wanted, staging, spool, label, progress or remote_zip.no_progress, link.sha256)
                return transfer
            except remote_zip.AuthNeeded:
                shutil.rmtree(staging, ignore_errors=True)  # pip, which holds the credentials, downloads it
                staging.mkdir(parents=True)
        elif link is None:
            url = pip_index.report_url(name, version)
            if url is not None:
                _, transfer = remote_zip.read_members(url, wanted, staging, spool, label, progress or remote_zip.no_progress)
                return transfer
        with tempfile.TemporaryDirectory(dir=spool, prefix=".wheel-") as tmp:
            wheel = pip_index.download(name, version, Path(tmp))
            _, transfer = remote_zip.read_members(wheel.resolve().as_uri(), wanted, staging, spool, label)
            transfer.whole = True
            return transfer
    except remote_zip.FetchFailed as exc:
        raise ReleaseFetchError(f"fetching {label} failed: {exc}") from None
    except remote_zip.CorruptZip as exc:
        raise ReleaseFetchError(f"{label}: the wheel is damaged: {exc}") from None
    except OSError as exc:
        raise ReleaseFetchError(f"{label}: cannot unpack into {staging}: {exc.strerror or exc}") from None


def _wheel_link(name: str, version: str) -> pip_index.WheelLink | None:
    """The wheel of the release as the index lists it; None where pip's listing names no
    wheel files at all (a pip that logs differently: its resolver is asked instead). A release
    published as a source distribution only, or not at all, is an error saying which."""
    from eagle3lint.fetch import pip_index

    try:
        found = pip_index.cached_listing(name) or pip_index.listing(name)
    except pip_index.IndexUnsupported:
        return None
    link = found.wheel_for(version, allow_yanked=True)  # named exactly: a yanked one too (PEP 592)
    if link is not None:
        return link
    from eagle3lint.fetch.release_query import normal_version

    key = normal_version(version)
    if key in found.sources:
        raise pip_index.NoWheel(
            f"{name} {version} is published only as a source distribution, no wheel: eagle3lint reads "
            "wheels (building one from the source would run the package's own setup code)"
        )
    if not found.wheels:
        return None
    latest = f"; the latest is {found.versions[0]}" if found.versions else ""
    raise pip_index.NoSuchRelease(f"{name}=={version}: no such release on the package index{latest}")


def _max_entries() -> int:
    try:
        return max(int(os.environ.get("EAGLE3LINT_MAX_RELEASES", DEFAULT_MAX_RELEASES)), 1)
    except ValueError:
        return DEFAULT_MAX_RELEASES


def _evict(releases: Path, keep: Path, limit: int) -> None:
    """Remove the least recently used entries past ``limit``, except those another live run is
    reading (it holds the entry's use lock): deleting them under it would change its result."""
    entries = [p for p in releases.iterdir() if (p / _COMPLETE).exists() and p != keep]
    entries.sort(key=lambda p: (p / _COMPLETE).stat().st_mtime)
    while len(entries) + 1 > limit and entries:
        entry = entries.pop(0)
        with _unused(releases, entry.name) as free:
            if free:
                shutil.rmtree(entry, ignore_errors=True)


# The use locks this process holds (a shared flock on ``.<entry>.use.lock`` for each entry it read),
# open until it exits: another process's eviction then passes over those entries.
_HELD: dict[str, int] = {}


def _hold(folder: Path, entry: str) -> None:
    """Mark the entry as read by this process, for as long as it runs (waits while another
    process is evicting it)."""
    path = folder / f".{entry}.use.lock"
    if str(path) in _HELD:
        return
    try:
        import fcntl

        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except (ImportError, OSError):  # no flock, or a read-only cache: nothing to tell
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        os.close(fd)
        return
    _HELD[str(path)] = fd


@contextlib.contextmanager
def _unused(folder: Path, entry: str) -> Iterator[bool]:
    """Whether no other live process reads the entry, held so while the body runs (a run that
    starts reading it meanwhile waits). An entry this process read counts as unused by others:
    its own runs keep what they need through ``keep``."""
    path = folder / f".{entry}.use.lock"
    if str(path) in _HELD:
        yield True
        return
    # A lock that cannot be made (no flock, a read-only cache): no reader can be told apart.
    with _exclusive_if_free(path, unopenable=True) as free:
        yield free


@contextlib.contextmanager
def _exclusive_if_free(path: Path, unopenable: bool) -> Iterator[bool]:
    """An exclusive lock on ``path`` if no one holds it (True), held while the body runs;
    ``unopenable`` where the lock file cannot be opened or locks are not supported."""
    try:
        import fcntl

        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except (ImportError, OSError):
        yield unopenable
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _announce(message: str) -> None:
    print(message, file=sys.stderr)


@contextlib.contextmanager
def _download_lock(releases: Path, folder: str) -> Iterator[None]:
    """One download of a release at a time across processes (two checks started together, a
    test suite on several cores): a second waits for the first, then finds it complete."""
    releases.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock (Windows): a race costs a second download
        yield
        return
    with open(releases / f".{folder}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def fetch_release(spec: str, announce: Callable[[str], None] = _announce, keep: int = 0) -> Path:
    """Return the folder holding the release's package (``.../sglang-0.5.9/sglang``).
    ``announce`` gets one line when (and only when) the release is downloaded. ``keep``: the
    cache keeps at least this many releases (a history needs each of its own until it is done)."""
    # Loaded here, not at start-up: a run without --release needs no version parsing.
    from eagle3lint.fetch.release_query import parse_release_spec

    name, version = parse_release_spec(spec)  # the version as PEP 440 normalises it
    releases = cache_root() / "releases"
    target = releases / f"{name}-{version}"
    missing = f"the wheel of {name}=={version} holds no {name}/*.py files"
    if _cached_or_fetched(releases, target, name, version, _python_sources(name), missing, announce):
        _evict(releases, target, max(_max_entries(), keep))
    return target / name


def _cached_or_fetched(
    folder: Path, target: Path, name: str, version: str, wanted: Callable[[str], bool], missing: str, announce: Callable[[str], None]
) -> bool:
    """Make sure ``target`` holds the ``wanted`` files of ``name==version``'s wheel, one download
    at a time across processes; whether it was fetched now (a copy in the cache is marked used)."""
    marker = target / _COMPLETE
    usable = _usable_name(target)
    if usable and folder.is_dir():
        _hold(folder, target.name)
    if usable and _intact(target, name, version) is None:
        with contextlib.suppress(OSError):  # a read-only cache is still read
            os.utime(marker)  # LRU bookkeeping
        return False
    try:
        with _download_lock(folder, target.name):
            damage = _intact(target, name, version)
            if damage is None:  # fetched by another process while this one waited
                with contextlib.suppress(OSError):
                    os.utime(marker)
                return False
            again = f" again (the cached copy {damage})" if marker.exists() else ""
            # The index first: a release it does not have is said at once, with no "fetching"
            # line before it (the listing is kept: the download does not ask again).
            _wheel_link(name, version)
            announce(f"eagle3lint: fetching {name}=={version} source into {target}{again} ...")
            _hold(folder, target.name)
            _remove_stale_staging(folder, target.name)
            _unpack(folder, target, name, version, wanted, f"{name}/**/*.py", missing)
    except ReleaseFetchError:
        raise
    except OSError as exc:  # the cache folder is a file, read-only, full...
        raise UsageError(
            f"the release cache {folder} cannot hold {name}=={version}: {exc.strerror or exc}"
            f"{f' ({exc.filename})' if exc.filename else ''}; set EAGLE3LINT_CACHE_DIR to a folder you can write"
        ) from None
    return True


def _intact(target: Path, name: str, version: str) -> str | None:
    """Why the cached entry ``target`` cannot be used as it is (None: it can): not complete, a
    completion marker that names another release, or files that do not match what was unpacked.
    An entry unpacked before the cache kept a manifest is checked for its package folder only."""
    try:
        marker = (target / _COMPLETE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "is incomplete"
    if marker.partition("\n")[0].strip() != f"{name}=={version}":
        return "has a completion marker naming another release"
    try:
        listed = (target / _MANIFEST).read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return None if (target / name).is_dir() else f"has no {name}/ folder"
    except OSError:
        return "has an unreadable manifest"
    for line in listed:
        size, _, rel = line.partition("\t")
        try:
            if not size.isdigit() or (target / rel).stat().st_size != int(size):
                return f"has {rel} changed since it was unpacked"
        except OSError:
            return f"lacks {rel}"
    return None


def _write_manifest(staging: Path) -> None:
    lines = [f"{p.stat().st_size}\t{p.relative_to(staging).as_posix()}" for p in sorted(staging.rglob("*")) if p.is_file() and not p.is_symlink()]
    (staging / _MANIFEST).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def _usable_name(target: Path) -> bool:
    """Whether the file system can hold ``target``'s name. A version longer than a file name may
    be (``0.5.<300 digits>``) is asked of the index, which says it is no release, rather than
    failing on the cache folder's name."""
    try:
        # The lock file's name is the longest the cache makes of it; 255 bytes is the common
        # limit of a file name (NAME_MAX).
        if len(os.fsencode(f".{target.name}.lock")) > 255:
            raise OSError(errno.ENAMETOOLONG, "File name too long")
        target.exists()
    except OSError:
        name, _, version = target.name.rpartition("-")
        _wheel_link(name, version)  # raises NoSuchRelease where the index does not list it
        raise ReleaseFetchError(f"{name}=={version}: the version is too long for a folder name in the release cache") from None
    return True


def _unpack(folder: Path, target: Path, name: str, version: str, wanted: Callable[[str], bool], expected: str, missing: str) -> None:
    """Read the ``wanted`` members into a staging folder in ``folder`` and move it to ``target``
    whole, marked complete: a failure leaves nothing half-unpacked. ``expected``: a glob the
    unpacked files must match (else ``missing`` is the error)."""
    # Named after the release: a later fetch can tell, by the release's lock, that no live run
    # still unpacks into it (a run killed outright leaves it behind).
    with tempfile.TemporaryDirectory(dir=folder, prefix=f"{_STAGING}{target.name}-") as tmp:
        staging = Path(tmp) / "src"
        progress = _Progress(f"{name}=={version}")
        transfer = None
        try:
            transfer = read_wheel_files(name, version, wanted, staging, progress)
        finally:
            progress.finish(transfer)
        if not any(staging.glob(expected)):
            raise ReleaseFetchError(missing)
        _write_manifest(staging)
        (staging / _COMPLETE).write_text(f"{name}=={version}\n{time.time()}\n")
        if target.is_symlink() or target.is_file():  # not a release a run unpacked: replaced
            target.unlink()
        elif target.exists():  # an incomplete copy a killed run left: nobody else uses it
            shutil.rmtree(target)
        os.replace(staging, target)


_STAGING = ".download-"
# A staging folder named before it carried its release (no lock tells whether it is live).
_OLD_STAGING_AFTER_S = 24 * 3600


def _remove_stale_staging(folder: Path, holding: str) -> None:
    """Remove staging folders no live run unpacks into: those of the release whose download lock
    this run holds (``holding``), those of other releases whose lock is free, and old ones of
    unknown release. Called under ``holding``'s download lock."""
    try:
        found = [p for p in folder.iterdir() if p.name.startswith(_STAGING) and p.is_dir() and not p.is_symlink()]
    except OSError:
        return
    for staging in found:
        entry = staging.name[len(_STAGING):].rpartition("-")[0]
        if entry == holding:
            shutil.rmtree(staging, ignore_errors=True)
        elif entry:
            with _try_download_lock(folder, entry) as free:
                if free:
                    shutil.rmtree(staging, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                if time.time() - staging.stat().st_mtime > _OLD_STAGING_AFTER_S:
                    shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def _try_download_lock(folder: Path, entry: str) -> Iterator[bool]:
    """The download lock of ``entry`` if no one holds it (True), held while the body runs."""
    with _exclusive_if_free(folder / f".{entry}.lock", unopenable=False) as free:
        yield free


def cached_release_metadata(root: Path) -> Path | None:
    """The ``METADATA`` of the release whose package folder (in this cache) is ``root``. A
    release unpacked before the cache kept it gets it now, that one member read out of the
    wheel on the index, written beside the package once. None where ``root`` is not a cached
    release or the index cannot say."""
    releases = cache_root() / "releases"
    folder = root.parent
    if not is_cached_release(root):
        return None
    name = root.name
    if not folder.name.startswith(f"{name}-"):
        return None
    version = folder.name[len(name) + 1 :]
    found = sorted(folder.glob("*.dist-info/METADATA"))
    if found:
        return found[0]
    try:
        with _download_lock(releases, folder.name):
            return _metadata_locked(folder, name, version)
    except OSError:  # a read-only cache: the release is read without its requirements
        return None


def _metadata_locked(folder: Path, name: str, version: str) -> Path | None:
    """The part of :func:`cached_release_metadata` done under the release's lock."""
    found = sorted(folder.glob("*.dist-info/METADATA"))
    if found:
        return found[0]
    failed = folder / ".eagle3lint-no-metadata"
    if failed.exists() and time.time() - failed.stat().st_mtime < _RETRY_AFTER_S:
        return None
    text = _pip_metadata(name, version)
    if text is None:
        failed.touch()
        return None
    target = folder / f"{name}-{version}.dist-info" / "METADATA"
    target.parent.mkdir(exist_ok=True)
    write_atomic(target, text.encode("utf-8"))
    return target


# A failed look-up (no network) is not repeated on every run.
_RETRY_AFTER_S = 24 * 3600


def _pip_metadata(name: str, version: str) -> str | None:
    """The release's ``METADATA``, read out of its wheel on the index (the one member, with
    range requests); None where it cannot be had."""
    with tempfile.TemporaryDirectory(prefix="eagle3lint-metadata-") as tmp:
        staging = Path(tmp) / "src"
        try:
            read_wheel_files(name, version, lambda member: bool(_WHEEL_METADATA.match(member)), staging)
        except (ReleaseFetchError, OSError):
            return None
        found = sorted(staging.glob("*.dist-info/METADATA"))
        try:
            return found[0].read_text(encoding="utf-8", errors="replace") if found else None
        except OSError:
            return None


def fetch_library(name: str, version: str, wanted: Callable[[str], bool], announce: Callable[[str], None] = _announce) -> Path:
    """A library's package folder (``.../transformers-4.56.0/transformers``), only the ``.py``
    files ``wanted`` accepts (paths as in the wheel) unpacked, in ``releases/libraries/``: an
    LRU bounded like the releases', one download at a time across processes."""
    if not _PACKAGE_SPEC_RE.match(f"{name}=={version}"):
        raise UsageError(f"{name}=={version}: expected NAME==VERSION")
    libraries = cache_root() / "releases" / "libraries"
    target = libraries / f"{name}-{version}"
    missing = f"the wheel of {name}=={version} holds none of the {name}/*.py files needed"
    if _cached_or_fetched(libraries, target, name, version, _python_sources(name, wanted), missing, announce):
        _evict(libraries, target, _max_entries())
    return target / name


_PACKAGE_SPEC_RE = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[0-9][0-9A-Za-z.+!-]*)$")
# What a plugin's metadata folder keeps: its name and version, entry points, top-level packages.
_METADATA_FILES = ("METADATA", "entry_points.txt", "top_level.txt", "RECORD")


def _package_files(name: str) -> bool:
    parts = name.split("/")
    return name.endswith(".py") or (len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] in _METADATA_FILES)


def fetch_package(spec: str) -> Path:
    """An out-of-tree package (an engine plugin) from the package index, unpacked like a
    release: its ``.py`` files and its ``*.dist-info`` metadata (name, version, entry points).
    Returns the folder that holds its top-level packages. Plugins are small and kept."""
    match = _PACKAGE_SPEC_RE.match(spec.strip())
    if not match:
        raise UsageError(f"{spec!r}: expected NAME==VERSION")
    name, version = match["name"], match["version"]
    packages = cache_root() / "packages"
    target = packages / f"{normalize_name(name)}-{version}"
    if (target / _COMPLETE).exists():
        return target
    packages.mkdir(parents=True, exist_ok=True)
    print(f"eagle3lint: fetching {name}=={version} into {target} ...", file=sys.stderr)
    _unpack(packages, target, name, version, _package_files, "**/*.py", f"the wheel of {name}=={version} holds no .py files")
    return target
