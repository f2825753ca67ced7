"""The decoder loop vLLM's supported models collect aux hidden states in, recognised on the
``ast`` of a decoder's ``forward``::

    for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):
        hidden_states, residual = layer(...)
    ...
    return hidden_states

(or ``hidden_states = layer(...)`` for layers without a residual stream), with the same loop
written without an index yet (``for layer in islice(...)``, a slice of
``self.layers``, ``self.layers`` itself), as ``islice(enumerate(self.layers), ...)``, or as
``for i in range(...)`` with ``layer = self.layers[i]``. Anything else is not the common shape.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from eagle3lint.fix.locate import alone_on_its_line, nodes_outside_nested_scopes
from eagle3lint.source.ast_names import dotted_name

Function = ast.FunctionDef | ast.AsyncFunctionDef


class NotCommonShape(Exception):
    """The decoder does not have the shape the collect template is written for."""


@dataclass(frozen=True)
class DecoderLoop:
    loop: ast.For
    index: str | None  # the loop's index variable; None when the loop needs one
    start: str | None  # for a loop that needs an index: enumerate's ``start=`` (None: from 0)
    first_index: str  # the layer index of the loop's input (the embeddings): "0" or the start
    # What the index counts from when it is local to this rank's slice (``enumerate`` of
    # ``islice(self.layers, start, end)`` without ``start=``): the slice's start, added to it
    # wherever a global layer id is meant. None when the index is global already.
    index_offset: str | None
    hidden: str
    residual: str  # "None" for layers without a residual stream
    final_return: ast.Return
    inputs_before: bool  # ``hidden`` and ``residual`` are bound before the loop
    call: ast.Call  # the layer call: what the residual analysis reads the arguments of


def find_decoder_loop(forward: Function, layers: str, loop_range: list[str], where: str) -> DecoderLoop:
    """The one layer loop of ``forward`` (``layers``: ``self.layers``; ``loop_range``: the
    start and end expressions), or :class:`NotCommonShape` saying what differs."""
    loops = [s for s in forward.body if isinstance(s, ast.For) and _layer_loop(s, layers, loop_range) is not None]
    if len(loops) != 1:
        raise NotCommonShape(f"`{where}` has no single loop over `{layers}` in its body")
    loop = loops[0]
    if not alone_on_its_line(loop, forward.body) or loop.orelse:
        raise NotCommonShape(f"the loop in `{where}` shares its line or has an `else`")
    shape = _layer_loop(loop, layers, loop_range)
    assert shape is not None
    index, start, first_index, layer, index_offset = shape
    calls = [s for s in loop.body if _layer_call(s, layer)]
    if len(calls) != 1 or not alone_on_its_line(calls[0], loop.body):
        raise NotCommonShape(f"the loop in `{where}` has no single `hidden_states, residual = {layer}(...)`")
    outputs = calls[0].targets[0]  # type: ignore[attr-defined]
    if isinstance(outputs, ast.Name):
        hidden, residual = outputs.id, "None"  # a layer without a residual stream
    else:
        hidden, residual = (e.id for e in outputs.elts)
    last = forward.body[-1]
    if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Name) and last.value.id == hidden):
        raise NotCommonShape(f"`{where}` does not end with `return {hidden}`")
    bound = _bound_before(forward, loop.lineno) | {"None"}
    call = calls[0].value  # type: ignore[attr-defined]
    return DecoderLoop(loop, index, start, first_index, index_offset, hidden, residual, last, {hidden, residual} <= bound, call)


def _layer_loop(loop: ast.For, layers: str, loop_range: list[str]) -> tuple[str | None, str | None, str, str, str | None] | None:
    """(index variable, enumerate start, index of the input, the layer callee, what a local
    index counts from) of a loop over the layers, or None."""
    target, iterable = loop.target, loop.iter
    start_text = loop_range[0] if loop_range else "0"
    if isinstance(target, ast.Name):
        if _range_part(iterable, layers, loop_range):
            return None, start_text, start_text, target.id, None
        if ast.unparse(iterable) == layers:
            return None, None, "0", target.id, None
        if isinstance(iterable, ast.Call) and dotted_name(iterable.func) == "range" and _texts(iterable.args) == loop_range:
            return target.id, None, start_text, _indexed_layer(loop, layers, target.id), None
        return None
    if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and all(isinstance(e, ast.Name) for e in target.elts)):
        return None
    index, layer = (e.id for e in target.elts)  # type: ignore[attr-defined]
    if isinstance(iterable, ast.Call) and dotted_name(iterable.func) == "enumerate" and len(iterable.args) == 1:
        inner = iterable.args[0]
        if not (_range_part(inner, layers, loop_range) or ast.unparse(inner) == layers):
            return None
        starts = [k for k in iterable.keywords if k.arg == "start"]
        if len(iterable.keywords) != len(starts):
            return None
        if not starts:
            # Numbered from 0 on every pipeline rank: the global id is the slice's start plus it.
            sliced = _range_part(inner, layers, loop_range)
            return (index, None, start_text, layer, start_text) if sliced else (index, None, "0", layer, None)
        return (index, None, start_text, layer, None) if ast.unparse(starts[0].value) == start_text else None
    if _islice(iterable) and isinstance(iterable, ast.Call):
        inner = iterable.args[0]
        enumerated = isinstance(inner, ast.Call) and dotted_name(inner.func) == "enumerate" and _texts(inner.args) == [layers] and not inner.keywords
        if enumerated and _texts(iterable.args[1:]) == loop_range:
            return index, None, start_text, layer, None
    return None


def _layer_call(stmt: ast.stmt, layer: str) -> bool:
    """``hidden_states, residual = layer(...)`` or ``hidden_states = layer(...)``."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Call)):
        return False
    target = stmt.targets[0]
    pair = isinstance(target, ast.Tuple) and len(target.elts) == 2 and all(isinstance(e, ast.Name) for e in target.elts)
    return (pair or isinstance(target, ast.Name)) and ast.unparse(stmt.value.func) == layer


def _texts(nodes: list[ast.expr]) -> list[str]:
    return [ast.unparse(n) for n in nodes]


def _islice(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and dotted_name(node.func) in ("islice", "itertools.islice") and len(node.args) == 3 and not node.keywords


def _range_part(node: ast.expr, layers: str, loop_range: list[str]) -> bool:
    """``islice(self.layers, start, end)`` or ``self.layers[start:end]``."""
    if _islice(node) and isinstance(node, ast.Call):
        return _texts(node.args) == [layers, *loop_range]
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and node.slice.step is None:
        bounds = [node.slice.lower, node.slice.upper]
        return ast.unparse(node.value) == layers and all(bounds) and _texts(bounds) == loop_range  # type: ignore[arg-type]
    return False


def _indexed_layer(loop: ast.For, layers: str, index: str) -> str:
    """The callee of ``for i in range(...)``: ``layer`` after ``layer = self.layers[i]``, or
    ``self.layers[i]`` itself."""
    for stmt in loop.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and ast.unparse(stmt.value) == f"{layers}[{index}]"
        ):
            return stmt.targets[0].id
    return f"{layers}[{index}]"


def _bound_before(forward: Function, line: int) -> set[str]:
    args = forward.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    for node in nodes_outside_nested_scopes(forward):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.lineno < line:
            names.add(node.id)
    return names


def uses_name(fn: Function, name: str) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id == name) or (isinstance(n, ast.arg) and n.arg == name)
        for n in ast.walk(fn)
    )
