"""The call-site walk of one parsed chunk: each access or probe of an interface member with its
guard (``hasattr`` tests, ``getattr`` defaults, ``try``/``except``, the engine's check
functions), as ``ContractSite`` values (split out of ``contract``, which finds the chunks to
parse and gathers the sites into the ``Contract``)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from eagle3lint.model.contract_types import CheckCall, CheckFunctions, ContractSite
from eagle3lint.source.engine import Engine
from eagle3lint.source.rulepack import MemberSpec
from eagle3lint.source.summary_walk import try_parts


def _normalize_receiver(text: str) -> str:
    return re.sub(r"\[[^\]]*\]", "", text)


def _hasattr_member(node: ast.AST) -> str | None:
    """``hasattr(x, "m")`` -> "m"."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "hasattr"
        and len(node.args) == 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    return None


def _check_call(node: ast.AST, checks: CheckFunctions) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in checks and node.args:
        return node.func.id
    return None


def _positive_hasattrs(test: ast.AST, checks: CheckFunctions | None = None) -> set[str]:
    """Members whose ``hasattr`` (or check function) must be true for ``test`` to be true."""
    member = _hasattr_member(test)
    if member:
        return {member}
    check = _check_call(test, checks or {})
    if check:
        return set((checks or {})[check])
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        out: set[str] = set()
        for value in test.values:
            out |= _positive_hasattrs(value, checks)
        return out
    return set()


def _negative_hasattrs(test: ast.AST, checks: CheckFunctions | None = None) -> set[str]:
    """Members whose ``hasattr`` is false whenever ``test`` is true (``not hasattr(...)``)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _positive_hasattrs(test.operand, checks)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        # ``if not hasattr(a, m) or ...: raise`` still guards m after the if.
        out: set[str] = set()
        for value in test.values:
            out |= _negative_hasattrs(value, checks)
        return out
    return set()


def _contains_raise(body: list[ast.stmt]) -> bool:
    return any(isinstance(node, ast.Raise) for stmt in body for node in ast.walk(stmt))


def _raises_outright(body: list[ast.stmt]) -> bool:
    """The branch ends in ``raise`` with no alternative before it (an ``elif`` may still succeed)."""
    return bool(body) and isinstance(body[-1], ast.Raise)


def _ends_block(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Raise, ast.Return, ast.Continue, ast.Break))


def _handler_guard(handlers: list[ast.ExceptHandler]) -> str:
    """What ``except AttributeError`` makes of a missing member: "error" where a handler raises
    an exception of its own (the engine's message), "none" where it only re-raises the
    ``AttributeError`` (``raise``, ``raise exc``: still the bare crash), "fallback" otherwise."""
    reraise = False
    for handler in handlers:
        for node in (n for stmt in handler.body for n in ast.walk(stmt)):
            if not isinstance(node, ast.Raise):
                continue
            caught = isinstance(node.exc, ast.Name) and node.exc.id == handler.name
            if node.exc is None or caught:
                reraise = True
            else:
                return "error"
    return "none" if reraise else "fallback"


def _handler_catches_attribute_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for t in types:
        name = t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else ""
        if name in ("AttributeError", "Exception", "BaseException"):
            return True
    return False


@dataclass(frozen=True)
class _Context:
    function: str = "<module>"
    # (test, polarity, other_raises): polarity True inside the body of ``if test``, False inside
    # its else; other_raises when the opposite branch raises (the probe then guards with an error).
    conditions: tuple[tuple[ast.expr, bool, bool], ...] = ()
    try_guard: str | None = None
    # Members guarded by an earlier statement of an enclosing block -> guard kind.
    established: tuple[tuple[str, str], ...] = ()
    and_guarded: frozenset[str] = frozenset()


class _SiteCollector:
    def __init__(self, engine: Engine, rel_path: str, members: dict[str, Any], checks: CheckFunctions | None = None) -> None:
        self.engine = engine
        self.pack = engine.pack
        self.rel_path = rel_path
        self.members = members
        self.checks: CheckFunctions = checks or {}
        self.sites: list[ContractSite] = []
        self.check_calls: list[CheckCall] = []
        self.indent = 0  # column offset of a chunk parsed out of its class
        # Attribute chains (``model.embed_tokens``), by their last name.
        self.chains: dict[str, list[MemberSpec]] = {}
        for spec in members.values():
            if isinstance(spec, MemberSpec) and spec.is_chain:
                self.chains.setdefault(spec.name.rsplit(".", 1)[1], []).append(spec)

    def wants(self, member: str) -> bool:
        return member in self.members or bool(self.pack.unknown_member_pattern.search(member))

    # ---- statements ---------------------------------------------------------------------
    def block(self, body: list[ast.stmt], ctx: _Context) -> None:
        established = list(ctx.established)
        for stmt in body:
            current = _Context(ctx.function, ctx.conditions, ctx.try_guard, tuple(established), ctx.and_guarded)
            self.stmt(stmt, current)
            if isinstance(stmt, ast.If) and _ends_block(stmt.body):
                for member in _negative_hasattrs(stmt.test, self.checks):
                    guard = "error" if _contains_raise(stmt.body) else "fallback"
                    established.append((member, guard))

    def stmt(self, stmt: ast.stmt, ctx: _Context) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = stmt.name if ctx.function == "<module>" else f"{ctx.function}.{stmt.name}"
            for dec in stmt.decorator_list:
                self.expr(dec, ctx)
            self.block(stmt.body, _Context(function=name))
            return
        if isinstance(stmt, ast.ClassDef):
            name = stmt.name if ctx.function == "<module>" else f"{ctx.function}.{stmt.name}"
            self.block(stmt.body, _Context(function=name))
            return
        if isinstance(stmt, ast.If):
            self.record_checks(stmt, ctx)
            self.expr(stmt.test, ctx)
            self.block(stmt.body, _with_condition(ctx, stmt.test, True, _raises_outright(stmt.orelse)))
            self.block(stmt.orelse, _with_condition(ctx, stmt.test, False, _raises_outright(stmt.body)))
            return
        if isinstance(stmt, ast.While):
            self.expr(stmt.test, ctx)
            self.block(stmt.body, _with_condition(ctx, stmt.test, True))
            self.block(stmt.orelse, ctx)
            return
        parts = try_parts(stmt)
        if parts is not None:
            body, handlers, orelse, final = parts
            catching = [h for h in handlers if _handler_catches_attribute_error(h)]
            guard = ctx.try_guard
            if catching:
                guard = _handler_guard(catching)
            inner = _Context(ctx.function, ctx.conditions, guard, ctx.established, ctx.and_guarded)
            self.block(body, inner)
            for handler in handlers:
                self.block(handler.body, ctx)
            self.block(orelse, ctx)
            self.block(final, ctx)
            return
        for field_name, value in ast.iter_fields(stmt):
            if isinstance(value, list):
                stmts = [v for v in value if isinstance(v, ast.stmt)]
                if stmts:
                    self.block(stmts, ctx)
                for v in value:
                    if isinstance(v, ast.expr):
                        self.expr(v, ctx)
                    elif isinstance(v, ast.withitem):
                        self.expr(v.context_expr, ctx)
                    elif isinstance(v, ast.match_case) if hasattr(ast, "match_case") else False:
                        self.block(v.body, ctx)
            elif isinstance(value, ast.expr):
                self.expr(value, ctx)
            del field_name

    # ---- expressions --------------------------------------------------------------------
    def expr(self, node: ast.expr, ctx: _Context) -> None:
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            guarded = set(ctx.and_guarded)
            for value in node.values:
                self.expr(value, _Context(ctx.function, ctx.conditions, ctx.try_guard, ctx.established, frozenset(guarded)))
                guarded |= _positive_hasattrs(value, self.checks)
            return
        if isinstance(node, ast.IfExp):
            self.expr(node.test, ctx)
            self.expr(node.body, _with_condition(ctx, node.test, True))
            self.expr(node.orelse, _with_condition(ctx, node.test, False))
            return
        if isinstance(node, ast.Call):
            self.call(node, ctx)
            return
        if isinstance(node, ast.Attribute):
            if isinstance(node.ctx, ast.Load) and self.wants(node.attr):
                self.site(node.attr, node.value, node, "load", ctx)
            if isinstance(node.ctx, ast.Load) and node.attr in self.chains:
                self.chain_site(node, ctx)
            self.expr(node.value, ctx)
            return
        if isinstance(node, (ast.Lambda,)):
            self.expr(node.body, ctx)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, ctx)
            elif isinstance(child, ast.comprehension):
                self.expr(child.iter, ctx)
                for cond in child.ifs:
                    self.expr(cond, ctx)

    def call(self, node: ast.Call, ctx: _Context) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("hasattr", "getattr") and len(node.args) >= 2:
            member_node = node.args[1]
            if isinstance(member_node, ast.Constant) and isinstance(member_node.value, str):
                member = member_node.value
                if self.wants(member):
                    if func.id == "hasattr":
                        self.site(member, node.args[0], node, "probe", ctx)
                    else:
                        has_default = len(node.args) >= 3 or any(k.arg == "default" for k in node.keywords)
                        forced = "fallback" if has_default else None
                        self.site(member, node.args[0], node, "load", ctx, forced_guard=forced)
            for arg in node.args:
                self.expr(arg, ctx)
            return
        if isinstance(func, ast.Attribute) and self.wants(func.attr):
            self.site(func.attr, func.value, node, "call", ctx, call=node)
            self.expr(func.value, ctx)
        else:
            self.expr(func, ctx)
        for arg in node.args:
            self.expr(arg, ctx)
        for kw in node.keywords:
            self.expr(kw.value, ctx)

    def chain_site(self, node: ast.Attribute, ctx: _Context) -> None:
        """``<receiver>.model.embed_tokens`` read off the target: a chain member's site, guarded
        when a ``hasattr`` (or ``except AttributeError``) covers any link of it."""
        for spec in self.chains[node.attr]:
            links = spec.name.split(".")
            current: ast.expr = node
            for link in reversed(links):
                if not (isinstance(current, ast.Attribute) and current.attr == link):
                    break
                current = current.value
            else:
                assert spec.receiver is not None
                # A hasattr on any link (or an enclosing except) makes the read optional.
                guards = (self.guard_for(name, ctx) for name in (spec.name, *links))
                guard = next((g for g in guards if g != "none"), None)
                self.site(spec.name, current, node, "load", ctx, forced_guard=guard, receivers=spec.receiver)

    def site(
        self,
        member: str,
        receiver_node: ast.expr,
        node: ast.AST,
        access: str,
        ctx: _Context,
        call: ast.Call | None = None,
        forced_guard: str | None = None,
        receivers: re.Pattern[str] | None = None,
    ) -> None:
        receiver = ast.unparse(receiver_node)
        normalized = _normalize_receiver(receiver)
        if not (receivers or self.pack.model_receiver).search(normalized):
            return
        guard = forced_guard or self.guard_for(member, ctx)
        positional = 0
        keywords: tuple[str, ...] = ()
        if call is not None:
            positional = sum(1 for a in call.args if not isinstance(a, ast.Starred))
            keywords = tuple(k.arg for k in call.keywords if k.arg)
        self.sites.append(
            ContractSite(
                member=member,
                path=self.rel_path,
                line=getattr(node, "lineno", 0),
                column=getattr(node, "col_offset", 0) + 1 + self.indent,
                function=ctx.function,
                receiver=receiver,
                access=access,
                role=self.pack.role_of_receiver(normalized, member),
                guard=guard,
                positional_args=positional,
                keyword_args=keywords,
                branch=self.branch_for(ctx),
            )
        )

    def record_checks(self, stmt: ast.If, ctx: _Context) -> None:
        """Calls of a check function in an ``if`` test, with what a false result does."""
        if not self.checks:
            return
        for node in ast.walk(stmt.test):
            check = _check_call(node, self.checks)
            if check is None:
                continue
            negated = check in {_check_call(n.operand, self.checks) for n in ast.walk(stmt.test) if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)}
            failing_branch = stmt.body if negated else stmt.orelse
            guard = "error" if _contains_raise(failing_branch) else "fallback"
            self.check_calls.append(
                CheckCall(check, self.rel_path, stmt.lineno, ctx.function, ast.unparse(node.args[0]), guard)  # type: ignore[attr-defined]
            )

    def guard_for(self, member: str, ctx: _Context) -> str:
        if member in ctx.and_guarded:
            return "fallback"
        for test, polarity, other_raises in ctx.conditions:
            if polarity and member in _positive_hasattrs(test, self.checks):
                return "error" if other_raises else "fallback"
            if not polarity and member in _negative_hasattrs(test, self.checks):
                return "error" if other_raises else "fallback"
        for guarded_member, guard in reversed(ctx.established):
            if guarded_member == member:
                return guard
        if ctx.try_guard:
            return ctx.try_guard
        return "none"

    def branch_for(self, ctx: _Context) -> str | None:
        markers = self.pack.eagle3_branch_markers
        for test, polarity, _ in reversed(ctx.conditions if markers else ()):
            text = ast.unparse(test)
            if any(marker in text for marker in markers):
                negated = text.strip().startswith("not ")
                return "eagle3" if polarity != negated else "not-eagle3"
        # A file only EAGLE-3 reaches (the rule pack's ``[branches] eagle3_files``, relative to
        # the package root; ``rel_path`` starts with the package's name).
        package, _, rest = self.rel_path.partition("/")
        return "eagle3" if package == self.pack.package and rest in self.pack.eagle3_branch_files else None


def _with_condition(ctx: _Context, test: ast.expr, polarity: bool, other_raises: bool = False) -> _Context:
    return _Context(ctx.function, (*ctx.conditions, (test, polarity, other_raises)), ctx.try_guard, ctx.established, ctx.and_guarded)
