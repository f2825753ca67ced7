"""vLLM model discovery: every class the architecture registry maps to, each platform variant
included, classified by the registry section that lists it and by its shape."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from eagle3lint.common.errors import UsageError
from eagle3lint.engines.vllm.dispatch import platform_variants
from eagle3lint.engines.vllm.index import ArchitectureResolver, VllmIndex
from eagle3lint.engines.vllm.pack import VllmPack, vllm_pack
from eagle3lint.engines.vllm.registry import Registry, RegistryEntry, read_registry
from eagle3lint.model.models import (
    DRAFT,
    EAGLE3_DRAFT,
    OTHER,
    TARGET,
    ModelClass,
    UnresolvedEntry,
    classify,
    in_scope,
)
from eagle3lint.model.registrations import RegistrationShapes, read_registrations
from eagle3lint.source.engine import Engine
from eagle3lint.source.index import ClassRef, Resolved, Unknown
from eagle3lint.source.plugins import PluginPackage
from eagle3lint.source.snippets import SnippetReader
from eagle3lint.source.sources import tree_path
from eagle3lint.source.summary_types import ClassSummary


@dataclass
class Discovery:
    registry: Registry | None
    models: list[ModelClass]  # parsed and classified: the registrations in the reporting scope
    unresolved: list[UnresolvedEntry]
    # Registrations outside the reporting scope, classified from the registry alone (not parsed).
    registered_only: list[ModelClass] = field(default_factory=list)


def build_vllm_index(engine: Engine, texts: Mapping[str, str] | None = None) -> VllmIndex:
    """``texts``: edited texts (the fixer's re-check) the body re-reads see instead of the disk."""
    pack = engine.pack
    vpack = vllm_pack(pack)
    walk = (
        frozenset(pack.members)
        | frozenset(n for spec in pack.members.values() for n in spec.former_names)
        | frozenset(vpack.walk_methods)
    )
    # No needles: the few other bodies the holder and collect analyses need are re-read on
    # demand (eagle3lint.source.snippets), cheaper than walking every method of the files.
    index = VllmIndex(engine, walk_names=walk)
    index.vpack = vpack
    index.snippets = SnippetReader(texts)
    try:
        index.model_class_pattern = re.compile(vpack.inner_model_class)
    except re.error as exc:
        raise UsageError(f"rules/vllm.toml: inner_model_class is not a valid regular expression: {exc}") from exc
    return index


def _entry_classes(index: VllmIndex, entry: RegistryEntry, vpack: VllmPack) -> list[tuple[str | None, Resolved]]:
    variants = platform_variants(index, entry.module, entry.class_name, vpack)
    if variants:
        return [(v.label, v.ref) for v in variants]
    return [(None, index.resolve_qualified(f"{entry.module}.{entry.class_name}"))]


def architecture_resolver(index: VllmIndex, registry: Registry, vpack: VllmPack) -> ArchitectureResolver:
    def resolve(architecture: str) -> list[Resolved]:
        entry = registry.lookup(architecture)
        if entry is None:
            return [Unknown(f"architecture {architecture} is not in the registry")]
        return [ref for _, ref in _entry_classes(index, entry, vpack)]

    return resolve


def _built_at_run_time(index: VllmIndex, entry: RegistryEntry) -> str | None:
    """``Qwen2ForSequenceClassification = as_seq_cls_model(Qwen2ForCausalLM)``: a class made by
    a call when the module is imported, which no static reading can see into."""
    module = index.module(entry.module)
    lines = index.snippets.lines(module.path) if module else None
    pattern = re.compile(rf"^{re.escape(entry.class_name)}\s*=\s*([\w.]+)\(")
    for line in lines or []:
        match = pattern.match(line)
        if match:
            return f"{entry.class_name} is built at import time by {match.group(1)}(...)"
    return None


def _kind(index: VllmIndex, ref: ClassRef, kinds: set[str], sections: list[str]) -> tuple[str, str]:
    pack = index.engine.pack
    where = ", ".join(sorted(set(sections)))
    if "generation" in kinds:
        # The registry's section decides it is generative; names only settle the rest.
        return classify(index, ref, drafts="draft" in kinds)
    name = ref.qualname.rsplit(".", 1)[-1]
    if "draft" in kinds:
        if pack.eagle3_draft_pattern.search(name):
            return EAGLE3_DRAFT, f"EAGLE-3 draft head (registered in {where})"
        return DRAFT, f"draft model for speculative decoding (registered in {where})"
    return OTHER, f"pooling model: embedding, classification or reward (registered in {where})"


def _module_location(index: VllmIndex, module: str) -> Path | None:
    base = (index.engine.source_root_for(module) or index.engine.source_root).joinpath(*module.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base
    return None


def _module_file(location: Path | None) -> Path | None:
    if location is None:
        return None
    return location / "__init__.py" if location.is_dir() else location


def _entry_in_scope(location: Path | None, scope: list[Path]) -> bool:
    """A registration is checked when its module (a file, or a whole package with its platform
    variants) overlaps the reporting scope; nothing is parsed to decide it."""
    if location is None:
        return True  # resolution will say what is wrong with it
    if location.is_dir():
        inside = [tree_path(str(p)) for p in scope]
        root = tree_path(str(location))
        return in_scope(str(location / "__init__.py"), scope) or any(p == root or p.startswith(root + "/") for p in inside)
    return in_scope(str(location), scope)


def _registered_only(entry: RegistryEntry, location: Path | None, index: VllmIndex) -> ModelClass:
    pack, vpack = index.engine.pack, index.vpack
    kinds = entry.section_kinds(vpack)
    name = entry.class_name
    where = ", ".join(sorted(set(entry.sections)))
    if "generation" in kinds:
        kind, reason = OTHER, "no generative-model name"
        if pack.eagle3_draft_pattern.search(name):
            kind, reason = EAGLE3_DRAFT, "EAGLE-3 draft head by its name"
        elif pack.draft_pattern.search(name):
            kind, reason = DRAFT, "draft head by its name"
        elif other := next((o for o in pack.other_patterns if o.pattern.search(name)), None):
            kind, reason = OTHER, other.reason
        elif pack.target_name_pattern.search(name):
            kind, reason = TARGET, "generative model by its name"
    elif "draft" in kinds:
        kind, reason = (EAGLE3_DRAFT if pack.eagle3_draft_pattern.search(name) else DRAFT), "draft model"
    else:
        kind, reason = OTHER, "pooling model"
    path = location / "__init__.py" if location is not None and location.is_dir() else location
    summary = ClassSummary(name=name, qualname=name, lineno=1, col=0, end_lineno=1, bases=[])
    return ModelClass(
        ClassRef(entry.module, name),
        str(path or ""),
        summary,
        kind,
        f"{reason} (registered in {where}; outside the reporting scope: classified from the registry, not parsed)",
        entry.architecture,
        None,
        [entry.architecture],
    )


def discover_vllm_models(index: VllmIndex, scope: list[Path] | None = None) -> Discovery:
    """The registry's classes: parsed and classified for registrations in ``scope`` (all when
    None), classified from the registry alone for the others."""
    vpack = index.vpack
    registry = read_registry(index, vpack)
    if registry is None:
        return Discovery(None, [], [])
    add_plugin_registrations(index, registry, vpack)
    index.architecture_classes = architecture_resolver(index, registry, vpack)
    grouped: dict[tuple[ClassRef, str | None], tuple[list[str], list[str]]] = {}
    unresolved: list[UnresolvedEntry] = []
    outside: dict[tuple[str, str], ModelClass] = {}
    entries = registry.all_entries()
    locations = {id(e): _module_location(index, e.module) for e in entries}
    # A plugin's registration is checked with the plugin, even of a class it does not own.
    checked = {
        id(e) for e in entries
        if scope is None or _entry_in_scope(locations[id(e)], scope) or (e.registered_path and in_scope(e.registered_path, scope))
    }
    # One batch for the registered modules in scope, so a parallel summary provider can share
    # them out; everything else they lean on is parsed on demand.
    index.load_files(sorted({p for e in entries if id(e) in checked and (p := _module_file(locations[id(e)])) is not None}))
    plugin_entries: dict[tuple[ClassRef, str | None], list[RegistryEntry]] = {}
    for entry in entries:
        location = locations[id(entry)]
        if id(entry) not in checked:
            known = outside.get((entry.module, entry.class_name))
            if known is None:
                outside[(entry.module, entry.class_name)] = _registered_only(entry, location, index)
            else:
                known.architectures.append(entry.architecture)
            continue
        for variant, resolved in _entry_classes(index, entry, vpack):
            if not isinstance(resolved, ClassRef) or index.class_summary(resolved) is None:
                reason = _built_at_run_time(index, entry) or getattr(resolved, "reason", None) or f"resolves to {resolved}, not a class in the tree"
                unresolved.append(UnresolvedEntry(entry.module, registry.path, entry.architecture, str(reason)))
                continue
            architectures, sections = grouped.setdefault((resolved, variant), ([], []))
            architectures.append(entry.architecture)
            sections.extend(entry.sections)
            if entry.registered_by:
                plugin_entries.setdefault((resolved, variant), []).append(entry)
    # A variant that is also registered on its own (a generic fallback) is that model.
    plain = {ref for ref, variant in grouped if variant is None}
    for key in [k for k in grouped if k[1] is not None and k[0] in plain]:
        architectures, sections = grouped.pop(key)
        grouped[(key[0], None)][0].extend(architectures)
        grouped[(key[0], None)][1].extend(sections)
    models: list[ModelClass] = []
    for (ref, variant), (architectures, sections) in grouped.items():
        summary = index.class_summary(ref)
        module = index.module(ref.module)
        if summary is None or module is None:
            continue
        kinds = {vpack.sections.get(s, vpack.default_section) for s in sections}
        kind, reason = _kind(index, ref, kinds, sections)
        if set(sections) == {"plugin"}:
            kind, reason = _plugin_kind(index, ref, architectures, kind, reason)
        model = ModelClass(ref, module.path, summary, kind, reason, architectures[0], variant, architectures)
        _mark_plugin_origin(index, model, plugin_entries.get((ref, variant), []), vpack)
        models.append(model)
    return Discovery(registry, models, unresolved, list(outside.values()))


def _plugin_kind(index: VllmIndex, ref: ClassRef, architectures: list[str], kind: str, reason: str) -> tuple[str, str]:
    """A plugin registers in no registry section: draft heads are told by their names (the
    class's and those it is registered under), as the registry's own drafts are."""
    pack = index.engine.pack
    names = [ref.qualname.rsplit(".", 1)[-1], *architectures]
    if any(pack.eagle3_draft_pattern.search(n) for n in names):
        return EAGLE3_DRAFT, "EAGLE-3 draft head (by its registered names)"
    if any(pack.draft_pattern.search(n) for n in names):
        return DRAFT, "draft model for speculative decoding (by its registered names)"
    return kind, reason


def add_plugin_registrations(index: VllmIndex, registry: Registry, vpack: VllmPack) -> None:
    """The plugins' ``register_model`` calls join the registry: an architecture the engine
    already has is replaced (vLLM builds the plugin's class for it), a new one is added."""
    engine = index.engine
    for plugin in engine.plugins:
        for reg in read_registrations(index, plugin, RegistrationShapes(vpack.register_calls, vpack.registry_names)):
            rel = _relative_to(engine, reg.path)
            where = f"{rel}:{reg.line}" + (f" ({reg.function})" if reg.function else "") + _entry_point_of(plugin, reg.function, engine.pack.plugin_groups)
            entry = RegistryEntry(reg.architecture, reg.module, reg.class_name, ["plugin"], f"{plugin.label} at {where}", reg.path)
            earlier = registry.entries.get(reg.architecture)
            if earlier is not None and earlier.registered_by:
                entry.replaces = earlier.replaces
                if (earlier.module, earlier.class_name) != (entry.module, entry.class_name):
                    registry.alternatives.append(entry)
                continue
            entry.replaces = earlier
            registry.entries[reg.architecture] = entry


def _entry_point_of(plugin: PluginPackage, function: str, groups: tuple[str, ...]) -> str:
    """", from entry point vllm.general_plugins:NAME" when an entry point names the function
    the registration is in (by name: a shim that calls a same-named function counts)."""
    for point in plugin.entry_points_in(groups):
        if function and point.function == function.rsplit(".", 1)[-1]:
            return f", from entry point {point.group}:{point.name}"
    return ""


def _relative_to(engine: Engine, path: str) -> str:
    for root in (p.source_root for p in engine.plugins):
        try:
            return Path(path).relative_to(root).as_posix()
        except ValueError:
            continue
    return path


def _mark_plugin_origin(index: VllmIndex, model: ModelClass, entries: list[RegistryEntry], vpack: VllmPack) -> None:
    if not entries:
        return
    parts = [f"registered by {e.registered_by}" for e in entries]
    model.registered_in = entries[0].registered_path
    for entry in entries:
        replaced = entry.replaces
        if replaced is None:
            continue
        resolved = _entry_classes(index, replaced, vpack)
        ref = next((r for _, r in resolved if isinstance(r, ClassRef)), None)
        model.replaces = model.replaces or ref
        parts.append(f"replaces {index.engine.name}'s `{replaced.class_name}` ({replaced.module}) for {entry.architecture}")
    model.origin = "; ".join(dict.fromkeys(parts))
