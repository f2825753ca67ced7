"""vLLM fix patterns: stale-name renames, declaring the protocol, the holder's mixin and collect.

Every name comes from the tree in front of us: the protocol and the mixin from its interfaces
module (``eagle3lint.engines.vllm.protocol``), the holder from the walk the rules use
(``eagle3lint.engines.vllm.holders``), the loop shape from the decoder's own ``forward``.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass

from eagle3lint.common.findings import Finding
from eagle3lint.common.lines import source_lines
from eagle3lint.engines.vllm.collect import NO as COLLECTS_NO
from eagle3lint.engines.vllm.collect import YES as COLLECTS_YES
from eagle3lint.engines.vllm.context import NO, YES, VllmCheckContext
from eagle3lint.engines.vllm.fix_loop import NotCommonShape, find_decoder_loop, uses_name
from eagle3lint.engines.vllm.holders import RECORDED, RESOLVED, Holder
from eagle3lint.engines.vllm.protocol import VllmContract
from eagle3lint.engines.vllm.remedy import protocol_remedy
from eagle3lint.fix.bases import BaseProblem, base_edits
from eagle3lint.fix.capture_patterns import CaptureDelegate, CaptureInit, method_node
from eagle3lint.fix.delegation import delegation_edits
from eagle3lint.fix.edits import (
    BEFORE,
    BODY_END,
    AddKeyword,
    Edit,
    EnumerateLoop,
    InsertStatements,
    RenameMethod,
)
from eagle3lint.fix.locate import find_class, find_statement, own_method
from eagle3lint.fix.planner import (
    DISPLAY_ONLY,
    UNSAFE,
    FixEnv,
    FixPattern,
    PlannedFix,
    class_path,
)
from eagle3lint.fix.residual import PRE_NORM, residual_handling
from eagle3lint.fix.residual import UNKNOWN as RESIDUAL_UNKNOWN
from eagle3lint.fix.templates import TemplateSet
from eagle3lint.fix.texts import SourceFile
from eagle3lint.source.ast_names import dotted_name
from eagle3lint.source.index import ClassRef
from eagle3lint.source.summary_types import ModuleSummary


def _context(env: FixEnv) -> VllmCheckContext | None:
    """The rules' vLLM context for this check result: the check's own where the fixes are
    planned for it, else built once per fix run."""
    if "vllm" not in env.shared:
        result = env.result
        extra = result.contract.extra.get("vllm")
        given = env.check_context
        env.shared["vllm"] = (
            given
            if isinstance(given, VllmCheckContext)
            else VllmCheckContext(index=env.index, contract=result.contract, models=result.models, vllm=extra if isinstance(extra, VllmContract) else None)
        )
    context = env.shared["vllm"]
    return context if isinstance(context, VllmCheckContext) and context.protocol is not None else None


# A module-level definition starts here: the leading part of a module (its imports) ends.
_FIRST_DEFINITION = re.compile(r"^(?:class |def |async def |@)", re.M)


@dataclass
class _ModuleView:
    """One module as the planner reads it: whole-file parses only when nothing smaller will do
    (a model file is large; the fix needs one class and the imports above it)."""

    summary: ModuleSummary
    source: SourceFile

    @classmethod
    def of(cls, env: FixEnv, ref: ClassRef) -> _ModuleView:
        module = env.index.module(ref.module)
        source = env.sources.get(module.path) if module else None
        if module is None or not isinstance(source, SourceFile):
            raise BaseProblem(f"cannot read the file of `{ref.qualname}`")
        return cls(module, source)

    def class_def(self, env: FixEnv, ref: ClassRef) -> ast.ClassDef:
        summary = env.index.class_summary(ref)
        found = None
        if summary is not None and "." not in ref.qualname:
            found = self.source.class_def(summary.name, summary.lineno, summary.end_lineno)
        if found is None:
            found = find_class(self.source.tree(), class_path(ref))
        if found is None:
            raise BaseProblem(f"`{ref.qualname}` is not defined exactly once in {self.summary.path}")
        return found

    def leading(self) -> ast.Module:
        """The statements before the first module-level ``class``/``def`` (the whole module's
        when that cut does not parse, e.g. inside a string)."""
        match = _FIRST_DEFINITION.search(self.source.text)
        if match is not None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return ast.parse(self.source.text[: match.start()], filename=self.summary.path)
            except SyntaxError:
                pass
        tree = self.source.tree()
        body = []
        for stmt in tree.body:
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                break
            body.append(stmt)
        return ast.Module(body=body, type_ignores=[])


def _declare_base(env: FixEnv, ref: ClassRef, base: ClassRef) -> list[Edit]:
    view = _ModuleView.of(env, ref)
    return base_edits(env.index, view.summary, view.leading(), view.class_def(env, ref), ref, base)


class StaleRename(FixPattern):
    name = "stale-rename"
    codes = ("E3L014",)

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        template = env.template(self.name)
        former, successor = finding.data.get("former"), finding.data.get("successor")
        ref = env.index.resolve_qualified(finding.qualname)
        if template is None or not isinstance(former, str) or not isinstance(successor, str) or not isinstance(ref, ClassRef):
            return None
        description = template.describe({"former": former, "successor": successor, "class_name": ref.qualname})
        try:
            view = _ModuleView.of(env, ref)
            cls = view.class_def(env, ref)
        except BaseProblem as exc:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=str(exc))
        method = own_method(cls, former)
        if method is None:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=f"`{ref.qualname}.{former}` is not defined once")
        forwards = any(isinstance(n, ast.Attribute) and n.attr == former for s in method.body for n in ast.walk(s))
        problem = (
            self._problem(view, cls, method, former, successor)
            or _used_elsewhere(env, view.summary.path, former)
            or (_delegate_problem(env, ref, method, former, successor) if forwards else None)
        )
        edits: tuple[Edit, ...] = (RenameMethod(view.summary.path, class_path(ref), former, successor, forwards),)
        if problem:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, edits, problem)
        note = f"the call to `{former}` it forwards is renamed too" if forwards else ""
        return PlannedFix(finding, self.name, template.applicability, description, edits, note)

    @staticmethod
    def _problem(view: _ModuleView, cls: ast.ClassDef, method: ast.FunctionDef | ast.AsyncFunctionDef, former: str, successor: str) -> str | None:
        defined = [s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign, ast.AnnAssign))]
        if any(_defines(s, successor) for s in defined):
            return f"`{cls.name}` already defines `{successor}`: merge the two by hand"
        if sum(1 for s in defined if _defines(s, former)) > 1:
            return f"`{cls.name}` defines `{former}` more than once"
        lines = source_lines(view.source.text)
        in_method = "".join(lines[method.lineno - 1 : method.end_lineno]).count(former)
        tree: ast.AST = method if view.source.text.count(former) == in_method else view.source.tree()
        inside = {id(n) for n in ast.walk(method)}
        for node in ast.walk(tree):
            if id(node) in inside:
                if isinstance(node, ast.Constant) and node.value == former:
                    return f"`{former}` is named in a string on line {node.lineno}"
                continue
            named = (isinstance(node, ast.Attribute) and node.attr == former) or (isinstance(node, ast.Name) and node.id == former)
            if named or (isinstance(node, ast.Constant) and node.value == former):
                return f"`{former}` is still used on line {getattr(node, 'lineno', '?')}"
        return None


def _used_elsewhere(env: FixEnv, path: str, former: str) -> str | None:
    """Another engine module naming ``former`` outside methods of that name (stale overrides,
    which this rule reports and renames too): renaming would break that use."""
    for module in env.index.modules.values():
        if module is None or module.path == path:
            continue
        source = env.sources.get(module.path)
        if not isinstance(source, SourceFile) or former not in source.text:
            continue
        lines = source_lines(source.text)
        inside = sum(
            "".join(lines[fn.lineno - 1 : fn.end_lineno]).count(former)
            for cls in module.classes.values()
            for fn in [cls.methods.get(former)]
            if fn is not None
        )
        if source.text.count(former) > inside:
            return f"`{former}` is also named in {module.path}"
    return None


def _delegate_problem(env: FixEnv, ref: ClassRef, method: ast.FunctionDef | ast.AsyncFunctionDef, former: str, successor: str) -> str | None:
    """A forwarded ``self.<attr>.<former>()`` renamed to ``<successor>`` must reach an object
    that has it, or a stale override of its own that is renamed too."""
    for node in (n for stmt in method.body for n in ast.walk(stmt)):
        if not (isinstance(node, ast.Attribute) and node.attr == former):
            continue
        holder = node.value
        if not (isinstance(holder, ast.Attribute) and isinstance(holder.value, ast.Name) and holder.value.id == "self"):
            return f"`{former}` is called on something other than `self.<attribute>` on line {node.lineno}"
        for held in env.index.attribute_classes(ref, holder.attr):
            if not isinstance(held, ClassRef):
                continue  # chosen at run time: any model with EAGLE-3 support has the successor
            if env.index.lookup(held, successor).status == "missing" and env.index.lookup(held, former).status == "missing":
                return f"`{held.qualname}` (`self.{holder.attr}`) has neither `{former}` nor `{successor}`"
    return None


def _defines(stmt: ast.stmt, name: str) -> bool:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return stmt.name == name
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    return any(isinstance(t, ast.Name) and t.id == name for t in targets)


class DeclareProtocol(FixPattern):
    name = "declare-protocol"
    codes = ("E3L013", "E3L012")

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        template = env.template(self.name)
        context = _context(env)
        model = env.model_for(finding)
        if template is None or context is None or model is None or context.protocol is None:
            return None
        protocol = ClassRef(context.protocol.module, context.protocol.name)
        description = template.describe({"protocol": protocol.qualname, "class_name": model.ref.qualname})
        try:
            edits = _declare_base(env, model.ref, protocol)
        except BaseProblem as exc:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=str(exc))
        if finding.code in template.setting("proven_codes", []):
            return PlannedFix(finding, self.name, template.applicability, description, tuple(edits))
        note = f"the runner will call `{model.summary.name}`'s own EAGLE-3 methods, which nothing proved right"
        return PlannedFix(finding, self.name, UNSAFE, description, tuple(edits), note)


@dataclass
class HolderWork:
    """What a decoder the setter reaches needs to collect: the changes in words, their edits,
    what they capture, and why they can only be shown (``problem``)."""

    changes: list[str]
    edits: list[Edit]
    note: str = ""
    problem: str = ""


def holder_work(env: FixEnv, context: VllmCheckContext, template: TemplateSet, decoder: ClassRef) -> HolderWork | None:
    """The mixin and the collect calls ``decoder`` lacks (None when it lacks neither, or when
    whether it does cannot be told)."""
    proto = context.protocol
    mixin = context.mixin_ref()
    collect = template.setting("collect_method", "_maybe_add_hidden_state")
    if proto is None or proto.mixin is None or mixin is None:
        return HolderWork([f"collect aux hidden states in `{decoder.qualname}.forward`"], [], problem="this vLLM tree has no mixin to collect with")
    if collect not in proto.mixin.collect_methods:
        return HolderWork([f"collect aux hidden states in `{decoder.qualname}.forward`"], [], problem=f"`{proto.mixin.name}` in this tree has no `{collect}`")
    verdict = context.collects(decoder).value
    if verdict not in (COLLECTS_NO, COLLECTS_YES):
        return None
    target = decoder
    if verdict == COLLECTS_NO:
        # The forward the decoder runs may be a base's: that class collects, so it gets the mixin.
        target = env.index.lookup(decoder, "forward").owner or decoder
    has_mixin = context.inherits_mixin(target)
    if has_mixin not in (YES, NO) or (has_mixin == YES and verdict == COLLECTS_YES):
        return None
    changes = ([f"add `{mixin.qualname}` to the bases of `{target.qualname}`"] if has_mixin == NO else []) + (
        [f"collect aux hidden states with `{collect}` in `{target.qualname}.forward`"] if verdict == COLLECTS_NO else []
    )
    work = HolderWork(changes, [])
    try:
        if has_mixin == NO:
            work.edits += _declare_base(env, target, mixin)
    except BaseProblem as exc:
        work.problem = str(exc)
        return work
    if verdict == COLLECTS_NO:
        try:
            collect_edits, work.note = HolderCollect._collect_edits(env, template, target, collect)
        except (NotCommonShape, BaseProblem) as exc:
            work.problem = f"{exc}: write the `{collect}` calls in the decoder loop by hand"
            return work
        work.edits += collect_edits
    return work


class HolderCollect(FixPattern):
    name = "holder-collect"
    codes = ("E3L010", "E3L011")

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        template = env.template(self.name)
        context = _context(env)
        model = env.model_for(finding)
        if template is None or context is None or model is None:
            return None
        holder = context.holder(model.ref)
        if holder.status != RESOLVED or len(holder.classes) != 1:
            return None
        if holder.kind == RECORDED:
            return self._recorded(finding, env, holder)
        work = holder_work(env, context, template, holder.classes[0])
        if work is None:
            return None
        description = template.describe({"changes": " and ".join(work.changes), "path": holder.path})
        if work.problem:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, tuple(work.edits), work.problem)
        return PlannedFix(finding, self.name, template.applicability, description, tuple(work.edits), work.note)

    def _recorded(self, finding: Finding, env: FixEnv, holder: Holder) -> PlannedFix | None:
        """A library records the layers: there is no decoder loop to collect in, and the mixin
        would change nothing; the forward must hand the recording on, by hand."""
        recording = holder.recording
        if recording is None:
            return None
        owner = env.index.lookup(holder.classes[0], "forward").owner or holder.classes[0]
        switch = recording.switches[0]
        description = (
            f"in `{owner.qualname}.forward`, pass `**self.{switch}` to the model that records "
            f"(`self.{recording.store[0]}`) and return `hidden_states, aux_hidden_states` when `self.{switch}` is set"
        )
        note = f"the layers are recorded by {recording.describe()}, not by a decoder loop: write it by hand"
        return PlannedFix(finding, self.name, DISPLAY_ONLY, description, (), note)

    @staticmethod
    def _collect_edits(env: FixEnv, template: TemplateSet, ref: ClassRef, collect: str) -> tuple[list[Edit], str]:
        """The collect calls in ``ref``'s decoder loop, and what they capture (said in words)."""
        view = _ModuleView.of(env, ref)
        forward = own_method(view.class_def(env, ref), "forward")
        if forward is None:
            raise NotCommonShape(f"`{ref.qualname}` does not define its own `forward`")
        where = f"{ref.qualname}.forward"
        aux = template.setting("aux_name", "aux_hidden_states")
        if uses_name(forward, aux):
            raise NotCommonShape(f"`{where}` already uses the name `{aux}`")
        layers = f"self.{template.setting('layers_attribute', 'layers')}"
        shape = find_decoder_loop(forward, layers, list(template.setting("loop_range", [])), where)
        index = shape.index
        edits: list[Edit] = []
        path = (view.summary.path, class_path(ref))
        if index is None:
            free = [n for n in template.setting("index_names", ["idx"]) if not uses_name(forward, n)]
            if not free:
                raise NotCommonShape(f"`{where}` already uses every index name the template may add")
            index = free[0]
            edits.append(EnumerateLoop(*path, "forward", shape.loop.lineno, index, shape.start))
        # A rank-local index gets the slice's start: the requested layer ids are global.
        global_index = f"{shape.index_offset} + {index}" if shape.index_offset else index
        # What the next layer receives: `hidden + residual` for pre-norm layers, `hidden` alone
        # for post-norm ones (the collector adds any residual it is given).
        residual, captured = shape.residual, shape.hidden
        if residual != "None":
            handling = residual_handling(env, ref, shape.call, residual, template.setting("layers_attribute", "layers"))
            if handling.kind == RESIDUAL_UNKNOWN:
                raise NotCommonShape(f"what the layers of `{ref.qualname}` hand on is not proven ({handling.reason})")
            captured = handling.captured(shape.hidden, residual)
            residual = residual if handling.kind == PRE_NORM else "None"
        variables = {
            "aux": aux, "collect": collect, "index": global_index, "first_index": shape.first_index,
            "hidden": shape.hidden, "residual": residual,
        }
        flags = frozenset({"inputs_before_loop"}) if shape.inputs_before else frozenset()

        def render(name: str) -> str:
            source = template.render(name, variables, flags)
            if source is None:
                raise NotCommonShape(f"{template.path.name} has no snippet {name!r}")
            return source

        line = shape.loop.lineno
        edits += [
            InsertStatements(*path, "forward", line, "For", BEFORE, render("collect_init")),
            InsertStatements(*path, "forward", line, "For", BODY_END, render("collect_layer")),
            InsertStatements(*path, "forward", shape.final_return.lineno, "Return", BEFORE, render("collect_return")),
        ]
        return edits, f"it captures `{captured}`"


class DeclareDelegate(FixPattern):
    """E3L004 on vLLM: the protocol first (see :mod:`eagle3lint.engines.vllm.remedy`)."""

    name = "declare-delegate"
    codes = ("E3L004",)

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        template = env.template(self.name)
        context = _context(env)
        model = env.model_for(finding)
        if template is None or context is None or model is None or context.protocol is None:
            return None
        state = context.state(model.ref, finding.method)
        # Planned member by member (one finding for several): each part brings the declaration
        # and the setter's forward (equal edits, made once), and its own getter where it has one.
        members = [str(m) for m in finding.data.get("members") or [finding.method]]
        remedy = protocol_remedy(context, model.ref, state.inner_attr, state.inner_class, members)
        if remedy is None:
            return None
        protocol = ClassRef(context.protocol.module, context.protocol.name)
        variables = {"protocol": protocol.qualname, "class_name": model.ref.qualname}
        description = template.describe(variables)
        try:
            edits: list[Edit] = _declare_base(env, model.ref, protocol)
        except BaseProblem as exc:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, note=str(exc))
        problems: list[str] = []
        if remedy.members and remedy.delegate and remedy.inner is not None:
            forwarded, problems = delegation_edits(
                env, model, remedy.members, remedy.delegate, [remedy.inner], template, {**variables, "delegate": remedy.delegate}
            )
            edits += forwarded
            description += f" and forward {', '.join(f'`{m}`' for m in remedy.members)} to `self.{remedy.delegate}`"
        if problems:
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, tuple(edits), "; ".join(problems))
        # Declared, the class's own protocol methods run too: nothing proved those.
        own = [
            m.name for m in context.protocol.members
            if m.name not in remedy.members
            and (lookup := context.index.lookup(model.ref, m.name)).status == "found"
            and lookup.kind in ("method", "property")
            and not context.holders.is_protocol_class(lookup.owner)
        ]
        unproven = f"the runner will call `{model.summary.name}`'s own {', '.join(f'`{m}`' for m in own)}, which nothing proved right" if own else ""
        if remedy.proven:
            if unproven:
                return PlannedFix(finding, self.name, UNSAFE, description, tuple(edits), unproven)
            return PlannedFix(finding, self.name, template.applicability, description, tuple(edits))
        # What the setter reaches does not collect (or lacks the mixin): the decoder's work,
        # as holder-collect writes it, where its loop has the common shape.
        holder = remedy.holder
        collect_template = env.template(HolderCollect.name)
        work = (
            holder_work(env, context, collect_template, holder.classes[0])
            if holder is not None and holder.status == RESOLVED and holder.kind != RECORDED and len(holder.classes) == 1
            and collect_template is not None
            else None
        )
        if work is None or work.problem or not work.edits:
            why = work.problem if work is not None and work.problem else remedy.remaining
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, tuple(edits), why)
        description += " and " + " and ".join(work.changes)
        note = "; ".join(filter(None, [f"`{holder.classes[0].qualname}.forward` changes" if holder else "", work.note, unproven]))
        return PlannedFix(finding, self.name, UNSAFE, description, tuple(edits + work.edits), note)


class PipelineLoopStart(FixPattern):
    name = "pp-loop-start"
    codes = ("E3L105",)

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        template = env.template(self.name)
        decoder = finding.data.get("decoder_ref")
        line = finding.data.get("loop_line")
        if template is None or not isinstance(decoder, list) or len(decoder) != 2 or not isinstance(line, int):
            return None
        ref = ClassRef(str(decoder[0]), str(decoder[1]))
        module = env.index.module(ref.module)
        forward = method_node(env, ref, "forward")
        found = find_statement(forward, line, "For") if forward is not None else None
        call = found[0].iter if found is not None and isinstance(found[0], ast.For) else None
        start = _slice_start(call)
        if module is None or not isinstance(call, ast.Call) or start is None:
            return None
        variables = {"decoder": ref.qualname, "start": start}
        description = template.describe(variables)
        edit = AddKeyword(module.path, class_path(ref), "forward", call.lineno, "enumerate", template.setting("keyword", "start"), start)
        other = finding.data.get("other_uses")
        if other != 0:
            index = finding.data.get("index")
            note = f"`{index}` is also used for something else in the loop, which may want the rank-local number"
            return PlannedFix(finding, self.name, DISPLAY_ONLY, description, (edit,), note)
        return PlannedFix(finding, self.name, template.applicability, description, (edit,))


def _slice_start(call: ast.expr | None) -> str | None:
    """The start of ``enumerate(islice(x, START, end))`` / ``enumerate(x[START:end])``."""
    if not (isinstance(call, ast.Call) and dotted_name(call.func) == "enumerate" and len(call.args) == 1 and not call.keywords):
        return None
    inner = call.args[0]
    if isinstance(inner, ast.Call) and dotted_name(inner.func) in ("islice", "itertools.islice") and len(inner.args) == 3:
        return ast.unparse(inner.args[1])
    if isinstance(inner, ast.Subscript) and isinstance(inner.slice, ast.Slice) and inner.slice.lower is not None:
        return ast.unparse(inner.slice.lower)
    return None


# Tried in this order for each finding.
# vLLM has no logits hand-off of aux states (the runner takes them from `forward`'s result).
FIX_PATTERNS: tuple[type[FixPattern], ...] = (
    StaleRename, DeclareProtocol, DeclareDelegate, HolderCollect, PipelineLoopStart, CaptureDelegate, CaptureInit,
)
