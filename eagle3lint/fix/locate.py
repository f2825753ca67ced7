"""Finding classes, methods and statements in an ``ast`` tree, the way the planner and the
proof both need them (the libcst side mirrors these rules in ``apply``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

# Statement lists of compound statements, looked into when searching for a class at module level.
_BODY_FIELDS = ("body", "orelse", "finalbody", "handlers")


def _module_level_classes(body: list[ast.stmt], name: str) -> Iterator[ast.ClassDef]:
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            if stmt.name == name:
                yield stmt
        elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.AsyncWith)) or type(stmt).__name__ == "TryStar":
            for field_name in _BODY_FIELDS:
                for item in getattr(stmt, field_name, []) or []:
                    if isinstance(item, ast.ExceptHandler):
                        yield from _module_level_classes(item.body, name)
                    elif isinstance(item, ast.stmt):
                        yield from _module_level_classes([item], name)


def find_classes(tree: ast.Module, class_path: tuple[str, ...]) -> list[ast.ClassDef]:
    """Every class definition with this qualified path (more than one means ambiguous)."""
    found = list(_module_level_classes(tree.body, class_path[0]))
    for part in class_path[1:]:
        found = [s for cls in found for s in cls.body if isinstance(s, ast.ClassDef) and s.name == part]
    return found


def find_class(tree: ast.Module, class_path: tuple[str, ...]) -> ast.ClassDef | None:
    found = find_classes(tree, class_path)
    return found[0] if len(found) == 1 else None


def own_method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The last definition of ``name`` directly in the class body (the one Python keeps)."""
    found = None
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
            found = stmt
    return found


def statement_lists(body: list[ast.stmt]) -> Iterator[list[ast.stmt]]:
    """``body`` and every statement list nested in it, not entering nested defs or classes."""
    yield body
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field_name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field_name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from statement_lists(inner)
        for handler in getattr(stmt, "handlers", []) or []:
            yield from statement_lists(handler.body)
        for case in getattr(stmt, "cases", []) or []:
            yield from statement_lists(case.body)


def statements(body: list[ast.stmt]) -> Iterator[tuple[ast.stmt, list[ast.stmt]]]:
    """Every statement with the list that holds it."""
    for stmts in statement_lists(body):
        for stmt in stmts:
            yield stmt, stmts


def alone_on_its_line(stmt: ast.stmt, siblings: list[ast.stmt]) -> bool:
    return not any(other is not stmt and other.lineno == stmt.lineno for other in siblings)


def find_statement(fn: ast.FunctionDef | ast.AsyncFunctionDef, line: int, kind: str) -> tuple[ast.stmt, list[ast.stmt]] | None:
    hits = [(s, lst) for s, lst in statements(fn.body) if s.lineno == line and type(s).__name__ == kind]
    return hits[0] if len(hits) == 1 else None


def nodes_outside_nested_scopes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """Every node of a function body except those inside nested functions, lambdas and classes."""
    stack: list[ast.AST] = list(reversed(fn.body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
