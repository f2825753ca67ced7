"""Which targets the proposer's drafter load fails on (:mod:`.drafter_load` reads the release).

For a model class: its language model as the proposer takes it (``get_language_model()`` where
the class sets the multimodal flag, the class itself otherwise), then each read's attribute
steps through the project index (``self.x = Class(...)`` along the MRO, properties, class
attributes). A crash is predicted only where every class a step may hold lacks every name the
step tries; anything the index cannot follow (an unresolved base, ``__getattr__``, ``setattr``
or ``add_module`` in a class, a language model chosen at run time) makes it say nothing.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from eagle3lint.engines.vllm.drafter_load import ConfigRead, DrafterLoad, TargetRead
from eagle3lint.engines.vllm.holders import HolderFinder
from eagle3lint.engines.vllm.index import VllmIndex
from eagle3lint.source.index import ClassRef, MemberLookup, Resolved
from eagle3lint.source.summary_types import Construction
from eagle3lint.source.summary_walk import final_constructions

YES, NO, UNKNOWN = "yes", "no", "unknown"
# Attributes set other than by ``self.x = ...``: what the index cannot see.
_DYNAMIC = re.compile(r"\bsetattr\(|\badd_module\(|\bregister_module\(|\b__setattr__\b|\b__dict__\b")
_MARKER_TARGETS = re.compile(r"targets\s*=")
# A composite marker picks the language model among descendants by type (``language_targets=``).
_COMPOSITE = re.compile(r"_mark_composite_model\(|language_targets\s*=")
# What ``isinstance(module, VllmModel)`` asks of the module ``get_language_model()`` returns.
_VLLM_MODEL_MEMBERS = ("embed_input_ids", "forward")


@dataclass(frozen=True)
class DrafterCrash:
    """A target the drafter load raises on: which read, where, and what lacks the names."""

    read: TargetRead
    language_model: str  # where the language model is: "self" (the target), "self.language_model"
    reached: str  # the path of the object that lacks the names ("self", "self.model")
    lacking: tuple[ClassRef, ...]  # its classes
    multimodal: bool
    step: int = 0  # which of the read's steps fails

    @property
    def names(self) -> tuple[str, ...]:
        """The names the failing step tries, none of which the classes have."""
        return self.read.steps[self.step]


@dataclass(frozen=True)
class ConfigCrash:
    """A multimodal target whose config lacks the attribute the drafter load copies off it."""

    read: ConfigRead  # the branch the class takes
    configs: tuple[tuple[str, str], ...]  # (architecture, config class) its checkpoints are loaded as

    @property
    def config_classes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c for _, c in self.configs))


class DrafterLoadChecker:
    def __init__(self, index: VllmIndex, holders: HolderFinder, load: DrafterLoad) -> None:
        self.index = index
        self.holders = holders
        self.load = load
        self._dynamic: dict[ClassRef, bool] = {}

    # ---- the class's own facts -----------------------------------------------------------------
    def flag(self, ref: ClassRef, name: str) -> str:
        """The class flag as ``getattr(model, name, False)`` sees it: the nearest class attribute
        along the MRO that is a literal bool; UNKNOWN for another value or an unresolved base."""
        index = self.index
        mro = index.mro(ref)
        for current in mro.classes:
            summary = index.class_summary(current)
            module = index.module(current.module)
            if summary is None or module is None or name not in summary.class_attrs:
                continue
            if name in summary.instance_attrs or name in summary.methods:
                return UNKNOWN
            line = summary.class_attrs[name]
            stmt = self.index.snippets.statement_at(module.path, line, line, line)
            value = getattr(stmt, "value", None)
            if isinstance(value, ast.Constant) and isinstance(value.value, bool):
                return YES if value.value else NO
            return UNKNOWN
        return UNKNOWN if mro.unknown_bases else NO

    def dynamic(self, ref: ClassRef) -> bool:
        """Whether a class along the MRO sets attributes in ways the index does not follow."""
        index = self.index
        for current in index.mro(ref).classes:
            if current not in self._dynamic:
                summary = index.class_summary(current)
                module = index.module(current.module)
                lines = self.index.snippets.lines(module.path) if summary is not None and module is not None else None
                if summary is None or lines is None:
                    self._dynamic[current] = True
                else:
                    text = "\n".join(lines[summary.lineno - 1 : summary.end_lineno])
                    self._dynamic[current] = bool(_DYNAMIC.search(text))
            if self._dynamic[current]:
                return True
        return False

    def has_any(self, ref: ClassRef, names: tuple[str, ...]) -> tuple[str, str]:
        """YES (with the name the engine takes: the first present), NO, or UNKNOWN."""
        index = self.index
        for name in names:
            lookup = index.lookup(ref, name)
            if lookup.status == "found" and lookup.kind in ("instance_attr", "class_attr", "property"):
                return YES, name
            if lookup.status != "missing":
                return UNKNOWN, ""
        return (UNKNOWN if self.dynamic(ref) else NO), ""

    def language_models(self, ref: ClassRef) -> tuple[list[ClassRef] | None, str, bool]:
        """The classes the proposer's ``target_language_model`` may be, where the target holds
        it ("self": the target itself), and whether the class counts as multimodal; None where
        it cannot be told."""
        flag = self.load.multimodal_flag
        multimodal = self.flag(ref, flag) if flag else NO
        if multimodal == UNKNOWN:
            return None, "", False
        if multimodal == NO:
            return [ref], "self", False
        name = self.load.language_model
        lookup = self.index.lookup(ref, name) if name else None
        if lookup is None or lookup.status != "found" or self._marker_targets(ref):
            return None, "", True
        if self.holders.is_default(lookup):
            found = self._default_language_model(ref, lookup)
            return (found[0], found[1], True) if found else (None, "", True)
        held, path = self.holders.method_returns(ref, name, lookup)
        if not held or any(not isinstance(h, ClassRef) for h in held):
            return None, "", True
        classes = [h for h in held if isinstance(h, ClassRef)]
        # The default returns the marked module only where it is a vLLM model (it has
        # ``embed_input_ids`` and ``forward``); otherwise it searches the children: not modelled.
        if any(self.index.lookup(c, member).status != "found" for c in classes for member in _VLLM_MODEL_MEMBERS):
            return None, "", True
        return classes, path, True

    def _default_language_model(self, ref: ClassRef, lookup: MemberLookup) -> tuple[list[ClassRef], str] | None:
        """What the interfaces' default ``get_language_model()`` returns: the common prefix of
        the children built under the marker where that one module is a vLLM model, else the
        first child (in the order ``__init__`` builds them) that is one, where the release's
        default body has that fallback (``.children()``). None where the index cannot tell."""
        marked = list(dict.fromkeys(self.holders.marked_attributes(ref)))
        if len(marked) == 1:
            held = self.index.attribute_classes(ref, marked[0])
            classes = [h for h in held if isinstance(h, ClassRef)]
            if not held or len(classes) != len(held):
                return None
            state = self._vllm_model(classes)
            if state == YES:
                return classes, f"self.{marked[0]}"
            if state == UNKNOWN:
                return None
        if not self._default_searches_children(lookup):
            return None
        return self._first_vllm_model_child(ref)

    def _vllm_model(self, classes: list[ClassRef]) -> str:
        """Whether ``isinstance(module, VllmModel)`` holds for every class (YES), none (NO), or
        cannot be told: a runtime-checkable protocol, so it asks for the members only."""
        states = set()
        for cls in classes:
            lookups = [self.index.lookup(cls, member).status for member in _VLLM_MODEL_MEMBERS]
            if all(status == "found" for status in lookups):
                states.add(YES)
            elif lookups[0] == "missing" and not self.dynamic(cls):
                states.add(NO)  # ``forward`` is every torch module's; ``embed_input_ids`` decides
            else:
                states.add(UNKNOWN)
        return states.pop() if len(states) == 1 else UNKNOWN

    def _default_searches_children(self, lookup: MemberLookup) -> bool:
        fn, owner = lookup.function, lookup.owner
        module = self.index.module(owner.module) if owner else None
        lines = self.index.snippets.lines(module.path) if module else None
        if fn is None or not lines:
            return False
        return ".children()" in "".join(lines[fn.lineno - 1 : fn.end_lineno])

    def _first_vllm_model_child(self, ref: ClassRef) -> tuple[list[ClassRef], str] | None:
        """The first module ``__init__`` assigns that is a vLLM model. Only for a class whose
        children are all built by one ``__init__`` (the order across a ``super().__init__`` is
        not modelled); an attribute built by a call the index cannot resolve makes it unknown."""
        index = self.index
        mro = index.mro(ref)
        if mro.unknown_bases or self.dynamic(ref):
            return None
        builders = [
            (current, summary)
            for current in mro.classes
            if (summary := index.class_summary(current)) is not None
            and any(attr.in_init for attr in summary.instance_attrs.values())
        ]
        if len(builders) != 1:
            return None
        owner, summary = builders[0]
        for attr in sorted(summary.instance_attrs.values(), key=lambda a: a.lineno):
            if not attr.in_init or not any(c.call for c in attr.constructions):
                continue  # a plain value (the config, a size): not a child module
            held = index.attribute_classes(ref, attr.name)
            if any(not isinstance(h, ClassRef) for h in held):
                held = self._built(ref, owner, attr.constructions) or held
            classes = [h for h in held if isinstance(h, ClassRef)]
            if not held or len(classes) != len(held):
                return None
            state = self._vllm_model(classes)
            if state == YES:
                return classes, f"self.{attr.name}"
            if state == UNKNOWN:
                return None
        return None  # no child is one: the default raises NotImplementedError (not this rule's)

    def _built(self, ref: ClassRef, owner: ClassRef, constructions: list[Construction]) -> list[Resolved]:
        """The classes ``self.x = Name(...)`` builds, resolved whatever the name (the index
        resolves only names that look like model classes: here a vision tower decides too)."""
        final = final_constructions(constructions)
        if any(c.callee.startswith("self.") or c.table or not c.call for c in final):
            return []
        return [self.index.resolve_in_init(owner, c.callee, ref) for c in final]

    def _marker_targets(self, ref: ClassRef) -> bool:
        """``with self._mark_language_model(..., targets=...)`` or ``_mark_composite_model(...,
        language_targets=...)``: the default ``get_language_model`` then returns the common prefix
        of descendants of a type, which the holder walk does not model."""
        marker = self.index.vpack.language_model_marker
        index = self.index
        for current in index.mro(ref).classes:
            summary = index.class_summary(current)
            init = summary.methods.get("__init__") if summary else None
            module = index.module(current.module)
            if init is None or module is None:
                continue
            lines = self.index.snippets.lines(module.path) or []
            text = "".join(lines[init.lineno - 1 : init.end_lineno])
            if _COMPOSITE.search(text):
                return True
            return bool(marker) and any(_MARKER_TARGETS.search(text[m.end() : m.end() + 400]) for m in re.finditer(re.escape(marker) + r"\(", text))
        return False

    # ---- the reads -----------------------------------------------------------------------------
    def crash(self, ref: ClassRef) -> DrafterCrash | None:
        models, where, multimodal = self.language_models(ref)
        if models is None:
            return None
        for read in self.load.reads:
            current: list[ClassRef] = list(models)
            path = where
            for number, step in enumerate(read.steps):
                answers = [self.has_any(c, step) for c in current]
                states = {state for state, _ in answers}
                if states == {NO}:
                    return DrafterCrash(read, where, path, tuple(current), multimodal, number)
                if states != {YES}:
                    return None  # unknown, or depends on the config (some classes have it)
                following: list[ClassRef] = []
                for cls, (_, name) in zip(current, answers, strict=True):
                    held = self.index.attribute_classes(cls, name)
                    if not held or any(not isinstance(h, ClassRef) for h in held):
                        following = []
                        break
                    following.extend(h for h in held if isinstance(h, ClassRef))
                path = f"{path}.{answers[0][1]}"
                if not following and step is not read.steps[-1]:
                    return None
                current = list(dict.fromkeys(following))
        return None
