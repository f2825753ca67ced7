"""Fix patterns for the core's capture rules, engine-neutral: what the setter, the flag and the
initial values are comes from the rule pack's ``[capture]``, the code from each engine's
templates (``rules/templates/<engine>/capture-init.toml``, ``capture-delegate.toml``). The
engines list these patterns with their own."""

from __future__ import annotations

import ast

from eagle3lint.checks.capture import unread_problem
from eagle3lint.common.findings import Finding
from eagle3lint.fix.edits import BODY_END, AddKeyword, InsertMembers, InsertStatements
from eagle3lint.fix.locate import find_class, nodes_outside_nested_scopes, own_method
from eagle3lint.fix.planner import (
    DISPLAY_ONLY,
    FixEnv,
    FixPattern,
    PlannedFix,
    class_path,
    member_anchor,
    signature_problem,
)
from eagle3lint.fix.templates import TemplateSet
from eagle3lint.fix.texts import SourceFile
from eagle3lint.model.capture import CaptureAnalysis, Write
from eagle3lint.source.capture_facts import CaptureSpec
from eagle3lint.source.index import ClassRef

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _ref(finding: Finding, key: str) -> ClassRef | None:
    value = finding.data.get(key)
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return ClassRef(value[0], value[1])
    return None


def _analysis(env: FixEnv, spec: CaptureSpec) -> CaptureAnalysis:
    cached = env.shared.get("capture")
    if not isinstance(cached, CaptureAnalysis):
        cached = env.shared["capture"] = CaptureAnalysis(env.index, spec)
    return cached


def method_node(env: FixEnv, ref: ClassRef, name: str) -> Function | None:
    """The ``def`` of ``ref``'s own method ``name``, parsed alone where the summary places it
    (a model file is large), else found in the whole file; None when the class lacks it."""
    summary = env.index.class_summary(ref)
    module = env.index.module(ref.module)
    source = env.sources.get(module.path) if module else None
    fn = summary.methods.get(name) if summary is not None else None
    if fn is None or not isinstance(source, SourceFile):
        return None
    if "." not in ref.qualname:
        node = source.method_def(name, fn.lineno, fn.end_lineno)
        if node is not None:
            return node
    cls = find_class(source.tree(), class_path(ref))
    return own_method(cls, name) if cls is not None else None


def _returns_early(fn: Function) -> bool:
    """A ``return`` anywhere in the body: a statement appended at its end may never run."""
    return any(isinstance(node, ast.Return) for node in nodes_outside_nested_scopes(fn))


class CaptureInit(FixPattern):
    """E3L103: the attribute ``forward`` reads gets its initial value at the end of the
    holder's own ``__init__`` (the value is the rule pack's ``[capture.initial]``)."""

    name = "capture-init"
    codes = ("E3L103",)

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        template = env.template(self.name)
        spec = env.pack.capture
        holder = _ref(finding, "holder_ref")
        attribute = finding.data.get("attribute")
        if template is None or spec is None or holder is None or not isinstance(attribute, str):
            return None
        initial = dict(spec.initial).get(attribute)
        variables = {"attribute": attribute, "value": initial or "...", "holder": holder.qualname}
        description = template.describe(variables)
        if initial is None:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"the rule pack gives no initial value for `{attribute}`")
        module = env.index.module(holder.module)
        init = method_node(env, holder, "__init__")
        if module is None or init is None:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"`{holder.qualname}` has no `__init__` of its own")
        if _returns_early(init):
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"`{holder.qualname}.__init__` returns early")
        source = template.render("init", variables)
        if source is None:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"{template.path.name} has no snippet 'init'")
        edit = InsertStatements(module.path, class_path(holder), "__init__", 0, "FunctionDef", BODY_END, source)
        return PlannedFix(finding, self.name, template.applicability, description, (edit,))


class CaptureDelegate(FixPattern):
    """E3L101: a wrapper whose setter records state its inner model never reads calls the inner
    model's own setter instead, where that setter is proven to reach what the inner ``forward``
    reads. An inherited setter gets an override (the base's, then the inner's); the class's own
    setter gets the call at its end."""

    name = "capture-delegate"
    codes = ("E3L101",)

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        template = env.template(self.name)
        spec = env.pack.capture
        model = env.model_for(finding)
        path = finding.data.get("path")
        if template is None or spec is None or model is None or not isinstance(path, list) or not path:
            return None
        setter = spec.eagle3_setter
        analysis = _analysis(env, spec)
        where = ".".join(path)
        variables = {"setter": setter, "path": where}
        description = template.describe(variables)
        inner_classes = analysis.holders(model.ref, tuple(path))
        if finding.data.get("problem") != "mismatch":
            return PlannedFix(finding, self.name, DISPLAY_ONLY, f"capture the hidden states in `self.{where}`'s decoder loop",
                              note="the decoder captures nothing: write the capture by hand")
        if not inner_classes:
            # It captures, by other state: what to call is the question, not the capture.
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"what `self.{where}` holds is not known statically")
        for inner in inner_classes:
            problem = self._unproven(analysis, inner, setter)
            if problem:
                return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=problem)
        lookup = env.index.lookup(model.ref, setter)
        if lookup.owner is None or lookup.function is None:
            return None
        if lookup.owner == model.ref:
            return self._append_call(finding, env, template, variables, description, model.ref)
        source = template.render("override", variables)
        if source is None:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"{template.path.name} has no snippet 'override'")
        edit = InsertMembers(model.path, class_path(model.ref), member_anchor(env, model.ref), source, setter, env.member_order(setter))
        problem = signature_problem(source, env.call_sites(setter))
        if problem:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, (edit,), problem)
        return PlannedFix(finding, self.name, template.applicability, description, (edit,))

    @staticmethod
    def _unproven(analysis: CaptureAnalysis, inner: ClassRef, setter: str) -> str | None:
        """Why delegating to ``inner``'s own setter is not proven to capture, or None."""
        method = analysis.method(inner, setter)
        if method is None or method.function.is_stub:
            return f"`{inner.qualname}` has no `{setter}` of its own to delegate to: write one that sets what its `forward` reads"
        writes, complete = analysis.writes(inner, setter)
        if not complete or not writes:
            return f"what `{inner.qualname}.{setter}` writes cannot be followed"
        by_holder: dict[ClassRef, list[Write]] = {}
        for write in writes:
            by_holder.setdefault(write.holder, []).append(write)
        for holder, holder_writes in by_holder.items():
            reads = analysis.reads(holder)
            if not reads.found or not reads.captures or unread_problem(holder_writes, reads) is not None:
                return f"`{inner.qualname}.{setter}` is not proven to set what `{holder.qualname}.forward` reads"
        return None

    def _append_call(self, finding: Finding, env: FixEnv, template: TemplateSet, variables: dict[str, str], description: str, ref: ClassRef) -> PlannedFix:
        setter = variables["setter"]
        module = env.index.module(ref.module)
        node = method_node(env, ref, setter)
        if module is None or node is None:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"cannot read `{ref.qualname}.{setter}`")
        params = [*node.args.posonlyargs, *node.args.args][1:]
        if len(params) != 1 or node.args.vararg or node.args.kwonlyargs:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"`{ref.qualname}.{setter}` does not take the layer ids alone")
        if _returns_early(node):
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"`{ref.qualname}.{setter}` returns early")
        source = template.render("call", {**variables, "ids": params[0].arg})
        if source is None:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"{template.path.name} has no snippet 'call'")
        edit = InsertStatements(module.path, class_path(ref), setter, 0, "FunctionDef", BODY_END, source)
        return PlannedFix(finding, self.name, template.applicability, description, (edit,))


class CaptureHandOff(FixPattern):
    """E3L102: the unpacked aux hidden states are passed to each logits call, by keyword."""

    name = "capture-handoff"
    codes = ("E3L102",)

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        template = env.template(self.name)
        spec = env.pack.capture
        owner = _ref(finding, "owner_ref")
        aux, lines = finding.data.get("aux"), finding.data.get("calls")
        if template is None or spec is None or owner is None or not isinstance(aux, str) or not isinstance(lines, list):
            return None
        keyword = spec.logits_keyword or aux
        variables = {"call": spec.logits_call, "keyword": keyword, "aux": aux}
        description = template.describe(variables)
        module = env.index.module(owner.module)
        forward = method_node(env, owner, "forward")
        if module is None or forward is None:
            return None
        edits = tuple(AddKeyword(module.path, class_path(owner), "forward", line, spec.logits_call, keyword, aux) for line in lines)
        unbound = [line for line in lines if not _bound_before(forward, aux, line)]
        if unbound:
            note = f"`{aux}` is not bound on every path to line {unbound[0]}: bind it (`{aux} = None`) before the capture"
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, edits, note)
        accepts = _call_accepts(env, owner, spec.logits_call, keyword)
        if accepts is False:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, edits, f"`{spec.logits_call}` takes no `{keyword}`")
        note = "" if accepts else f"could not confirm that `{spec.logits_call}` accepts `{keyword}=`"
        return PlannedFix(finding, self.name, template.applicability, description, edits, note)


def _bound_before(fn: Function, name: str, line: int) -> bool:
    """``name`` is assigned by a statement directly in ``fn``'s body before ``line`` (so on
    every path that reaches it)."""
    for stmt in fn.body:
        if stmt.lineno >= line:
            return False
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        for target in targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            if any(isinstance(n, ast.Name) and n.id == name for n in names):
                return True
    return False


def _call_accepts(env: FixEnv, ref: ClassRef, call: str, keyword: str) -> bool | None:
    """Whether the class ``self.<attr>`` holds (for ``call`` = ``self.<attr>``) takes
    ``keyword`` in its ``forward``; None when that class is not known."""
    held = env.index.attribute_classes(ref, call.removeprefix("self."))
    classes = {h for h in held if isinstance(h, ClassRef)}
    if len(classes) != 1 or len(classes) != len(set(held)):
        return None
    forward = env.index.lookup(classes.pop(), "forward").function
    if forward is None:
        return None
    params = forward.params
    return keyword in params.positional or keyword in params.keyword_only or params.has_varkw


CAPTURE_FIX_PATTERNS: tuple[type[FixPattern], ...] = (CaptureDelegate, CaptureInit, CaptureHandOff)
