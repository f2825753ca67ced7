"""Where a decoder's ``forward`` captures, at this release: for a value ``v`` the setter recorded,
which hidden state the drafter receives.

States are numbered by the decoder layers applied: state 0 is the embeddings, state ``L + 1``
the output of layer ``L`` (the input of layer ``L + 1``), state ``n`` the last layer's output.
A loop over the layers that tests ``i in self.<capture>`` (or reads a layer's marker, or calls a
collector with ``i + c``) before the layer call captures state ``v - c``; after it, state
``v - c + 1``. A collector called before the loop captures the embeddings; a test after the loop
(``self.end_layer in self.<capture>``) the last layer's output. A capture handed into the layer
call is followed into the layer's ``forward`` in the same file: used before its attention runs,
it records the layer's input; after its MLP, its output. Anything else is unknown.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from eagle3lint.source.ast_names import dotted_parts
from eagle3lint.source.index import ClassRef
from eagle3lint.verify.pair.evaluate import Evaluator, Unresolved
from eagle3lint.verify.pair.source import Method, ReleaseCode

_ATTENTION_CALLS = ("attn", "attention")
_MLP_CALLS = ("mlp", "moe", "ffn", "feed_forward")


@dataclass
class CaptureRule:
    """How capture values become states for one holder."""

    holder: ClassRef
    path: str  # the forward's file
    loop_line: int
    # The loop: capture value v (= index + offset) is state v - offset + shift, for an index in
    # [0, n - 1]; shift is 0 before the layer call, 1 after it.
    offset: int
    shift: int
    how: str  # in words, for a message: "before layer i runs"
    # Values captured outside the loop: value -> (state, line).
    extra: dict[int, tuple[int, int]] = field(default_factory=dict)

    def state(self, value: int, num_layers: int) -> int | None:
        """The state value ``value`` captures; None when the forward never reaches it."""
        if value in self.extra:
            return self.extra[value][0]
        index = value - self.offset
        if 0 <= index < num_layers:
            return index + self.shift
        return None


def describe_state(state: int) -> str:
    return "the embeddings" if state == 0 else f"layer {state - 1}'s output"


class _Known(Evaluator):
    """The decoder's own bounds: ``self.end_layer`` is n, ``self.start_layer`` 0 (one rank)."""

    def __init__(self, num_layers: int) -> None:
        super().__init__()
        self.num_layers = num_layers

    def name(self, name: str, node: ast.AST) -> object:
        if name == "self":
            return self
        return super().name(name, node)

    def attribute_of(self, base: object, name: str, node: ast.AST) -> object:
        if base is self and name == "end_layer":
            return self.num_layers
        if base is self and name == "start_layer":
            return 0
        if name == "num_hidden_layers":
            return self.num_layers
        if base is self:
            return _Attr(name)
        return super().attribute_of(base, name, node)

    def length(self, value: object, node: ast.AST) -> int:
        if isinstance(value, _Attr) and value.name.endswith("layers"):
            return self.num_layers
        return super().length(value, node)


@dataclass(frozen=True)
class _Attr:
    name: str


def capture_rule(
    code: ReleaseCode, holder: ClassRef, capture: str, marker: bool, collect_calls: frozenset[str], num_layers: int
) -> CaptureRule:
    """The rule of ``holder``'s forward for the capture attribute (or marker) ``capture``."""
    method = code.method(holder, "forward")
    if method is None:
        raise Unresolved(f"{holder.qualname} has no forward this release can read")
    for _ in range(3):
        # A forward that only returns ``super().forward(...)`` (vLLM 0.33.0's MistralModel) runs
        # its base's loop.
        if not _only_delegates(method.node):
            break
        following = code.next_method(holder, method.owner, "forward")
        if following is None:
            break
        method = following
    try:
        return _capture_rule(code, method, holder, capture, marker, collect_calls, num_layers)
    except Unresolved as problem:
        raise problem.at(method.path) from None


def _only_delegates(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
        return False
    func = body[0].value.func
    return (
        isinstance(func, ast.Attribute) and func.attr == "forward" and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name) and func.value.func.id == "super"
    )


def _capture_rule(
    code: ReleaseCode, method: Method, holder: ClassRef, capture: str, marker: bool, collect_calls: frozenset[str], num_layers: int
) -> CaptureRule:
    loops = [node for node in _statements(method.node.body) if isinstance(node, (ast.For, ast.AsyncFor)) and _captures(node, capture, marker, collect_calls)]
    if not loops:
        raise Unresolved(f"{holder.qualname}.forward has no loop over its layers that reads `{capture}`", method.node.lineno)
    loop = loops[0]
    rule = _loop_rule(code, method, holder, loop, capture, marker, collect_calls)
    for node in _statements(method.node.body):
        if node is loop or any(node is inner for inner in ast.walk(loop)):
            continue
        _outside(node, loop, rule, capture, collect_calls, num_layers)
    return rule


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Every statement of a body, at any depth of if/with/try blocks, outside nested scopes."""
    out: list[ast.stmt] = []
    pending = list(reversed(body))
    while pending:
        stmt = pending.pop()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        out.append(stmt)
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            continue  # a loop's body belongs to the loop
        inner: list[ast.stmt] = []
        for block in ("body", "orelse", "finalbody"):
            inner.extend(getattr(stmt, block, ()) or ())
        for handler in getattr(stmt, "handlers", ()) or ():
            inner.extend(handler.body)
        pending.extend(reversed(inner))
    return out


def _reads_capture(node: ast.AST, capture: str, marker: bool) -> bool:
    for sub in ast.walk(node):
        if not marker and isinstance(sub, ast.Compare) and any(isinstance(op, ast.In) for op in sub.ops):
            path = dotted_parts(sub.comparators[0])
            if path is not None and path[-1] == capture:
                return True
        if marker and isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "getattr" and len(sub.args) >= 2:
            if isinstance(sub.args[1], ast.Constant) and sub.args[1].value == capture:
                return True
        if marker and isinstance(sub, ast.Attribute) and sub.attr == capture:
            return True
    return False


def _collects(node: ast.AST, collect_calls: frozenset[str]) -> ast.Call | None:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, (ast.Attribute, ast.Name)):
            name = sub.func.attr if isinstance(sub.func, ast.Attribute) else sub.func.id
            if name in collect_calls:
                return sub
    return None


def _captures(loop: ast.For | ast.AsyncFor, capture: str, marker: bool, collect_calls: frozenset[str]) -> bool:
    return any(_reads_capture(s, capture, marker) or _collects(s, collect_calls) is not None for s in loop.body)


def _flat(body: list[ast.stmt]) -> list[ast.stmt]:
    """A loop body with ``with`` blocks opened (a capture inside ``with recorder(...):`` is still
    a statement of the loop)."""
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            out.extend(_flat(stmt.body))
        else:
            out.append(stmt)
    return out


def _index_name(loop: ast.For | ast.AsyncFor) -> str | None:
    target = loop.target
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name):
        return target.elts[0].id
    return None


def _layer_names(loop: ast.For | ast.AsyncFor, body: list[ast.stmt]) -> set[str]:
    names: set[str] = set()
    if isinstance(loop.target, ast.Tuple) and len(loop.target.elts) == 2 and isinstance(loop.target.elts[1], ast.Name):
        names.add(loop.target.elts[1].id)
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            if isinstance(stmt.value, ast.Subscript) and "layers" in ast.unparse(stmt.value.value):
                names.add(stmt.targets[0].id)
    return names


def _is_layer_call(stmt: ast.stmt, layer_names: set[str]) -> ast.Call | None:
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Call):
            func = sub.func
            if isinstance(func, ast.Name) and func.id in layer_names:
                return sub
            if isinstance(func, ast.Subscript) and "layers" in ast.unparse(func.value):
                return sub
    return None


def _offset(expr: ast.expr, index: str | None) -> int | None:
    """``i`` -> 0, ``i + 1`` -> 1, ``i - 1`` -> -1; None for anything else."""
    if isinstance(expr, ast.Name) and expr.id == index:
        return 0
    if isinstance(expr, ast.BinOp) and isinstance(expr.left, ast.Name) and expr.left.id == index and isinstance(expr.right, ast.Constant):
        value = expr.right.value
        if isinstance(value, int) and not isinstance(value, bool):
            return value if isinstance(expr.op, ast.Add) else -value if isinstance(expr.op, ast.Sub) else None
    return None


def _tested(stmt: ast.AST, capture: str, index: str | None, marker: bool) -> int | None:
    """The offset of the value a statement tests against the capture state (0 for a marker)."""
    if marker:
        return 0 if _reads_capture(stmt, capture, True) else None
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Compare) and len(sub.ops) == 1 and isinstance(sub.ops[0], ast.In):
            path = dotted_parts(sub.comparators[0])
            if path is not None and path[-1] == capture:
                return _offset(sub.left, index)
    return None


def _loop_rule(
    code: ReleaseCode, method: Method, holder: ClassRef, loop: ast.For | ast.AsyncFor, capture: str, marker: bool, collect_calls: frozenset[str]
) -> CaptureRule:
    index = _index_name(loop)
    body = _flat(loop.body)
    layer_names = _layer_names(loop, body)
    where = f"{code.relative(method.path)}:{loop.lineno}"
    layer_at = capture_at = None
    offset: int | None = None
    passed: ast.Call | None = None
    for position, stmt in enumerate(body):
        call = _is_layer_call(stmt, layer_names)
        tested = _tested(stmt, capture, index, marker)
        collect = _collects(stmt, collect_calls)
        if call is not None and (tested is not None) and any(_reads_capture(k.value, capture, marker) for k in call.keywords):
            passed, offset = call, tested  # the capture goes into the layer call
            layer_at = position
            continue
        if call is not None and layer_at is None:
            layer_at = position
            continue
        if capture_at is None and (tested is not None or collect is not None):
            capture_at = position
            if tested is not None:
                offset = tested
            elif collect is not None and len(collect.args) >= 2:
                offset = _offset(collect.args[1], index)
    if passed is not None and offset is not None:
        shift, how = _passed_into(code, method, passed, capture, marker)
        return CaptureRule(holder, method.path, loop.lineno, offset, shift, f"{how}; the loop hands its capture into the layer call")
    if layer_at is None or capture_at is None or offset is None:
        raise Unresolved(f"where {holder.qualname}.forward captures relative to its layer call ({where})", loop.lineno)
    if capture_at < layer_at:
        return CaptureRule(holder, method.path, loop.lineno, offset, 0, "before layer i runs")
    return CaptureRule(holder, method.path, loop.lineno, offset, 1, "after layer i runs")


def _passed_into(code: ReleaseCode, method: Method, call: ast.Call, capture: str, marker: bool) -> tuple[int, str]:
    """A capture handed to the layer as a keyword: where the layer's ``forward`` (in the same
    file) uses that parameter, relative to its attention and MLP calls."""
    keyword = next(k.arg for k in call.keywords if k.arg and _reads_capture(k.value, capture, marker))
    tree = code.tree(method.path)
    layer_forwards = [
        node for node in (ast.walk(tree) if tree is not None else ())
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "forward"
        and keyword in {a.arg for a in (*node.args.args, *node.args.kwonlyargs)}
    ]
    if len(layer_forwards) != 1:
        raise Unresolved(f"which layer forward takes `{keyword}` ({code.relative(method.path)}:{call.lineno})", call.lineno)
    forward = layer_forwards[0]
    used = [n.lineno for n in ast.walk(forward) if isinstance(n, ast.Name) and n.id == keyword and isinstance(n.ctx, ast.Load)]
    calls = [(n.lineno, _callee(n)) for n in ast.walk(forward) if isinstance(n, ast.Call)]
    attention = [line for line, name in calls if any(word in name for word in _ATTENTION_CALLS)]
    mlp = [line for line, name in calls if any(word in name for word in _MLP_CALLS)]
    where = f"{code.relative(method.path)}:{min(used) if used else forward.lineno}"
    if used and attention and max(used) < min(attention):
        return 0, f"the layer records its input, before its attention runs ({where})"
    if used and mlp and min(used) > max(mlp):
        return 1, f"the layer records its output, after its MLP runs ({where})"
    raise Unresolved(f"whether the layer forward records `{keyword}` before or after it runs ({where})", forward.lineno)


def _callee(call: ast.Call) -> str:
    """The name of a submodule the layer calls (``self.self_attn(...)`` -> "self_attn"); "" for
    any other call (a helper of a submodule, ``self.attn_boundary.prepare(...)``, is not the
    attention running)."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return func.attr.lower()
    return ""


def _outside(stmt: ast.stmt, loop: ast.For | ast.AsyncFor, rule: CaptureRule, capture: str, collect_calls: frozenset[str], num_layers: int) -> None:
    """Captures outside the loop: a collector called with a constant, or a test of a value
    against the capture state (``self.end_layer in self.layers_to_capture``)."""
    before = stmt.lineno < loop.lineno
    state = 0 if before else num_layers
    collect = _collects(stmt, collect_calls)
    if collect is not None and len(collect.args) >= 2:
        value = _known(collect.args[1], num_layers)
        if value is not None:
            rule.extra.setdefault(value, (state, stmt.lineno))
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Compare) and len(sub.ops) == 1 and isinstance(sub.ops[0], ast.In):
            path = dotted_parts(sub.comparators[0])
            if path is not None and path[-1] == capture:
                value = _known(sub.left, num_layers)
                if value is not None:
                    rule.extra.setdefault(value, (state, sub.lineno))


def _known(expr: ast.expr, num_layers: int) -> int | None:
    try:
        value = _Known(num_layers).value(expr)
    except Unresolved:
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
