"""LMDeploy's fix patterns: the CUDA-graph key, the wrapper's graph delegation, the dict return,
the config-builder line, the capture in the common decoder loop. Code comes from the templates in
``rules/templates/lmdeploy/``; every name from the project index and the flow analysis.

Safe only where the analysis proved the result: the graph key where the class inherits the
mixin's default and its forward passes the captured states on; the delegation where the
language model's graph path keeps them. The others change what a ``forward`` or a builder does,
and are unsafe.
"""

from __future__ import annotations

import ast

from eagle3lint.common.findings import Finding
from eagle3lint.engines.lmdeploy.analysis import ModelAnalysis
from eagle3lint.engines.lmdeploy.context import LmdeployContext
from eagle3lint.engines.lmdeploy.facts import LmdeployContract
from eagle3lint.engines.lmdeploy.flow import CAPTURES, DROPS, KEEPS, LOSES, PASSES
from eagle3lint.engines.lmdeploy.pack import lmdeploy_pack
from eagle3lint.engines.lmdeploy.shape import (
    NotCommonShape,
    builders_problem,
    decoder_of,
    find_decoder_loop,
)
from eagle3lint.fix.edits import (
    AFTER,
    BEFORE,
    BODY_END,
    BODY_START,
    Edit,
    InsertMembers,
    InsertStatements,
)
from eagle3lint.fix.locate import find_class, own_method
from eagle3lint.fix.planner import (
    DISPLAY_ONLY,
    UNSAFE,
    FixEnv,
    FixPattern,
    PlannedFix,
    class_path,
    member_anchor,
)
from eagle3lint.fix.templates import TemplateSet
from eagle3lint.fix.texts import SourceFile
from eagle3lint.model.models import ModelClass
from eagle3lint.source.index import ClassRef

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _context(env: FixEnv) -> LmdeployContext | None:
    """The rules' LMDeploy context for this check result: the check's own where the fixes are
    planned for it, else built once per fix run."""
    if "lmdeploy" not in env.shared:
        result = env.result
        given = env.check_context
        env.shared["lmdeploy"] = (
            given if isinstance(given, LmdeployContext) else LmdeployContext(index=env.index, contract=result.contract, models=result.models)
        )
    context = env.shared["lmdeploy"]
    return context if isinstance(context, LmdeployContext) and context.lcontract is not None else None


def _setup(env: FixEnv, finding: Finding, name: str) -> tuple[TemplateSet, LmdeployContext, ModelClass, ModelAnalysis] | None:
    template = env.template(name)
    context = _context(env)
    model = env.model_for(finding)
    if template is None or context is None or model is None:
        return None
    analysis = context.analysis(model)
    return (template, context, model, analysis) if analysis is not None else None


def _class_def(env: FixEnv, ref: ClassRef) -> tuple[str, ast.ClassDef] | None:
    module = env.index.module(ref.module)
    source = env.sources.get(module.path) if module else None
    if module is None or not isinstance(source, SourceFile):
        return None
    found = find_class(source.tree(), class_path(ref))
    return (module.path, found) if found is not None else None


def _method(env: FixEnv, ref: ClassRef, name: str) -> tuple[str, Function] | None:
    found = _class_def(env, ref)
    if found is None:
        return None
    path, cls = found
    fn = own_method(cls, name)
    return (path, fn) if fn is not None else None


def _render(template: TemplateSet, name: str, variables: dict[str, str]) -> str:
    source = template.render(name, variables)
    if source is None:
        raise NotCommonShape(f"{template.path.name} has no snippet {name!r}")
    return source


def graph_key_edit(env: FixEnv, template: TemplateSet, ref: ClassRef, aux_key: str) -> InsertMembers:
    """The ``get_outputs_cudagraph`` override that keeps the key, for a class that inherits the
    mixin's default."""
    found = _class_def(env, ref)
    if found is None:
        raise NotCommonShape(f"`{ref.qualname}` is not defined exactly once in its file")
    path = found[0]
    method = template.snippet("get_outputs_cudagraph")
    if method is None:
        raise NotCommonShape(f"{template.path.name} has no snippet 'get_outputs_cudagraph'")
    source = _render(template, "get_outputs_cudagraph", {"aux_key": aux_key})
    return InsertMembers(path, class_path(ref), member_anchor(env, ref), source, "get_outputs_cudagraph")


class CudaGraphKey(FixPattern):
    name = "cuda-graph-key"
    codes = ("E3L110",)

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        found = _setup(env, finding, self.name)
        if found is None:
            return None
        template, context, model, analysis = found
        graph = analysis.graph
        aux_key = lmdeploy_pack(context.pack).aux_key
        default = graph.spot.owner if graph is not None and graph.spot is not None else "the mixin"
        description = template.describe({"aux_key": aux_key, "class_name": model.summary.name, "default": default})
        if graph is None or graph.status != LOSES or analysis.flow.status not in (CAPTURES, PASSES):
            return None
        if not graph.default:
            note = f"`{model.summary.name}` has its own `get_outputs_cudagraph`: add the `{aux_key}` buffer to it by hand"
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=note)
        try:
            edit = graph_key_edit(env, template, model.ref, aux_key)
        except NotCommonShape as exc:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=str(exc))
        return PlannedFix(finding, self.name, template.applicability, description, (edit,))


class CudaGraphDelegate(FixPattern):
    name = "cuda-graph-delegate"
    codes = ("E3L111",)

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        if finding.data.get("path") != "cuda-graph":
            return None
        found = _setup(env, finding, self.name)
        if found is None:
            return None
        template, context, model, analysis = found
        graph, inner, chain = analysis.graph, analysis.wrapper, analysis.flow.chain
        if graph is None or inner is None or not chain:
            return None
        aux_key = lmdeploy_pack(context.pack).aux_key
        description = template.describe({"delegate": chain[0], "inner_class": inner.qualname, "aux_key": aux_key})
        if not graph.default:
            note = f"`{model.summary.name}` has its own `get_outputs_cudagraph`: hand the buffers to `self.{chain[0]}` by hand"
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=note)
        if context.reader().graph(inner).status != KEEPS:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"`{inner.qualname}`'s CUDA-graph outputs do not keep `{aux_key}` either")
        found_class = _class_def(env, model.ref)
        if found_class is None:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"`{model.ref.qualname}` is not defined exactly once in its file")
        source = _render(template, "get_outputs_cudagraph", {"delegate": chain[0]})
        edit = InsertMembers(found_class[0], class_path(model.ref), member_anchor(env, model.ref), source, "get_outputs_cudagraph")
        return PlannedFix(finding, self.name, template.applicability, description, (edit,))


class DictReturn(FixPattern):
    name = "dict-return"
    codes = ("E3L109", "E3L111")

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        if finding.code == "E3L111" and finding.data.get("path") != "eager":
            return None
        found = _setup(env, finding, self.name)
        if found is None:
            return None
        template, context, model, analysis = found
        flow = analysis.flow
        if flow.status != DROPS or flow.dropped_at is None or not flow.chain:
            return None
        aux_key = lmdeploy_pack(context.pack).aux_key
        owner = _owner_ref(env, model.ref, flow.dropped_at.owner)
        forward = _method(env, owner, "forward") if owner is not None else None
        description = template.describe({"result": "the inner output", "class_name": flow.dropped_at.owner, "aux_key": aux_key})
        if owner is None or forward is None:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"`{flow.dropped_at.owner}.forward` cannot be edited here")
        path, fn = forward
        cut = _first_cut(fn, aux_key)
        if cut is None:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note="no single statement takes the hidden states out of the inner output")
        statement, result = cut
        description = template.describe({"result": result, "class_name": flow.dropped_at.owner, "aux_key": aux_key})
        source = _render(template, "pass_on", {"result": result, "aux_key": aux_key})
        edits: list[Edit] = [InsertStatements(path, class_path(owner), "forward", statement.lineno, type(statement).__name__, BEFORE, source)]
        # The graph path must keep the key too, or the model stays broken under CUDA graphs.
        graph = context.reader().graph(model.ref)
        if graph.status == LOSES and graph.default and owner == model.ref:
            key_template = env.template(CudaGraphKey.name)
            if key_template is not None:
                try:
                    edits.append(graph_key_edit(env, key_template, model.ref, aux_key))
                except NotCommonShape as exc:
                    return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=str(exc))
        return PlannedFix(finding, self.name, UNSAFE, description, tuple(edits))


def _owner_ref(env: FixEnv, model: ClassRef, qualname: str) -> ClassRef | None:
    """The class along ``model``'s MRO whose qualname is ``qualname``."""
    return next((c for c in env.index.mro(model).classes if c.qualname == qualname), None)


def _first_cut(fn: Function, key: str) -> tuple[ast.stmt, str] | None:
    """The top-level statement of ``fn`` holding the first cut of an inner model's output
    (``return outputs['hidden_states']``, ``outputs = outputs['hidden_states']``), and the local."""
    bound: set[str] = set()
    for stmt in fn.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = node.value
                if isinstance(value, ast.Call) and ast.unparse(value.func).startswith("self."):
                    bound.add(node.targets[0].id)
            cut = node.value if isinstance(node, (ast.Return, ast.Assign)) else None
            if (
                isinstance(cut, ast.Subscript)
                and isinstance(cut.value, ast.Name)
                and cut.value.id in bound
                and not (isinstance(cut.slice, ast.Constant) and cut.slice.value == key)
            ):
                return stmt, cut.value.id
    return None


class ConfigBuilderLine(FixPattern):
    name = "config-builder"
    codes = ("E3L112",)

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        if finding.data.get("source") != "config":
            return None
        found = _setup(env, finding, self.name)
        if found is None:
            return None
        template, context = found[0], found[1]
        contract = context.lcontract
        name = str(finding.data.get("builder", ""))
        builder = next((b for b in contract.builders if b.name == name), None) if contract else None
        paradigm = lmdeploy_pack(context.pack).paradigm_attribute
        description = template.describe({"builder": name, "paradigm": paradigm})
        if builder is None or contract is None:
            return None
        place = builder.paradigm_place
        if place is None or place.path != builder.place.path or builder.paradigm != "set":
            note = f"{name} does not set `{paradigm}` in its own `build`: add the line where it opts the checkpoints in"
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=note)
        try:
            edit = _builder_edit(env, template, contract, name, builder.place.path, place.line, paradigm)
        except NotCommonShape as exc:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=str(exc))
        # The builders are read once per release, with the contract: a re-check of edited model
        # files cannot prove a builder edit, so it is shown, never written.
        note = f"{name} builds the config of every checkpoint it matches; apply by hand"
        return PlannedFix(finding, self.name, DISPLAY_ONLY, description, (edit,), note)


def _builder_edit(env: FixEnv, template: TemplateSet, contract: LmdeployContract, builder: str, rel: str, line: int, paradigm: str) -> InsertStatements:
    path = str(env.result.engine.root / rel)
    source = env.sources.get(path)
    if not isinstance(source, SourceFile):
        raise NotCommonShape(f"cannot read {rel}")
    cls = find_class(source.tree(), (builder,))
    fn = own_method(cls, "build") if cls is not None else None
    if fn is None:
        raise NotCommonShape(f"`{builder}` is not defined once with its own `build` in {rel}")
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    if len(params) < 2 or "spec_method" not in params:
        raise NotCommonShape(f"`{builder}.build` does not take `spec_method` by name")
    statement = next(
        (
            s for s in ast.walk(fn)
            if isinstance(s, ast.Assign)
            and s.lineno == line
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Attribute)
            and s.targets[0].attr == paradigm
            and isinstance(s.targets[0].value, ast.Name)
        ),
        None,
    )
    if statement is None:
        raise NotCommonShape(f"`{builder}.build` sets `{paradigm}` on no plain name on line {line}")
    cfg = statement.targets[0].value.id  # type: ignore[attr-defined]
    text = _render(template, "layers", {"spec_method": "spec_method", "hf_config": params[1], "cfg": cfg})
    return InsertStatements(path, (builder,), "build", line, "Assign", AFTER, text)


class DecoderCapture(FixPattern):
    name = "decoder-capture"
    codes = ("E3L108", "E3L001")

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        if finding.code != "E3L108" and finding.data.get("implement_as") != "E3L001":
            return None  # a missing member is not a missing capture
        found = _setup(env, finding, self.name)
        if found is None:
            return None
        template, context, model, analysis = found
        if analysis.flow.status != "none":
            return None
        aux_key = lmdeploy_pack(context.pack).aux_key
        decoder = decoder_of(env.index, model.ref)
        variables = {"decoder_class": decoder.qualname if decoder else model.summary.name, "aux_key": aux_key}
        description = template.describe(variables)
        problem = builders_problem(context.lcontract, analysis)
        if problem is not None:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"{problem}: the capture would stay empty")
        if decoder is None:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"`{model.summary.name}` holds no single decoder in `self.model`")
        try:
            edits = self._edits(env, template, decoder, aux_key)
            graph = context.reader().graph(model.ref)
            if graph.status == LOSES:
                key_template = env.template(CudaGraphKey.name)
                if not graph.default or key_template is None:
                    raise NotCommonShape(f"`{model.summary.name}`'s own `get_outputs_cudagraph` drops `{aux_key}`")
                edits.append(graph_key_edit(env, key_template, model.ref, aux_key))
        except NotCommonShape as exc:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=str(exc))
        return PlannedFix(finding, self.name, UNSAFE, description, tuple(edits))

    @staticmethod
    def _edits(env: FixEnv, template: TemplateSet, decoder: ClassRef, aux_key: str) -> list[Edit]:
        forward = _method(env, decoder, "forward")
        init = _method(env, decoder, "__init__")
        where = f"{decoder.qualname}.forward"
        if forward is None or init is None:
            raise NotCommonShape(f"`{decoder.qualname}` does not define its own `__init__` and `forward`")
        module = env.index.module(decoder.module)
        if module is None or "torch" not in module.imports:
            raise NotCommonShape(f"the module of `{decoder.qualname}` does not import torch")
        path, fn = forward
        params = [a.arg for a in (*init[1].args.posonlyargs, *init[1].args.args)]
        if "config" not in params:
            raise NotCommonShape(f"`{decoder.qualname}.__init__` takes no `config`")
        shape = find_decoder_loop(fn, str(template.setting("layers_attribute", "layers")), str(template.setting("aux_name", "aux_hidden_states")), where)
        variables = {"config": "config", "index": shape.index, "hidden": shape.hidden, "residual": shape.residual, "aux_key": aux_key}
        target = (path, class_path(decoder))
        line = shape.loop.lineno
        return [
            InsertStatements(*target, "__init__", 0, "", BODY_END, _render(template, "decoder_init", variables)),
            InsertStatements(*target, "forward", line, "For", BEFORE, _render(template, "loop_init", variables)),
            InsertStatements(*target, "forward", line, "For", BODY_START, _render(template, "loop_capture", variables)),
            InsertStatements(*target, "forward", shape.final_return.lineno, "Return", BEFORE, _render(template, "return_aux", variables)),
        ]


FIX_PATTERNS: tuple[type[FixPattern], ...] = (CudaGraphKey, CudaGraphDelegate, DictReturn, ConfigBuilderLine, DecoderCapture)
