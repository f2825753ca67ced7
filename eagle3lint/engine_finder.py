"""Finding the engine a path belongs to (walking up from it, or down into a checkout), or the
installed one, without importing anything: each engine's adapter says what its package root
looks like."""

from __future__ import annotations

import dataclasses
import errno
import os
import sys
from pathlib import Path

from eagle3lint.adapter import EngineAdapter
from eagle3lint.engine import Engine
from eagle3lint.engines import ENGINE_NAMES, adapter_for, engines_phrase
from eagle3lint.errors import UsageError
from eagle3lint.report.paths import line_path

# Engine checkouts keep the package one or two folders down (``python/sglang``).
_CHECKOUT_LAYOUTS = ("{pkg}", "python/{pkg}", "src/{pkg}")


def located(path: Path) -> Path:
    """Where ``path`` lies in its tree (``sources.tree_path``: a linked file keeps its link's
    name). A symbolic link loop on the way is a usage error naming the path."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(f"{line_path(str(path))}: a symbolic link loop ({exc.strerror})") from None
        if os.path.islink(path):
            raise UsageError(f"{line_path(str(path))}: a broken symbolic link") from None
    # Imported here: a hook run on files of no engine must not load the parsing modules.
    from eagle3lint.sources import tree_path

    return Path(tree_path(str(path)))


def _find_upwards(start: Path, adapters: list[EngineAdapter]) -> tuple[EngineAdapter, Path] | None:
    for folder in [start, *start.parents]:
        for adapter in adapters:
            if adapter.is_package_root(folder):
                return adapter, folder
    return None


def _find_downwards(start: Path, adapters: list[EngineAdapter]) -> tuple[EngineAdapter, Path] | None:
    for adapter in adapters:
        for layout in _CHECKOUT_LAYOUTS:
            candidate = start / layout.format(pkg=adapter.pack().package)
            if adapter.is_package_root(candidate):
                return adapter, candidate
    return None


def installed_engine_root(adapters: list[EngineAdapter]) -> tuple[EngineAdapter, Path] | None:
    """The installed package, located on ``sys.path`` as files: nothing is imported."""
    for entry in sys.path:
        base = Path(entry or ".")
        for adapter in adapters:
            candidate = base / adapter.pack().package
            if (candidate / "__init__.py").is_file() and adapter.is_package_root(candidate):
                return adapter, candidate
    return None


def engine_at(adapter: EngineAdapter, root: Path) -> Engine:
    """The engine whose package folder is ``root``: its version from the distribution's
    metadata beside it when that is the engine's own, else from its version files (a fork's
    metadata names the fork; its version files say which upstream it derives from)."""
    from eagle3lint.plugins import read_distribution

    distribution, _ = read_distribution(root)
    version = adapter.read_version(root)
    engine = Engine(name=adapter.name, root=root, version=version, pack=adapter.pack(), distribution=distribution)
    if distribution is not None and engine.fork is None:
        engine = dataclasses.replace(engine, version=distribution.version)
    return engine


def discover_engine(
    paths: list[Path], engine: str | None = None, engine_root: Path | None = None
) -> Engine:
    """The engine the PATHs belong to; ``engine``/``engine_root`` override the search."""
    if engine is not None and engine not in ENGINE_NAMES:
        raise UsageError(f"unknown engine {engine!r}; expected one of: {', '.join(ENGINE_NAMES)}")
    engines = [adapter_for(name) for name in ((engine,) if engine else ENGINE_NAMES)]
    found: tuple[EngineAdapter, Path] | None = None
    if engine_root is not None:
        root = located(engine_root)
        if not root.is_dir():
            raise UsageError(f"--engine-root {engine_root}: no such folder")
        found = _find_upwards(root, engines) or _find_downwards(root, engines)
        if found is None:
            names = engines_phrase(a.name for a in engines)
            raise UsageError(f"--engine-root {engine_root}: no {names} package found there")
    elif paths:
        for path in paths:
            start = located(path)
            if not start.exists():
                raise UsageError(f"{path}: no such file or folder")
            folder = start if start.is_dir() else start.parent
            found = _find_upwards(folder, engines) or (
                _find_downwards(folder, engines) if start.is_dir() else None
            )
            if found:
                break
        if found is None:
            names = engines_phrase(a.name for a in engines)
            raise UsageError(
                f"{paths[0]}: not inside a {names} source tree; give --engine-root, or "
                "--release NAME==VERSION to check a published release"
            )
    else:
        found = installed_engine_root(engines)
        if found is None:
            names = engines_phrase(a.name for a in engines)
            raise UsageError(
                f"no PATH given and no installed {names} package found; give a PATH inside an "
                "engine tree, --engine-root, or --release NAME==VERSION"
            )
    adapter, root = found
    return engine_at(adapter, root)
