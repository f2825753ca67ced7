"""The capture data flow across classes: what a target's setter writes, where, and who reads it.

Starting at the engine's setter on a target, the writes are followed through delegation
(``self.model.set_eagle3_layers_to_capture(...)``), ``super()`` and inheritance to the objects
they land on (the classes ``self.<path>`` may hold); each object's ``forward`` (along its MRO,
through ``super().forward``) says what it reads. The facts come from the summaries
(``eagle3lint.source.capture_facts``); nothing here re-reads source. Engines' capture rules build on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from eagle3lint.source.index import ClassRef

if TYPE_CHECKING:
    from eagle3lint.source.capture_facts import CaptureFacts, CaptureSpec, LoopFact
    from eagle3lint.source.index import ProjectIndex
    from eagle3lint.source.summary_types import FunctionSummary

_MAX_DEPTH = 4


@dataclass(frozen=True)
class Write:
    """A write of capture state: the attribute (or per-layer marker) set on an object."""

    holder: ClassRef  # the class of the object written to
    path: tuple[str, ...]  # how the target reaches it: () for itself, ("model",) for self.model
    name: str
    marker: bool  # a marker set on each of the object's layers, not an attribute of it
    setter: str  # the method that writes it: "Qwen3VLForConditionalGeneration.set_eagle3_layers_to_capture"
    line: int

    def describe(self) -> str:
        where = "self" + "".join(f".{p}" for p in self.path)
        if self.marker:
            return f"`{self.name}` on the layers of `{where}`"
        return f"`{where}.{self.name}`"


@dataclass
class Reads:
    """What an object's ``forward`` reads of the capture state (through ``super().forward``)."""

    attributes: set[str] = field(default_factory=set)
    # Of ``attributes``, those read only through ``getattr(self, name, default)``: an unset one
    # is no AttributeError.
    defaulted: set[str] = field(default_factory=set)
    markers: set[str] = field(default_factory=set)
    loops: list[LoopFact] = field(default_factory=list)
    where: str = ""  # "Qwen3_5ForCausalLM.forward"
    found: bool = False  # a forward with facts was found

    @property
    def captures(self) -> bool:
        return bool(self.attributes or self.markers)


@dataclass(frozen=True)
class Method:
    owner: ClassRef
    function: FunctionSummary
    facts: CaptureFacts


class CaptureAnalysis:
    def __init__(self, index: ProjectIndex, spec: CaptureSpec) -> None:
        self.index = index
        self.spec = spec
        self._reads: dict[ClassRef, Reads] = {}

    def method(self, ref: ClassRef, name: str) -> Method | None:
        """``name`` as ``ref`` runs it (along its MRO), when the summary kept its facts."""
        lookup = self.index.lookup(ref, name)
        fn, owner = lookup.function, lookup.owner
        if lookup.status != "found" or fn is None or owner is None or fn.capture is None:
            return None
        return Method(owner, fn, fn.capture)

    def next_method(self, ref: ClassRef, after: ClassRef, name: str) -> Method | None:
        """``super().<name>`` inside ``after``'s method, for an instance of ``ref``."""
        classes = self.index.mro(ref).classes
        if after not in classes:
            return None
        for current in classes[classes.index(after) + 1 :]:
            summary = self.index.class_summary(current)
            fn = summary.methods.get(name) if summary is not None else None
            if fn is not None:
                return Method(current, fn, fn.capture) if fn.capture is not None else None
        return None

    def holders(self, ref: ClassRef, path: tuple[str, ...]) -> list[ClassRef] | None:
        """The classes ``self.<path>`` may hold in an instance of ``ref`` (None: not known)."""
        return self.index.path_classes(ref, path)

    # ---- the setter side ------------------------------------------------------------------
    def writes(self, ref: ClassRef, setter: str, path: tuple[str, ...] = (), depth: int = 0) -> tuple[list[Write], bool]:
        """Every write of the setter ``ref`` runs, and whether every step could be followed."""
        method = self.method(ref, setter)
        if method is None or depth > _MAX_DEPTH:
            return [], method is not None
        return self._writes_of(ref, method, setter, path, depth)

    def _writes_of(self, ref: ClassRef, method: Method, setter: str, path: tuple[str, ...], depth: int) -> tuple[list[Write], bool]:
        facts = method.facts
        where = f"{method.owner.qualname}.{method.function.name}"
        out: list[Write] = []
        complete = True
        for target, line in facts.writes:
            held = self.holders(ref, target[:-1])
            if held is None:
                complete = False
                continue
            out.extend(Write(h, path + target[:-1], target[-1], False, where, line) for h in held)
        for layers, marker, line in facts.marker_writes:
            held = self.holders(ref, layers[:-1])
            if held is None:
                complete = False
                continue
            out.extend(Write(h, path + layers[:-1], marker, True, where, line) for h in held)
        for target, name, _line in facts.delegations:
            held = self.holders(ref, target)
            if held is None:
                complete = False
                continue
            for inner in held:
                inner_writes, inner_complete = self.writes(inner, name, path + target, depth + 1)
                out.extend(inner_writes)
                complete = complete and inner_complete
        if setter in facts.super_calls:
            parent = self.next_method(ref, method.owner, setter)
            if parent is not None:
                parent_writes, parent_complete = self._writes_of(ref, parent, setter, path, depth + 1)
                out.extend(parent_writes)
                complete = complete and parent_complete
            else:
                complete = False
        return out, complete

    # ---- the reading side -----------------------------------------------------------------
    def reads(self, ref: ClassRef) -> Reads:
        cached = self._reads.get(ref)
        if cached is None:
            cached = self._reads[ref] = self._collect_reads(ref)
        return cached

    def _collect_reads(self, ref: ClassRef) -> Reads:
        reads = Reads()
        method = self.method(ref, "forward")
        seen: set[ClassRef] = set()
        while method is not None and method.owner not in seen:
            seen.add(method.owner)
            facts = method.facts
            reads.found = True
            reads.where = reads.where or f"{method.owner.qualname}.forward"
            reads.defaulted.update(set(facts.defaulted_reads) - reads.attributes - set(facts.reads))
            reads.defaulted -= set(facts.reads)
            reads.attributes.update(facts.reads, facts.defaulted_reads)
            if facts.calls & self.spec.collect_calls:
                reads.attributes.update(self.spec.collect_reads)
            reads.markers.update(facts.marker_reads)
            reads.loops.extend(facts.loops)
            method = self.next_method(ref, method.owner, "forward") if "forward" in facts.super_calls else None
        return reads

    # ---- what ``__init__`` sets -----------------------------------------------------------
    def set_in_init(self, ref: ClassRef, attr: str) -> bool | None:
        """Whether the ``__init__`` chain that runs for ``ref`` (along its MRO, through
        ``super().__init__``, minus a class ``super(X, self).__init__()`` skips) or a class
        attribute sets ``attr``; None when a base cannot be read."""
        mro = self.index.mro(ref)
        for current in mro.classes:
            summary = self.index.class_summary(current)
            if summary is not None and attr in summary.class_attrs:
                return True
        skipped: set[ClassRef] = set()
        running = True
        for current in mro.classes:
            summary = self.index.class_summary(current)
            if summary is None:
                continue
            init = summary.methods.get("__init__")
            if init is None:
                continue
            if current in skipped or not running:
                continue
            entry = summary.instance_attrs.get(attr)
            if entry is not None and entry.in_init:
                return True
            if init.super_skips:
                target = self.index.resolve(current.module, init.super_skips)
                if isinstance(target, ClassRef):
                    skipped.add(target)
            elif init.super_init_args is None:
                running = False  # no super().__init__(...): the bases' __init__ do not run
        return None if mro.unknown_bases else False

    def init_setting(self, ref: ClassRef, attr: str) -> ClassRef | None:
        """A class along ``ref``'s MRO whose own ``__init__`` sets ``attr`` (whether or not it
        runs for ``ref``): what a message names when a ``super()`` call skips it."""
        for current in self.index.mro(ref).classes:
            summary = self.index.class_summary(current)
            entry = summary.instance_attrs.get(attr) if summary is not None else None
            if entry is not None and entry.in_init:
                return current
        return None

