"""The project index, taught how vLLM builds inner models.

Wrappers rarely construct their language model directly. They call a registry factory,
``init_vllm_registered_model(vllm_config, hf_config=..., architectures=["Qwen2ForCausalLM"])``
or ``initialize_model(vllm_config=vllm_config.with_hf_config(cfg, ["LlamaForCausalLM"]))``,
and vLLM looks the architecture up in its registry; decoders are often built by a factory method
(``self.model = self._init_model(...)`` returning ``LlamaModel(...)``) or a class attribute
(``self.model = self.model_cls(...)``) that subclasses override. With a literal architecture
list the class is known statically; without one it is chosen from the HF config at run time,
which no static tool can prove: that is :class:`~eagle3lint.source.index.Unknown` (reported as info,
never as an error).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from eagle3lint.engines.vllm.pack import VllmPack
from eagle3lint.source.index import ClassRef, FunctionRef, ProjectIndex, Resolved, Unknown
from eagle3lint.source.snippets import SnippetReader
from eagle3lint.source.summary_types import Construction
from eagle3lint.source.summary_walk import final_constructions

RUNTIME_CHOICE = "the inner model is chosen from the HF config at run time"

# Maps an architecture name to the classes the registry loads for it (several when the
# package dispatches on the platform).
ArchitectureResolver = Callable[[str], list[Resolved]]


def _string_list(node: ast.AST) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


class VllmIndex(ProjectIndex):
    vpack: VllmPack
    model_class_pattern: re.Pattern[str]
    architecture_classes: ArchitectureResolver | None = None
    snippets: SnippetReader

    def attribute_classes(self, ref: ClassRef, attr: str, _depth: int = 0) -> list[Resolved]:
        """As :meth:`ProjectIndex.attribute_classes` (the last ``__init__`` assignment along the
        MRO wins), with registry factories, factory methods and class-attribute classes."""
        if _depth > 8:
            return [Unknown("attribute chain too deep")]
        for current in self.mro(ref).classes:
            cls = self.class_summary(current)
            if cls is None:
                continue
            fn = cls.methods.get(attr)
            if fn is not None and fn.is_property:
                break  # properties: the base index follows them
            entry = cls.instance_attrs.get(attr)
            if entry is None:
                continue
            if not entry.constructions:
                break
            latest = final_constructions(entry.constructions)
            if any("." in c.callee[len("self.") :] for c in latest if c.callee.startswith("self.")):
                break  # ``self.a = self.b.c``: the base index follows attribute paths
            out: list[Resolved] = []
            for construction in latest:
                out.extend(self._construction_classes(ref, current, construction, _depth))
            return out
        return super().attribute_classes(ref, attr, _depth)

    # ---- what a construction builds ----------------------------------------------------------
    def _construction_classes(self, ref: ClassRef, owner: ClassRef, construction: Construction, depth: int) -> list[Resolved]:
        if self._is_factory(owner, construction):
            return self._factory_classes(owner, construction)
        if construction.callee.startswith("self."):
            name = construction.callee[len("self.") :]
            kind = self._self_callable(ref, name) if construction.call else None
            if kind == "method":
                return self._method_returns(ref, name)
            if kind == "class_attr":
                return [self._class_attr_value(ref, name)]
            return super().attribute_classes(ref, name, depth + 1)
        if construction.table and (picked := self.table_classes(owner, construction)) is not None:
            return picked
        head = construction.callee.partition(".")[0]
        summary = self.class_summary(owner)
        if summary is not None and head in summary.init_param_defaults:
            # ``self.model = model_type(...)`` with ``model_type=InternLM2Model`` a constructor
            # parameter: what a subclass passes for it, or its default, named like a model.
            resolved = self.resolve_in_init(owner, construction.callee, ref)
            if isinstance(resolved, ClassRef) and not self.model_class_pattern.search(resolved.qualname.rsplit(".", 1)[-1]):
                return [Unknown(f"{construction.callee}(...) builds {resolved.qualname}, not named like a model class")]
            return [resolved]
        last = construction.callee.rsplit(".", 1)[-1]
        if not self.model_class_pattern.search(last):
            # Not worth resolving (and parsing its module): layers, configs, helpers.
            return [Unknown(f"{construction.callee}(...) is not named like a model class")]
        return [self.resolve(owner.module, construction.callee)]

    def _is_factory(self, owner: ClassRef, construction: Construction) -> bool:
        if construction.callee.startswith("self."):
            return False
        if construction.callee.rsplit(".", 1)[-1] not in self.vpack.factories:
            return False
        return isinstance(self.resolve(owner.module, construction.callee), (FunctionRef, Unknown))

    def _factory_classes(self, owner: ClassRef, construction: Construction) -> list[Resolved]:
        architectures: list[str] = []
        for keyword in self.vpack.architecture_keywords:
            architectures.extend(construction.literal_args.get(keyword, []))
        if not architectures:
            architectures = self._positional_architectures(owner, construction)
        if not architectures or self.architecture_classes is None:
            return [Unknown(RUNTIME_CHOICE)]
        out: list[Resolved] = []
        for architecture in architectures:
            out.extend(self.architecture_classes(architecture))
        return out or [Unknown(f"architecture {architectures[0]} is not in the registry")]

    def _positional_architectures(self, owner: ClassRef, construction: Construction) -> list[str]:
        """``vllm_config.with_hf_config(cfg, ["X"])``: the architectures passed positionally,
        as the summary recorded them from the construction's nested calls."""
        return construction.literal_args.get("with_hf_config#1", [])

