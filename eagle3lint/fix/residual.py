"""What a capture fix must capture, read from the decoder layer's own ``forward``.

A decoder loop ``hidden_states, residual = layer(positions, hidden_states, residual)`` carries the
residual stream in one of two ways, and the state the next layer receives differs:

- **pre-norm** (Llama): the layer reads the residual it is handed (``input_layernorm(hidden_states,
  residual)`` adds them) and returns its output *without* the residual added; the state between
  layers is ``hidden_states + residual``.
- **post-norm** (EXAONE 4): the layer ignores the residual it is handed (it is reassigned before
  any read, or not passed at all) and returns an output with the residual added already; the
  state between layers is ``hidden_states`` alone. Capturing ``hidden_states + residual`` there
  would hand the drafter a doubled residual, silently.

Each is proven from the layer's ``forward`` (every class ``self.<layers>`` is built from, along
the decoder's MRO); where the classes or their handling cannot be read, the answer is unknown,
with the reason, and the fix is only shown.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from eagle3lint.fix.capture_patterns import method_node
from eagle3lint.fix.planner import FixEnv
from eagle3lint.source.ast_names import dotted_name
from eagle3lint.source.index import ClassRef, Unknown

PRE_NORM, POST_NORM, UNKNOWN = "pre-norm", "post-norm", "unknown"

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Residual:
    kind: str  # PRE_NORM | POST_NORM | UNKNOWN
    reason: str  # how it was proven, or why it could not be
    layers: tuple[ClassRef, ...] = ()

    def captured(self, hidden: str, residual: str) -> str:
        """The expression the drafter wants between layers."""
        return f"{hidden} + {residual}" if self.kind == PRE_NORM else hidden


def residual_handling(env: FixEnv, decoder: ClassRef, call: ast.Call, residual: str, layers_attribute: str = "layers") -> Residual:
    """How the layers of ``decoder`` (called as ``call`` in its loop, with the loop's residual in
    the name ``residual``) handle the residual stream."""
    classes = layer_classes(env, decoder, layers_attribute)
    if isinstance(classes, str):
        return Residual(UNKNOWN, classes)
    kinds: dict[str, list[str]] = {}
    for layer in classes:
        kind, why = _one_layer(env, layer, call, residual)
        if kind == UNKNOWN:
            return Residual(UNKNOWN, why, tuple(classes))
        kinds.setdefault(kind, []).append(why)
    if len(kinds) != 1:
        names = ", ".join(f"`{c.qualname}`" for c in classes)
        return Residual(UNKNOWN, f"the layer classes of `{decoder.qualname}` ({names}) handle the residual differently", tuple(classes))
    (kind, whys), = kinds.items()
    return Residual(kind, "; ".join(dict.fromkeys(whys)), tuple(classes))


def layer_classes(env: FixEnv, decoder: ClassRef, attribute: str) -> list[ClassRef] | str:
    """The engine classes ``self.<attribute>`` is built from in the ``__init__`` that assigns it
    (the constructor calls in the assigned value: ``nn.ModuleList([Layer(...) ...])``,
    ``make_layers(n, lambda prefix: Layer(...))``), or why they are not known."""
    owner = env.index.lookup(decoder, attribute).owner
    init = method_node(env, owner, "__init__") if owner is not None else None
    if owner is None or init is None:
        return f"cannot find the `__init__` that builds `{decoder.qualname}.{attribute}`"
    values = [node.value for node in ast.walk(init) if isinstance(node, (ast.Assign, ast.AnnAssign)) and _assigns(node, attribute)]
    if not values or any(v is None for v in values):
        return f"`{owner.qualname}.__init__` does not build `self.{attribute}` from a call"
    summary = env.index.class_summary(owner)
    defaulted = set(summary.init_param_defaults) if summary is not None else set()
    local = _local_names(init) - defaulted
    found: list[ClassRef] = []
    for value in values:
        assert value is not None
        for node in ast.walk(value):
            if not isinstance(node, ast.Call):
                continue
            name = dotted_name(node.func)
            if name is None:
                return f"`self.{attribute}` of `{owner.qualname}` is built by a computed callee"
            if name.split(".")[0] in local:
                return f"`self.{attribute}` of `{owner.qualname}` is built from `{name}`, chosen at run time"
            # A constructor parameter with a default (`decoder_layer_type=Qwen2DecoderLayer`):
            # what a subclass passes for it, else the default, as the index reads `self.x = P()`.
            resolved = env.index.resolve_in_init(owner, name, decoder)
            if isinstance(resolved, ClassRef) and env.index.lookup(resolved, "forward").status == "found":
                found.append(resolved)
            elif isinstance(resolved, Unknown) and name[:1].isupper():
                return f"the class `{name}` that `self.{attribute}` of `{owner.qualname}` is built from is not known ({resolved.reason})"
    if not found:
        return f"`self.{attribute}` of `{owner.qualname}` is built from no decoder-layer class of the engine"
    return list(dict.fromkeys(found))


def _one_layer(env: FixEnv, layer: ClassRef, call: ast.Call, residual: str) -> tuple[str, str]:
    lookup = env.index.lookup(layer, "forward")
    owner = lookup.owner
    forward = method_node(env, owner, "forward") if owner is not None else None
    if owner is None or forward is None:
        return UNKNOWN, f"cannot read `{layer.qualname}.forward`"
    where = f"`{owner.qualname}.forward`"
    param = _parameter_for(forward, call, residual)
    if param is None:
        return UNKNOWN, f"cannot tell which parameter of {where} receives `{residual}`"
    returned = _returned_pair(forward)
    if returned is None:
        return UNKNOWN, f"{where} does not end with `return <hidden>, <residual>` on every path"
    hidden_expr, residual_out = returned
    hidden_out = ast.unparse(hidden_expr)
    summed = _adds(_last_value(forward, hidden_expr), residual_out)
    if param == "" or not _reads_on_entry(forward, param):
        if not summed:
            return UNKNOWN, f"{where} ignores the residual it is handed but does not return `{residual_out} + ...` as `{hidden_out}`"
        return POST_NORM, f"{where} ignores the residual it is handed and returns `{hidden_out}` with the residual added"
    if summed:
        return UNKNOWN, f"{where} reads the residual it is handed and returns `{hidden_out}` with a residual added"
    return PRE_NORM, f"{where} reads the residual it is handed and returns `{hidden_out}` without it"


def _assigns(node: ast.Assign | ast.AnnAssign, attribute: str) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        for element in target.elts if isinstance(target, ast.Tuple) else [target]:
            if isinstance(element, ast.Attribute) and element.attr == attribute and dotted_name(element.value) == "self":
                return True
    return False


def _local_names(fn: Function) -> set[str]:
    args = fn.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    names |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return names


def _parameter_for(forward: Function, call: ast.Call, residual: str) -> str | None:
    """The parameter of ``forward`` the call hands ``residual`` to; "" when it is not handed."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    params = [a.arg for a in [*forward.args.posonlyargs, *forward.args.args]][1:]  # self
    for position, arg in enumerate(call.args):
        if isinstance(arg, ast.Name) and arg.id == residual:
            return params[position] if position < len(params) else None
    for keyword in call.keywords:
        if isinstance(keyword.value, ast.Name) and keyword.value.id == residual:
            return keyword.arg
    return ""


def _returned_pair(fn: Function) -> tuple[ast.expr, str] | None:
    """``return <hidden>, <residual name>``, the same on every ``return`` of ``fn``, ending its
    body: the hidden output (an expression) and the residual's name."""
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    if not returns or not isinstance(fn.body[-1], ast.Return):
        return None
    pairs: dict[str, tuple[ast.expr, str]] = {}
    for node in returns:
        value = node.value
        if not (isinstance(value, ast.Tuple) and len(value.elts) == 2 and isinstance(value.elts[1], ast.Name)):
            return None
        pairs[ast.dump(value)] = (value.elts[0], value.elts[1].id)
    return next(iter(pairs.values())) if len(pairs) == 1 else None


def _reads_on_entry(fn: Function, name: str) -> bool:
    """Whether ``fn`` may read the value ``name`` holds on entry: its first top-level statement
    that mentions it does anything but assign it from other names (``residual = hidden_states``)."""
    for stmt in fn.body:
        mentions = [n for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == name]
        if not mentions:
            continue
        return not (isinstance(stmt, ast.Assign) and all(isinstance(n.ctx, ast.Store) for n in mentions))
    return False


def _last_value(fn: Function, returned: ast.expr) -> ast.expr | None:
    """What the function returns as its hidden output: the expression itself, or for a name,
    the value of its last top-level assignment (``x += y`` read as ``x + y``)."""
    if not isinstance(returned, ast.Name):
        return returned
    last: ast.expr | None = None
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == returned.id for t in stmt.targets):
            last = stmt.value
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == returned.id:
            last = ast.BinOp(ast.Name(returned.id), stmt.op, stmt.value) if isinstance(stmt.op, ast.Add) else None
    return last


def _adds(value: ast.expr | None, residual: str) -> bool:
    """``value`` is a sum one of whose terms is ``residual`` (``residual + x``, ``x + residual``,
    ``residual + attn + mlp``)."""
    if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)):
        return False
    terms: list[ast.expr] = []
    pending: list[ast.expr] = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            pending += [node.left, node.right]
        else:
            terms.append(node)
    return any(isinstance(t, ast.Name) and t.id == residual for t in terms)
