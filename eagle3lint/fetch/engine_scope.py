"""Which engine trees a run reads, and each one's reporting scope.

PATHs may lie in two engine trees at once (a site-packages folder holding ``sglang/`` and
``vllm/``, a repository vendoring both): each engine is then checked against its own contract,
and an engine's package is never read as a plugin of the other. With no PATH, the tree around the
working directory comes first, then the installed packages.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint.common.errors import UsageError
from eagle3lint.common.escape import line_path

if TYPE_CHECKING:
    from eagle3lint.model.adapter import EngineAdapter
    from eagle3lint.source.engine import Engine
    from eagle3lint.source.plugins import PluginPackage

Resolved = tuple["Engine", list[Path]]


def resolve_engines(
    paths: tuple[Path, ...],
    engine: str | None,
    engine_root: Path | None,
    release: str | None,
    extra_models: dict[str, list[Path]] | None = None,
) -> list[Resolved]:
    """Each engine to check and its reporting scope: one, or one per engine tree the PATHs (or,
    with none, the working directory or the installed packages) hold. ``extra_models`` are the
    configured out-of-tree model folders of each engine."""
    extra = extra_models or {}
    flat = [p for folders in extra.values() for p in folders]
    if release or engine_root is not None:
        return [_resolve_one(paths, engine, engine_root, release, flat)]
    trees, unplaced = _trees(paths, engine, extra)
    if len(trees) <= 1:
        return [_resolve_one(paths, engine, _found_root(trees, paths), None, flat)]
    if unplaced:
        path = unplaced[0]
        if not path.exists() and not path.is_symlink():
            raise UsageError(f"{line_path(str(path))}: no such file or folder")
        raise UsageError(
            f"{line_path(str(path))}: outside the engine trees being checked ({_named(trees)}); check a plugin "
            "against one engine at a time (that tree's PATH with it, or --engine-root, --engine or --release)"
        )
    from eagle3lint.fetch.engine_finder import engine_at
    from eagle3lint.fetch.libraries import attach_libraries

    return [(attach_libraries(engine_at(t.adapter, t.root)), t.scope) for t in trees]


def resolve_engine(
    paths: tuple[Path, ...],
    engine: str | None,
    engine_root: Path | None,
    release: str | None,
    extra_models: list[Path] | None = None,
) -> Resolved:
    """The one engine to check against and the reporting scope, for the commands that read one
    engine (``check`` reads each of several): PATHs in two engine trees are a usage error naming
    both. A PATH outside the engine's tree is read as a plugin (an out-of-tree package extending
    it: a second source root); the engine is then the one ``--engine-root``/``--release`` name,
    or the installed one."""
    if release or engine_root is not None:
        return _resolve_one(paths, engine, engine_root, release, extra_models or [])
    trees, _ = _trees(paths, engine, {})
    if len(trees) > 1:
        raise UsageError(
            f"two engine trees: {_named(trees)}; this command reads one at a time (`check` reports on each): "
            "give one tree's PATH, or --engine NAME"
        )
    return _resolve_one(paths, engine, _found_root(trees, paths), None, extra_models or [])


@dataclasses.dataclass
class _Tree:
    adapter: EngineAdapter
    root: Path
    scope: list[Path]


def _found_root(trees: list[_Tree], paths: tuple[Path, ...]) -> Path | None:
    """With no PATH, the tree found around the working directory (or installed) is the engine
    root; with PATHs, discovery from them decides, as it always has."""
    return trees[0].root if trees and not paths else None


def _named(trees: list[_Tree]) -> str:
    """``sglang (site/sglang) and vllm (site/vllm)``."""
    names = [f"{t.adapter.name} ({line_path(str(t.root))})" for t in trees]
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def _trees(paths: tuple[Path, ...], engine: str | None, extra: dict[str, list[Path]]) -> tuple[list[_Tree], list[Path]]:
    """The engine trees the PATHs lie in (walking up from each) or hold (a checkout, a
    site-packages folder: walking down), in the order given, each with the PATHs in it, and the
    PATHs in none; with no PATH, the working directory's, else the installed ones. A PATH
    holding two engines stands for each one's package folder in that engine's scope."""
    from eagle3lint.fetch.engine_finder import (
        engine_adapters,
        engines_around_cwd,
        find_downwards_all,
        find_upwards,
        installed_engine_roots,
        located,
    )

    adapters = engine_adapters(engine)
    if not paths:
        around = engines_around_cwd(adapters)
        if not around:
            around = [(a, r) for a, r, _ in installed_engine_roots(adapters)]
        return [_Tree(a, r, [r]) for a, r in around], []
    trees: dict[Path, _Tree] = {}
    unplaced: list[tuple[Path, Path]] = []
    for path in paths:
        start = located(path)
        if not start.exists():
            unplaced.append((path, start))
            continue
        folder = start if start.is_dir() else start.parent
        up = find_upwards(folder, adapters)
        if up is not None:
            trees.setdefault(located(up[1]), _Tree(up[0], up[1], [])).scope.append(path)
            continue
        down = find_downwards_all(folder, adapters) if start.is_dir() else []
        for adapter, root in down:
            tree = trees.setdefault(located(root), _Tree(adapter, root, []))
            tree.scope.append(root if len(down) > 1 else path)
        if not down:
            unplaced.append((path, start))
    # A configured out-of-tree model folder belongs to its engine's tree.
    outside: list[Path] = []
    for path, start in unplaced:
        owner = next(
            (t for t in trees.values() if any(start == e or e in start.parents for e in map(located, extra.get(t.adapter.name, [])))),
            None,
        )
        if owner is None:
            outside.append(path)
        else:
            owner.scope.append(path)
    return list(trees.values()), outside


def _resolve_one(
    paths: tuple[Path, ...],
    engine: str | None,
    engine_root: Path | None,
    release: str | None,
    extra_models: list[Path],
) -> Resolved:
    from eagle3lint.fetch.engine_finder import discover_engine

    scope = list(paths)
    if release:
        from eagle3lint.fetch.release_query import parse_release_spec
        from eagle3lint.fetch.releases import fetch_release

        name, _ = parse_release_spec(release)
        if engine and engine != name:
            raise UsageError(f"--engine {engine} contradicts --release {release}")
        package_root = fetch_release(release)
        base = package_root.parent
        # Relative PATHs are the release's; one that is not there but exists here is a plugin.
        scope = [p if p.is_absolute() or (not (base / p).exists() and p.exists()) else base / p for p in paths] or [package_root]
        for p in scope:
            if not p.exists():
                raise UsageError(f"{line_path(str(p))}: no such file or folder in {release}")
        found = discover_engine([], engine=name, engine_root=package_root)
    else:
        try:
            found = discover_engine(scope, engine=engine, engine_root=engine_root)
        except UsageError:
            extended = _engine_for_plugins(scope, engine) if scope and engine_root is None else None
            if extended is None:
                raise
            found = extended
        if not scope:
            scope = [found.root]
    plugins = _plugins_outside(found, scope, extra_models, release)
    if plugins:
        found = dataclasses.replace(found, plugins=plugins)
    from eagle3lint.fetch.libraries import attach_libraries

    return attach_libraries(found), scope


def _engine_for_plugins(scope: list[Path], engine: str | None) -> Engine | None:
    """For PATHs in no engine tree that hold plugin packages: the installed engine they extend
    (from their entry-point groups, or ``--engine``), None when there is none."""
    from eagle3lint.engines import adapter_for, adapters, engines_phrase
    from eagle3lint.fetch.engine_finder import engine_at, installed_engine_root
    from eagle3lint.source.plugins import package_roots, read_plugin

    wanted: list[str] = [engine] if engine else []
    for path in scope:
        for root in package_roots(path) if path.exists() else []:
            plugin = read_plugin(root)
            for adapter in adapters():
                if plugin.entry_points_in(adapter.pack().plugin_groups) and adapter.name not in wanted:
                    wanted.append(adapter.name)
    if not wanted:
        return None
    found = installed_engine_root([adapter_for(name) for name in wanted])
    if found is None:
        names = engines_phrase(wanted)
        raise UsageError(
            f"{line_path(str(scope[0]))}: a plugin package for {names}, and no {names} tree to check it against: "
            f"give --engine-root, or --release {wanted[0]}==VERSION"
        )
    return engine_at(*found)


def _plugins_outside(found: Engine, scope: list[Path], extra_models: list[Path], release: str | None) -> tuple[PluginPackage, ...]:
    """Every PATH must lie in the engine analysed (or hold it, as a checkout does, or be a
    configured out-of-tree model folder), or be a Python package read as a plugin: a PATH
    elsewhere would be reported clean unexamined. Another engine's package is never a plugin."""
    from eagle3lint.fetch.engine_finder import engine_package_at, located
    from eagle3lint.source.plugins import package_roots, read_plugin

    root = located(found.root)
    allowed = [located(e) for e in extra_models]
    plugins: dict[Path, PluginPackage] = {}
    for path in scope:
        target = located(path)
        if target == root or root in target.parents or target in root.parents:
            continue
        if any(target == e or e in target.parents for e in allowed):
            continue
        roots = [r for r in package_roots(path) if r.name != found.pack.package]
        if not roots:
            where = release or str(found.root)
            raise UsageError(
                f"{line_path(str(path))}: not inside the {found.name} tree being checked ({where}), and no Python package to read as a plugin"
            )
        for package in roots:
            other = engine_package_at(package)
            if other is not None:
                checked = release or line_path(str(found.root))
                raise UsageError(
                    f"{line_path(str(package))}: a {other.name} tree, not a plugin of the {found.name} tree being checked "
                    f"({checked}); give each engine's PATH without --engine, --engine-root or --release, and each is "
                    "checked against its own contract"
                )
            plugins.setdefault(package, read_plugin(package))
    return tuple(plugins.values())
