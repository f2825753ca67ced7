"""The attribute chains a method reads off ``self`` on every call, before anything can stop it.

An interface member's own body can fail where the member is there: OPT's ``get_embed_and_head``
returns ``self.model.embed_tokens.weight`` while its decoder keeps the embedding one level
deeper. What counts is a read the call cannot avoid: one in a statement every call runs, before
any statement that may leave the function (a ``return`` or ``raise`` in an ``if`` arm, a loop, a
``try``). Reads in an ``if`` arm, a loop's body, a ``try`` with handlers, a conditional
expression's arms, the tail of ``and``/``or``, a comprehension's body or a lambda are left out:
they are how a body guards a read (``if isinstance(self.lm_head, PPMissingLayer)``,
``hasattr(...) and ...``, ``except AttributeError``), and which way they go is not known here.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class SelfRead:
    """``self.model.embed_tokens`` read on every call: the chain after ``self``, where it is."""

    chain: tuple[str, ...]
    line: int  # as the parsed tree numbers it (a snippet's reader adds its offset)
    column: int


def unconditional_reads(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[SelfRead]:
    """The ``self.a.b...`` chains ``fn`` reads on every call, longest first where one is the
    prefix of another, in the order they appear; none for a static method."""
    decorators = {_name(d) for d in fn.decorator_list}
    positional = [*fn.args.posonlyargs, *fn.args.args]
    if "staticmethod" in decorators or not positional:
        return []
    collector = _Collector(positional[0].arg)
    collector.block(fn.body)
    return collector.longest()


def _name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Name):
        return target.id
    return target.attr if isinstance(target, ast.Attribute) else ""


class _Collector:
    def __init__(self, self_name: str) -> None:
        self.self_name = self_name
        self.reads: list[SelfRead] = []

    # ---- statements: returns False once a statement may leave the function ------------------
    def block(self, body: list[ast.stmt]) -> bool:
        return all(self.stmt(stmt) for stmt in body)

    def stmt(self, stmt: ast.stmt) -> bool:
        if isinstance(stmt, (ast.Return, ast.Raise)):
            for child in ast.iter_child_nodes(stmt):
                self.expr(child)
            return False
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return True  # its own scope; defining it reads nothing of ours that matters
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self.expr(item.context_expr)
            return self.block(stmt.body)
        if isinstance(stmt, ast.If):
            self.expr(stmt.test)
            return not _may_leave(stmt.body) and not _may_leave(stmt.orelse)
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.expr(stmt.iter)
            return not _may_leave(stmt.body) and not _may_leave(stmt.orelse)
        if isinstance(stmt, ast.While):
            self.expr(stmt.test)
            return not _may_leave(stmt.body) and not _may_leave(stmt.orelse)
        if isinstance(stmt, ast.Match):
            self.expr(stmt.subject)
            return not any(_may_leave(case.body) for case in stmt.cases)
        handlers = getattr(stmt, "handlers", None)
        if handlers is not None:  # try / try*
            if handlers:
                # A handler may catch what the body raises (``except AttributeError``): no read
                # in it is certain to reach the caller.
                parts = [stmt.body, *(h.body for h in handlers), stmt.orelse, stmt.finalbody]  # type: ignore[attr-defined]
                return not any(_may_leave(part) for part in parts)
            return self.block(stmt.body) and self.block(stmt.finalbody)  # type: ignore[attr-defined]
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.expr):
                self.expr(child)
        return True

    # ---- expressions ----------------------------------------------------------------------------
    def expr(self, node: ast.AST) -> None:
        stack: list[ast.AST] = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, ast.Attribute):
                chain = self._chain(current)
                if chain is not None:
                    # A store or delete reads the object it writes on, not the attribute.
                    read = chain if isinstance(current.ctx, ast.Load) else chain[:-1]
                    if read:
                        self.reads.append(SelfRead(read, current.lineno, current.col_offset))
                    continue
            if isinstance(current, ast.BoolOp):
                stack.append(current.values[0])  # the rest run only as the first decides
                continue
            if isinstance(current, ast.IfExp):
                stack.append(current.test)
                continue
            if isinstance(current, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                stack.append(current.generators[0].iter)
                continue
            if isinstance(current, ast.Lambda):
                continue
            stack.extend(reversed(list(ast.iter_child_nodes(current))))

    def _chain(self, node: ast.Attribute) -> tuple[str, ...] | None:
        """``("model", "embed_tokens")`` for ``self.model.embed_tokens``; None for a chain that
        does not start at ``self`` through plain attributes."""
        names: list[str] = []
        current: ast.expr = node
        while isinstance(current, ast.Attribute):
            names.append(current.attr)
            current = current.value
        if isinstance(current, ast.Name) and current.id == self.self_name:
            return tuple(reversed(names))
        return None

    def longest(self) -> list[SelfRead]:
        """Each chain once (its first place), without those a longer chain read contains."""
        first: dict[tuple[str, ...], SelfRead] = {}
        for read in self.reads:
            first.setdefault(read.chain, read)
        chains = set(first)
        return [read for chain, read in first.items() if not any(len(o) > len(chain) and o[: len(chain)] == chain for o in chains)]


def _may_leave(body: list[ast.stmt]) -> bool:
    """Whether running ``body`` may end the call (a ``return``/``raise`` anywhere in it, nested
    functions aside)."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Return, ast.Raise)):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False
