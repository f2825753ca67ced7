"""Finding the engine a path belongs to (walking up from it, or down into a checkout), or the
installed one, without importing anything: each engine's adapter says what its package root
looks like."""

from __future__ import annotations

import dataclasses
import errno
import os
import sys
from pathlib import Path

from eagle3lint.common.errors import UsageError
from eagle3lint.common.escape import line_path
from eagle3lint.engines import ENGINE_NAMES, adapter_for, engines_phrase
from eagle3lint.model.adapter import EngineAdapter
from eagle3lint.source.engine import Engine

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
    from eagle3lint.source.sources import tree_path

    return Path(tree_path(str(path)))


def _find_upwards(start: Path, adapters: list[EngineAdapter]) -> tuple[EngineAdapter, Path] | None:
    for folder in [start, *start.parents]:
        for adapter in adapters:
            if adapter.is_package_root(folder):
                return adapter, folder
    return None


def _find_downwards(start: Path, adapters: list[EngineAdapter]) -> tuple[EngineAdapter, Path] | None:
    found = find_downwards_all(start, adapters)
    return found[0] if found else None


def find_downwards_all(start: Path, adapters: list[EngineAdapter]) -> list[tuple[EngineAdapter, Path]]:
    """Every engine package a checkout or a site-packages folder holds (a repository may vendor
    both engines): the first layout of each engine that has one."""
    found: list[tuple[EngineAdapter, Path]] = []
    for adapter in adapters:
        for layout in _CHECKOUT_LAYOUTS:
            candidate = start / layout.format(pkg=adapter.pack().package)
            if adapter.is_package_root(candidate):
                found.append((adapter, candidate))
                break
    return found


def find_upwards(start: Path, adapters: list[EngineAdapter]) -> tuple[EngineAdapter, Path] | None:
    """The engine package ``start`` lies in (or is), walking up."""
    return _find_upwards(start, adapters)


def engine_package_at(folder: Path) -> EngineAdapter | None:
    """The engine whose package folder ``folder`` is, if any: such a folder is an engine tree,
    never a plugin of another engine."""
    return next((a for a in map(adapter_for, ENGINE_NAMES) if a.is_package_root(folder)), None)


def engine_name_at(folder: Path) -> str | None:
    """The engine whose tree ``folder`` is in (walking up) or holds (a checkout), or None."""
    adapters = [adapter_for(name) for name in ENGINE_NAMES]
    try:
        found = _find_upwards(folder.resolve(), adapters) or _find_downwards(folder, adapters)
    except OSError:
        return None
    return found[0].name if found else None


def installed_engine_root(adapters: list[EngineAdapter]) -> tuple[EngineAdapter, Path] | None:
    """The installed package, located on ``sys.path`` as files: nothing is imported."""
    found = installed_engine_roots(adapters)
    return min(found, key=lambda f: f[2])[:2] if found else None


def installed_engine_roots(adapters: list[EngineAdapter]) -> list[tuple[EngineAdapter, Path, int]]:
    """Each engine installed for this Python (the first of each on ``sys.path``, where its
    import would find it), with that entry's position; nothing is imported."""
    found: list[tuple[EngineAdapter, Path, int]] = []
    for adapter in adapters:
        for position, entry in enumerate(sys.path):
            candidate = Path(entry or ".") / adapter.pack().package
            if (candidate / "__init__.py").is_file() and adapter.is_package_root(candidate):
                found.append((adapter, candidate, position))
                break
    return found


def engines_around_cwd(adapters: list[EngineAdapter]) -> list[tuple[EngineAdapter, Path]]:
    """The engine tree the working directory lies in, else those a checkout standing there holds
    (``python/sglang``; a repository vendoring both engines holds two)."""
    try:
        cwd = Path.cwd()
    except OSError:  # the working directory was removed
        return []
    up = _find_upwards(cwd, adapters)
    return [up] if up is not None else find_downwards_all(cwd, adapters)


def engine_at(adapter: EngineAdapter, root: Path) -> Engine:
    """The engine whose package folder is ``root``: its version from the distribution's
    metadata beside it when that is the engine's own, else from its version files (a fork's
    metadata names the fork; its version files say which upstream it derives from)."""
    from eagle3lint.source.plugins import read_distribution

    distribution, _ = read_distribution(root)
    version = adapter.read_version(root)
    engine = Engine(name=adapter.name, root=root, version=version, pack=adapter.pack(), distribution=distribution)
    if distribution is not None and engine.fork is None:
        engine = dataclasses.replace(engine, version=distribution.version)
    return engine


def engine_adapters(engine: str | None) -> list[EngineAdapter]:
    """The engine named (``--engine``), or every engine eagle3lint knows, to look for."""
    if engine is not None and engine not in ENGINE_NAMES:
        raise UsageError(f"unknown engine {engine!r}; expected one of: {', '.join(ENGINE_NAMES)}")
    return [adapter_for(name) for name in ((engine,) if engine else ENGINE_NAMES)]


def discover_engine(
    paths: list[Path], engine: str | None = None, engine_root: Path | None = None
) -> Engine:
    """The engine the PATHs belong to; ``engine``/``engine_root`` override the search."""
    engines = engine_adapters(engine)
    found: tuple[EngineAdapter, Path] | None = None
    if engine_root is not None:
        root = located(engine_root)
        if not root.is_dir():
            raise UsageError(f"--engine-root {engine_root}: no such folder")
        below = find_downwards_all(root, engines)
        if len(below) > 1 and _find_upwards(root, engines) is None:
            held = " and ".join(f"{a.name} ({line_path(str(r))})" for a, r in below)
            raise UsageError(f"--engine-root {line_path(str(engine_root))}: holds two engine packages, {held}; name one of them, or give --engine NAME")
        found = _find_upwards(root, engines) or (below[0] if below else None)
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
                f"no PATH given and no installed {names} package found (nor one around the working directory); "
                "give a PATH inside an engine tree, --engine-root, or --release NAME==VERSION"
            )
    adapter, root = found
    return engine_at(adapter, root)
