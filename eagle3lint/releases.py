"""Fetching a published engine release's source into a user cache (``--release sglang==0.5.9``).

Only the ``.py`` files of the engine package are unpacked, with the wheel's ``METADATA`` beside
them (its requirements say which transformers the release pins): a vLLM wheel is ~330 MB, its
Python source ~60 MB. The cache is an LRU of releases bounded by ``EAGLE3LINT_MAX_RELEASES``
(default 8). Libraries an analysis reads beside an engine (transformers' model-type tables) are
kept the same way in ``releases/libraries/``, only the files the analysis reads.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from eagle3lint.engines import ENGINE_NAMES, engines_phrase
from eagle3lint.errors import ReleaseFetchError, UsageError

_SPEC_RE = re.compile(r"^(?P<name>[A-Za-z_-]+)==(?P<version>[0-9][0-9A-Za-z.+!-]*)$")
_COMPLETE = ".eagle3lint-complete"
DEFAULT_MAX_RELEASES = 8


def cache_root() -> Path:
    explicit = os.environ.get("EAGLE3LINT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "eagle3lint"


def parse_release_spec(spec: str) -> tuple[str, str]:
    match = _SPEC_RE.match(spec.strip())
    if not match:
        raise UsageError(f"--release {spec!r}: expected NAME==VERSION, e.g. sglang==0.5.9")
    name = match["name"].lower()
    if name not in ENGINE_NAMES:
        raise UsageError(f"--release {spec!r}: unknown engine {name!r}; expected {engines_phrase()}")
    return name, match["version"]


def _pip_download(name: str, version: str, dest: Path) -> Path:
    """The wheel of ``name==version``, downloaded by pip into ``dest``. On a terminal pip shows
    its own progress bar (a vLLM wheel is hundreds of megabytes: minutes without a sign of life
    otherwise), drawn on stderr: stdout is the report's. Elsewhere (a CI log, a captured run)
    pip is quiet and the line ``fetch_release`` announces is all."""
    terminal = _terminal_stderr()
    shown = ["--progress-bar", "on"] if terminal is not None else ["--quiet"]
    base = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
            *shown, "--dest", str(dest), f"{name}=={version}"]
    attempts = [
        [*base, "--only-binary=:all:"],
        # A wheel built for another platform still carries the same Python source.
        [*base, "--only-binary=:all:", "--platform", "manylinux_2_34_x86_64", "--platform",
         "manylinux_2_28_x86_64", "--platform", "manylinux1_x86_64", "--platform", "any",
         "--python-version", "3.11", "--implementation", "cp"],
    ]
    last_error = ""
    for command in attempts:
        try:
            # pip draws its bar and says what it fetches on its stdout; its errors (on stderr)
            # are kept for the message.
            done = subprocess.run(
                command, stdout=terminal if terminal is not None else subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, timeout=1800,
            )
        except subprocess.TimeoutExpired:
            raise ReleaseFetchError(f"downloading {name}=={version} timed out") from None
        wheels = sorted(dest.glob("*.whl"))
        if done.returncode == 0 and wheels:
            return wheels[0]
        output = (done.stderr or done.stdout or "").strip().splitlines()
        last_error = output[-1] if output else f"pip exited with {done.returncode}"
    if "No matching distribution" in last_error or "Could not find a version" in last_error:
        raise ReleaseFetchError(f"{name}=={version}: no such release on the package index ({last_error})")
    raise ReleaseFetchError(f"could not download {name}=={version}: {last_error}")


def _terminal_stderr() -> int | None:
    """The descriptor of stderr when it is a terminal (flushed, so that pip's output follows
    what was said before it), else None."""
    try:
        if not sys.stderr.isatty():
            return None
        sys.stderr.flush()
        return sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):  # closed, replaced by an object with no descriptor
        return None


_WHEEL_METADATA = re.compile(r"^[^/]+\.dist-info/METADATA$")


def _unpack_python_sources(wheel: Path, package: str, dest: Path, wanted: Callable[[str], bool] | None = None) -> int:
    """The package's ``.py`` files (those ``wanted`` accepts, when given) and the wheel's
    ``METADATA``; returns how many ``.py`` files."""
    count = 0
    prefix = f"{package}/"
    try:
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                if ".." in Path(info.filename).parts:
                    continue
                if _WHEEL_METADATA.match(info.filename):
                    target = dest / info.filename
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with archive.open(info) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out)
                    continue
                if info.filename.startswith(prefix) and info.filename.endswith(".py") and (wanted is None or wanted(info.filename)):
                    target = dest / info.filename
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with archive.open(info) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out)
                    count += 1
    except zipfile.BadZipFile as exc:
        raise ReleaseFetchError(f"{wheel.name}: not a valid wheel: {exc}") from exc
    return count


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


def fetch_release(spec: str, announce: Callable[[str], None] = _announce) -> Path:
    """Return the folder holding the release's package (``.../sglang-0.5.9/sglang``).
    ``announce`` gets one line when (and only when) the release is downloaded."""
    name, version = parse_release_spec(spec)
    releases = cache_root() / "releases"
    target = releases / f"{name}-{version}"
    marker = target / _COMPLETE
    if marker.exists():
        os.utime(marker)  # LRU bookkeeping
        return target / name
    with _download_lock(releases, target.name):
        if marker.exists():  # fetched by another process while this one waited
            os.utime(marker)
            return target / name
        announce(f"eagle3lint: fetching {name}=={version} source into {target} ...")
        with tempfile.TemporaryDirectory(dir=releases, prefix=".download-") as tmp:
            tmp_path = Path(tmp)
            wheel = _pip_download(name, version, tmp_path / "wheel")
            staging = tmp_path / "src"
            count = _unpack_python_sources(wheel, name, staging)
            if count == 0:
                raise ReleaseFetchError(f"{wheel.name}: holds no {name}/*.py files")
            (staging / _COMPLETE).write_text(f"{name}=={version}\n{time.time()}\n")
            if target.exists():  # an incomplete copy a killed run left: nobody else uses it
                shutil.rmtree(target)
            os.replace(staging, target)
    _evict(releases, target, _max_entries())
    return target / name


def is_cached_release(root: Path) -> bool:
    """Whether the package folder ``root`` is a release unpacked in this cache."""
    folder = root.parent
    try:
        return folder.parent.resolve() == (cache_root() / "releases").resolve() and (folder / _COMPLETE).is_file()
    except OSError:
        return False


def cached_release_metadata(root: Path) -> Path | None:
    """The ``METADATA`` of the release whose package folder (in this cache) is ``root``. A
    release unpacked before the cache kept it gets it now, from the package index's metadata
    alone (PEP 658: no wheel is downloaded), written beside the package once. None where
    ``root`` is not a cached release or the index cannot say."""
    releases = cache_root() / "releases"
    folder = root.parent
    if not is_cached_release(root):
        return None
    spec = f"{root.name}=={folder.name[len(root.name) + 1:]}" if folder.name.startswith(f"{root.name}-") else ""
    if not spec:
        return None
    found = sorted(folder.glob("*.dist-info/METADATA"))
    if found:
        return found[0]
    name, version = spec.split("==", 1)
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
        _write_atomic(target, text)
        return target


# A failed look-up (no network) is not repeated on every run.
_RETRY_AFTER_S = 24 * 3600


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _pip_metadata(name: str, version: str) -> str | None:
    """The release's core metadata (name, version, requirements) as pip reports it for a dry
    run, which reads the index's separate metadata file instead of downloading the wheel."""
    import json

    with tempfile.TemporaryDirectory(prefix="eagle3lint-metadata-") as tmp:
        report = Path(tmp) / "report.json"
        base = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
                "--disable-pip-version-check", "--quiet", "--only-binary=:all:", "--report", str(report)]
        attempts = [
            [*base, f"{name}=={version}"],
            [*base, "--target", str(Path(tmp) / "target"), "--platform", "manylinux_2_34_x86_64", "--platform",
             "manylinux_2_31_x86_64", "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux1_x86_64",
             "--platform", "any", "--python-version", "3.11", "--implementation", "cp", f"{name}=={version}"],
        ]
        for command in attempts:
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired:
                return None
            if done.returncode != 0 or not report.is_file():
                continue
            try:
                data = json.loads(report.read_text(encoding="utf-8"))
                metadata = data["install"][0]["metadata"]
                requires = [str(r) for r in metadata.get("requires_dist", [])]
                lines = [f"Metadata-Version: {metadata.get('metadata_version', '2.1')}", f"Name: {metadata['name']}",
                         f"Version: {metadata['version']}", *(f"Requires-Dist: {r}" for r in requires)]
            except (ValueError, KeyError, IndexError, TypeError):
                continue
            return "\n".join(lines) + "\n"
    return None


def fetch_library(name: str, version: str, wanted: Callable[[str], bool], announce: Callable[[str], None] = _announce) -> Path:
    """A library's package folder (``.../transformers-4.56.0/transformers``), only the ``.py``
    files ``wanted`` accepts (paths as in the wheel) unpacked, in ``releases/libraries/``: an
    LRU bounded like the releases', one download at a time across processes."""
    if not _PACKAGE_SPEC_RE.match(f"{name}=={version}"):
        raise UsageError(f"{name}=={version}: expected NAME==VERSION")
    libraries = cache_root() / "releases" / "libraries"
    target = libraries / f"{name}-{version}"
    marker = target / _COMPLETE
    if marker.exists():
        os.utime(marker)
        return target / name
    with _download_lock(libraries, target.name):
        if marker.exists():
            os.utime(marker)
            return target / name
        announce(f"eagle3lint: fetching {name}=={version} source into {target} ...")
        with tempfile.TemporaryDirectory(dir=libraries, prefix=".download-") as tmp:
            tmp_path = Path(tmp)
            wheel = _pip_download(name, version, tmp_path / "wheel")
            staging = tmp_path / "src"
            if _unpack_python_sources(wheel, name, staging, wanted) == 0:
                raise ReleaseFetchError(f"{wheel.name}: holds none of the {name}/*.py files needed")
            (staging / _COMPLETE).write_text(f"{name}=={version}\n{time.time()}\n")
            if target.exists():
                shutil.rmtree(target)
            os.replace(staging, target)
    _evict(libraries, target, _max_entries())
    return target / name


_PACKAGE_SPEC_RE = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[0-9][0-9A-Za-z.+!-]*)$")
# What a plugin's metadata folder keeps: its name and version, entry points, top-level packages.
_METADATA_FILES = ("METADATA", "entry_points.txt", "top_level.txt", "RECORD")


def _unpack_package(wheel: Path, dest: Path) -> int:
    count = 0
    try:
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                parts = Path(info.filename).parts
                if ".." in parts or not parts or info.filename.startswith("/"):
                    continue
                wanted = info.filename.endswith(".py") or (
                    len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] in _METADATA_FILES
                )
                if not wanted:
                    continue
                target = dest / info.filename
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
                count += info.filename.endswith(".py")
    except zipfile.BadZipFile as exc:
        raise ReleaseFetchError(f"{wheel.name}: not a valid wheel: {exc}") from exc
    return count


def fetch_package(spec: str) -> Path:
    """An out-of-tree package (an engine plugin) from the package index, unpacked like a
    release: its ``.py`` files and its ``*.dist-info`` metadata (name, version, entry points).
    Returns the folder that holds its top-level packages. Plugins are small and kept."""
    match = _PACKAGE_SPEC_RE.match(spec.strip())
    if not match:
        raise UsageError(f"{spec!r}: expected NAME==VERSION")
    name, version = match["name"], match["version"]
    packages = cache_root() / "packages"
    target = packages / f"{re.sub(r'[-_.]+', '-', name).lower()}-{version}"
    if (target / _COMPLETE).exists():
        return target
    packages.mkdir(parents=True, exist_ok=True)
    print(f"eagle3lint: fetching {name}=={version} into {target} ...", file=sys.stderr)
    with tempfile.TemporaryDirectory(dir=packages, prefix=".download-") as tmp:
        tmp_path = Path(tmp)
        wheel = _pip_download(name, version, tmp_path / "wheel")
        staging = tmp_path / "src"
        if _unpack_package(wheel, staging) == 0:
            raise ReleaseFetchError(f"{wheel.name}: holds no .py files")
        (staging / _COMPLETE).write_text(f"{name}=={version}\n{time.time()}\n")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    return target
