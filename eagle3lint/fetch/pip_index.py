"""What the package index says about a package, asked of pip: no index URL is written here, so
the index URLs, mirrors, ``find-links``, credentials, proxies and certificates the user's pip is
configured with all apply.

* The releases and every file of each: ``pip index versions NAME -vv``. pip lists the releases
  it would consider (pre-releases only with ``--pre``; yanked ones never), and its finder logs
  each file it saw on the way: a wheel this machine could install ("Found link"), one built for
  another platform or Python, one yanked (both "Skipping link"), a source distribution. Any wheel
  of a release carries the same Python source, so one for another platform serves as well.
* Where that log says nothing usable (a pip whose messages differ), the resolver's own report
  (``pip install --dry-run --no-deps --ignore-installed --report``) names the wheel's URL; pip up
  to 25.2 downloads the whole wheel for it where the index serves no separate metadata, so it
  comes second.
* Where the URL cannot be read directly (credentials pip holds, a proxy only pip is told of),
  ``pip download`` fetches the whole wheel.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion

from eagle3lint.common.errors import ReleaseFetchError
from eagle3lint.common.escape import line_text
from eagle3lint.fetch.release_query import normal_version

PIP = [sys.executable, "-m", "pip"]
QUIET = ["--disable-pip-version-check", "--no-input"]
INDEX_TIMEOUT_S = 600
DOWNLOAD_TIMEOUT_S = 1800
# A wheel built for another platform still carries the same Python source.
OTHER_PLATFORMS = [
    "--platform", "manylinux_2_34_x86_64", "--platform", "manylinux_2_31_x86_64", "--platform", "manylinux_2_28_x86_64",
    "--platform", "manylinux1_x86_64", "--platform", "any", "--python-version", "3.11", "--implementation", "cp",
]


class NoSuchRelease(ReleaseFetchError):
    """The index has no such release (or none of the package at all)."""


class NoWheel(ReleaseFetchError):
    """The release exists only as a source distribution."""


class IndexUnsupported(ReleaseFetchError):
    """This pip cannot list a package's releases (``pip index`` came with pip 21.2)."""


@dataclass(frozen=True)
class WheelLink:
    url: str  # without its fragment
    filename: str
    compatible: bool  # one pip would install on this machine
    yanked: str | None = None  # the reason given, when yanked ("" for none given)
    sha256: str | None = None

    @property
    def readable(self) -> bool:
        """Whether it can be read without pip's help: pip shows credentials as ``****``."""
        return "****" not in urllib.parse.urlsplit(self.url).netloc


@dataclass
class Listing:
    name: str
    versions: list[str]  # as pip lists them: no yanked release; pre-releases only when asked
    wheels: dict[str, list[WheelLink]] = field(default_factory=dict)  # by normalised version
    sources: set[str] = field(default_factory=set)  # normalised versions with a source distribution
    yanked: dict[str, str] = field(default_factory=dict)  # normalised version -> reason

    def wheel_for(self, version: str, allow_yanked: bool) -> WheelLink | None:
        """The wheel to read: one this machine could install first, then any other; a yanked
        one only where asked for (an exact pin, as PEP 592 has it)."""
        links = [w for w in self.wheels.get(normal_version(version), []) if allow_yanked or w.yanked is None]
        links.sort(key=lambda w: (w.yanked is not None, not w.compatible, not w.readable, w.filename))
        return links[0] if links else None


_FOUND = re.compile(r"^\s*Found link (?P<url>\S+?),?(?: \(from [^)]*\))?(?: \(requires-python:[^)]*\))?, version: (?P<version>\S+)\s*$")
_SKIPPED = re.compile(r"^\s*Skipping link: (?P<why>.*?): (?P<url>(?:https?|file)://\S+)")
_AVAILABLE = re.compile(r"^Available versions: (?P<versions>.*)$", re.M)
_SHA256 = re.compile(r"(?:^|&)sha256=([0-9a-fA-F]{64})(?:&|$)")
_SDIST = (".tar.gz", ".zip", ".tar.bz2", ".tgz", ".tar")

_listings: dict[tuple[str, bool, tuple[tuple[str, str], ...]], Listing] = {}


def _pip_environment() -> tuple[tuple[str, str], ...]:
    """What in the environment configures pip: a listing is another index's under another."""
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("PIP_")))


def listing(name: str, pre: bool = False) -> Listing:
    """The index's releases and files of ``name`` (asked once per process and pip environment)."""
    key = (name, pre, _pip_environment())
    if key not in _listings:
        command = [*PIP, "index", "versions", name, "-vv", *QUIET, *(["--pre"] if pre else [])]
        done = _run(command, INDEX_TIMEOUT_S, f"asking the package index for {name}'s releases")
        if done.returncode != 0:
            last = _last_line(done.stderr or done.stdout, done.returncode)
            if "No matching distribution" in last:
                raise NoSuchRelease(f"the package index has no release of {name} ({last})")
            if "unknown command" in last.lower() or "no such option" in last.lower():
                raise IndexUnsupported(f"this pip cannot list releases (`pip index versions`: {last}); pip 21.2 or newer can")
            raise ReleaseFetchError(f"could not list {name}'s releases on the package index: {last}")
        _listings[key] = parse_listing(name, done.stdout + "\n" + done.stderr)
    return _listings[key]


def cached_listing(name: str) -> Listing | None:
    """A listing of ``name`` this process has already asked for, either kind."""
    env = _pip_environment()
    return _listings.get((name, False, env)) or _listings.get((name, True, env))


def parse_listing(name: str, text: str) -> Listing:
    """Read ``pip index versions -vv``'s output (its log lines and its list)."""
    available = _AVAILABLE.search(text)
    versions = [v.strip() for v in available.group("versions").split(",") if v.strip()] if available else []
    found = Listing(name, versions)
    for line in text.splitlines():
        match = _FOUND.match(line)
        if match is not None:
            url, version = match["url"], match["version"]
            if _path_of(url).endswith(".whl"):
                _add_wheel(found, url, compatible=True, yanked=None)
            elif _path_of(url).endswith(_SDIST):
                found.sources.add(normal_version(version))
            continue
        skipped = _SKIPPED.match(line)
        if skipped is None or not _path_of(skipped["url"]).endswith(".whl"):
            continue
        why = skipped["why"]
        if why.startswith("yanked"):
            reason = why.split("yanked for reason:", 1)[-1].strip() if "reason:" in why else ""
            _add_wheel(found, skipped["url"], compatible=False, yanked=reason)
        elif "tags" in why or "Python" in why or "python" in why:
            # Another platform's or Python's wheel: the same source files.
            _add_wheel(found, skipped["url"], compatible=False, yanked=None)
    return found


def _path_of(url: str) -> str:
    return urllib.parse.urlsplit(url).path.lower()


def _add_wheel(found: Listing, url: str, compatible: bool, yanked: str | None) -> None:
    parts = urllib.parse.urlsplit(url)
    filename = urllib.parse.unquote(parts.path.rsplit("/", 1)[-1])
    try:
        _, version, _, _ = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return
    digest = _SHA256.search(parts.fragment)
    bare = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))
    key = str(version)
    link = WheelLink(bare, filename, compatible, yanked, digest.group(1).lower() if digest else None)
    if link not in found.wheels.get(key, []):
        found.wheels.setdefault(key, []).append(link)
    if yanked is not None:
        found.yanked[key] = yanked


def report_url(name: str, version: str) -> str | None:
    """The URL of the wheel pip's resolver picks for ``name==version`` (this platform's, else
    another's), from its installation report; None where it picks none."""
    with tempfile.TemporaryDirectory(prefix="eagle3lint-report-") as tmp:
        report = Path(tmp) / "report.json"
        base = [*PIP, "install", "--dry-run", "--no-deps", "--ignore-installed", *QUIET, "--quiet", "--only-binary=:all:", "--report", str(report)]
        for extra in ([], ["--target", str(Path(tmp) / "target"), *OTHER_PLATFORMS]):
            done = _run([*base, *extra, f"{name}=={version}"], DOWNLOAD_TIMEOUT_S, f"resolving {name}=={version}")
            if done.returncode != 0 or not report.is_file():
                continue
            try:
                url = json.loads(report.read_text(encoding="utf-8"))["install"][0]["download_info"]["url"]
            except (ValueError, KeyError, IndexError, TypeError):
                continue
            if isinstance(url, str) and _path_of(url).endswith(".whl"):
                return url
    return None


def download(name: str, version: str, dest: Path) -> Path:
    """The whole wheel, downloaded by ``pip download`` (pip's credentials and proxies). On a
    terminal pip shows its own progress bar (a vLLM wheel is hundreds of megabytes: minutes
    without a sign of life otherwise), drawn on stderr: stdout is the report's. Elsewhere (a CI
    log, a captured run) pip is quiet."""
    terminal = _terminal_stderr()
    shown = ["--progress-bar", "on"] if terminal is not None else ["--quiet"]
    base = [*PIP, "download", "--no-deps", *QUIET, *shown, "--dest", str(dest), f"{name}=={version}"]
    last_error = ""
    for extra in (["--only-binary=:all:"], ["--only-binary=:all:", *OTHER_PLATFORMS]):
        done = _run([*base, *extra], DOWNLOAD_TIMEOUT_S, f"downloading {name}=={version}", terminal)
        wheels = sorted(dest.glob("*.whl"))
        if done.returncode == 0 and wheels:
            return wheels[0]
        last_error = _last_line(done.stderr or done.stdout, done.returncode)
    if "No matching distribution" in last_error or "Could not find a version" in last_error:
        raise NoSuchRelease(f"{name}=={version}: no wheel of it on the package index ({last_error})")
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


def _run(command: list[str], timeout: int, doing: str, terminal: int | None = None) -> subprocess.CompletedProcess[str]:
    """pip run with its errors kept for the message; with ``terminal``, what it says and draws
    on its stdout goes to that descriptor (stderr's terminal) instead."""
    try:
        return subprocess.run(
            command, stdout=terminal if terminal is not None else subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise ReleaseFetchError(f"{doing} timed out after {timeout} s") from None
    except OSError as exc:
        raise ReleaseFetchError(f"{doing}: cannot run pip ({exc.strerror or exc})") from None


def _last_line(output: str, code: int) -> str:
    """pip's last word on a failure, without its warnings' noise."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip() and not line.lstrip().startswith("WARNING:")]
    return line_text(lines[-1][:300]) if lines else f"pip exited with {code}"
