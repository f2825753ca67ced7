"""Strings an expression states in source, read without running it.

Two readings every engine needs: the message of a ``raise`` or an ``assert`` as the engine wrote
it (formatted parts shown as holes, since their values are only known at run time), and a string
an expression always has (constants, names bound to constants, f-strings and ``+`` of them), for
registration keys and module paths. Both are bounded: a ``+`` chain of any length is read without
recursion, and nesting deeper than anyone writes by hand is not read (a hostile file must not
exhaust the stack).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

_MAX_DEPTH = 30


def _hole_dots(_value: ast.expr) -> str:
    return "{...}"


def hole_source(value: ast.expr) -> str:
    """A formatted part shown as its expression: ``{spec_method}``."""
    try:
        return "{" + ast.unparse(value) + "}"
    except (ValueError, RecursionError):
        return "{...}"


def _addends(node: ast.expr) -> list[ast.expr]:
    """The operands of a left-leaning ``a + b + c`` chain, in order, read without recursion."""
    parts: list[ast.expr] = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts.append(node.right)
        node = node.left
    parts.append(node)
    parts.reverse()
    return parts


def message_text(node: ast.AST | None, hole: Callable[[ast.expr], str] = _hole_dots, _depth: int = 0) -> str:
    """The text of a raised exception's message (``raise E("...")``) or an assertion's message:
    string constants kept, f-string parts rendered by ``hole``, ``+`` joined, ``"..." % x`` read
    as its format string; "" for anything else (a variable, a call's result)."""
    if node is None or _depth > _MAX_DEPTH:
        return ""
    if isinstance(node, ast.Call):
        return message_text(node.args[0], hole, _depth + 1) if node.args else ""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else ""
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else hole(v.value) if isinstance(v, ast.FormattedValue) else ""
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return message_text(node.left, hole, _depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return "".join(message_text(part, hole, _depth + 1) for part in _addends(node))
    return ""


def fold_string(node: ast.expr, lookup: Callable[[str], str | None], _depth: int = 0) -> str | None:
    """The string ``node`` always evaluates to, or None: a constant, a name ``lookup`` knows, an
    f-string of those (no conversion or format spec) or a ``+`` of them."""
    if _depth > _MAX_DEPTH:
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        folded = [fold_string(part, lookup, _depth + 1) for part in _addends(node)]
        return None if any(f is None for f in folded) else "".join(f for f in folded if f is not None)
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return lookup(node.id)
    if isinstance(node, ast.JoinedStr):
        out: list[str] = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out.append(value.value)
            elif isinstance(value, ast.FormattedValue) and value.conversion == -1 and value.format_spec is None:
                inner = fold_string(value.value, lookup, _depth + 1)
                if inner is None:
                    return None
                out.append(inner)
            else:
                return None
        return "".join(out)
    return None
