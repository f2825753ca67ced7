"""The parameters and the forwarded call of a delegation, from what both ends say.

A wrapper that forwards a member to its inner model must accept every call the engine makes
(the contract's call sites: how many positional arguments, which keywords) and pass them on in a
form the inner member takes (its own signature). The delegation mirrors the inner member's
parameters (names and literal defaults, no annotations: those may name things the wrapper's
module does not import); where a default is not a literal, or the inner classes a config may
pick disagree, it passes ``*args, **kwargs`` through. Either way the engine's calls are checked
against the inner member: a call it cannot take is a problem, never a guess.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from eagle3lint.fix.capture_patterns import method_node
from eagle3lint.fix.edits import Edit
from eagle3lint.fix.planner import FixEnv, forwarded_call_problem, member_edits
from eagle3lint.fix.templates import TemplateSet
from eagle3lint.model.contract_types import ContractSite
from eagle3lint.model.models import ModelClass
from eagle3lint.source.index import ClassRef
from eagle3lint.source.summary_types import Params

PASS_THROUGH = ("self, *args, **kwargs", "*args, **kwargs")


@dataclass(frozen=True)
class Delegation:
    params: str  # "self, layer_ids=None"
    args: str  # "layer_ids"
    problem: str | None = None  # a call site the inner member cannot take
    mirrored: bool = True  # False: ``*args, **kwargs`` passed through


def delegation_signature(env: FixEnv, inner_classes: list[ClassRef], member: str, sites: list[ContractSite]) -> Delegation:
    """How a wrapper forwards ``member`` to an object of one of ``inner_classes``."""
    rendered: set[tuple[str, str]] = set()
    problem: str | None = None
    for inner in inner_classes:
        lookup = env.index.lookup(inner, member)
        fn = lookup.function
        if lookup.status != "found" or fn is None or lookup.kind != "method" or lookup.owner is None:
            rendered.add(PASS_THROUGH)
            continue
        problem = problem or _site_problem(fn.params, sites, f"{inner.qualname}.{member}")
        node = method_node(env, lookup.owner, member)
        mirror = _mirror(node) if node is not None and not fn.is_staticmethod else None
        rendered.add(mirror or PASS_THROUGH)
    if len(rendered) != 1:
        return Delegation(*PASS_THROUGH, problem, mirrored=False)
    params, args = rendered.pop()
    return Delegation(params, args, problem, mirrored=(params, args) != PASS_THROUGH)


def _site_problem(params: Params, sites: list[ContractSite], where: str) -> str | None:
    for site in sites:
        count = site.positional_args
        if not params.accepts_positional(count):
            return f"the engine calls it with {count} positional argument(s) at {site.path}:{site.line}, which `{where}{params.render()}` cannot take"
        for keyword in site.keyword_args:
            if keyword not in params.positional and keyword not in params.keyword_only and not params.has_varkw:
                return f"the engine passes `{keyword}=` at {site.path}:{site.line}, which `{where}{params.render()}` does not take"
    return None


def _mirror(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, str] | None:
    """(parameters, call arguments) copying ``fn``'s own, or None where a default is not a
    literal (the wrapper's module may not have the names it uses)."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    if not positional:
        return None
    positional = positional[1:]  # self
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = ["self"]
    call: list[str] = []
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        text = _literal(default)
        if default is not None and text is None:
            return None
        params.append(arg.arg if text is None else f"{arg.arg}={text}")
        call.append(arg.arg)
        if args.posonlyargs and index == len(args.posonlyargs) - 2:
            params.append("/")
    if args.vararg is not None:
        params.append(f"*{args.vararg.arg}")
        call.append(f"*{args.vararg.arg}")
    elif args.kwonlyargs:
        params.append("*")
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        text = _literal(default)
        if default is not None and text is None:
            return None
        params.append(arg.arg if text is None else f"{arg.arg}={text}")
        call.append(f"{arg.arg}={arg.arg}")
    if args.kwarg is not None:
        params.append(f"**{args.kwarg.arg}")
        call.append(f"**{args.kwarg.arg}")
    return ", ".join(params), ", ".join(call)


def _literal(node: ast.expr | None) -> str | None:
    """The source of an immutable constant default (``None``, ``0``, ``-1``, ``"x"``, ``()``),
    else None."""
    if node is None:
        return None
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if any(isinstance(n, (ast.Dict, ast.List, ast.Set)) for n in ast.walk(node)):
        return None  # a mutable default: the wrapper's copy would be another object
    return ast.unparse(node)


def delegation_edits(
    env: FixEnv,
    model: ModelClass,
    members: list[str],
    delegate: str,
    inner_classes: list[ClassRef],
    template: TemplateSet,
    variables: dict[str, str],
    flags: frozenset[str] = frozenset(),
) -> tuple[list[Edit], list[str]]:
    """``InsertMembers`` edits forwarding each of ``members`` to ``self.<delegate>`` (rendered
    from ``template`` with ``${params}``/``${args}`` from :func:`delegation_signature`), and
    the problems that make them display-only."""
    signatures = {m: delegation_signature(env, inner_classes, m, env.call_sites(m)) for m in members}

    def render(member: str) -> str | None:
        signature = signatures[member]
        filled = {**variables, "member": member, "params": signature.params, "args": signature.args}
        return template.render(member, filled, flags, fallback=True)

    edits, problems = member_edits(env, model, members, render)
    problems = [p for member in members if (p := signatures[member].problem)] + problems
    for edit in edits:
        source = getattr(edit, "source", "")
        for inner in inner_classes:
            problem = forwarded_call_problem(env, source, delegate, getattr(edit, "name", ""), inner)
            if problem and problem not in problems:
                problems.append(problem)
    return edits, list(dict.fromkeys(problems))
