"""The common decoder shape a fix can add the EAGLE-3 capture to, and why a model has not it.

LMDeploy's own decoders (Llama's) run::

    for idx, decoder_layer in enumerate(self.layers):
        ...
        hidden_states, residual = decoder_layer(hidden_states, ...)
    ...
    return hidden_states

and take their config in ``__init__(self, config, ...)``. A model gets the capture only where its
decoder (the model itself, or the one ``self.model`` holds) has exactly that shape, the module
imports ``torch`` (the captured states are concatenated) and the config builder of every
checkpoint it serves opts it in and names the layers: otherwise the fix would leave it broken.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from eagle3lint.engines.lmdeploy.builders import NEVER, SET
from eagle3lint.source.index import ClassRef, ProjectIndex

if TYPE_CHECKING:
    from eagle3lint.engines.lmdeploy.analysis import ModelAnalysis
    from eagle3lint.engines.lmdeploy.facts import LmdeployContract

Function = ast.FunctionDef | ast.AsyncFunctionDef


class NotCommonShape(Exception):
    """The decoder does not have the shape the template is written for."""


@dataclass(frozen=True)
class DecoderLoop:
    loop: ast.For
    index: str
    hidden: str
    residual: str
    final_return: ast.Return


def _names_used(fn: Function) -> set[str]:
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)}


def find_decoder_loop(forward: Function, layers: str, aux: str, where: str) -> DecoderLoop:
    """The loop ``for <idx>, <layer> in enumerate(self.<layers>):`` directly in the body, a
    ``<hidden>, <residual> = <layer>(...)`` in it, and a final ``return <hidden>``."""
    if aux in _names_used(forward):
        raise NotCommonShape(f"`{where}` already uses the name `{aux}`")
    loops = [
        s for s in forward.body
        if isinstance(s, ast.For)
        and isinstance(s.iter, ast.Call)
        and isinstance(s.iter.func, ast.Name)
        and s.iter.func.id == "enumerate"
        and len(s.iter.args) == 1
        and ast.unparse(s.iter.args[0]) == f"self.{layers}"
    ]
    if len(loops) != 1:
        raise NotCommonShape(f"`{where}` has no single `for <idx>, <layer> in enumerate(self.{layers}):` loop")
    loop = loops[0]
    target = loop.target
    if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and all(isinstance(e, ast.Name) for e in target.elts)):
        raise NotCommonShape(f"the loop of `{where}` does not name its index and layer")
    index, layer = (e.id for e in target.elts)  # type: ignore[attr-defined]
    calls = [
        s for s in loop.body
        if isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Tuple)
        and len(s.targets[0].elts) == 2
        and all(isinstance(e, ast.Name) for e in s.targets[0].elts)
        and isinstance(s.value, ast.Call)
        and isinstance(s.value.func, ast.Name)
        and s.value.func.id == layer
    ]
    if len(calls) != 1:
        raise NotCommonShape(f"the loop of `{where}` has no single `<hidden>, <residual> = {layer}(...)`")
    hidden, residual = (e.id for e in calls[0].targets[0].elts)  # type: ignore[attr-defined]
    final = forward.body[-1]
    if not (isinstance(final, ast.Return) and isinstance(final.value, ast.Name) and final.value.id == hidden):
        raise NotCommonShape(f"`{where}` does not end in `return {hidden}`")
    if any(isinstance(n, ast.Return) for n in ast.walk(loop)):
        raise NotCommonShape(f"the loop of `{where}` returns from inside")
    return DecoderLoop(loop, index, hidden, residual, final)


def decoder_of(index: ProjectIndex, model: ClassRef, attribute: str = "model") -> ClassRef | None:
    """The class ``self.<attribute>`` holds (one), else the model itself when it has the loop."""
    held = [h for h in index.attribute_classes(model, attribute) if isinstance(h, ClassRef)]
    if len(held) == 1:
        return held[0]
    return None


def builders_problem(contract: LmdeployContract | None, analysis: ModelAnalysis | None) -> str | None:
    """Why the checkpoints' builders would leave a capturing model broken (None: they would not)."""
    if contract is None or analysis is None:
        return "this tree's contract could not be read"
    for family in analysis.families:
        builder = family.builder
        if builder.refusal is not None:
            return f"{builder.name} refuses the method for {family.describe()}"
        if contract.opted_in(builder) == NEVER:
            return f"{builder.name} never opts {family.describe()} into speculative decoding"
        if builder.layers != SET:
            return f"{builder.name} names no capture layers for {family.describe()}"
    return None
