"""vLLM model discovery: every class the architecture registry maps to, each platform variant
included, classified by the registry section that lists it and by its shape."""

from __future__ import annotations

import re
from dataclasses import dataclass

from eagle3lint.engine import Engine
from eagle3lint.index import ClassRef, Resolved, Unknown
from eagle3lint.models import DRAFT, EAGLE3_DRAFT, OTHER, ModelClass, UnresolvedEntry, classify
from eagle3lint.vllm.dispatch import platform_variants
from eagle3lint.vllm.index import ArchitectureResolver, VllmIndex
from eagle3lint.vllm.pack import VllmPack, vllm_pack
from eagle3lint.vllm.protocol import VllmProtocol
from eagle3lint.vllm.registry import Registry, RegistryEntry, read_registry
from eagle3lint.vllm.snippets import SnippetReader


@dataclass
class Discovery:
    registry: Registry | None
    models: list[ModelClass]
    unresolved: list[UnresolvedEntry]


def build_vllm_index(engine: Engine, protocol: VllmProtocol | None = None) -> VllmIndex:
    pack = engine.pack
    vpack = vllm_pack(pack)
    walk = (
        frozenset(pack.members)
        | frozenset(n for spec in pack.members.values() for n in spec.former_names)
        | frozenset(vpack.walk_methods)
    )
    # Files that mention the capture attribute or the mixin's collector get every method
    # walked: a forward may collect through a helper method.
    names = {vpack.capture_attribute}
    if protocol is not None and protocol.mixin is not None:
        names.update(protocol.mixin.collect_methods)
    needles = tuple(sorted(n.encode() for n in names))
    index = VllmIndex(engine, walk_names=walk, needles=needles)
    index.vpack = vpack
    index.snippets = SnippetReader()
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
        return classify(index, ref)
    name = ref.qualname.rsplit(".", 1)[-1]
    if "draft" in kinds:
        if pack.eagle3_draft_pattern.search(name):
            return EAGLE3_DRAFT, f"EAGLE-3 draft head (registered in {where})"
        return DRAFT, f"draft model for speculative decoding (registered in {where})"
    return OTHER, f"pooling model: embedding, classification or reward (registered in {where})"


def discover_vllm_models(index: VllmIndex) -> Discovery:
    vpack = index.vpack
    registry = read_registry(index, vpack)
    if registry is None:
        return Discovery(None, [], [])
    index.architecture_classes = architecture_resolver(index, registry, vpack)
    grouped: dict[tuple[ClassRef, str | None], tuple[list[str], list[str]]] = {}
    unresolved: list[UnresolvedEntry] = []
    for entry in registry.entries.values():
        for variant, resolved in _entry_classes(index, entry, vpack):
            if not isinstance(resolved, ClassRef) or index.class_summary(resolved) is None:
                reason = _built_at_run_time(index, entry) or getattr(resolved, "reason", None) or f"resolves to {resolved}, not a class in the tree"
                unresolved.append(UnresolvedEntry(entry.module, registry.path, entry.architecture, str(reason)))
                continue
            architectures, sections = grouped.setdefault((resolved, variant), ([], []))
            architectures.append(entry.architecture)
            sections.extend(entry.sections)
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
        models.append(ModelClass(ref, module.path, summary, kind, reason, architectures[0], variant, architectures))
    return Discovery(registry, models, unresolved)
