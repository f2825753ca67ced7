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
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from eagle3lint.common.errors import ReleaseFetchError, UsageError
from eagle3lint.common.safe_io import write_atomic
from eagle3lint.source.plugins import normalize_name

if TYPE_CHECKING:
    # The network half (pip, HTTP, TLS) loads when something is fetched: a run that finds its
    # release in the cache never needs it.
    from eagle3lint.fetch import pip_index, remote_zip
from eagle3lint.common.cache_dir import _COMPLETE, cache_root, is_cached_release

__all__ = ["cache_root", "fetch_library", "fetch_package", "fetch_release", "read_wheel_files"]


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
    entries = [p for p in releases.iterdir() if (p / _COMPLETE).exists() and p != keep]
    entries.sort(key=lambda p: (p / _COMPLETE).stat().st_mtime)
    while len(entries) + 1 > limit and entries:
        shutil.rmtree(entries.pop(0), ignore_errors=True)


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
    if marker.exists():
        os.utime(marker)  # LRU bookkeeping
        return False
    with _download_lock(folder, target.name):
        if marker.exists():  # fetched by another process while this one waited
            os.utime(marker)
            return False
        announce(f"eagle3lint: fetching {name}=={version} source into {target} ...")
        _unpack(folder, target, name, version, wanted, f"{name}/**/*.py", missing)
    return True


def _unpack(folder: Path, target: Path, name: str, version: str, wanted: Callable[[str], bool], expected: str, missing: str) -> None:
    """Read the ``wanted`` members into a staging folder in ``folder`` and move it to ``target``
    whole, marked complete: a failure leaves nothing half-unpacked. ``expected``: a glob the
    unpacked files must match (else ``missing`` is the error)."""
    with tempfile.TemporaryDirectory(dir=folder, prefix=".download-") as tmp:
        staging = Path(tmp) / "src"
        progress = _Progress(f"{name}=={version}")
        transfer = None
        try:
            transfer = read_wheel_files(name, version, wanted, staging, progress)
        finally:
            progress.finish(transfer)
        if not any(staging.glob(expected)):
            raise ReleaseFetchError(missing)
        (staging / _COMPLETE).write_text(f"{name}=={version}\n{time.time()}\n")
        if target.exists():  # an incomplete copy a killed run left: nobody else uses it
            shutil.rmtree(target)
        os.replace(staging, target)


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
    with _download_lock(releases, folder.name):
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
