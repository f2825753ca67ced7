"""A capture a library records: the setter hands layer names to a recorder, ``forward`` returns
what it recorded.

vLLM's Transformers modeling backend keeps no decoder loop of its own: the layers run inside the
library's model (``self.model``), so its ``set_aux_hidden_state_layers`` registers one recorder
per requested layer (``self.model._can_record_outputs[key] = OutputRecorder(cls,
layer_name=self._layer_names[layer - 1])``) and turns each on with a switch
(``self._output_aux_hidden_states_kwargs[f"output_{key}"] = True``); its ``forward`` passes the
switches to the recording model (``self.model(..., **self._output_aux_hidden_states_kwargs)``)
and, under a test of them, returns ``hidden_states, aux_hidden_states``.

Both halves are recognised by their shape, never by a name: a loop over the requested layers
that builds an object from a per-layer table entry and stores it, keyed by the layer, under an
attribute path of ``self`` (the recorder), and that sets, keyed by the layer, entries of another
``self`` attribute (a switch); a ``forward`` that hands a switch on as ``**`` keywords and
returns a pair under a test that reads it, directly or through ``super().forward`` returned as
it is. What does not fit is not recognised (the holder stays unknown): never a guess.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from eagle3lint.engines.vllm.collect import NO, UNKNOWN, YES, Verdict
from eagle3lint.engines.vllm.index import VllmIndex
from eagle3lint.source.ast_names import call_name
from eagle3lint.source.index import ClassRef
from eagle3lint.source.summary_types import FunctionSummary

_MAX_DEPTH = 4


@dataclass(frozen=True)
class Recording:
    """What a recording setter does, as far as the analysis needs it."""

    recorder: str  # what it builds per layer: "OutputRecorder"
    store: tuple[str, ...]  # where it registers them: ("model", "_can_record_outputs")
    switches: tuple[str, ...]  # ``self`` attributes it sets per layer, which forward must read
    table: str  # the per-layer table a layer is named from: "_layer_names"
    offset: int | None  # ``self._layer_names[layer - 1]``: -1 (None: not a constant offset)
    line: int  # the recorder's line
    # ``self.<method>(...)`` calls the setter makes besides recording (a version check that
    # raises): (method, line). The holder is proven only where none of them can raise.
    calls: tuple[tuple[str, int], ...] = ()

    def describe(self) -> str:
        where = "self." + ".".join(self.store)
        return f"`{self.recorder}` in `{where}`"

    def index_text(self) -> str:
        if self.offset is None:
            return f"`self.{self.table}[...]`"
        sign = "" if self.offset == 0 else (f" + {self.offset}" if self.offset > 0 else f" - {-self.offset}")
        return f"`self.{self.table}[layer{sign}]`"


# ---- the setter --------------------------------------------------------------------------------


def read_recording(function: ast.FunctionDef | ast.AsyncFunctionDef, first_line: int | None = None) -> Recording | None:
    """The recording ``function`` (a setter taking the requested layer ids) sets up, or None;
    ``first_line``: the file's line of its ``def`` (where it was parsed on its own)."""
    shift = first_line - function.lineno if first_line is not None else 0
    args = [*function.args.posonlyargs, *function.args.args]
    if len(args) < 2:
        return None
    self_name, layers = args[0].arg, args[1].arg
    for loop in _loops(function):
        if not isinstance(loop.target, ast.Name) or layers not in _names(loop.iter):
            continue
        found = _in_loop(loop, self_name, loop.target.id)
        if found is not None:
            calls = tuple((name, line + shift) for name, line in _self_calls(function, self_name))
            return replace(found, line=found.line + shift, calls=calls)
    return None


def _self_calls(function: ast.FunctionDef | ast.AsyncFunctionDef, self_name: str) -> tuple[tuple[str, int], ...]:
    """The methods of ``self`` the setter calls (``self.check_version(...)``), in order."""
    calls = [
        (node.func.attr, node.lineno)
        for node in ast.walk(function)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == self_name
    ]
    return tuple(sorted(calls, key=lambda c: c[1]))


def _loops(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.For]:
    found: list[ast.For] = []
    pending: list[ast.stmt] = list(function.body)
    while pending:
        stmt = pending.pop(0)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, ast.For):
            found.append(stmt)
        for block in ("body", "orelse", "finalbody"):
            pending.extend(getattr(stmt, block, ()) or ())
    return found


def _in_loop(loop: ast.For, self_name: str, var: str) -> Recording | None:
    # Names computed from the loop variable, with the per-layer table entries they come from.
    tainted: dict[str, set[tuple[str, int | None]]] = {var: set()}
    built: dict[str, tuple[str, set[tuple[str, int | None]], int]] = {}  # name -> (recorder, tables, line)
    store: tuple[str, ...] | None = None
    recorder: tuple[str, set[tuple[str, int | None]], int] | None = None
    switches: list[str] = []
    for stmt in _flat(loop.body):
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, ast.Name):
            sources = _sources(value, self_name, var, tainted)
            if sources is None:
                continue
            tainted[target.id] = sources
            if isinstance(value, ast.Call) and call_name(value) and _names(value) & tainted.keys() - {target.id}:
                built[target.id] = (call_name(value), sources, stmt.lineno)
            continue
        if not isinstance(target, ast.Subscript) or _sources(target.slice, self_name, var, tainted) is None:
            continue  # only entries keyed by the layer
        path = _self_path(target.value, self_name)
        if path is None:
            continue
        made = built.get(value.id) if isinstance(value, ast.Name) else None
        if made is None and isinstance(value, ast.Call) and call_name(value):
            sources = _sources(value, self_name, var, tainted)
            made = (call_name(value), sources, stmt.lineno) if sources is not None else None
        if made is not None and store is None:
            store, recorder = path, made
        elif len(path) == 1:
            switches.append(path[0])
    if store is None or recorder is None or not switches:
        return None
    name, tables, line = recorder
    if len({t for t, _ in tables}) != 1:
        return None  # a layer named from no table, or from several
    table = next(iter(tables))[0]
    offsets = {o for t, o in tables}
    offset = next(iter(offsets)) if len(offsets) == 1 else None
    kept = tuple(dict.fromkeys(s for s in switches if s != store[0]))
    if not kept:
        return None
    return Recording(name, store, kept, table, offset, line)


def _flat(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a loop body in order, ``if`` bodies included (nested scopes not)."""
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        out.append(stmt)
        if isinstance(stmt, ast.If):
            out.extend(_flat(stmt.body) + _flat(stmt.orelse))
    return out


def _sources(node: ast.AST, self_name: str, var: str, tainted: dict[str, set[tuple[str, int | None]]]) -> set[tuple[str, int | None]] | None:
    """The table entries ``node`` is computed from, where it depends on the loop variable (None
    where it does not): ``self._layer_names[layer - 1]`` -> {("_layer_names", -1)}."""
    used = _names(node) & tainted.keys()
    if not used:
        return None
    sources: set[tuple[str, int | None]] = set()
    for name in used:
        sources |= tainted[name]
    for sub in ast.walk(node):
        if isinstance(sub, ast.Subscript) and var in _names(sub.slice):
            path = _self_path(sub.value, self_name)
            if path is not None and len(path) == 1:
                sources.add((path[0], _offset(sub.slice, var)))
    return sources


def _offset(node: ast.AST, var: str) -> int | None:
    if isinstance(node, ast.Name) and node.id == var:
        return 0
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, (ast.Add, ast.Sub))
        and isinstance(node.left, ast.Name)
        and node.left.id == var
        and isinstance(node.right, ast.Constant)
        and isinstance(node.right.value, int)
    ):
        return node.right.value if isinstance(node.op, ast.Add) else -node.right.value
    return None


# ---- forward -----------------------------------------------------------------------------------


class RecordedCollect:
    """Does a class's ``forward`` return what a recording setter recorded?"""

    def __init__(self, index: VllmIndex) -> None:
        self.index = index
        self._cache: dict[tuple[ClassRef, Recording], Verdict] = {}

    def collects(self, ref: ClassRef, recording: Recording) -> Verdict:
        key = (ref, recording)
        if key not in self._cache:
            self._cache[key] = self._verdict(ref, recording)
        return self._cache[key]

    def _verdict(self, ref: ClassRef, recording: Recording) -> Verdict:
        lookup = self.index.lookup(ref, "forward")
        if lookup.status != "found" or lookup.owner is None or lookup.function is None:
            return Verdict(UNKNOWN, lookup.reason or f"{ref.qualname} has no forward in the engine source")
        owner, fn = lookup.owner, lookup.function
        for _ in range(_MAX_DEPTH):
            where = f"`{owner.qualname}.forward`"
            function = self._function(owner, fn.lineno, fn.end_lineno)
            if function is None:
                return Verdict(UNKNOWN, f"{where} cannot be read")
            self_name = function.args.args[0].arg if function.args.args else "self"
            hands_on, returns_pair, reads = _uses_switch(function, self_name, set(recording.switches))
            if hands_on and returns_pair:
                return Verdict(YES, f"{owner.qualname}.forward")
            if reads:
                return Verdict(UNKNOWN, f"{where} reads the recording switch but is not seen to return the recorded states")
            passes = _returns_super(function)
            if passes is None:
                return Verdict(NO, f"{owner.qualname}.forward")
            if not passes:
                return Verdict(UNKNOWN, f"{where} changes what `super().forward` returns")
            following = self._next(ref, owner)
            if following is None:
                return Verdict(UNKNOWN, f"{where}: `super().forward` is not in the engine source")
            owner, fn = following
        return Verdict(UNKNOWN, "the forward chain is too deep")

    def _next(self, ref: ClassRef, after: ClassRef) -> tuple[ClassRef, FunctionSummary] | None:
        classes = self.index.mro(ref).classes
        if after not in classes:
            return None
        for current in classes[classes.index(after) + 1 :]:
            summary = self.index.class_summary(current)
            fn = summary.methods.get("forward") if summary is not None else None
            if fn is not None:
                return current, fn
        return None

    def _function(self, owner: ClassRef, start: int, end: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        module = self.index.module(owner.module)
        tree = self.index.snippets.parse(module.path, start, end) if module is not None else None
        if tree is None:
            return None
        return next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)


def _uses_switch(function: ast.FunctionDef | ast.AsyncFunctionDef, self_name: str, switches: set[str]) -> tuple[bool, bool, bool]:
    """Whether ``function`` hands a switch on as ``**`` keywords, returns a pair under a test
    that reads one, and reads one at all."""

    def is_switch(node: ast.AST) -> bool:
        path = _self_path(node, self_name)
        return path is not None and len(path) == 1 and path[0] in switches

    reads = any(is_switch(n) for n in ast.walk(function))
    hands_on = any(
        isinstance(n, ast.Call) and any(k.arg is None and is_switch(k.value) for k in n.keywords) for n in ast.walk(function)
    )
    returns_pair = any(
        isinstance(n, ast.If)
        and any(is_switch(t) for t in ast.walk(n.test))
        and any(isinstance(r, ast.Return) and isinstance(r.value, ast.Tuple) and len(r.value.elts) == 2 for s in n.body for r in ast.walk(s))
        for n in ast.walk(function)
    )
    return hands_on, returns_pair, reads


def _returns_super(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool | None:
    """None where ``function`` never calls ``super().forward``; True where every return hands
    its result on as it is (``return super().forward(...)``, or a name bound only to it)."""

    def is_super_forward(node: ast.AST | None) -> bool:
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "forward"
            and isinstance(node.func.value, ast.Call)
            and call_name(node.func.value) == "super"
        )

    nodes = list(ast.walk(function))
    if not any(is_super_forward(n) for n in nodes):
        return None
    bound: dict[str, bool] = {}
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = bound.get(target.id, True) and is_super_forward(node.value)
    returns = [n for n in nodes if isinstance(n, ast.Return)]
    return bool(returns) and all(
        is_super_forward(r.value) or (isinstance(r.value, ast.Name) and bound.get(r.value.id, False)) for r in returns
    )


# ---- small helpers ---------------------------------------------------------------------------


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}




def _self_path(node: ast.AST, self_name: str) -> tuple[str, ...] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == self_name and parts:
        return tuple(reversed(parts))
    return None
