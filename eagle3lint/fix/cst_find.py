"""Locating libcst nodes by what the ``ast`` said of them: a class by its path, a method by its
name, a statement of an ``ast`` kind, and the statement lists inside compound statements."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from eagle3lint.fix.edits import ApplyError


def compound_bodies(stmt: cst.CSTNode) -> Iterator[Sequence[cst.BaseStatement]]:
    """Statement lists directly inside a compound statement (not a def or class); an ``elif``
    counts as a list holding one ``if``, as in the ``ast``."""
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef, cst.SimpleStatementLine)):
        return
    body = getattr(stmt, "body", None)
    if isinstance(body, cst.IndentedBlock):
        yield body.body
    for part in [*(getattr(stmt, "handlers", ()) or ()), *(getattr(stmt, "cases", ()) or ())]:
        if isinstance(part.body, cst.IndentedBlock):
            yield part.body.body
    orelse = getattr(stmt, "orelse", None)
    if isinstance(orelse, cst.If):
        yield [orelse]
    elif isinstance(orelse, cst.Else) and isinstance(orelse.body, cst.IndentedBlock):
        yield orelse.body.body
    final = getattr(stmt, "finalbody", None)
    if isinstance(final, cst.Finally) and isinstance(final.body, cst.IndentedBlock):
        yield final.body.body


def walk_statements(body: Sequence[cst.BaseStatement]) -> Iterator[cst.BaseStatement]:
    for stmt in body:
        yield stmt
        for inner in compound_bodies(stmt):
            yield from walk_statements(inner)


def cst_class(module: cst.Module, class_path: tuple[str, ...]) -> cst.ClassDef:
    found = [s for s in walk_statements(module.body) if isinstance(s, cst.ClassDef) and s.name.value == class_path[0]]
    for part in class_path[1:]:
        found = [s for cls in found for s in indented_block(cls).body if isinstance(s, cst.ClassDef) and s.name.value == part]
    name = ".".join(class_path)
    if not found:
        raise ApplyError(f"class `{name}` not found")
    if len(found) > 1:
        raise ApplyError(f"class `{name}` is defined {len(found)} times")
    return found[0]


def indented_block(node: cst.CSTNode) -> cst.IndentedBlock:
    body = getattr(node, "body", None)
    if not isinstance(body, cst.IndentedBlock):
        raise ApplyError("the body is written on one line; cannot insert into it")
    return body


def cst_method(cls: cst.ClassDef, name: str) -> cst.FunctionDef:
    found = [s for s in indented_block(cls).body if isinstance(s, cst.FunctionDef) and s.name.value == name]
    if not found:
        raise ApplyError(f"`{cls.name.value}.{name}` not found")
    return found[-1]


_KINDS: dict[str, type[cst.CSTNode]] = {"Assign": cst.Assign, "Return": cst.Return, "Expr": cst.Expr}


# Compound statements an insertion may be anchored on (before or after the whole statement).
_COMPOUND_KINDS: dict[str, type[cst.BaseCompoundStatement]] = {"If": cst.If, "While": cst.While, "With": cst.With, "Try": cst.Try}


def is_kind(stmt: cst.BaseStatement, kind: str) -> bool:
    """Whether a libcst statement is the ``ast`` statement of that kind (alone on its line)."""
    if kind == "For":
        return isinstance(stmt, cst.For)
    if kind in _COMPOUND_KINDS:
        return isinstance(stmt, _COMPOUND_KINDS[kind])
    simple = isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
    return kind in _KINDS and simple and isinstance(stmt.body[0], _KINDS[kind])  # type: ignore[attr-defined]
