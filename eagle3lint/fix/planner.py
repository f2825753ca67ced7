"""Finding -> planned fix: which pattern fits, with which names, at which applicability.

Patterns are small classes each engine's adapter lists (``eagle3lint/engines/<name>/fixes.py``);
each answers some rule codes and reads its template from ``rules/templates/<engine>/<pattern>.toml``.
The planner only reads: the index, the contract, and each file's ``ast``; nothing here imports
libcst.
"""

from __future__ import annotations

import ast
import dataclasses
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from eagle3lint.checks.context import CheckContext
from eagle3lint.common.findings import Finding
from eagle3lint.fix.edits import Edit, InsertMembers
from eagle3lint.fix.templates import TemplateSet, load_templates
from eagle3lint.fix.texts import SourceSet
from eagle3lint.model.contract_types import ContractSite
from eagle3lint.model.models import ModelClass, in_scope
from eagle3lint.source.index import ClassRef, ProjectIndex
from eagle3lint.source.rulepack import RulePack

if TYPE_CHECKING:
    from eagle3lint.model.result import CheckResult

SAFE, UNSAFE, DISPLAY_ONLY = "safe", "unsafe", "display-only"


@dataclass(frozen=True)
class PlannedFix:
    finding: Finding
    pattern: str
    applicability: str
    description: str
    edits: tuple[Edit, ...] = ()
    # Why the fix is only displayed (or what the unsafe fix had to guess).
    note: str = ""

    @property
    def paths(self) -> set[str]:
        return {e.path for e in self.edits}

    @property
    def key(self) -> tuple[str, str, str]:
        return finding_key(self.finding)

    def full_description(self) -> str:
        return f"{self.description} ({self.note})" if self.note else self.description


def finding_key(finding: Finding) -> tuple[str, str, str]:
    return (finding.code, finding.qualname, finding.method)


def applies(applicability: str, unsafe_fixes: bool) -> bool:
    return applicability == SAFE or (unsafe_fixes and applicability == UNSAFE)


@dataclass
class FixEnv:
    """What a pattern sees: the check result, shared member analysis, and file texts."""

    result: CheckResult
    sources: SourceSet
    scope: list[Path]
    # The engine's patterns, in the order its adapter lists them (the registry's
    # ``fix_patterns_for``: the code that drives the fix asks it).
    patterns: tuple[type[FixPattern], ...] = ()
    # The engine's own context the check ran with, where the fixes are planned for that very
    # check: an engine's patterns reuse its analyses instead of redoing them (None: build anew).
    check_context: CheckContext | None = None
    ctx: CheckContext = field(init=False)
    templates: dict[str, TemplateSet] = field(init=False)
    # Analyses an engine's patterns share across findings (vLLM's rule context).
    shared: dict[str, Any] = field(init=False, default_factory=dict)
    _models: dict[str, ModelClass] = field(init=False)

    def __post_init__(self) -> None:
        index = self.result.index
        if index is None:
            raise ValueError("the check result carries no project index")
        self.ctx = CheckContext(index=index, contract=self.result.contract, models=self.result.models)
        self.templates = load_templates(self.result.engine.name)
        self._models = {}
        for model in self.result.models:
            self._models.setdefault(f"{model.ref.module}.{model.ref.qualname}", model)

    @property
    def index(self) -> ProjectIndex:
        return self.ctx.index

    @property
    def pack(self) -> RulePack:
        return self.result.engine.pack

    def model_for(self, finding: Finding) -> ModelClass | None:
        return self._models.get(finding.qualname)

    def template(self, pattern: str) -> TemplateSet | None:
        return self.templates.get(pattern)

    def in_scope(self, path: str) -> bool:
        return in_scope(path, self.scope)

    def call_sites(self, member: str) -> list[ContractSite]:
        contract = self.result.contract.members.get(member)
        return [s for s in contract.sites if s.access == "call"] if contract else []

    def interface_names(self) -> set[str]:
        names: set[str] = set()
        for spec in self.pack.members.values():
            names.add(spec.name)
            names.update(spec.companions)
            names.update(spec.former_names)
        return names

    def member_order(self, name: str) -> int:
        order = list(self.pack.members)
        return order.index(name) if name in order else len(order)


class FixPattern:
    """One way of fixing some findings of one engine. Subclasses set the class variables and
    implement :meth:`plan` (``None`` when the pattern does not recognise the situation)."""

    name: ClassVar[str]
    codes: ClassVar[tuple[str, ...]]

    def plan(self, finding: Finding, env: FixEnv) -> PlannedFix | None:
        raise NotImplementedError


def patterns_for(patterns: Iterable[type[FixPattern]], code: str) -> list[type[FixPattern]]:
    """The engine's patterns that answer ``code``, in the order it lists them."""
    return [p for p in patterns if code in p.codes]


def planner_refusals(
    ctx: CheckContext,
    findings: list[Finding],
    patterns: tuple[type[FixPattern], ...],
    first: Callable[[Finding, FixEnv], str | None] | None = None,
) -> dict[int, str]:
    """Why the planner implements EAGLE-3 in none of these E3L020 findings' models (by
    ``id(finding)``): its own plans, made here as ``fix`` makes them, so that the check offers a
    fix exactly where ``fix --unsafe-fixes`` shows one. ``first``: the engine's cheap first test
    of a finding (the planner's own first step), a reason or None to plan it."""
    from eagle3lint.model.result import CheckResult

    result = CheckResult(engine=ctx.index.engine, contract=ctx.contract, findings=[], errors=[], models=ctx.models, index=ctx.index)
    # Every file is in scope: whether the fix is written is for the PATHs `fix` is given.
    env = FixEnv(result, SourceSet(), [Path(os.sep)], patterns, check_context=ctx)
    refusals: dict[int, str] = {}
    planned: list[Finding] = []
    for finding in findings:
        why = first(finding, env) if first is not None else None
        if why is not None:
            refusals[id(finding)] = why
        else:
            planned.append(finding)
    plans = {id(plan.finding): plan for plan in plan_fixes(env, planned)}
    for finding in planned:
        plan = plans.get(id(finding))
        if plan is None:
            refusals[id(finding)] = "no fix pattern fits it"
        elif plan.applicability == DISPLAY_ONLY:
            refusals[id(finding)] = plan.note or plan.description
    return refusals


def plan_fixes(env: FixEnv, findings: Iterable[Finding] | None = None) -> list[PlannedFix]:
    """The first fitting pattern's plan for each finding (findings without one are skipped).

    A finding that stands for several members (``data["members"]``: one cause, one finding) is
    planned member by member and the plans combined, as safe as their least safe part; one that
    asks to be implemented as another code (``data["implement_as"]``: a model with no EAGLE-3
    code) is planned with that code's patterns and never offered as safe."""
    plans: list[PlannedFix] = []
    for finding in env.result.findings if findings is None else findings:
        members = list(finding.data.get("members") or [finding.method])
        code = str(finding.data.get("implement_as") or finding.code)
        if len(members) <= 1 and code == finding.code:
            plan = _first_plan(env, finding, finding.code)
        else:
            parts = []
            for member in members:
                part = dataclasses.replace(finding, code=code, method=member, data={**finding.data, "members": [member]})
                parts.append((member, _first_plan(env, part, code)))
            plan = _combined(finding, parts, cap=UNSAFE if code != finding.code else None)
        if plan is not None:
            plans.append(_confine_to_scope(_resolved(plan, env), env))
    return plans


def as_fix_applies(plans: list[PlannedFix], result: CheckResult) -> list[PlannedFix]:
    """The plans as ``fix`` applies them by default, all or nothing per model: where a blocking
    finding (an error or a warning) of a model short of supported has no safe fix, ``fix`` does
    not write the model's other fixes either (it checks the fixed tree again and refuses them),
    so the check's ``[*]`` marks must not promise them. They become unsafe, saying why: with
    ``--unsafe-fixes`` another class's fix may complete the model (a wrapper's delegation once
    its language model gets the member), which only ``fix``'s check of the fixed tree can tell."""
    by_finding = {id(plan.finding): plan for plan in plans}
    supported = {(f"{m.ref.module}.{m.ref.qualname}", m.variant) for m in result.models if m.status == "supported"}
    # What a model's plans cover, by member: a finding without a plan of its own on a member
    # another finding's fix covers goes with that fix (vLLM's per-platform E3L015 with E3L013).
    covered: dict[tuple[str, str | None, str], int] = {}
    for plan in plans:
        for member in [plan.finding.method, *(plan.finding.data.get("members") or [])]:
            at = (plan.finding.qualname, plan.finding.variant, str(member))
            covered[at] = min(covered.get(at, _RANK[SAFE]), _RANK[plan.applicability])
    worst: dict[tuple[str, str | None], tuple[int, str]] = {}
    for finding in result.findings:
        key = (finding.qualname, finding.variant)
        if key in supported or finding.severity not in ("error", "warning"):
            continue
        own = by_finding.get(id(finding))
        if own is not None:
            rank = _RANK[own.applicability]
        else:
            rank = covered.get((finding.qualname, finding.variant, str(finding.method)), _RANK[DISPLAY_ONLY])
        if key not in worst or rank < worst[key][0]:
            worst[key] = (rank, finding.code)
    out = []
    for plan in plans:
        rank, code = worst.get((plan.finding.qualname, plan.finding.variant), (_RANK[SAFE], ""))
        if rank < _RANK[SAFE] and plan.applicability == SAFE:
            why = f"written only with `{plan.finding.class_name}`'s {code}, which has no safe fix (`--unsafe-fixes`)"
            note = "; ".join([*([plan.note] if plan.note else []), why])
            plan = dataclasses.replace(plan, applicability=UNSAFE, note=note)
        out.append(plan)
    return out


def _resolved(plan: PlannedFix, env: FixEnv) -> PlannedFix:
    """A fix whose code would read an attribute its class lacks is said in words, never shown
    as code (applying it would raise)."""
    if not plan.edits:
        return plan
    from eagle3lint.fix.resolve import unresolved_references

    problems = unresolved_references(env.index, plan.edits)
    if not problems:
        return plan
    note = "; ".join([*([plan.note] if plan.note else []), *problems])
    return PlannedFix(plan.finding, plan.pattern, DISPLAY_ONLY, plan.description, (), note)


def _first_plan(env: FixEnv, finding: Finding, code: str) -> PlannedFix | None:
    for pattern in patterns_for(env.patterns, code):
        try:
            plan = pattern().plan(finding, env)
        except (SyntaxError, ValueError, RecursionError, OSError) as exc:
            # Odd input in one file must not cost the other fixes; the finding stays.
            where = getattr(exc, "filename", None) or finding.path
            plan = PlannedFix(finding, pattern.name, DISPLAY_ONLY, "no fix", note=f"{where}: {type(exc).__name__}: {exc}")
        if plan is not None:
            return plan
    return None


_RANK = {SAFE: 2, UNSAFE: 1, DISPLAY_ONLY: 0}


def _combined(finding: Finding, parts: list[tuple[str, PlannedFix | None]], cap: str | None) -> PlannedFix | None:
    """One fix for a finding that stands for several members: every member's edits, as safe as
    the least safe part (a member no pattern fixes makes the whole display-only: never a half)."""
    planned = [(member, plan) for member, plan in parts if plan is not None]
    if not planned:
        return None
    edits: list[Edit] = []
    for _, plan in planned:
        for edit in plan.edits:
            if edit not in edits and not any(_same_member(edit, other) for other in edits):
                edits.append(edit)
    applicability = min((plan.applicability for _, plan in planned), key=lambda a: _RANK[a])
    notes = [plan.note for _, plan in planned if plan.note]
    unplanned = [member for member, plan in parts if plan is None]
    if unplanned:
        applicability = DISPLAY_ONLY
        notes.append("no automatic fix for " + ", ".join(f"`{m}`" for m in unplanned))
    if cap is not None and _RANK[applicability] > _RANK[cap]:
        applicability = cap
    if cap is not None and applicability == DISPLAY_ONLY:
        # Implementing EAGLE-3 is all or nothing: no code for a part of it, only why.
        why = "; ".join(dict.fromkeys(notes)) or "a part of it has no fix"
        return PlannedFix(finding, "+".join(dict.fromkeys(plan.pattern for _, plan in planned)), DISPLAY_ONLY,
                          "implement EAGLE-3 by hand", (), why)
    descriptions = list(dict.fromkeys(plan.description for _, plan in planned))
    pattern = "+".join(dict.fromkeys(plan.pattern for _, plan in planned))
    return PlannedFix(finding, pattern, applicability, "; ".join(descriptions), tuple(edits), "; ".join(dict.fromkeys(notes)))


def _same_member(edit: Edit, other: Edit) -> bool:
    """Two parts adding the same member to the same class (a companion both bring along)."""
    return (
        isinstance(edit, InsertMembers)
        and isinstance(other, InsertMembers)
        and (edit.path, edit.class_path, edit.name) == (other.path, other.class_path, other.name)
    )


def _confine_to_scope(plan: PlannedFix, env: FixEnv) -> PlannedFix:
    """A fix that would edit a file outside the given PATHs is shown, never written."""
    outside = sorted(p for p in plan.paths if not env.in_scope(p))
    if not outside or plan.applicability == DISPLAY_ONLY:
        return plan
    names = ", ".join(Path(p).name for p in outside)
    return PlannedFix(plan.finding, plan.pattern, DISPLAY_ONLY, plan.description, plan.edits, f"it would also edit {names}, outside the given paths")


# ---- helpers the patterns share -------------------------------------------------------------
def class_path(ref: ClassRef) -> tuple[str, ...]:
    return tuple(ref.qualname.split("."))


def member_anchor(env: FixEnv, ref: ClassRef) -> str | None:
    """Insert after the last interface-related method the class itself defines, else at the end."""
    cls = env.index.class_summary(ref)
    if cls is None:
        return None
    related = env.interface_names()
    own = [fn for name, fn in cls.methods.items() if name in related]
    if not own:
        return None
    return max(own, key=lambda fn: fn.lineno).name


def snippet_function(source: str) -> ast.FunctionDef | None:
    tree = ast.parse(source)
    fn = tree.body[0] if len(tree.body) == 1 else None
    return fn if isinstance(fn, ast.FunctionDef) else None


def signature_problem(source: str, sites: list[ContractSite]) -> str | None:
    """Whether the rendered method accepts every call the engine makes (arity and keywords)."""
    fn = snippet_function(source)
    if fn is None:
        return "the template does not render a single method"
    args = fn.args
    every_positional = [*args.posonlyargs, *args.args]
    positional = every_positional[1:]  # self
    required = len(positional) - len(args.defaults)
    by_keyword = ({a.arg for a in args.args} - {every_positional[0].arg}) | {a.arg for a in args.kwonlyargs}
    required_keyword_only = {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None}
    for site in sites:
        count = site.positional_args
        if count < required or (args.vararg is None and count > len(positional)):
            return f"the template's `{fn.name}` cannot take the {count} positional argument(s) of {site.path}:{site.line}"
        for keyword in site.keyword_args:
            if keyword not in by_keyword and args.kwarg is None:
                return f"the template's `{fn.name}` has no parameter `{keyword}` used at {site.path}:{site.line}"
        if required_keyword_only - set(site.keyword_args):
            return f"the template's `{fn.name}` requires keyword arguments {site.path}:{site.line} does not pass"
    return None


def forwarded_call_problem(env: FixEnv, source: str, delegate: str, member: str, inner: ClassRef) -> str | None:
    """Whether the inner method accepts the call the rendered body makes on ``self.<delegate>``."""
    fn = snippet_function(source)
    lookup = env.index.lookup(inner, member)
    target = lookup.function
    if fn is None or target is None or target.is_property:
        return None
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or node.func.attr != member:
            continue
        holder = node.func.value
        if not (isinstance(holder, ast.Attribute) and holder.attr == delegate):
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return None
        if not target.params.accepts_positional(len(node.args)):
            return f"`{inner.qualname}.{member}{target.params.render()}` cannot take {len(node.args)} positional argument(s)"
    return None


def member_edits(
    env: FixEnv,
    model: ModelClass,
    members: list[str],
    render: Callable[[str], str | None],
) -> tuple[list[Edit], list[str]]:
    """``InsertMembers`` edits for ``members`` (rendered by ``render``), plus problems found."""
    anchor = member_anchor(env, model.ref)
    edits: list[Edit] = []
    problems: list[str] = []
    for member in members:
        source = render(member)
        if source is None:
            problems.append(f"no template for `{member}`")
            continue
        problem = signature_problem(source, env.call_sites(member))
        if problem:
            problems.append(problem)
        edits.append(InsertMembers(model.path, class_path(model.ref), anchor, source, member, env.member_order(member)))
    return edits, problems
