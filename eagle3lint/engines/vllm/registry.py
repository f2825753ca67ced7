"""vLLM's architecture registry, read from its dict literals (never imported).

``model_executor/models/registry.py`` maps every HF architecture name to ``(module, class)``:
module names without the package prefix live in ``model_executor/models``; names starting with
``vllm.`` are absolute (newer trees keep some models in ``vllm/models/<name>/`` packages). Each
dict is a section (text generation, multimodal, embedding, speculative decoding, ...) that says
what the architectures in it are used for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eagle3lint.engines.vllm.pack import VllmPack
from eagle3lint.source.index import ProjectIndex


@dataclass
class RegistryEntry:
    architecture: str
    module: str  # fully qualified: vllm.model_executor.models.llama
    class_name: str
    sections: list[str] = field(default_factory=list)  # the dicts that list it
    # A plugin's registration: who registers it where, and the engine's entry it replaces.
    registered_by: str = ""
    registered_path: str = ""  # the file of the registration call
    replaces: RegistryEntry | None = None

    def section_kinds(self, vpack: VllmPack) -> set[str]:
        return {vpack.sections.get(s, vpack.default_section) for s in self.sections}


@dataclass
class Registry:
    module: str
    path: str
    entries: dict[str, RegistryEntry]  # by architecture
    # Further plugin registrations of an architecture already registered by a plugin (one per
    # env-flag branch): each is a model to check; the first is the one ``lookup`` returns.
    alternatives: list[RegistryEntry] = field(default_factory=list)

    def lookup(self, architecture: str) -> RegistryEntry | None:
        return self.entries.get(architecture)

    def all_entries(self) -> list[RegistryEntry]:
        return [*self.entries.values(), *self.alternatives]


def qualify(module: str, package: str, vpack: VllmPack) -> str:
    """``llama`` -> ``vllm.model_executor.models.llama``; ``vllm.models.x`` stays as it is."""
    if module == package or module.startswith(package + "."):
        return module
    return f"{package}.{vpack.relative_package}.{module}"


def read_registry(index: ProjectIndex, vpack: VllmPack) -> Registry | None:
    package = index.engine.pack.package
    name = f"{package}.{vpack.registry_module}"
    summary = index.module(name)
    if summary is None:
        return None
    entries: dict[str, RegistryEntry] = {}
    for table_name, table in summary.dict_literals.items():
        if table_name in vpack.merged_tables:
            continue
        for architecture, value in table.items():
            if len(value) != 2:
                continue  # _PREVIOUSLY_SUPPORTED_MODELS and the like map to a version string
            module, class_name = value
            entry = entries.get(architecture)
            if entry is None:
                entry = entries[architecture] = RegistryEntry(architecture, qualify(module, package, vpack), class_name)
            entry.sections.append(table_name)
    return Registry(module=name, path=summary.path, entries=entries)
