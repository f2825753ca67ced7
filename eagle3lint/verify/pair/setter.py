"""What the target's EAGLE-3 setter records for given ids, at this release: its arithmetic on
explicit ids and on its defaults, its branches, followed through delegation (``self.model.
set_eagle3_layers_to_capture(...)``), ``super()`` and helper methods, down to the writes of the
capture state (``self.model.layers_to_capture = [...]``) or the per-layer markers it sets.

The target object is modelled as paths from ``self`` (:class:`Obj`); what a path holds comes from
the project index (:meth:`CaptureAnalysis.holders`), so a wrapper's setter is run in its inner
model's class. Pipeline parallelism is assumed off unless the launch turns it on (a setter's
``if not self.pp_group.is_last_rank: return`` then depends on the rank: unknown).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from eagle3lint.model.capture import CaptureAnalysis
from eagle3lint.source.index import ClassRef
from eagle3lint.verify.pair.evaluate import OPAQUE, Budget, Evaluator, Unresolved
from eagle3lint.verify.pair.facts import PairFacts
from eagle3lint.verify.pair.source import Method, ReleaseCode

_MAX_DEPTH = 6


@dataclass(frozen=True)
class Obj:
    """``self.<path>`` of the target (``()`` is the target itself)."""

    path: tuple[str, ...]


@dataclass(frozen=True)
class Layer:
    """Decoder layer ``index`` of the layer list at ``self.<path>``."""

    path: tuple[str, ...]
    index: int


@dataclass(frozen=True)
class Where:
    path: str
    line: int
    text: str = ""


@dataclass
class SetterResult:
    """The capture state the setter left: each written capture attribute by the path of the
    object holding it, and each marker set on a layer list's layers."""

    attributes: dict[tuple[tuple[str, ...], str], Any] = field(default_factory=dict)
    markers: dict[tuple[tuple[str, ...], str], set[int]] = field(default_factory=dict)
    where: dict[tuple[tuple[str, ...], str], Where] = field(default_factory=dict)
    # The setter's tests as they came out for these ids: what a message cites.
    branches: list[Where] = field(default_factory=list)
    # Calls whose value the setter drops and that could not be followed (a pipeline-layout
    # helper): passed over, and said.
    skipped: list[Where] = field(default_factory=list)
    setter: Where | None = None

    def captured(self) -> list[tuple[tuple[str, ...], str, set[int]]]:
        """(holder path, attribute or marker, the values recorded) for each capture state."""
        out = []
        for (path, name), value in self.attributes.items():
            if isinstance(value, (list, tuple, set)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                out.append((path, name, set(value)))
        for (path, name), indices in self.markers.items():
            out.append((path, name, set(indices)))
        return out


@dataclass
class _Context:
    code: ReleaseCode
    analysis: CaptureAnalysis
    top: ClassRef
    facts: PairFacts
    num_layers: int
    pp: bool
    result: SetterResult = field(default_factory=SetterResult)
    written: dict[tuple[str, ...], Any] = field(default_factory=dict)
    budget: Budget = field(default_factory=Budget)  # one for the setter and the methods it calls


class _Run(Evaluator):
    def __init__(self, ctx: _Context, method: Method, instance: ClassRef, base: tuple[str, ...], env: dict[str, Any], depth: int) -> None:
        super().__init__(env, budget=ctx.budget)
        self.source = method.path
        self.ctx = ctx
        self.method = method
        self.instance = instance
        self.base = base
        self.depth = depth

    # ---- what ``self`` and its attributes are ----------------------------------------------
    def name(self, name: str, node: ast.AST) -> Any:
        if name == "self":
            return Obj(self.base)
        return super().name(name, node)

    def attribute_of(self, base: Any, name: str, node: ast.AST) -> Any:
        if not isinstance(base, Obj):
            return super().attribute_of(base, name, node)
        full = (*base.path, name)
        if full in self.ctx.written:
            return self.ctx.written[full]
        n = self.ctx.num_layers
        if name == "num_hidden_layers":
            return n
        if name in ("is_last_rank", "is_first_rank"):
            if self.ctx.pp:
                raise Unresolved(f"`{name}` depends on the pipeline rank", getattr(node, "lineno", 0))
            return True
        if name == "end_layer":
            return n
        if name == "start_layer":
            return 0
        return Obj(full)

    def set_attribute(self, base: Any, name: str, value: Any, node: ast.AST) -> None:
        where = Where(self.method.path, getattr(node, "lineno", 0))
        if isinstance(base, Obj):
            key = (*base.path, name)
            self.ctx.written[key] = value
            if name in self.ctx.facts.capture_attributes:
                self.ctx.result.attributes[(base.path, name)] = value
                self.ctx.result.where[(base.path, name)] = where
        elif isinstance(base, Layer) and name in self.ctx.facts.markers:
            marked = self.ctx.result.markers.setdefault((base.path, name), set())
            self.ctx.result.where[(base.path, name)] = where
            if value is OPAQUE:
                raise Unresolved(f"the value of marker `{name}`", where.line)
            if value:
                marked.add(base.index)
            else:
                marked.discard(base.index)

    def _layers(self, value: Any) -> bool:
        return isinstance(value, Obj) and bool(value.path) and value.path[-1].endswith("layers")

    def subscript_of(self, base: Any, key: Any, node: ast.AST) -> Any:
        if self._layers(base) and isinstance(key, int) and not isinstance(key, bool):
            n = self.ctx.num_layers
            if -n <= key < n:
                return Layer(base.path, key % n)
            raise Unresolved(f"layer {key} of a {n}-layer model (an IndexError)", getattr(node, "lineno", 0))
        return super().subscript_of(base, key, node)

    def iterate(self, value: Any, node: ast.AST) -> list[Any]:
        if self._layers(value):
            return [Layer(value.path, i) for i in range(self.ctx.num_layers)]
        return super().iterate(value, node)

    def length(self, value: Any, node: ast.AST) -> int:
        if self._layers(value):
            return self.ctx.num_layers
        return super().length(value, node)

    def has_attribute(self, base: Any, name: str, node: ast.AST) -> bool:
        if isinstance(base, Obj):
            classes = self._classes(base.path, node)
            found = {self.ctx.code.index.lookup(c, name).status for c in classes} if self.ctx.code.index else {"unknown"}
            if found == {"found"}:
                return True
            if found == {"missing"}:
                return False
        return super().has_attribute(base, name, node)

    def skip_statement(self, stmt: ast.Expr, problem: Unresolved) -> bool:
        call = stmt.value
        name = call.func.attr if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) else ""
        if name in self.ctx.analysis.spec.setters or name == self.ctx.facts.setter:
            return False  # a delegation of the setter itself must be followed
        self.ctx.result.skipped.append(Where(self.method.path, stmt.lineno, f"`{ast.unparse(stmt.value)[:80]}` ({problem.reason})"))
        return True

    def decided(self, node: ast.If, taken: bool) -> None:
        text = ast.unparse(node.test)
        self.ctx.result.branches.append(Where(self.method.path, node.lineno, f"`{text}` is {'true' if taken else 'false'}"))

    # ---- calls: delegation, super(), helpers ------------------------------------------------
    def _classes(self, path: tuple[str, ...], node: ast.AST) -> list[ClassRef]:
        if not path:
            return [self.ctx.top]
        classes = self.ctx.code.holders(self.ctx.analysis, self.ctx.top, path)
        if not classes:
            raise Unresolved(f"what `self.{'.'.join(path)}` holds", getattr(node, "lineno", 0))
        return classes

    def call_method(self, base: Any, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        if not isinstance(base, Obj):
            return super().call_method(base, name, args, kwargs, node)
        results = []
        for cls in self._classes(base.path, node):
            method = self.ctx.code.method(cls, name)
            if method is None:
                raise Unresolved(f"`{name}` of {cls.qualname} is not found", node.lineno)
            results.append(self._enter(method, cls, base.path, args, kwargs, node))
        if any(r != results[0] for r in results[1:]):
            raise Unresolved(f"`self.{'.'.join((*base.path, name))}(...)` differs between the classes it may hold", node.lineno)
        return results[0]

    def call_super(self, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        method = self.ctx.code.next_method(self.instance, self.method.owner, name)
        if method is None:
            raise Unresolved(f"`super().{name}(...)` is not found", node.lineno)
        return self._enter(method, self.instance, self.base, args, kwargs, node)

    def _enter(self, method: Method, instance: ClassRef, base: tuple[str, ...], args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> Any:
        if self.depth >= _MAX_DEPTH:
            raise Unresolved("the setter's calls nest too deep to follow", getattr(node, "lineno", 0))
        env = bind(method.node, args, kwargs)
        return _Run(self.ctx, method, instance, base, env, self.depth + 1).run(method.node.body)


def bind(node: ast.FunctionDef | ast.AsyncFunctionDef, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A method's parameters (after ``self``) bound to ``args``/``kwargs``; a parameter left
    unbound takes its default when that is a constant, else an unknown value."""
    spec = node.args
    positional = [*spec.posonlyargs, *spec.args][1:]
    defaults = [None] * (len(positional) - len(spec.defaults)) + list(spec.defaults)
    env: dict[str, Any] = {}
    for param, default in zip(positional, defaults, strict=True):
        env[param.arg] = _constant(default)
    for param, default in zip(spec.kwonlyargs, spec.kw_defaults, strict=True):
        env[param.arg] = _constant(default)
    for param, value in zip(positional, args, strict=False):
        env[param.arg] = value
    for key, value in kwargs.items():
        if key in env:
            env[key] = value
    return env


def _constant(node: ast.expr | None) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    return OPAQUE


def run_setter(
    code: ReleaseCode, analysis: CaptureAnalysis, target: ClassRef, facts: PairFacts, ids: list[int] | None, num_layers: int, pp: bool
) -> SetterResult:
    """The capture state ``target``'s setter records for ``ids`` (None: the drafter names none).
    Raises :class:`Unresolved` when any step cannot be followed."""
    method = code.method(target, facts.setter)
    if method is None:
        raise Unresolved(f"{target.qualname} has no `{facts.setter}` this release can read")
    ctx = _Context(code, analysis, target, facts, num_layers, pp)
    ctx.result.setter = Where(method.path, method.node.lineno, f"{method.owner.qualname}.{facts.setter}")
    _Run(ctx, method, target, (), bind(method.node, [list(ids) if ids is not None else None], {}), 0).run(method.node.body)
    return ctx.result


def default_ids(code: ReleaseCode, analysis: CaptureAnalysis, target: ClassRef, facts: PairFacts, num_layers: int, pp: bool) -> tuple[list[int], Where]:
    """The ids the runner asks the target for when the drafter names none (vLLM's getter)."""
    for getter in facts.default_getters:
        method = code.method(target, getter)
        if method is None:
            continue
        ctx = _Context(code, analysis, target, facts, num_layers, pp)
        value = _Run(ctx, method, target, (), {}, 0).run(method.node.body)
        if isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return list(value), Where(method.path, method.node.lineno, f"{method.owner.qualname}.{getter}")
        raise Unresolved(f"`{getter}` of {method.owner.qualname} returns {value!r}, not layer ids", method.node.lineno, method.path)
    raise Unresolved(f"{target.qualname} has none of {', '.join(facts.default_getters)}")
