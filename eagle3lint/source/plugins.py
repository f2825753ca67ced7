"""Out-of-tree packages that extend an engine: hardware plugins (vllm-ascend), model plugins,
SGLang external model packages. Each is read as a second source root next to the engine's.

What is read here is engine-neutral packaging: where the package's top folder is, its
distribution's name and version (``*.dist-info/METADATA``, ``*.egg-info/PKG-INFO``, an sdist's
``PKG-INFO``, ``pyproject.toml``, a literal ``setup.py``), and its entry points (the same files'
``entry_points.txt`` / ``[project.entry-points]`` / ``entry_points=``). Which entry-point groups
and registration calls matter is each engine's (rule pack ``[plugins]``). Nothing is imported.
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

from eagle3lint.common.findings import FileError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


# Metadata files are small; anything larger is not one.
_MAX_METADATA_BYTES = 4 << 20
# What a distribution's name and version may look like (PEP 508 names; PEP 440 versions, loosely:
# local labels, epochs, a leading ``v``). Text that is not one (a version spanning lines, holding
# escapes or a forged ``::error`` command) is not shown as one: the distribution is not read.
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+!-]{0,126}")


def is_version(text: str) -> bool:
    """Whether ``text`` (a version read from a package's files) can be a version at all."""
    return _VERSION.fullmatch(text) is not None


def _distribution(name: object, version: object, origin: str) -> Distribution | None:
    """The distribution a packaging file names, when its name and version are a name and a
    version; None otherwise."""
    if isinstance(name, str) and isinstance(version, str) and _NAME.fullmatch(name) and is_version(version):
        return Distribution(name, version, origin)
    return None


@dataclass(frozen=True)
class EntryPoint:
    group: str
    name: str
    value: str  # "module:function" or "module"
    origin: str  # the file that declares it

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    @property
    def function(self) -> str:
        return self.value.partition(":")[2].strip().split("[")[0].strip()


@dataclass(frozen=True)
class Distribution:
    name: str
    version: str
    origin: str  # the metadata file it was read from


@dataclass(frozen=True)
class PluginPackage:
    """One top-level package read beside the engine's."""

    name: str  # the import name: vllm_ascend
    root: Path  # the package folder itself
    distribution: Distribution | None = None
    entry_points: tuple[EntryPoint, ...] = ()
    # Packaging files that say something eagle3lint could not read (its entry points may be
    # incomplete): each run reports them, naming the file.
    errors: tuple[FileError, ...] = ()

    @property
    def source_root(self) -> Path:
        return self.root.parent

    @property
    def label(self) -> str:
        d = self.distribution
        return f"{d.name} {d.version}" if d else self.name

    def entry_points_in(self, groups: tuple[str, ...] | frozenset[str]) -> list[EntryPoint]:
        return [e for e in self.entry_points if e.group in groups]


def _read_text(path: Path, errors: list[FileError] | None = None) -> str | None:
    """The file's text; None when there is none. A packaging file that is there but cannot be
    read is said in ``errors`` when given (metadata the tool cannot see is not silently empty)."""
    try:
        if not path.exists():
            if not path.is_symlink():
                return None
            problem = "is a broken symbolic link (or a link loop)"
        elif not path.is_file():
            problem = "is not a regular file"
        elif path.stat().st_size > _MAX_METADATA_BYTES:
            problem = f"is larger than {_MAX_METADATA_BYTES >> 20} MB"
        else:
            return path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError as exc:
        problem = f"cannot be read: {exc.strerror or exc}"
    if errors is not None:
        errors.append(FileError(str(path), f"{problem}; its entry points are not read"))
    return None


def package_roots(path: Path) -> list[Path]:
    """The top-level package folders ``path`` lies in (walking up while folders are packages),
    or, for a project folder that is no package, the packages directly inside it (or in its
    ``src/``)."""
    start = path.resolve()
    folder = start if start.is_dir() else start.parent
    if (folder / "__init__.py").is_file():
        while (folder.parent / "__init__.py").is_file() and folder.parent != folder:
            folder = folder.parent
        return [folder]
    found: list[Path] = []
    for base in (folder, folder / "src"):
        try:
            children = sorted(base.iterdir()) if base.is_dir() else []
        except OSError:
            continue
        found.extend(c for c in children if c.is_dir() and (c / "__init__.py").is_file() and c.name.isidentifier())
    return found


def normalize_name(name: str) -> str:
    """A distribution's name as PEP 503 compares it (``Foo_Bar.baz`` is ``foo-bar-baz``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _metadata_fields(text: str) -> tuple[str, str] | None:
    name = re.search(r"^Name:\s*(\S+)", text, re.M)
    version = re.search(r"^Version:\s*(\S+)", text, re.M)
    return (name.group(1), version.group(1)) if name and version else None


def _lists_package(info: Path, package: str) -> bool:
    """Whether a ``*.dist-info``/``*.egg-info`` folder belongs to ``package``: its
    ``top_level.txt`` names it, or its ``RECORD`` lists files in it, or its name is the
    package's."""
    top = _read_text(info / "top_level.txt")
    if top is not None and package in top.split():
        return True
    record = _read_text(info / "RECORD")
    if record is not None and re.search(rf"^{re.escape(package)}/", record, re.M):
        return True
    stem = info.name.split("-")[0]
    return normalize_name(stem) == normalize_name(package)


def _entry_points_txt(path: Path, errors: list[FileError]) -> list[EntryPoint]:
    """``[group]`` sections of ``name = value`` lines, read line by line: a line that is
    neither is said (with its number) and the others still count."""
    text = _read_text(path, errors)
    if text is None:
        return []
    points: list[EntryPoint] = []
    group: str | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
            continue
        name, sep, value = (part.strip() for part in line.partition("="))
        if group and sep and name and value and "=" not in value:
            points.append(EntryPoint(group, name, value, str(path)))
            continue
        why = "outside a [group] section" if not group else "not 'name = module:function'"
        errors.append(FileError(str(path), f"line {number}: {why}; that entry point is not read"))
    return points


def _pyproject(path: Path, errors: list[FileError]) -> tuple[Distribution | None, list[EntryPoint]]:
    text = _read_text(path, errors)
    if text is None:
        return None, []
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        errors.append(FileError(str(path), f"not valid TOML ({exc}); its entry points are not read"))
        return None, []
    project = data.get("project")
    if project is None:
        return None, []
    if not isinstance(project, dict):
        errors.append(FileError(str(path), "[project] is not a table; its entry points are not read"))
        return None, []
    name, version = project.get("name"), project.get("version")
    dist = _distribution(name, version, str(path))
    points: list[EntryPoint] = []
    groups = project.get("entry-points", {})
    if not isinstance(groups, dict):
        errors.append(FileError(str(path), "project.entry-points is not a table; its entry points are not read"))
        return dist, points
    for group, entries in groups.items():
        if not isinstance(entries, dict):
            errors.append(FileError(str(path), f"project.entry-points.{group} is not a table; it is not read"))
            continue
        for n, v in entries.items():
            if isinstance(v, str):
                points.append(EntryPoint(group, n, v, str(path)))
            else:
                errors.append(FileError(str(path), f"project.entry-points.{group}.{n} is not a string; it is not read"))
    return dist, points


def _setup_py(path: Path, errors: list[FileError]) -> tuple[Distribution | None, list[EntryPoint]]:
    """``setup(name=..., version=..., entry_points={...})`` with literal values (computed ones are
    not errors: they cannot be read without running the file)."""
    text = _read_text(path, errors)
    if text is None:
        return None, []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except SyntaxError as exc:
        # The parsing modules load only when a run parses.
        from eagle3lint.source.sources import syntax_problem

        errors.append(FileError(str(path), f"{syntax_problem(exc)}; its entry points are not read"))
        return None, []
    except (ValueError, RecursionError) as exc:
        errors.append(FileError(str(path), f"cannot be parsed ({type(exc).__name__}); its entry points are not read"))
        return None, []
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")) == "setup"]
    if not calls:
        return None, []
    literal: dict[str, object] = {}
    for keyword in calls[0].keywords:
        if keyword.arg in ("name", "version", "entry_points"):
            try:
                literal[keyword.arg] = ast.literal_eval(keyword.value)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                continue
    name, version = literal.get("name"), literal.get("version")
    dist = _distribution(name, version, str(path))
    points: list[EntryPoint] = []
    groups = literal.get("entry_points")
    if isinstance(groups, dict):
        for group, entries in groups.items():
            for entry in [entries] if isinstance(entries, str) else entries if isinstance(entries, (list, tuple)) else []:
                n, sep, v = (part.strip() for part in entry.partition("=")) if isinstance(entry, str) else ("", "", "")
                if sep and n and v and "=" not in v:
                    points.append(EntryPoint(str(group), n, v, str(path)))
                else:
                    errors.append(FileError(str(path), f"entry point {entry!r} in {group} is not 'name = module:function'; it is not read"))
    return dist, points


def read_distribution(root: Path, errors: list[FileError] | None = None) -> tuple[Distribution | None, list[EntryPoint]]:
    """The distribution that ships the package folder ``root``, and its entry points: installed
    or unpacked metadata beside the package first, then the project files of a source tree.
    What could not be read is added to ``errors``."""
    errors = errors if errors is not None else []
    package, parent = root.name, root.parent
    try:
        infos = sorted(p for p in parent.iterdir() if p.suffix in (".dist-info", ".egg-info") and p.is_dir())
    except OSError:
        infos = []
    project = parent.parent if parent.name == "src" else parent
    owned = [info for info in infos if _lists_package(info, package)]
    owned += [c for c in (project / f"{package}.egg-info", parent / f"{package}.egg-info") if c.is_dir() and c not in owned]
    for info in owned:
        metadata = info / ("METADATA" if (info / "METADATA").is_file() else "PKG-INFO")
        text = _read_text(metadata)
        fields = _metadata_fields(text) if text else None
        return (_distribution(*fields, str(metadata)) if fields else None), _entry_points_txt(info / "entry_points.txt", errors)
    dist: Distribution | None = None
    points: list[EntryPoint] = []
    pkg_info = _read_text(project / "PKG-INFO")
    if pkg_info is not None and (fields := _metadata_fields(pkg_info)):
        dist = _distribution(*fields, str(project / "PKG-INFO"))
    for reader, filename in ((_pyproject, "pyproject.toml"), (_setup_py, "setup.py")):
        found, found_points = reader(project / filename, errors)
        dist = dist or found
        points = points or found_points
    return dist, points


def read_plugin(root: Path) -> PluginPackage:
    errors: list[FileError] = []
    dist, points = read_distribution(root, errors)
    by_path: dict[str, list[str]] = {}
    for error in errors:
        by_path.setdefault(error.path, []).append(error.message)
    merged = tuple(FileError(path, "; ".join(dict.fromkeys(messages))) for path, messages in by_path.items())
    return PluginPackage(root.name, root, dist, tuple(points), merged)
