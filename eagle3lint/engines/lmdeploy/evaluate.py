"""A small three-valued reading of engine functions: which statements run for given arguments.

LMDeploy decides what a speculative method gets in plain Python: ``if spec_method is not None:
assert spec_method == 'deepseek_mtp'``, ``if spec_method == 'eagle3': hf_config.x = ...``,
``target_layer_ids = None; if method == 'dflash': target_layer_ids = ...``. These helpers evaluate
such tests with the arguments the engine passes (``spec_method='eagle3'``, ``is_draft_model=False``):
``True``, ``False``, or :data:`UNKNOWN` where the test depends on anything else (a config value,
a call). Nothing is executed; only literals, names bound to literals, ``is None``, ``==``, ``!=``,
``in``, ``not in``, ``and``, ``or`` and ``not`` are understood.
"""

from __future__ import annotations

import ast
from typing import Any

from eagle3lint.source.ast_strings import hole_source, message_text


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


# Deeper nesting than any engine writes is not read (a hostile file must not exhaust the stack).
_MAX_DEPTH = 30


def literal(node: ast.expr | None, env: dict[str, Any], _depth: int = 0) -> Any:
    """The value of a literal (strings, numbers, booleans, None, and sets/lists/tuples of them)
    or of a name bound to one; :data:`UNKNOWN` for anything else."""
    if node is None or _depth > _MAX_DEPTH:
        return UNKNOWN
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id, UNKNOWN)
    if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
        values = [literal(e, env, _depth + 1) for e in node.elts]
        if any(v is UNKNOWN for v in values):
            return UNKNOWN
        return frozenset(values) if isinstance(node, ast.Set) else tuple(values)
    return UNKNOWN


def truth(node: ast.expr, env: dict[str, Any], _depth: int = 0) -> Any:
    """``True``, ``False`` or :data:`UNKNOWN`."""
    if _depth > _MAX_DEPTH:
        return UNKNOWN
    if isinstance(node, ast.BoolOp):
        values = [truth(v, env, _depth + 1) for v in node.values]
        if isinstance(node.op, ast.And):
            if any(v is False for v in values):
                return False
            return True if all(v is True for v in values) else UNKNOWN
        if any(v is True for v in values):
            return True
        return False if all(v is False for v in values) else UNKNOWN
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = truth(node.operand, env, _depth + 1)
        return UNKNOWN if inner is UNKNOWN else not inner
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = literal(node.left, env), literal(node.comparators[0], env)
        op = node.ops[0]
        if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None:
            if left is UNKNOWN:
                return UNKNOWN
            return (left is None) if isinstance(op, ast.Is) else (left is not None)
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        try:
            if isinstance(op, ast.Eq):
                return bool(left == right)
            if isinstance(op, ast.NotEq):
                return bool(left != right)
            if isinstance(op, ast.In):
                return bool(left in right)
            if isinstance(op, ast.NotIn):
                return bool(left not in right)
        except TypeError:
            return UNKNOWN
        return UNKNOWN
    value = literal(node, env)
    if value is UNKNOWN:
        return UNKNOWN
    return bool(value)


def message_of(node: ast.expr | None) -> str:
    """The text of a raised exception's message or an assertion's (f-string holes as ``{expr}``);
    the expression's source where it states no text."""
    if node is None:
        return ""
    return message_text(node, hole_source) or _text(node)


def _text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except (ValueError, RecursionError):
        return "..."


def exception_name(node: ast.expr | None) -> str:
    """``ValueError`` for ``raise ValueError(...)`` (or a bare class); "" for a re-raise."""
    if node is None:
        return ""
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Name):
        return target.id
    return ""
