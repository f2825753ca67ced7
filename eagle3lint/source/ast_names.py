"""Dotted names as source writes them: ``self.model.layers``.

Read with a loop down the chain, not recursion: a chain as long as the parser accepts must not
exhaust the interpreter's stack.
"""

from __future__ import annotations

import ast


def dotted_parts(node: ast.AST) -> tuple[str, ...] | None:
    """``self.model.layers`` -> ("self", "model", "layers"); None for anything but a Name or an
    Attribute chain on one."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return tuple(reversed(parts))


def dotted_name(node: ast.AST) -> str | None:
    """``self.model.layers`` for that chain; None for anything else."""
    parts = dotted_parts(node)
    return ".".join(parts) if parts is not None else None


def call_name(node: ast.Call) -> str:
    """The name a call is made by: ``f`` of ``f(...)`` and of ``a.b.f(...)``; "" otherwise."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""
