"""Finding the libraries an engine's analysis reads beside its source (transformers for vLLM's
model-type allow-list), as the adapter asks (``EngineAdapter.libraries_wanted``).

The release the engine pins comes first: its requirement on the library (``Requires-Dist`` in the
``METADATA`` beside the package, or a checkout's requirement files), and of the releases the
requirement admits, the lowest, which is the one every installation of the engine is guaranteed
to have at least (``transformers<5,>=4.56.0`` -> 4.56.0). It is downloaded once into the release
cache (only the files the analysis reads) and what is read from it is kept there as JSON. Where
the engine states no pin that names a lowest release, the installed library is used, found on
``sys.path`` as files (never imported). An engine installed in an environment reads the library
installed beside it, first: that is the one it runs with. Nothing found is said, never guessed
around.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from eagle3lint.common.errors import ReleaseFetchError, UsageError
from eagle3lint.model.adapter import LibraryWanted
from eagle3lint.source.engine import Engine, Library
from eagle3lint.source.plugins import is_version, normalize_name

_REQUIREMENT = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;#]*)(?:;(?P<marker>[^#]*))?")
_CLAUSE = re.compile(r"^\s*(?P<op>===|==|~=|!=|<=|>=|<|>)\s*(?P<version>[0-9][0-9A-Za-z.*+!-]*)\s*$")
_VERSION = re.compile(r"""^__version__[ \t]*=[ \t]*['"]([^'"\r\n]+)['"]""", re.M)
_TABLES = "eagle3lint-model-types.json"


def requirement_on(lines: list[str], name: str) -> str | None:
    """The version specifier a requirement list puts on ``name`` (``<5,>=4.56.0``): the first
    line naming it that no extra gates; "" for a bare name; None where none names it."""
    for line in lines:
        match = _REQUIREMENT.match(line)
        if match is None or normalize_name(match["name"]) != normalize_name(name):
            continue
        if match["marker"] and "extra" in match["marker"]:
            continue
        return match["spec"].strip().replace(" ", "")
    return None


def _release(version: str) -> tuple[int, ...] | None:
    """The numeric release segments of a plain version (``4.56.0`` -> (4, 56, 0)); None for a
    pre-release, a local version or a wildcard, which this reading does not order."""
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)*", version):
        return None
    parts = [int(p) for p in version.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def lowest_admitted(spec: str) -> str | None:
    """The lowest release a specifier admits, where it names one: the version of ``>=``, ``==``,
    ``~=``, ``===``, when the other clauses admit it too. None where the lowest admitted
    release depends on which releases exist (``>4.5``, ``<5`` alone) or cannot be told."""
    clauses = []
    for part in filter(None, spec.split(",")):
        match = _CLAUSE.match(part)
        if match is None:
            return None
        clauses.append((match["op"], match["version"]))
    floors = [(_release(v), v) for op, v in clauses if op in (">=", "==", "~=", "===")]
    if not floors or any(value is None for value, _ in floors):
        return None
    # Several floors: the highest is the lowest release all of them admit.
    value, chosen = max(floors, key=lambda f: f[0] or ())
    assert value is not None
    for op, version in clauses:
        bound = _release(version.rstrip(".*")) if op == "!=" and version.endswith(".*") else _release(version)
        if bound is None:
            return None
        prefix = op == "!=" and version.endswith(".*")
        ok = {
            "==": value == bound, "===": value == bound, ">=": value >= bound, "~=": value >= bound,
            ">": value > bound, "<": value < bound, "<=": value <= bound,
            "!=": (value[: len(bound)] != bound) if prefix else value != bound,
        }[op]
        if not ok:
            return None
    return chosen


def _metadata_requirements(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [m.group(1) for m in re.finditer(r"^Requires-Dist:\s*(.+)$", text, re.M)]


def _file_requirements(path: Path, depth: int = 0) -> list[str]:
    """A requirements file's lines, with the files it includes (``-r common.txt``)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    lines: list[str] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        include = re.match(r"^-r\s+(\S+)$", line)
        if include and depth < 3:
            lines.extend(_file_requirements(path.parent / include.group(1), depth + 1))
        elif line and not line.startswith("-"):
            lines.append(line)
    return lines


def engine_requirement(engine: Engine, wanted: LibraryWanted) -> tuple[str, str] | None:
    """The engine's requirement on the library and where it is stated: the metadata beside the
    package (a cached release's is fetched once when it predates the cache keeping it), else a
    checkout's requirement files."""
    from eagle3lint.fetch.releases import cached_release_metadata

    distribution = engine.distribution
    metadata = Path(distribution.origin) if distribution is not None and distribution.origin.endswith("METADATA") else None
    if metadata is None:
        metadata = cached_release_metadata(engine.root)
    if metadata is not None:
        spec = requirement_on(_metadata_requirements(metadata), wanted.name)
        if spec is not None:
            return spec, f"{engine.name} {engine.version}'s metadata"
    for rel in wanted.requirement_files:
        path = engine.source_root / rel
        spec = requirement_on(_file_requirements(path), wanted.name) if path.is_file() else None
        if spec is not None:
            return spec, rel
    return None


def installed_beside(engine: Engine, wanted: LibraryWanted) -> Path | None:
    """The library installed in the same environment as the engine (its package folder next to
    the engine's, with its own dist-info there): what an installed engine imports, whatever its
    pin admits. An unpacked release or a checkout has none."""
    folder = engine.source_root
    candidate = folder / wanted.name
    try:
        if not (candidate / wanted.marker).is_file():
            return None
        if not any(folder.glob(f"{wanted.name}-*.dist-info")):
            return None
    except OSError:
        return None
    return candidate


def installed_library(name: str, marker: str) -> Path | None:
    """The library's package folder on ``sys.path`` (the first holding ``marker``), as files."""
    for entry in sys.path:
        candidate = Path(entry or ".") / name
        try:
            if (candidate / marker).is_file():
                return candidate.resolve()
        except OSError:
            continue
    return None


def _installed_version(root: Path) -> str:
    try:
        match = _VERSION.search((root / "__init__.py").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return "unknown"
    return match.group(1) if match and is_version(match.group(1)) else "unknown"


def _wanted_files(name: str) -> Callable[[str], bool]:
    """Which files of the library's wheel the analysis reads (transformers: the auto tables and
    the config classes); any other library: every ``.py`` file."""
    if name != "transformers":
        return lambda path: True

    def wanted(path: str) -> bool:
        return path.startswith("transformers/models/auto/") or (
            path.startswith("transformers/models/") and path.rsplit("/", 1)[-1].startswith("configuration_")
        ) or path in ("transformers/__init__.py", "transformers/configuration_utils.py")

    return wanted


def _keep_tables(root: Path, version: str) -> Path | None:
    """transformers' tables read once and kept as JSON beside the downloaded release."""
    from eagle3lint.model.hf_types import read_tables

    path = root.parent / _TABLES
    # Every run asks: the format key comes first in what this module writes, so its first bytes
    # tell (a damaged file is read again from source by the contract, which is cached).
    try:
        with open(path, "rb") as handle:
            if handle.read(32).startswith(_tables_prefix()):
                return path
    except OSError:
        pass
    tables = read_tables(root, f"transformers {version}")
    if tables is None:
        return None
    from eagle3lint.common.safe_io import write_atomic

    try:
        write_atomic(path, json.dumps(tables.to_json(), separators=(",", ":")).encode("utf-8"))
    except OSError:
        return None
    return path


def _tables_prefix() -> bytes:
    from eagle3lint.model.hf_types import FORMAT

    return b'{"format":' + str(FORMAT).encode() + b","


def find_library(engine: Engine, wanted: LibraryWanted) -> Library:
    from eagle3lint.fetch.releases import fetch_library

    beside = installed_beside(engine, wanted)
    if beside is not None:
        found = _installed_version(beside)
        why = f"{wanted.name} {found}, installed beside {engine.name} ({beside}): the one it runs with"
        return Library(wanted.name, beside, found, why, None, beside / wanted.marker)
    problem = ""
    pinned = engine_requirement(engine, wanted)
    if pinned is not None:
        spec, where = pinned
        version = lowest_admitted(spec) if spec else None
        if version is not None:
            why = f"{wanted.name} {version}, the lowest release {where} admits ({wanted.name}{spec})"
            try:
                root = fetch_library(wanted.name, version, _wanted_files(wanted.name))
            except (ReleaseFetchError, UsageError, OSError) as exc:
                problem = f"{why} could not be fetched: {exc}"
            else:
                tables = _keep_tables(root, version) if wanted.name == "transformers" else None
                return Library(wanted.name, root, version, why, tables, root / wanted.marker)
        else:
            problem = f"{where} requires {wanted.name}{spec or ' (any release)'}, which names no lowest release"
    installed = installed_library(wanted.name, wanted.marker)
    if installed is not None:
        version = _installed_version(installed)
        why = f"the installed {wanted.name} {version} ({installed})" + (f"; {problem}" if problem else ", as the engine pins none")
        return Library(wanted.name, installed, version, why, None, installed / wanted.marker)
    return Library(wanted.name, None, "unknown", problem or f"{engine.label} pins no {wanted.name} release and none is installed")


def attach_libraries(engine: Engine) -> Engine:
    """The engine with the libraries its adapter asks for."""
    from eagle3lint.engines import adapter_for

    wanted = adapter_for(engine.name).libraries_wanted(engine)
    if not wanted:
        return engine
    return dataclasses.replace(engine, libraries=tuple(find_library(engine, w) for w in wanted))
