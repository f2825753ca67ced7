"""What ``set_aux_hidden_state_layers`` really reaches, and whether that object collects.

The *holder* is the module that records the aux layer ids and must return
``(hidden_states, aux_hidden_states)`` from its ``forward``. It is found the way the engine finds
it: through the model's own override of the setter (``self.model.aux_hidden_state_layers = ...``,
``self.language_model.set_aux_hidden_state_layers(...)``), or through the protocol's default body,
whose walk (``get_language_model()`` / ``language_model``, then ``.model``) is read from the
tree by :mod:`eagle3lint.engines.vllm.protocol`. Attribute classes come from the last assignment in
``__init__`` along the MRO, registry factories included (:class:`~eagle3lint.engines.vllm.index.VllmIndex`).
Whatever cannot be followed is ``unknown``, with the reason: never an error.

A holder is of one of two kinds. ``attribute``: the setter records the ids on the holder
(``aux_hidden_state_layers``, or the mixin's setter) and the holder's decoder loop collects them.
``recorded``: the setter registers a library's recorder per layer and the class's own
``forward`` returns what it recorded (the Transformers modeling backend; :mod:`.recorded`).
Every rule that reads a holder asks its kind.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from eagle3lint.engines.vllm.index import RUNTIME_CHOICE, VllmIndex
from eagle3lint.engines.vllm.protocol import HolderWalk, VllmProtocol
from eagle3lint.engines.vllm.recorded import Recording, read_recording
from eagle3lint.model.models import TARGET, classify, inner_models
from eagle3lint.source.index import ClassRef, MemberLookup, Resolved, Unknown
from eagle3lint.source.summary_types import FunctionSummary

RESOLVED = "resolved"
UNKNOWN = "unknown"
NO_INNER = "no-inner"  # the default walk requires ``.model`` and the object it reached has none
# The setter is missing or only a stub: the presence rules (E3L001/E3L003/E3L004) report it.
NO_SETTER = "no-setter"

# Holder kinds: the ids recorded on an object whose decoder loop collects them, or a recorder
# the setter registers and whose states the class's forward returns.
ATTRIBUTE = "attribute"
RECORDED = "recorded"


@dataclass
class Holder:
    status: str  # RESOLVED | UNKNOWN | NO_INNER | NO_SETTER
    classes: list[ClassRef] = field(default_factory=list)
    path: str = "self"  # how the setter reaches it: "self.language_model.model"
    via: str = ""  # "the SupportsEagle3 default" | "the override in Foo"
    reason: str = ""
    asserted_mixin: str | None = None  # the default walk asserts the holder inherits this
    reached: ClassRef | None = None  # for NO_INNER: the object that lacks ``.model``
    kind: str = ATTRIBUTE  # ATTRIBUTE | RECORDED
    recording: Recording | None = None  # for RECORDED: what the setter registers


@dataclass(frozen=True)
class _Action:
    # "write" (capture attribute) | "delegate" (the setter) | "mixin" (mixin setter) | "record"
    # (a recorder registered per layer)
    kind: str
    path: tuple[str, ...]  # attribute steps from self; "name()" for a method call
    recording: Recording | None = None


class HolderFinder:
    def __init__(self, index: VllmIndex, protocol: VllmProtocol | None) -> None:
        self.index = index
        self.protocol = protocol
        self.vpack = index.vpack
        self._cache: dict[tuple[ClassRef, bool], Holder] = {}

    # ---- the setter a class really runs ----------------------------------------------------
    def is_protocol_class(self, ref: ClassRef | None) -> bool:
        proto = self.protocol
        return bool(proto and ref and ref.module == proto.module and ref.qualname in proto.chain)

    def setter_lookup(self, ref: ClassRef) -> MemberLookup:
        return self.index.lookup(ref, self.vpack.setter)

    def holder(self, ref: ClassRef, assume_default: bool = False, _depth: int = 0) -> Holder:
        """The holder of ``ref``; ``assume_default`` simulates the protocol's default setter
        (what declaring the protocol would do for a class that has no setter of its own)."""
        key = (ref, assume_default)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        result = self._holder(ref, assume_default, _depth)
        self._cache[key] = result
        return result

    def _holder(self, ref: ClassRef, assume_default: bool, depth: int) -> Holder:
        if depth > 4:
            return Holder(UNKNOWN, reason="delegation chain too deep")
        lookup = self.setter_lookup(ref)
        if lookup.status == "found" and not self.is_protocol_class(lookup.owner) and lookup.function is not None:
            return self._from_override(ref, lookup, depth)
        if lookup.status in ("unknown", "getattr") and not assume_default:
            return Holder(UNKNOWN, reason=lookup.reason or "the setter comes from a base eagle3lint cannot read")
        if lookup.status == "missing" and not assume_default:
            return Holder(NO_SETTER, reason=f"{ref.qualname} has no {self.vpack.setter}")
        walk = self.protocol.walks.get(self.vpack.setter) if self.protocol else None
        if walk is None:
            return Holder(NO_SETTER, reason=f"the protocol's {self.vpack.setter} is only a stub")
        return self._from_default(ref, walk)

    # ---- the protocol default --------------------------------------------------------------
    def _from_default(self, ref: ClassRef, walk: HolderWalk) -> Holder:
        via = f"the {self.protocol.name if self.protocol else 'protocol'} default"
        parents: list[Resolved] | None = None
        path = "self"
        for step in walk.delegations:
            lookup = self.index.lookup(ref, step.name)
            if lookup.status == "missing":
                continue
            if lookup.status != "found":
                return Holder(UNKNOWN, path=step.render(), via=via, reason=lookup.reason or f"cannot tell whether it has {step.name}")
            if step.kind == "call":
                parents, why = self._method_returns(ref, step.name, lookup)
                if parents is None:
                    return Holder(UNKNOWN, path=step.render(), via=via, reason=why)
                path = why
                via = f"{via} (through {step.render()})"
            else:
                parents = self.index.attribute_classes(ref, step.name)
                path = f"self.{step.name}"
            break
        if parents is None:
            parents = [ref]
        if not parents:
            return Holder(UNKNOWN, path=path, via=via, reason=f"what {path} holds is not known")
        holder = Holder(RESOLVED, path=path, via=via, asserted_mixin=walk.asserted_mixin)
        for parent in parents:
            if not isinstance(parent, ClassRef):
                return Holder(UNKNOWN, path=path, via=via, reason=_why(parent))
            if walk.inner is None:
                holder.classes.append(parent)
                continue
            inner = self.index.lookup(parent, walk.inner)
            if inner.status == "found":
                held = self.index.attribute_classes(parent, walk.inner)
                bad = next((h for h in held if not isinstance(h, ClassRef)), None)
                if bad is not None or not held:
                    reason = _why(bad) if bad is not None else f"what {path}.{walk.inner} holds is not known"
                    return Holder(UNKNOWN, path=f"{path}.{walk.inner}", via=via, reason=reason)
                holder.classes.extend(h for h in held if isinstance(h, ClassRef))
                holder.path = f"{path}.{walk.inner}"
            elif inner.status == "missing" and walk.inner_optional:
                holder.classes.append(parent)
            elif inner.status == "missing":
                return Holder(NO_INNER, path=path, via=via, reached=parent, asserted_mixin=walk.asserted_mixin,
                              reason=f"{parent.qualname} has no .{walk.inner}")
            else:
                return Holder(UNKNOWN, path=path, via=via, reason=inner.reason or f"cannot tell whether {path} has .{walk.inner}")
        return holder

    def method_returns(self, ref: ClassRef, name: str, lookup: MemberLookup) -> tuple[list[Resolved] | None, str]:
        """What ``self.<name>()`` returns (``get_language_model()``), and its path from ``self``;
        None (and why) where it cannot be told."""
        return self._method_returns(ref, name, lookup)

    def _method_returns(self, ref: ClassRef, name: str, lookup: MemberLookup) -> tuple[list[Resolved] | None, str]:
        """What ``self.<name>()`` returns: ``return self.x`` in an override, or, for the
        interfaces' default ``get_language_model()``, the language model the class builds."""
        fn = lookup.function
        owner = lookup.owner
        proto = self.protocol
        if fn is not None and fn.returns_self and not (owner and proto and owner.module == proto.module):
            # ``return self``: the class is its own language model (MuseSpark's Omni mixin).
            return [ref], "self"
        if fn is not None and fn.returns_self_attr and not (owner and proto and owner.module == proto.module):
            held = self.index.attribute_classes(ref, fn.returns_self_attr)
            if not held:
                return None, f"self.{fn.returns_self_attr} is not assigned in __init__"
            return held, f"self.{fn.returns_self_attr}"
        if owner is not None and proto is not None and owner.module == proto.module and fn is not None and not fn.is_stub:
            # The default returns the module built under ``with self._mark_language_model(...)``.
            marked = self._marked_attributes(ref)
            if len(marked) > 1:
                # Several children marked: the default returns the one that is a language model.
                marked = [a for a in marked if self._is_language_model(ref, a)]
            if len(marked) == 1:
                return self.index.attribute_classes(ref, marked[0]), f"self.{marked[0]}"
            if marked:
                return None, f"{name}() returns one of " + ", ".join(f"self.{a}" for a in marked)
            # Older trees: the one inner model that is a generative model itself.
            candidates = [
                (attr, cls) for attr, cls in inner_models(self.index, ref) if classify(self.index, cls)[0] == TARGET
            ]
            if len(candidates) == 1:
                attr, cls = candidates[0]
                return [cls], f"self.{attr}"
            if not candidates:
                return None, f"{name}() returns a module eagle3lint cannot find statically"
            return None, f"{name}() returns one of " + ", ".join(f"self.{a}" for a, _ in candidates)
        if fn is not None and fn.is_stub:
            return None, f"{name}() is only a stub in {owner.qualname if owner else '?'}"
        return None, f"{name}() returns a computed value"

    def is_default(self, lookup: MemberLookup) -> bool:
        """Whether the method found is the interfaces module's own default body."""
        owner, proto = lookup.owner, self.protocol
        return bool(owner and proto and owner.module == proto.module)

    def marked_attributes(self, ref: ClassRef) -> list[str]:
        """The children ``__init__`` builds under the language-model marker."""
        return self._marked_attributes(ref)

    def _is_language_model(self, ref: ClassRef, attr: str) -> bool:
        held = self.index.attribute_classes(ref, attr)
        return any(isinstance(h, ClassRef) and classify(self.index, h)[0] == TARGET for h in held) or any(
            isinstance(h, Unknown) and h.reason == RUNTIME_CHOICE for h in held
        )

    def _marked_attributes(self, ref: ClassRef) -> list[str]:
        """The attributes assigned inside ``with self._mark_language_model(...)`` in the
        ``__init__`` the class runs."""
        marker = self.vpack.language_model_marker
        if not marker:
            return []
        for current in self.index.mro(ref).classes:
            cls = self.index.class_summary(current)
            init = cls.methods.get("__init__") if cls else None
            if init is not None:
                return list(init.with_assigns.get(marker, []))  # the __init__ that runs decides
        return []

    # ---- a model's own override -------------------------------------------------------------
    def _from_override(self, ref: ClassRef, lookup: MemberLookup, depth: int) -> Holder:
        owner = lookup.owner
        assert owner is not None and lookup.function is not None
        via = f"the override in {owner.qualname}"
        action = self._override_action(owner, lookup.function)
        if action is None:
            return Holder(UNKNOWN, via=via, reason=f"{owner.qualname}.{self.vpack.setter} does something eagle3lint cannot follow")
        if action.kind == "record" and action.recording is not None:
            return self._recorded(ref, action.recording, via)
        current: list[Resolved] = [ref]
        path = "self"
        for step in action.path:
            following: list[Resolved] = []
            for held in current:
                if not isinstance(held, ClassRef):
                    return Holder(UNKNOWN, path=path, via=via, reason=_why(held))
                if step.endswith("()"):
                    name = step[:-2]
                    inner_lookup = self.index.lookup(held, name)
                    if inner_lookup.status != "found":
                        return Holder(UNKNOWN, path=path, via=via, reason=f"cannot follow {path}.{step}")
                    returned, why = self._method_returns(held, name, inner_lookup)
                    if returned is None:
                        return Holder(UNKNOWN, path=f"{path}.{step}", via=via, reason=why)
                    following.extend(returned)
                else:
                    following.extend(self.index.attribute_classes(held, step) or [Unknown(f"{path}.{step} is not assigned in __init__")])
            current = following
            path = f"{path}.{step}"
        bad = next((h for h in current if not isinstance(h, ClassRef)), None)
        if bad is not None or not current:
            return Holder(UNKNOWN, path=path, via=via, reason=_why(bad) if bad is not None else f"{path} is not known")
        classes = [c for c in current if isinstance(c, ClassRef)]
        if action.kind == "delegate":
            inner = self.holder(classes[0], _depth=depth + 1)
            if inner.status != RESOLVED:
                return inner
            inner_path = inner.path[len("self") :] if inner.path.startswith("self") else "." + inner.path
            return Holder(
                RESOLVED, inner.classes, path + inner_path, via, asserted_mixin=inner.asserted_mixin,
                kind=inner.kind, recording=inner.recording,
            )
        mixin = self.protocol.mixin.name if action.kind == "mixin" and self.protocol and self.protocol.mixin else None
        return Holder(RESOLVED, classes, path, via, asserted_mixin=mixin)

    def _override_action(self, owner: ClassRef, fn: FunctionSummary) -> _Action | None:
        tree = self._snippet(owner, fn)
        if tree is None:
            return None
        setter = self.vpack.setter
        capture = self.vpack.capture_attribute
        mixin_setter = self.protocol.mixin.setter if self.protocol and self.protocol.mixin else None
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    path = _self_path(target)
                    if path and path[-1] == capture:
                        return _Action("write", path[:-1])
            elif isinstance(node, ast.Call):
                path = _self_path(node.func)
                if path and path[-1] == setter and len(path) > 1:
                    return _Action("delegate", path[:-1])
                if path and mixin_setter and path[-1] == mixin_setter:
                    return _Action("mixin", path[:-1])
        function = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        recording = read_recording(function, fn.lineno) if function is not None else None
        if recording is not None:
            return _Action("record", (), recording)
        return None

    def _recorded(self, ref: ClassRef, recording: Recording, via: str) -> Holder:
        """A recorder per layer: the class itself returns the states, so it is the holder,
        provided the recorder is indexed the way this engine numbers its ids. A recorder
        records its module's output; ids that name a layer's input (vLLM's: the residual
        stream entering layer k) need the layer before it, ``layer - 1``."""
        spec = self.index.engine.pack.capture
        expected = -1 if spec is not None and spec.ids == "input" else 0
        if recording.offset != expected:
            return Holder(
                UNKNOWN, via=via,
                reason=f"the setter names each recorded layer by {recording.index_text()}, not the layer this engine's ids name",
            )
        for name, line in recording.calls:
            why = self._may_raise(ref, name)
            if why:
                return Holder(UNKNOWN, via=via, reason=f"the setter calls `self.{name}(...)` (line {line}) before it records, {why}")
        return Holder(RESOLVED, [ref], "self", via, kind=RECORDED, recording=recording)

    def _may_raise(self, ref: ClassRef, name: str) -> str:
        """Why ``self.<name>()`` may stop the setter ("" where its own body raises nothing):
        vLLM 0.18's backend checks the installed transformers there and raises below 5.2,
        while that release pins transformers below 5."""
        lookup = self.index.lookup(ref, name)
        fn, owner = lookup.function, lookup.owner
        if lookup.status != "found" or fn is None or owner is None:
            return "which eagle3lint cannot read"
        module = self.index.module(owner.module)
        tree = self.index.snippets.parse(module.path, fn.lineno, fn.end_lineno) if module is not None else None
        if tree is None:
            return "which eagle3lint cannot read"
        if any(isinstance(node, ast.Raise) for node in ast.walk(tree)):
            return f"and `{owner.qualname}.{name}` may raise"
        return ""  # its own body raises nothing (what it calls in turn is not followed)

    def _snippet(self, owner: ClassRef, fn: FunctionSummary) -> ast.AST | None:
        """The override's own syntax tree (summaries keep no bodies; overrides are few)."""
        module = self.index.module(owner.module)
        if module is None:
            return None
        return self.index.snippets.parse(module.path, fn.lineno, fn.end_lineno)


def _self_path(node: ast.AST) -> tuple[str, ...] | None:
    """``self.language_model.model.x`` -> ("language_model", "model", "x");
    ``self.get_language_model().x`` -> ("get_language_model()", "x")."""
    parts: list[str] = []
    current = node
    while True:
        if isinstance(current, ast.Attribute):
            parts.append(current.attr)
            current = current.value
        elif isinstance(current, ast.Call) and isinstance(current.func, ast.Attribute) and not current.args:
            parts.append(current.func.attr + "()")
            current = current.func.value
        else:
            break
    if isinstance(current, ast.Name) and current.id == "self" and parts:
        return tuple(reversed(parts))
    return None


def _why(resolved: Resolved | None) -> str:
    if resolved is None:
        return "not known"
    reason = getattr(resolved, "reason", None)
    if reason:
        return str(reason)
    qualified = getattr(resolved, "qualified", None)
    if qualified:
        return f"{qualified} is outside the engine"
    return f"{resolved} is not a class"
