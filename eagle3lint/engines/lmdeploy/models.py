"""LMDeploy's model classes: every class its architecture map names, grouped by class.

One class often serves several architectures (``DeepseekV2ForCausalLM`` serves DeepSeek-V2, -V3
and GLM-4.7-Flash); it is one model with those architectures. A class named only by a device map
is a variant of its architecture (checked as such).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint.common.findings import FileError
from eagle3lint.engines.lmdeploy.pack import lmdeploy_pack
from eagle3lint.engines.lmdeploy.registry import MapEntry, ModuleMap, read_module_map
from eagle3lint.model.models import ModelClass, UnresolvedEntry, classify, in_scope, why_unresolved
from eagle3lint.source.index import ClassRef, ProjectIndex
from eagle3lint.source.sources import parse_file


@dataclass
class Discovery:
    map_path: str | None
    module_map: ModuleMap | None
    # The entries whose module is in the reporting scope (their files parsed as one batch).
    checked: list[MapEntry] = field(default_factory=list)


def module_file(index: ProjectIndex, module: str) -> Path | None:
    root = index.engine.source_root_for(module) or index.engine.source_root
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def read_map(index: ProjectIndex) -> tuple[str | None, ModuleMap | None]:
    """The architecture map of the tree (None where it has none, or it cannot be read: the
    index then holds the file's error)."""
    lpack = lmdeploy_pack(index.engine.pack)
    path = index.engine.root / lpack.module_map
    if not path.is_file():
        return None, None
    tree = parse_file(str(path))
    if isinstance(tree, FileError):
        index.errors[str(path)] = tree
        return str(path), None
    try:
        return str(path), read_module_map(tree, lpack)
    except RecursionError:
        index.errors[str(path)] = FileError(str(path), "the architecture map is nested too deeply to read")
        return str(path), None


def discover(index: ProjectIndex, scope: list[Path]) -> Discovery:
    path, module_map = read_map(index)
    if module_map is None:
        return Discovery(path, None)
    checked = []
    files: set[Path] = set()
    for entry in module_map.entries:
        location = module_file(index, entry.module)
        if location is None or in_scope(str(location), scope):
            checked.append(entry)
            if location is not None:
                files.add(location)
    # One batch, so that a parallel summary provider shares the files out.
    index.load_files(sorted(files))
    return Discovery(path, module_map, checked)


def lmdeploy_models(index: ProjectIndex, discovery: Discovery) -> tuple[list[ModelClass], list[UnresolvedEntry]]:
    grouped: dict[tuple[ClassRef, str | None], list[str]] = {}
    unresolved: list[UnresolvedEntry] = []
    for entry in discovery.checked:
        resolved = index.resolve_qualified(f"{entry.module}.{entry.class_name}")
        if not isinstance(resolved, ClassRef) or index.class_summary(resolved) is None:
            unresolved.append(UnresolvedEntry(entry.module, discovery.map_path or "", entry.architecture, why_unresolved(resolved)))
            continue
        architectures = grouped.setdefault((resolved, entry.variant), [])
        if entry.architecture not in architectures:
            architectures.append(entry.architecture)
    # A class a device map names that the main map names too is that model.
    plain = {ref for ref, variant in grouped if variant is None}
    for key in [k for k in grouped if k[1] is not None and k[0] in plain]:
        grouped[(key[0], None)].extend(a for a in grouped.pop(key) if a not in grouped[(key[0], None)])
    models: list[ModelClass] = []
    for (ref, variant), architectures in grouped.items():
        summary = index.class_summary(ref)
        module = index.module(ref.module)
        if summary is None or module is None:
            continue
        kind, reason = classify(index, ref)
        models.append(ModelClass(ref, module.path, summary, kind, reason, architectures[0], variant, architectures))
    return models, unresolved
