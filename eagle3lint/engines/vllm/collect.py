"""Does a holder's ``forward`` collect auxiliary hidden states?

When EAGLE-3 is on, the runner unpacks the target's output as ``(hidden_states, aux)``. Only a
``forward`` that reads the recorded layer ids (``self.aux_hidden_state_layers``) or calls the
mixin's collector (``_maybe_add_hidden_state``) produces that pair, directly or through a helper
method, a ``super()`` call or a sub-module it calls. Bodies the summary did not walk are re-read
on their own (:mod:`eagle3lint.source.snippets`), so a "no" is always based on the code itself.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from eagle3lint.engines.vllm.index import VllmIndex
from eagle3lint.source.index import ClassRef
from eagle3lint.source.summary_types import FunctionSummary

YES = "yes"
NO = "no"
UNKNOWN = "unknown"

_MAX_DEPTH = 3


@dataclass(frozen=True)
class _Facts:
    reads: frozenset[str]  # self.<attr> loads
    calls: frozenset[str]  # called names: f(...) -> "f", x.m(...) -> "m"


@dataclass(frozen=True)
class Verdict:
    value: str  # YES | NO | UNKNOWN
    where: str  # the function that collects, or why it is unknown, or the forward that does not


class CollectChecker:
    def __init__(self, index: VllmIndex, attributes: frozenset[str], calls: frozenset[str]) -> None:
        self.index = index
        self.attributes = attributes
        self.calls = calls
        package = index.engine.pack.package
        self.model_prefixes = tuple(f"{package}.{m.replace('/', '.')}." for m in index.engine.pack.models)
        self._cache: dict[ClassRef, Verdict] = {}
        self._facts: dict[tuple[ClassRef, str], _Facts | None] = {}

    def collects(self, ref: ClassRef) -> Verdict:
        cached = self._cache.get(ref)
        if cached is None:
            cached = self._cache[ref] = self._class(ref, 0, set())
        return cached

    def _class(self, ref: ClassRef, depth: int, seen: set[tuple[ClassRef, str]]) -> Verdict:
        lookup = self.index.lookup(ref, "forward")
        if lookup.status != "found" or lookup.function is None or lookup.owner is None:
            reason = lookup.reason or f"{ref.qualname} has no forward in the engine source"
            return Verdict(UNKNOWN, reason)
        return self._function(ref, lookup.owner, lookup.function, depth, seen)

    def _function(self, ref: ClassRef, owner: ClassRef, fn: FunctionSummary, depth: int, seen: set[tuple[ClassRef, str]]) -> Verdict:
        where = f"{owner.qualname}.{fn.name}"
        key = (owner, fn.name)
        if key in seen:
            return Verdict(NO, where)
        seen.add(key)
        facts = self._facts_of(owner, fn)
        if facts is None:
            return Verdict(UNKNOWN, f"{where} cannot be read")
        if facts.reads & self.attributes or facts.calls & self.calls:
            return Verdict(YES, where)
        if depth >= _MAX_DEPTH:
            return Verdict(NO, where)
        unknown: Verdict | None = None
        callees = [self._callee(ref, name, depth + 1, seen) for name in sorted(facts.calls & facts.reads)]
        if "super" in facts.calls:
            # ``super().forward(...)``: the next definition along the MRO.
            callees.extend(self._super(ref, owner, name, depth + 1, seen) for name in sorted(facts.calls))
        for verdict in callees:
            if verdict.value == YES:
                return verdict
            if verdict.value == UNKNOWN and unknown is None:
                unknown = verdict
        return unknown or Verdict(NO, where)

    def _facts_of(self, owner: ClassRef, fn: FunctionSummary) -> _Facts | None:
        if fn.walked:
            return _Facts(frozenset(fn.self_reads), frozenset(fn.calls))
        key = (owner, fn.name)
        if key not in self._facts:
            module = self.index.module(owner.module)
            tree = self.index.snippets.parse(module.path, fn.lineno, fn.end_lineno) if module else None
            self._facts[key] = _read_facts(tree) if tree is not None else None
        return self._facts[key]

    def _super(self, ref: ClassRef, owner: ClassRef, name: str, depth: int, seen: set[tuple[ClassRef, str]]) -> Verdict:
        mro = self.index.mro(ref)
        if owner not in mro.classes:
            return Verdict(NO, name)
        for current in mro.classes[mro.classes.index(owner) + 1 :]:
            cls = self.index.class_summary(current)
            fn = cls.methods.get(name) if cls else None
            if fn is not None:
                return self._function(ref, current, fn, depth, seen)
        if mro.unknown_bases and name == "forward":
            return Verdict(UNKNOWN, f"super().{name} may come from " + ", ".join(mro.unknown_bases))
        return Verdict(NO, name)

    def _callee(self, ref: ClassRef, name: str, depth: int, seen: set[tuple[ClassRef, str]]) -> Verdict:
        lookup = self.index.lookup(ref, name)
        if lookup.status == "found" and lookup.kind == "method" and lookup.function is not None and lookup.owner is not None:
            return self._function(ref, lookup.owner, lookup.function, depth, seen)
        if lookup.status == "found" and lookup.kind == "instance_attr":
            verdict = Verdict(NO, f"self.{name}")
            for held in self.index.attribute_classes(ref, name):
                if not isinstance(held, ClassRef):
                    continue  # layers, configs: not named like a model (see VllmIndex)
                if not held.module.startswith(self.model_prefixes):
                    # A model-like module from elsewhere in the engine: not followed, not denied.
                    verdict = Verdict(UNKNOWN, f"self.{name} is a {held.qualname} from {held.module}")
                    continue
                inner = self._class(held, depth, seen)
                if inner.value == YES:
                    return inner
                if inner.value == UNKNOWN:
                    verdict = inner
            return verdict
        if lookup.status == "unknown":
            return Verdict(UNKNOWN, lookup.reason)
        return Verdict(NO, name)


def _read_facts(tree: ast.AST) -> _Facts | None:
    function = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if function is None:
        return None
    args = [*function.args.posonlyargs, *function.args.args]
    self_name = args[0].arg if args else "self"
    reads: set[str] = set()
    calls: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            if isinstance(node.value, ast.Name) and node.value.id == self_name:
                reads.add(node.attr)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                calls.add(node.func.id)
            elif isinstance(node.func, ast.Attribute):
                calls.add(node.func.attr)
    return _Facts(frozenset(reads), frozenset(calls))
