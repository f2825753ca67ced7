"""Finding the engine (sglang or vllm) a path belongs to, and its version, without importing it."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from eagle3lint.errors import UsageError
from eagle3lint.rulepack import ENGINES, RulePack, load_pack

# Engine checkouts keep the package one or two folders down (``python/sglang``).
_CHECKOUT_LAYOUTS = ("{pkg}", "python/{pkg}", "src/{pkg}")
_VERSION_RE = re.compile(r"""^__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", re.M)


@dataclass(frozen=True)
class Engine:
    name: str
    root: Path  # the package folder itself: .../sglang
    version: str
    pack: RulePack

    @property
    def source_root(self) -> Path:
        """The folder module names are relative to (the package's parent)."""
        return self.root.parent

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "root": str(self.root)}

    def call_site_files(self) -> Iterator[str]:
        """The engine files whose calls on model objects make the contract: every ``*.py`` but
        the models folders' (the index reads those) and the subtrees the rule pack skips,
        sorted. Strings, not paths: there are thousands, and pathlib would cost more than
        reading them."""
        root = str(self.root)
        skip = {os.path.normpath(os.path.join(root, m)) for m in self._not_scanned()}
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(
                d for d in dirnames
                if not d.startswith(".") and d != "__pycache__" and os.path.join(dirpath, d) not in skip
            )
            for name in sorted(filenames):
                if name.endswith(".py"):
                    yield os.path.join(dirpath, name)

    def scans_for_call_sites(self, rel_parts: tuple[str, ...]) -> bool:
        """Whether the file at these parts of its path below ``root`` is one of
        :meth:`call_site_files` (dot folders aside)."""
        rel = "/".join(rel_parts)
        return not any(rel.startswith(m.rstrip("/") + "/") for m in self._not_scanned())

    def _not_scanned(self) -> tuple[str, ...]:
        return (*self.pack.models, *self.pack.scan_skip)


def _is_package_root(folder: Path, pack: RulePack) -> bool:
    return folder.name == pack.package and (folder / pack.marker).is_dir()


def _find_upwards(start: Path, engines: tuple[str, ...]) -> tuple[str, Path] | None:
    for folder in [start, *start.parents]:
        for name in engines:
            if _is_package_root(folder, load_pack(name)):
                return name, folder
    return None


def _find_downwards(start: Path, engines: tuple[str, ...]) -> tuple[str, Path] | None:
    for name in engines:
        pack = load_pack(name)
        for layout in _CHECKOUT_LAYOUTS:
            candidate = start / layout.format(pkg=pack.package)
            if _is_package_root(candidate, pack):
                return name, candidate
    return None


def read_version(root: Path, pack: RulePack) -> str:
    for filename in pack.version_files:
        try:
            text = (root / filename).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for match in _VERSION_RE.finditer(text):
            version = match.group(1)
            if re.match(r"^\d", version):
                return version
    return "unknown"


def installed_engine_root(engines: tuple[str, ...]) -> tuple[str, Path] | None:
    """The installed package, located on ``sys.path`` as files: nothing is imported."""
    for entry in sys.path:
        base = Path(entry or ".")
        for name in engines:
            pack = load_pack(name)
            candidate = base / pack.package
            if (candidate / "__init__.py").is_file() and _is_package_root(candidate, pack):
                return name, candidate
    return None


def discover_engine(
    paths: list[Path], engine: str | None = None, engine_root: Path | None = None
) -> Engine:
    """The engine the PATHs belong to; ``engine``/``engine_root`` override the search."""
    if engine is not None and engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; expected one of: {', '.join(ENGINES)}")
    engines = (engine,) if engine else ENGINES
    found: tuple[str, Path] | None = None
    if engine_root is not None:
        root = engine_root.resolve()
        if not root.is_dir():
            raise UsageError(f"--engine-root {engine_root}: no such folder")
        found = _find_upwards(root, engines) or _find_downwards(root, engines)
        if found is None:
            names = " or ".join(engines)
            raise UsageError(f"--engine-root {engine_root}: no {names} package found there")
    elif paths:
        for path in paths:
            start = path.resolve()
            if not start.exists():
                raise UsageError(f"{path}: no such file or folder")
            folder = start if start.is_dir() else start.parent
            found = _find_upwards(folder, engines) or (
                _find_downwards(folder, engines) if start.is_dir() else None
            )
            if found:
                break
        if found is None:
            names = " or ".join(engines)
            raise UsageError(
                f"{paths[0]}: not inside a {names} source tree; give --engine-root, or "
                "--release NAME==VERSION to check a published release"
            )
    else:
        found = installed_engine_root(engines)
        if found is None:
            names = " or ".join(engines)
            raise UsageError(
                f"no PATH given and no installed {names} package found; give a PATH inside an "
                "engine tree, --engine-root, or --release NAME==VERSION"
            )
    name, root = found
    pack = load_pack(name)
    return Engine(name=name, root=root, version=read_version(root, pack), pack=pack)
