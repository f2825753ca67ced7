"""SGLang fix patterns: wrapper delegation, leaf embed/head, leaf capture."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable
from typing import Any

from eagle3lint.checks.context import CheckContext
from eagle3lint.common.findings import Finding
from eagle3lint.fix.capture_patterns import CAPTURE_FIX_PATTERNS
from eagle3lint.fix.delegation import delegation_edits
from eagle3lint.fix.edits import (
    AFTER,
    BEFORE,
    BODY_END,
    BODY_START,
    AddKeyword,
    Edit,
    InsertStatements,
)
from eagle3lint.fix.locate import (
    alone_on_its_line,
    find_class,
    nodes_outside_nested_scopes,
    own_method,
    statements,
)
from eagle3lint.fix.planner import (
    DISPLAY_ONLY,
    SAFE,
    UNSAFE,
    FixEnv,
    FixPattern,
    PlannedFix,
    class_path,
    member_edits,
    planner_refusals,
)
from eagle3lint.fix.residual import POST_NORM, residual_handling
from eagle3lint.fix.residual import UNKNOWN as RESIDUAL_UNKNOWN
from eagle3lint.fix.templates import TemplateSet
from eagle3lint.fix.texts import SourceFile
from eagle3lint.model.capture import Reads
from eagle3lint.model.models import ModelClass
from eagle3lint.source.ast_names import dotted_name
from eagle3lint.source.index import ClassRef, External, ProjectIndex

_PRESENT = ("present", "delegated")


def _module_binds(env: FixEnv, module: str, name: str, qualified: str) -> bool:
    summary = env.index.module(module)
    return summary is not None and summary.imports.get(name) == qualified


def _single_class(index: ProjectIndex, ref: ClassRef, attr: str) -> ClassRef | None:
    """The one engine class ``self.<attr>`` holds, or None when it is unknown or ambiguous."""
    held = index.attribute_classes(ref, attr)
    classes = {h for h in held if isinstance(h, ClassRef)}
    if len(classes) != 1 or len(classes) != len(set(held)):
        return None
    return classes.pop()


class WrapperDelegation(FixPattern):
    name = "wrapper-delegation"
    codes = ("E3L004",)

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        model = env.model_for(finding)
        template = env.template(self.name)
        if model is None or template is None:
            return None
        state = env.ctx.state(model.ref, finding.method)
        inner, delegate = state.inner_class, state.inner_attr
        if inner is None or delegate is None:
            return None
        variables = {"member": finding.method, "delegate": delegate, "inner_class": inner.qualname}
        description = template.describe(variables)
        if state.lookup.status != "missing":
            # The wrapper forwards already, to a class that lacks the member: the gap is there
            # (in each class ``__init__`` may pick that lacks it).
            where = ", ".join(f"`{c.qualname}`" for c in state.lacking) if state.choices else f"`{inner.qualname}`"
            return PlannedFix(finding, self.name, DISPLAY_ONLY, f"implement `{finding.method}` in {where}",
                              note=f"`{model.summary.name}` already forwards it to `self.{delegate}`")
        members = [finding.method, *self._companions(env, model, inner, finding.method)]
        # A backbone chosen by config that lacks the member: the delegation raises a clear error.
        flags = frozenset({"guarded"}) if state.lacking else frozenset()
        having = [c for c in state.choices if c not in state.lacking] if state.lacking else [inner]
        edits, problems = delegation_edits(env, model, members, delegate, having, template, variables, flags)
        if len(members) > 1:
            description += f", with {', '.join(f'`{m}`' for m in members[1:])}"
        if problems:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, tuple(edits), "; ".join(problems))
        if state.lacking:
            lacking = ", ".join(f"`{c.qualname}`" for c in state.lacking)
            note = f"`self.{delegate}` may be {lacking}, which lacks it: the delegation raises a clear error then"
            return PlannedFix(finding, self.name, UNSAFE, f"{description}, guarded", tuple(edits), note)
        return PlannedFix(finding, self.name, template.applicability, description, tuple(edits))

    @staticmethod
    def _companions(env: FixEnv, model: ModelClass, inner: ClassRef, member: str) -> list[str]:
        spec = env.pack.members.get(member)
        out = []
        for companion in spec.companions if spec else ():
            if env.index.lookup(model.ref, companion).status != "missing":
                continue
            if env.ctx.state(inner, companion).status in _PRESENT:
                out.append(companion)
        return out


def _construction_names(index: ProjectIndex, ref: ClassRef, attr: str) -> list[str] | None:
    """Class names (or ``self.x.y`` aliases) ``self.<attr>`` is built from along the MRO."""
    names: list[str] = []
    for current in index.mro(ref).classes:
        cls = index.class_summary(current)
        entry = cls.instance_attrs.get(attr) if cls else None
        if entry is None:
            continue
        if not entry.constructions:
            return None
        for construction in entry.constructions:
            if construction.callee.startswith("self."):
                names.append(construction.callee)
                continue
            resolved = index.resolve(current.module, construction.callee)
            if isinstance(resolved, ClassRef):
                names.append(resolved.qualname.rsplit(".", 1)[-1])
            elif isinstance(resolved, External):
                names.append(resolved.qualified.rsplit(".", 1)[-1])
            else:
                return None
        break
    return names or None


def _leaf_start(pattern: str, finding: Finding, env: FixEnv) -> tuple[TemplateSet, ModelClass, str] | None:
    """A leaf pattern's template, the finding's model and the decoder attribute, when the
    template answers the member the finding names."""
    template = env.template(pattern)
    model = env.model_for(finding)
    if template is None or model is None or finding.method not in template.setting("members", []):
        return None
    return template, model, template.setting("decoder_attribute", "model")


class LeafEmbedHead(FixPattern):
    name = "leaf-embed-head"
    codes = ("E3L001",)

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        start = _leaf_start(self.name, finding, env)
        if start is None:
            return None
        template, model, decoder = start
        embedding = template.setting("embedding_attribute", "embed_tokens")
        head = template.setting("head_attribute", "lm_head")
        index = env.index
        inner = _single_class(index, model.ref, decoder)
        head_lookup = index.lookup(model.ref, head)
        if inner is None or head_lookup.status != "found" or head_lookup.kind != "instance_attr":
            return None
        embed_lookup = index.lookup(inner, embedding)
        if embed_lookup.status != "found" or embed_lookup.kind != "instance_attr":
            return None
        guesses = self._guesses(index, template, model.ref, inner, decoder, embedding, head)
        members = [finding.method] + [
            m for m in template.setting("members", []) if m != finding.method and index.lookup(model.ref, m).status == "missing"
        ]
        flags = frozenset({"torch"}) if _module_binds(env, model.ref.module, "torch", "torch") else frozenset()
        variables = {"member": finding.method, "decoder": decoder, "embedding": embedding, "head": head}

        def render(member: str) -> str | None:
            return template.render(member, {**variables, "member": member}, flags)

        edits, problems = member_edits(env, model, members, render)
        description = template.describe(variables)
        if len(members) > 1:
            description += f", with {', '.join(f'`{m}`' for m in members[1:])}"
        if problems:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, tuple(edits), "; ".join(problems))
        if guesses:
            return PlannedFix(finding, self.name, UNSAFE, description, tuple(edits), "; ".join(guesses))
        return PlannedFix(finding, self.name, template.applicability, description, tuple(edits))

    @staticmethod
    def _guesses(index: ProjectIndex, template: TemplateSet, ref: ClassRef, inner: ClassRef, decoder: str, embedding: str, head: str) -> list[str]:
        embedding_classes = re.compile(template.setting("embedding_classes", "Embedding"))
        head_classes = re.compile(template.setting("head_classes", "LMHead"))
        guesses = []
        embed_names = _construction_names(index, inner, embedding)
        if embed_names is None or not all(embedding_classes.search(n) for n in embed_names):
            guesses.append(f"`self.{decoder}.{embedding}` is not built from a known embedding class")
        tied = f"self.{decoder}.{embedding}"
        head_names = _construction_names(index, ref, head)
        if head_names is None or not all(n == tied or head_classes.search(n) for n in head_names):
            guesses.append(f"`self.{head}` is not built from a known LM-head class")
        return guesses


class _NotCommonShape(Exception):
    """The model does not have the shape the leaf-capture template is written for."""


def implementation_refusals(ctx: CheckContext, findings: list[Finding]) -> dict[int, str]:
    """Why the fix planner implements EAGLE-3 in none of these E3L020 findings' models (by
    ``id(finding)``), as :func:`planner_refusals` plans them."""

    def first(finding: Finding, env: FixEnv) -> str | None:
        # Most models fail the capture's first test, from text alone (the planner's first step
        # too: the capture is all or nothing, so the plan is display-only); only the others are
        # planned.
        capture = env.template("leaf-capture")
        model = env.model_for(finding)
        if model is None or capture is None:
            return None
        members = set(finding.data.get("members") or [finding.method])
        if not members & set(capture.setting("members", [])):
            return None
        return capture_refusal(env.index, model, capture, env.sources.get)

    return planner_refusals(ctx, findings, FIX_PATTERNS, first)


def capture_refusal(index: ProjectIndex, model: ModelClass, template: TemplateSet, source: Callable[[str], object]) -> str | None:
    """Why the leaf-capture template cannot fit ``model``, from the summaries and the decoder's
    text alone (no parse), or None when it may. The planner starts with it (and so does
    :func:`implementation_refusals`, before it plans the models this leaves)."""
    settings = template.setting
    decoder_attr = settings("decoder_attribute", "model")
    flag = settings("capture_flag", "capture_aux_hidden_states")
    capture_list = settings("capture_list", "layers_to_capture")
    flag_lookup = index.lookup(model.ref, flag)
    if flag_lookup.status == "found":
        return f"`{model.summary.name}` already has `{flag}`: finish the capture by hand"
    if flag_lookup.status != "missing":
        return f"cannot tell whether `{model.summary.name}` has `{flag}` ({flag_lookup.reason or 'it forwards attributes through `__getattr__`'})"
    if index.lookup(model.ref, "config").status != "found":
        return f"`{model.summary.name}` has no `self.config` to read the layer count from"
    decoder = _single_class(index, model.ref, decoder_attr)
    if decoder is None:
        return f"the class of `self.{decoder_attr}` is not known statically"
    decoder_module = index.module(decoder.module)
    decoder_summary = index.class_summary(decoder)
    if decoder_module is None or decoder_summary is None:
        return f"cannot read the module of `{decoder.qualname}`"
    for cls_name, methods in ((decoder.qualname, decoder_summary.methods), (model.summary.name, model.summary.methods)):
        if "forward" not in methods or "__init__" not in methods:
            return f"`{cls_name}` does not define its own `__init__` and `forward`"
    loop_text = f"range({', '.join(settings('loop_range', []))})"
    decoder_source = source(decoder_module.path)
    if capture_list not in decoder_summary.methods["forward"].self_reads and (
        not isinstance(decoder_source, SourceFile) or loop_text not in decoder_source.text
    ):
        return f"`{decoder.qualname}.forward` has no `for i in {loop_text}` loop"
    return None


class LeafCapture(FixPattern):
    name = "leaf-capture"
    codes = ("E3L001",)

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        start = _leaf_start(self.name, finding, env)
        if start is None:
            return None
        template, model, decoder = start
        flags = frozenset({"pp_group"}) if env.index.lookup(model.ref, "pp_group").status == "found" else frozenset()
        setter_vars = {"decoder": decoder}
        setter_edits, problems = member_edits(
            env, model, [finding.method], lambda m: template.render(m, setter_vars, flags)
        )
        if env.index.lookup(model.ref, template.setting("capture_flag", "capture_aux_hidden_states")).status == "found":
            return self._finish(finding, env, template, model, decoder, flags)
        try:
            body_edits, variables, notes = self._capture_edits(env, template, model)
        except _NotCommonShape as exc:
            description = f"add `{finding.method}`; the capture in the decoder loop must be written by hand"
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, tuple(setter_edits), str(exc))
        description = template.describe(variables)
        edits = tuple([*body_edits, *setter_edits])
        if problems:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, edits, "; ".join(problems))
        applicability = template.applicability if template.applicability != SAFE else UNSAFE
        return PlannedFix(finding, self.name, applicability, description, edits, "; ".join(notes))

    def _finish(
        self, finding: Finding, env: FixEnv, template: TemplateSet, model: ModelClass, decoder_attr: str, flags: frozenset[str],
    ) -> PlannedFix:
        """A model that has the capture already (its flag, the unpacking in its ``forward``, a
        decoder that captures) and lacks only the setter, and perhaps the hand-off: those, and
        nothing of the capture."""
        from eagle3lint.checks.capture import capture_analysis
        from eagle3lint.fix.capture_patterns import CaptureHandOff

        setter = finding.method
        flag = template.setting("capture_flag", "capture_aux_hidden_states")
        capture_list = template.setting("capture_list", "layers_to_capture")
        analysis = capture_analysis(env.ctx)
        decoder = _single_class(env.index, model.ref, decoder_attr)
        forward = analysis.method(model.ref, "forward")
        reads = analysis.reads(decoder) if decoder is not None else None
        missing = ""
        if decoder is None:
            missing = f"the class of `self.{decoder_attr}` is not known statically: check that it captures `{capture_list}`"
        elif reads is None or not reads.found or capture_list not in reads.attributes:
            missing = f"`{decoder.qualname}.forward` does not read `{capture_list}`: write the capture in its decoder loop by hand"
        elif forward is None or not forward.facts.aux_unpacks or flag not in forward.facts.reads:
            missing = f"`{model.summary.name}.forward` does not unpack the aux hidden states when `{flag}` is set: write that by hand"
        elif not forward.facts.logits_calls:
            missing = f"`{model.summary.name}.forward` never calls the logits processor to hand the aux hidden states to"
        # Where the decoder captures decides the setter's offset (as E3L104 judges it): the
        # template's +1 is for a capture before each layer; after each layer, none.
        position = self._capture_position(reads, env.pack.capture.ids if env.pack.capture else "output")
        if position == "after":
            flags |= {"captures_after"}

        def render(member: str) -> str | None:
            return template.render(member, {"decoder": decoder_attr}, flags)

        setter_edits, problems = member_edits(env, model, [setter], render)
        if missing:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, f"add `{setter}`", tuple(setter_edits), missing)
        assert decoder is not None and forward is not None
        description = f"add `{setter}` (`{decoder.qualname}.forward` captures already and `{forward.owner.qualname}.forward` unpacks)"
        edits = list(setter_edits)
        if position is None:
            notes = [f"the layer ids follow SGLang's convention (layer i + 1 receives layer i's output; 2, n/2, n-3 by default), which nothing proves for `{decoder.qualname}`"]
        else:
            notes = [f"the ids are shifted for a capture {position} each layer, as `{decoder.qualname}.forward` does; the default layers are SGLang's"]
        if not any(passed for _, passed in forward.facts.logits_calls):
            aux, _ = forward.facts.aux_unpacks[0]
            data = {"owner_ref": [forward.owner.module, forward.owner.qualname], "aux": aux, "calls": [line for line, _ in forward.facts.logits_calls]}
            handoff = CaptureHandOff().plan(dataclasses.replace(finding, code="E3L102", method="forward", data=data), env)
            if handoff is None or handoff.applicability == DISPLAY_ONLY:
                why = handoff.note if handoff is not None else "the hand-off to the logits processor cannot be planned"
                return PlannedFix(finding, self.name, DISPLAY_ONLY, description, tuple(edits), why)
            description += f"; {handoff.description}"
            edits += handoff.edits
            notes += [handoff.note] if handoff.note else []
        if problems:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, tuple(edits), "; ".join(problems))
        return PlannedFix(finding, self.name, UNSAFE, description, tuple(edits), "; ".join(notes))

    @staticmethod
    def _capture_position(reads: Reads | None, ids: str) -> str | None:
        """"before"/"after" each layer where the decoder's one capture loop captures by index
        and the offset it needs is the template's (+1) or none; None when that is not known
        (a capture inside the layer call, several loops)."""
        loops = [loop for loop in reads.loops if loop.capture_position and loop.capture_uses] if reads is not None else []
        if len(loops) != 1 or ids != "output" or loops[0].capture_offset:
            return None
        return loops[0].capture_position

    # ---- the shape -------------------------------------------------------------------------
    def _capture_edits(self, env: FixEnv, template: TemplateSet, model: ModelClass) -> tuple[list[Edit], dict[str, str], list[str]]:
        """The capture's edits for ``model``: worked out once per planning (every member of a
        model, each of its findings, asks for the same capture)."""
        known: dict[tuple[str, ClassRef], Any] = env.shared.setdefault("sglang-capture", {})
        key = (template.pattern, model.ref)
        if key not in known:
            try:
                known[key] = self._capture_edits_of(env, template, model)
            except _NotCommonShape as exc:
                known[key] = exc
        found = known[key]
        if isinstance(found, _NotCommonShape):
            raise found
        edits, variables, notes = found
        return list(edits), dict(variables), list(notes)

    def _capture_edits_of(self, env: FixEnv, template: TemplateSet, model: ModelClass) -> tuple[list[Edit], dict[str, str], list[str]]:
        index = env.index
        settings = template.setting
        decoder_attr = settings("decoder_attribute", "model")
        aux = settings("aux_name", "aux_hidden_states")
        capture_list = settings("capture_list", "layers_to_capture")
        logits_call = settings("logits_call", "self.logits_processor")
        keyword = settings("logits_keyword", "aux_hidden_states")
        notes: list[str] = []

        refusal = capture_refusal(index, model, template, env.sources.get)
        if refusal is not None:
            raise _NotCommonShape(refusal)
        decoder = _single_class(index, model.ref, decoder_attr)
        decoder_module = index.module(decoder.module) if decoder else None
        assert decoder is not None and decoder_module is not None
        edits: list[Edit] = []

        # The decoder: a layers_to_capture list, the capture in the loop, the tuple return.
        dec_forward = self._method_ast(env, decoder, "forward")
        dec_init = self._method_ast(env, decoder, "__init__")
        if dec_forward is None or dec_init is None:
            raise _NotCommonShape(f"`{decoder.qualname}` does not define its own `__init__` and `forward`")
        dec_path = (decoder_module.path, class_path(decoder))
        captures_already = _reads_self_attr(dec_forward, capture_list)
        hidden, residual = "hidden_states", "residual"
        captured = f"{hidden} + {residual}"
        post_norm = False
        if not captures_already:
            loop, loop_var, hidden, residual, call = self._decoder_loop(dec_forward, settings("loop_range", []), decoder)
            # What the next layer receives, proven from the layer's own forward: pre-norm layers
            # hand on `hidden + residual`, post-norm ones `hidden` alone (the residual is in it).
            handling = residual_handling(env, decoder, call, residual, settings("layers_attribute", "layers"))
            if handling.kind == RESIDUAL_UNKNOWN:
                raise _NotCommonShape(f"what the layers of `{decoder.qualname}` hand on is not proven ({handling.reason})")
            post_norm = handling.kind == POST_NORM
            captured = handling.captured(hidden, residual)
            if _uses_name(dec_forward, aux):
                raise _NotCommonShape(f"`{decoder.qualname}.forward` already uses the name `{aux}`")
            last = dec_forward.body[-1]
            if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Name) and last.value.id == hidden):
                raise _NotCommonShape(f"`{decoder.qualname}.forward` does not end with `return {hidden}`")
            loop_vars = {"loop_var": loop_var, "hidden": hidden, "residual": residual}
            if not _assigns_self_attr(dec_init, capture_list):
                edits.append(InsertStatements(*dec_path, "__init__", 0, "FunctionDef", BODY_END, _render(template, "decoder_init", loop_vars)))
            edits += [
                InsertStatements(*dec_path, "forward", loop.lineno, "For", BEFORE, _render(template, "loop_init", loop_vars)),
                InsertStatements(*dec_path, "forward", loop.lineno, "For", BODY_START, _render(template, "loop_capture", loop_vars, post_norm)),
                InsertStatements(*dec_path, "forward", last.lineno, "Return", BEFORE, _render(template, "decoder_return", loop_vars)),
            ]

        # The causal LM: the flag, the unpacking, the hand-off to the logits processor.
        lm_forward = self._method_ast(env, model.ref, "forward")
        lm_init = self._method_ast(env, model.ref, "__init__")
        if lm_forward is None or lm_init is None:
            raise _NotCommonShape(f"`{model.summary.name}` does not define its own `__init__` and `forward`")
        if _uses_name(lm_forward, aux):
            raise _NotCommonShape(f"`{model.summary.name}.forward` already uses the name `{aux}`")
        assign, lm_hidden = self._decoder_call(lm_forward, f"self.{decoder_attr}", model)
        calls = self._logits_calls(lm_forward, logits_call, lm_hidden, keyword, model)
        accepted = self._logits_accepts(env, model.ref, logits_call, keyword)
        if accepted is False:
            raise _NotCommonShape(f"the logits processor's `forward` takes no `{keyword}`")
        if accepted is None:
            notes.append(f"could not confirm that `{logits_call}` accepts `{keyword}=`")
        lm_path = (model.path, class_path(model.ref))
        lm_vars = {"lm_hidden": lm_hidden}
        edits += [
            InsertStatements(*lm_path, "__init__", 0, "FunctionDef", BODY_END, _render(template, "lm_init", lm_vars)),
            InsertStatements(*lm_path, "forward", assign.lineno, "Assign", AFTER, _render(template, "lm_unpack", lm_vars)),
        ]
        edits += [AddKeyword(*lm_path, "forward", call.lineno, logits_call, keyword, aux) for call in calls]
        variables = {
            "decoder": decoder_attr,
            "decoder_class": decoder.qualname,
            "hidden": hidden,
            "residual": residual,
            "captured": captured,
            "member": "set_eagle3_layers_to_capture",
        }
        return edits, variables, notes

    @classmethod
    def _method_ast(cls, env: FixEnv, ref: ClassRef, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """``own_method(<the class>, name)``, parsing the method alone where the summary places
        it: model classes run to a thousand lines, and planning runs after every pass."""
        summary = env.index.class_summary(ref)
        fn = summary.methods.get(name) if summary is not None else None
        module = env.index.module(ref.module)
        source = env.sources.get(module.path) if module else None
        if fn is not None and isinstance(source, SourceFile) and "." not in ref.qualname:
            node = source.method_def(name, fn.lineno, fn.end_lineno)
            if node is not None:
                return node
        return own_method(cls._class_ast(env, ref), name)

    @staticmethod
    def _class_ast(env: FixEnv, ref: ClassRef) -> ast.ClassDef:
        module = env.index.module(ref.module)
        source = env.sources.get(module.path) if module else None
        if not isinstance(source, SourceFile):
            raise _NotCommonShape(f"cannot read the file of `{ref.qualname}`")
        summary = env.index.class_summary(ref)
        cls = source.class_def(summary.name, summary.lineno, summary.end_lineno) if summary and "." not in ref.qualname else None
        if cls is None:
            cls = find_class(source.tree(), class_path(ref))
        if cls is None:
            raise _NotCommonShape(f"`{ref.qualname}` is not defined exactly once at module level")
        return cls

    @staticmethod
    def _decoder_loop(forward: ast.FunctionDef | ast.AsyncFunctionDef, loop_range: list[str], decoder: ClassRef) -> tuple[ast.For, str, str, str, ast.Call]:
        loops = [
            (s, siblings)
            for s, siblings in statements(forward.body)
            if isinstance(s, ast.For)
            and isinstance(s.target, ast.Name)
            and isinstance(s.iter, ast.Call)
            and dotted_name(s.iter.func) == "range"
            and not s.iter.keywords
            and [ast.unparse(a) for a in s.iter.args] == loop_range
        ]
        if len(loops) != 1:
            raise _NotCommonShape(f"`{decoder.qualname}.forward` has no single `for i in range({', '.join(loop_range)})` loop")
        loop, siblings = loops[0]
        assert isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)
        layer_calls = [
            s for s in loop.body
            if isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Tuple)
            and len(s.targets[0].elts) == 2
            and all(isinstance(e, ast.Name) for e in s.targets[0].elts)
            and isinstance(s.value, ast.Call)
        ]
        if len(layer_calls) != 1 or not alone_on_its_line(loop, siblings):
            raise _NotCommonShape(f"the loop in `{decoder.qualname}.forward` has no single `hidden_states, residual = layer(...)`")
        names = layer_calls[0].targets[0].elts  # type: ignore[attr-defined]
        call = layer_calls[0].value
        assert isinstance(call, ast.Call)
        return loop, loop.target.id, names[0].id, names[1].id, call

    @staticmethod
    def _decoder_call(forward: ast.FunctionDef | ast.AsyncFunctionDef, callee: str, model: ModelClass) -> tuple[ast.Assign, str]:
        hits = [
            (s, siblings)
            for s, siblings in statements(forward.body)
            if isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
            and isinstance(s.value, ast.Call)
            and dotted_name(s.value.func) == callee
        ]
        if len(hits) != 1 or not alone_on_its_line(*hits[0]):
            raise _NotCommonShape(f"`{model.summary.name}.forward` has no single `hidden_states = {callee}(...)`")
        assign = hits[0][0]
        assert isinstance(assign, ast.Assign) and isinstance(assign.targets[0], ast.Name)
        return assign, assign.targets[0].id

    @staticmethod
    def _logits_calls(forward: ast.FunctionDef | ast.AsyncFunctionDef, logits_call: str, hidden: str, keyword: str, model: ModelClass) -> list[ast.Call]:
        calls = [n for n in nodes_outside_nested_scopes(forward) if isinstance(n, ast.Call) and dotted_name(n.func) == logits_call]
        if not calls:
            raise _NotCommonShape(f"`{model.summary.name}.forward` never calls `{logits_call}`")
        for call in calls:
            plain = not any(isinstance(a, ast.Starred) for a in call.args) and all(k.arg not in (None, keyword) for k in call.keywords)
            if not plain or len(call.args) != 4 or not (isinstance(call.args[1], ast.Name) and call.args[1].id == hidden):
                raise _NotCommonShape(f"`{logits_call}(...)` on line {call.lineno} is not called as `(input_ids, {hidden}, lm_head, batch)`")
        if len({c.lineno for c in calls}) != len(calls):
            raise _NotCommonShape(f"two `{logits_call}` calls share a line")
        return calls

    @staticmethod
    def _logits_accepts(env: FixEnv, ref: ClassRef, logits_call: str, keyword: str) -> bool | None:
        attr = logits_call.removeprefix("self.")
        processor = _single_class(env.index, ref, attr)
        if processor is None:
            return None
        forward = env.index.lookup(processor, "forward").function
        if forward is None:
            return None
        params = forward.params
        return keyword in params.positional or keyword in params.keyword_only or params.has_varkw


def _render(template: TemplateSet, name: str, variables: dict[str, str], post_norm: bool = False) -> str:
    source = template.render(name, variables, frozenset({"post_norm"}) if post_norm else frozenset())
    if source is None:
        raise _NotCommonShape(f"{template.path.name} has no snippet {name!r}")
    return source


def _uses_name(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(fn))


def _self_attrs(fn: ast.FunctionDef | ast.AsyncFunctionDef, attr: str, ctx: type[ast.expr_context]) -> bool:
    return any(
        isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, ctx) and dotted_name(n.value) == "self"
        for n in ast.walk(fn)
    )


def _reads_self_attr(fn: ast.FunctionDef | ast.AsyncFunctionDef, attr: str) -> bool:
    return _self_attrs(fn, attr, ast.Load)


def _assigns_self_attr(fn: ast.FunctionDef | ast.AsyncFunctionDef, attr: str) -> bool:
    return _self_attrs(fn, attr, ast.Store)


# Tried in this order for each finding.
FIX_PATTERNS: tuple[type[FixPattern], ...] = (WrapperDelegation, LeafEmbedHead, LeafCapture, *CAPTURE_FIX_PATTERNS)
