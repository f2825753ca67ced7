"""SGLang model discovery: every class a model module lists in its ``EntryClass``."""

from __future__ import annotations

from eagle3lint.model.models import ModelClass, UnresolvedEntry, classify, why_unresolved
from eagle3lint.source.index import ClassRef, ProjectIndex, Resolved
from eagle3lint.source.summary_types import ModuleSummary


def discover_sglang_models(
    index: ProjectIndex, modules: list[ModuleSummary]
) -> tuple[list[ModelClass], list[UnresolvedEntry]]:
    """Every class named in a module's ``EntryClass``."""
    found: list[ModelClass] = []
    unresolved: list[UnresolvedEntry] = []
    seen: set[tuple[ClassRef, str]] = set()
    for module in modules:
        if not module.entry_class:
            continue
        for entry in module.entry_class:
            resolved: Resolved = index.resolve(module.module, entry)
            if not isinstance(resolved, ClassRef):
                unresolved.append(UnresolvedEntry(module.module, module.path, entry, why_unresolved(resolved)))
                continue
            key = (resolved, module.path)
            if key in seen:
                continue
            seen.add(key)
            cls = index.class_summary(resolved)
            owner = index.module(resolved.module)
            if cls is None or owner is None:
                continue
            kind, reason = classify(index, resolved)
            found.append(ModelClass(resolved, owner.path, cls, kind, reason, entry, architectures=[cls.name]))
    return found, unresolved
