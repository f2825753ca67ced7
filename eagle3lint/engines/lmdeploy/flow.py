"""The model's side of LMDeploy's EAGLE-3 contract: from the capture layers to the drafter.

For a target class, read from its source (never imported):

* which decoder captures: a ``forward`` whose layer loop tests the layer index against capture
  state (``if idx in self.aux_hidden_state_layers:``, a local alias of it, a set built from it)
  and that returns the captured states under the key (``dict(..., aux_hidden_states=...)``);
* where that state comes from: the config (``getattr(config, 'aux_hidden_state_layers', ())``) or
  the build context (``get_build_model_context().spec_model_ctx.target_aux_hidden_state_layers``);
* whether every ``forward`` on the way out passes it on: returns the inner model's output, or
  puts the key (or a value read from it) into what it returns;
* whether the CUDA-graph path keeps it: the class's ``get_outputs_cudagraph`` names the key,
  delegates to an inner model that does, or is the mixin's default, which drops it;
* a ``raise`` a launch option's branch reaches while capture layers are set (Kimi-K2's microbatch).

Bodies are re-read on their own (``eagle3lint.source.snippets``), from the edited texts in a fixer's
re-check.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from eagle3lint.engines.lmdeploy.evaluate import exception_name, message_of
from eagle3lint.engines.lmdeploy.pack import LmdeployPack, lmdeploy_pack
from eagle3lint.source.index import ClassRef, ProjectIndex
from eagle3lint.source.snippets import SnippetReader
from eagle3lint.source.summary_types import FunctionSummary

CAPTURES, PASSES, DROPS, NONE, UNKNOWN = "captures", "passes", "drops", "none", "unknown"
KEEPS, LOSES = "keeps", "loses"
CONFIG, CONTEXT = "config", "context"
_MAX_DEPTH = 4
# What names capture state (the pack's capture attributes share it).
_WORD = "aux_hidden_state"


@dataclass(frozen=True)
class Spot:
    """A line of a model file (absolute path), with the class and function it is in."""

    path: str
    line: int
    owner: str  # qualname of the class
    function: str


@dataclass(frozen=True)
class Source:
    kind: str  # CONFIG | CONTEXT | UNKNOWN
    spot: Spot | None
    attribute: str  # the state the loop reads: "aux_hidden_state_layers"


@dataclass(frozen=True)
class OptionRaise:
    option: str
    spot: Spot
    exception: str
    message: str


@dataclass(frozen=True)
class Flow:
    """How a class's ``forward`` stands with the captured states."""

    status: str  # CAPTURES (its own loop), PASSES (an inner model's), DROPS, NONE, UNKNOWN
    decoder: ClassRef | None = None  # the class whose loop captures
    source: Source | None = None
    # DROPS: the forward that loses the key, and whether the model it loses it from is itself a
    # causal LM (a wrapper around a language model) or the decoder under it.
    dropped_at: Spot | None = None
    drops_language_model: ClassRef | None = None
    # The chain of classes from this one down to the decoder (attribute names).
    chain: tuple[str, ...] = ()
    why: str = ""
    raises: tuple[OptionRaise, ...] = ()


@dataclass(frozen=True)
class Graph:
    """Whether the CUDA-graph output path of a class keeps the captured states."""

    status: str  # KEEPS | LOSES | UNKNOWN
    spot: Spot | None = None  # where: the class's override, or the mixin's default
    default: bool = False  # the mixin's default, inherited
    via: tuple[str, ...] = ()  # attributes it delegates through
    why: str = ""


@dataclass
class _Body:
    tree: ast.FunctionDef | ast.AsyncFunctionDef
    offset: int
    path: str
    owner: ClassRef
    _nodes: list[ast.AST] | None = None

    @property
    def nodes(self) -> list[ast.AST]:
        """Every node of the body, walked once (a decoder's forward is read several ways)."""
        if self._nodes is None:
            self._nodes = list(ast.walk(self.tree))
        return self._nodes

    def spot(self, node: ast.AST) -> Spot:
        return Spot(self.path, getattr(node, "lineno", 0) + self.offset, self.owner.qualname, self.tree.name)


@dataclass
class FlowReader:
    index: ProjectIndex
    snippets: SnippetReader
    lpack: LmdeployPack
    option_tests: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # The module of the CUDA-graph mixin every model inherits its output path from.
    mixin_module: str = ""
    _flows: dict[ClassRef, Flow] = field(default_factory=dict)
    _graphs: dict[ClassRef, Graph] = field(default_factory=dict)
    _bodies: dict[tuple[ClassRef, str], _Body | None] = field(default_factory=dict)

    # ---- bodies -----------------------------------------------------------------------------
    def body(self, owner: ClassRef, fn: FunctionSummary) -> _Body | None:
        key = (owner, fn.name)
        if key in self._bodies:
            return self._bodies[key]
        module = self.index.module(owner.module)
        found: _Body | None = None
        if module is not None:
            tree = self.snippets.parse(module.path, fn.lineno, fn.end_lineno)
            node = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None) if tree else None
            if node is not None:
                lines = self.snippets.lines(module.path) or [""]
                indented = lines[fn.lineno - 1][:1].isspace() if fn.lineno - 1 < len(lines) else False
                found = _Body(node, fn.lineno - 1 - (1 if indented else 0), module.path, owner)
        self._bodies[key] = found
        return found

    def method(self, ref: ClassRef, name: str) -> tuple[ClassRef, _Body] | str | None:
        """The body of ``ref``'s method (along its MRO); a reason string where it cannot be read."""
        lookup = self.index.lookup(ref, name)
        if lookup.status == "missing":
            return None
        if lookup.status != "found" or lookup.function is None or lookup.owner is None:
            return lookup.reason or f"{ref.qualname}.{name} cannot be resolved"
        body = self.body(lookup.owner, lookup.function)
        if body is None:
            return f"{lookup.owner.qualname}.{name} cannot be read"
        return lookup.owner, body

    # ---- the eager path ---------------------------------------------------------------------
    def flow(self, ref: ClassRef, _depth: int = 0, _seen: frozenset[ClassRef] = frozenset()) -> Flow:
        cached = self._flows.get(ref)
        if cached is not None:
            return cached
        result = self._flow(ref, _depth, _seen | {ref})
        if _depth == 0 or result.status != UNKNOWN:
            self._flows[ref] = result
        return result

    def _flow(self, ref: ClassRef, depth: int, seen: frozenset[ClassRef]) -> Flow:
        found = self.method(ref, "forward")
        if found is None:
            return Flow(NONE, why=f"{ref.qualname} has no forward")
        if isinstance(found, str):
            return Flow(UNKNOWN, why=found)
        owner, body = found
        facts = _ForwardFacts(body, self.lpack.aux_key, self.option_tests)
        raises = tuple(facts.option_raises)
        if facts.captures:
            source = self.source(ref, facts.state_attributes)
            return Flow(CAPTURES, ref, source, chain=(), raises=raises)
        if depth >= _MAX_DEPTH:
            return Flow(UNKNOWN, why=f"{ref.qualname}: the models are nested too deep to follow", raises=raises)
        best: Flow | None = None
        # Only models are followed (a vision tower, an embedding or a layer holds no decoder the
        # engine's output comes from): the rule pack's inner-model class names.
        pattern = re.compile(self.index.engine.pack.inner_model_class_pattern.pattern, re.I)  # ``Qwen3model``
        for attr in facts.inner_calls:
            held = [
                h for h in self.index.attribute_classes(ref, attr)
                if isinstance(h, ClassRef) and h not in seen and pattern.search(h.qualname.rsplit(".", 1)[-1])
            ]
            for inner in held:
                inner_flow = self.flow(inner, depth + 1, seen)
                raises = tuple(dict.fromkeys([*raises, *inner_flow.raises]))
                if inner_flow.status in (CAPTURES, PASSES):
                    if facts.passes(attr):
                        return Flow(PASSES, inner_flow.decoder, inner_flow.source, chain=(attr, *inner_flow.chain), raises=raises)
                    language_model = inner if self._is_language_model(inner) else None
                    return Flow(
                        DROPS, inner_flow.decoder, inner_flow.source, facts.body.spot(facts.body.tree), language_model,
                        chain=(attr, *inner_flow.chain), why=f"`{owner.qualname}.forward` does not return `self.{attr}`'s `{self.lpack.aux_key}`", raises=raises,
                    )
                if inner_flow.status == DROPS:
                    return Flow(DROPS, inner_flow.decoder, inner_flow.source, inner_flow.dropped_at, inner_flow.drops_language_model, (attr, *inner_flow.chain), inner_flow.why, raises)
                if inner_flow.status == UNKNOWN and best is None:
                    best = inner_flow
        if best is not None:
            return Flow(UNKNOWN, why=best.why, raises=raises)
        return Flow(NONE, why=f"no decoder loop under `{owner.qualname}.forward` captures", raises=raises)

    def _is_language_model(self, ref: ClassRef) -> bool:
        """A causal LM (it has an LM head), as opposed to the decoder a causal LM holds."""
        from eagle3lint.model.models import TARGET, classify

        return classify(self.index, ref)[0] == TARGET

    def source(self, ref: ClassRef, attributes: tuple[str, ...]) -> Source:
        """Where the decoder's capture state comes from: its ``__init__`` (or a base's)."""
        found = self.method(ref, "__init__")
        if found is None or isinstance(found, str):
            return Source(UNKNOWN, None, attributes[0] if attributes else "")
        _, body = found
        assigned: dict[str, ast.expr] = {}
        for node in ast.walk(body.tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self" and node.value is not None:
                        assigned.setdefault(target.attr, node.value)
        for attribute in attributes:
            value, seen = assigned.get(attribute), {attribute}
            # ``self._set = frozenset(self.aux_hidden_state_layers)``: follow to what it is built from.
            while value is not None:
                text = ast.unparse(value)
                if self.lpack.context_attribute in text:
                    return Source(CONTEXT, body.spot(value), attribute)
                if self.lpack.layers_attribute in text and ("config" in text):
                    return Source(CONFIG, body.spot(value), attribute)
                inner = [n.attr for n in ast.walk(value) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" and n.attr not in seen]
                if not inner:
                    break
                seen.add(inner[0])
                value = assigned.get(inner[0])
        return Source(UNKNOWN, None, attributes[0] if attributes else "")

    # ---- the CUDA-graph path ----------------------------------------------------------------
    def graph(self, ref: ClassRef, _depth: int = 0) -> Graph:
        cached = self._graphs.get(ref)
        if cached is None:
            cached = self._graph(ref, _depth)
            self._graphs[ref] = cached
        return cached

    def _graph(self, ref: ClassRef, depth: int) -> Graph:
        name = self.lpack.graph_method
        lookup = self.index.lookup(ref, name)
        if lookup.status != "found" or lookup.owner is None or lookup.function is None:
            return Graph(UNKNOWN, why=lookup.reason or f"{ref.qualname} has no `{name}`")
        owner = lookup.owner
        found = self.method(ref, name)
        if found is None or isinstance(found, str):
            return Graph(UNKNOWN, why=str(found))
        _, body = found
        keeps = any(isinstance(n, ast.Constant) and n.value == self.lpack.aux_key for n in body.nodes)
        if keeps:
            return Graph(KEEPS, body.spot(body.tree), default=owner.module == self.mixin_module)
        if owner.module == self.mixin_module:
            return Graph(LOSES, body.spot(body.tree), default=True)
        for call in (n for n in body.nodes if isinstance(n, ast.Call)):
            func = call.func
            if not (isinstance(func, ast.Attribute) and func.attr == name):
                continue
            target = func.value
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self" and depth < _MAX_DEPTH:
                held = [h for h in self.index.attribute_classes(ref, target.attr) if isinstance(h, ClassRef)]
                if held:
                    inner = self.graph(held[0], depth + 1)
                    return Graph(inner.status, inner.spot if inner.status != KEEPS else body.spot(body.tree), inner.default, (target.attr, *inner.via), inner.why)
        return Graph(LOSES, body.spot(body.tree))


class _ForwardFacts:
    """What one ``forward`` body does with the captured states."""

    def __init__(self, body: _Body, key: str, option_tests: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
        self.body = body
        self.key = key
        self.aliases: set[str] = set()  # locals bound to capture state
        self.state_attributes: tuple[str, ...] = ()
        self.inner_calls: list[str] = []  # self.<attr>(...) / self.<attr>.forward(...)
        self._bound: dict[str, str] = {}  # local -> the inner attribute its value comes from
        self._aux_names: set[str] = set()  # locals holding the captured states
        # Locals rebound to a part of another local's value other than the key: (name, source, node).
        self._cuts: list[tuple[str, str, ast.Assign]] = []
        states: list[str] = []
        nodes = body.nodes
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
                attr = _self_attr(value)
                if isinstance(target, ast.Name) and attr and _WORD in attr:
                    self.aliases.add(target.id)
                    states.append(attr)
                inner = _inner_call(value)
                if inner is not None:
                    if inner not in self.inner_calls:
                        self.inner_calls.append(inner)
                    if isinstance(target, ast.Name):
                        self._bound[target.id] = inner  # the inner model's whole output
                    else:
                        # ``hidden_states, embeds, aux_hidden_states = self.model(...)``
                        self._aux_names.update(name for name in _names(target) if "aux" in name)
                if isinstance(target, ast.Name) and _reads_key(value, key):
                    self._aux_names.add(target.id)
                # ``outputs = outputs['hidden_states']``: the inner output cut down to a tensor
                if isinstance(target, ast.Name) and _cut(value, key) is not None:
                    self._cuts.append((target.id, _cut(value, key) or "", node))
            elif isinstance(node, ast.Call):
                inner = _inner_call(node)
                if inner is not None and inner not in self.inner_calls:
                    self.inner_calls.append(inner)
        self.captures = False
        for loop in (n for n in nodes if isinstance(n, (ast.For, ast.AsyncFor))):
            index = _loop_index(loop)
            if index is None or "layers" not in ast.unparse(loop.iter):
                continue
            for test in (n for n in ast.walk(loop) if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.In)):
                if not (isinstance(test.left, ast.Name) and test.left.id == index):
                    continue
                right = test.comparators[0]
                attr = _self_attr(right)
                if attr and _WORD in attr:
                    states.append(attr)
                    self.captures = True
                elif isinstance(right, ast.Name) and right.id in self.aliases:
                    self.captures = True
        self.state_attributes = tuple(dict.fromkeys(states))
        # ``if '<key>' in outputs: return outputs``: the inner output handed on whole when it
        # carries the key (the locals returned so).
        self._guarded: set[str] = set()
        for node in nodes:
            if isinstance(node, ast.If) and any(
                isinstance(c, ast.Compare) and isinstance(c.left, ast.Constant) and c.left.value == key and any(isinstance(op, ast.In) for op in c.ops)
                for c in ast.walk(node.test)
            ):
                self._guarded.update(r.value.id for r in node.body if isinstance(r, ast.Return) and isinstance(r.value, ast.Name))
        self.returns_key = self._returns_key()
        self.captures = self.captures and self.returns_key
        self.option_raises = self._option_raises(option_tests)

    def _returned(self) -> list[ast.expr]:
        out: list[ast.expr] = []
        for node in self.body.nodes:
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                out.extend(value.elts if isinstance(value, ast.Tuple) else [value])
        return out

    def _returns_key(self) -> bool:
        returned = self._returned()
        names = {n.id for n in returned if isinstance(n, ast.Name)}
        for value in returned:
            if _has_key(value, self.key):
                return True
        for node in self.body.nodes:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (
                        isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name)
                        and target.value.id in names
                        and isinstance(target.slice, ast.Constant)
                        and target.slice.value == self.key
                    ):
                        return True
                if isinstance(node.targets[0], ast.Name) and node.targets[0].id in names and _has_key(node.value, self.key):
                    return True
        return False

    def passes(self, attr: str) -> bool:
        """The inner model ``self.<attr>``'s output reaches what this forward returns, with its
        key (returned whole, or the key set in the returned dict, or the value read from it). A
        forward that somewhere returns a part of that output (``return outputs['hidden_states']``,
        ``outputs = outputs[0]``) drops the key on the path where the inner model returns it."""
        if self.returns_key:
            return True
        inner_names = {name for name, source in self._bound.items() if source == attr}
        if inner_names & self._guarded:
            return True
        returned = self._returned()
        returned_names = {v.id for v in returned if isinstance(v, ast.Name)}
        if returned_names & self._aux_names:
            return True  # ``return hidden_states, embeds, aux_hidden_states``: the value, by position
        if any(_cut(v, self.key) in inner_names for v in returned):
            return False
        if any(name in returned_names and source in inner_names for name, source, _ in self._cuts):
            return False
        for value in returned:
            if _inner_call(value) == attr:
                return True
            if isinstance(value, ast.Name) and (self._bound.get(value.id) == attr or value.id in self._aux_names):
                return True
        return False

    def _option_raises(self, option_tests: tuple[tuple[str, tuple[str, ...]], ...]) -> list[OptionRaise]:
        out: list[OptionRaise] = []

        def visit(body: list[ast.stmt], options: tuple[str, ...], capture: bool) -> None:
            for stmt in body:
                if isinstance(stmt, ast.If):
                    text = ast.unparse(stmt.test)
                    found = tuple(name for name, needles in option_tests if any(n in text for n in needles))
                    visit(stmt.body, (*options, *found), capture or _WORD in text)
                    visit(stmt.orelse, options, capture)
                elif isinstance(stmt, ast.Raise) and options and capture:
                    out.extend(OptionRaise(o, self.body.spot(stmt), exception_name(stmt.exc), message_of(stmt.exc)) for o in options)
                else:
                    for block in ("body", "orelse", "finalbody"):
                        inner = getattr(stmt, block, None)
                        if inner and not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                            visit(inner, options, capture)

        visit(self.body.tree.body, (), False)
        return out


def _self_attr(node: ast.AST) -> str | None:
    """``self.x`` or ``self.model.x`` (the last name)."""
    if isinstance(node, ast.Attribute):
        base = node.value
        while isinstance(base, ast.Attribute):
            base = base.value
        if isinstance(base, ast.Name) and base.id == "self":
            return node.attr
    return None


def _inner_call(node: ast.AST) -> str | None:
    """``self.model(...)`` / ``self.model.forward(...)`` -> "model"."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        func = func.value
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return func.attr
    return None


def _names(target: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _has_key(node: ast.AST, key: str) -> bool:
    """``dict(..., <key>=...)`` or ``{..., '<key>': ...}``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return any(kw.arg == key for kw in node.keywords)
    if isinstance(node, ast.Dict):
        return any(isinstance(k, ast.Constant) and k.value == key for k in node.keys)
    return False


def _cut(node: ast.AST, key: str) -> str | None:
    """The local a part of which ``node`` takes (``outputs['hidden_states']``, ``outputs[0]``,
    ``outputs.get('hidden_states')``), other than the key itself; None for anything else."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        if isinstance(node.slice, ast.Constant) and node.slice.value == key:
            return None
        return node.value.id
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and isinstance(node.func.value, ast.Name)
        and node.args
        and not (isinstance(node.args[0], ast.Constant) and node.args[0].value == key)
    ):
        return node.func.value.id
    return None


def _reads_key(node: ast.AST, key: str) -> bool:
    """``x.get('<key>')`` / ``x['<key>']``."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "get" and sub.args:
            if isinstance(sub.args[0], ast.Constant) and sub.args[0].value == key:
                return True
        if isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Constant) and sub.slice.value == key:
            return True
    return False


def _loop_index(loop: ast.For | ast.AsyncFor) -> str | None:
    target = loop.target
    if isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
        return target.elts[0].id
    if isinstance(target, ast.Name) and isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "range":
        return target.id
    return None


def flow_reader(index: ProjectIndex) -> FlowReader:
    pack = index.engine.pack
    lpack = lmdeploy_pack(pack)
    tests = tuple((o.name, o.tests) for o in pack.options.values() if o.tests)
    mixin = ".".join((pack.package, *lpack.graph_mixin_file.removesuffix(".py").split("/")))
    return FlowReader(index, index.snippets, lpack, tests, mixin)
