"""A module's layout: where each module-level statement lies and which classes it defines.

The summary keeps it (with the digest of the bytes it was made from) so that ``fix`` can edit
and prove a file without parsing all of it a second time: it parses only the statements it
edits, and the layout stands in for the others (``fix.skeleton``)."""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator

# One module-level statement: (the ``ast`` class name, first line with its decorators, line,
# end line, column, end column, the classes defined in it at module level). Plain tuples: the
# cache's restricted unpickler builds nothing else.
TopStatement = tuple[str, int, int, int, int, int, tuple[str, ...]]

_COMPOUND = (ast.If, ast.Try, ast.With, ast.AsyncWith)


def module_layout(tree: ast.Module) -> tuple[TopStatement, ...]:
    """Where each module-level statement of ``tree`` lies (a summary's own layout is made as it
    is built, ``summary._ModuleBuilder.visit_module``: a reused statement's entry comes with it)."""
    return tuple(top_statement(stmt) for stmt in tree.body)


def top_statement(stmt: ast.stmt) -> TopStatement:
    first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
    end = stmt.end_lineno or stmt.lineno
    end_col = stmt.end_col_offset if stmt.end_col_offset is not None else -1
    names = tuple(dict.fromkeys(_module_level_class_names(stmt)))
    return (type(stmt).__name__, first, stmt.lineno, end, stmt.col_offset, end_col, names)


def unit_digest(text: str) -> str:
    """A statement's text, digested (``ReusableUnit.digest``)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


def _module_level_class_names(stmt: ast.stmt) -> Iterator[str]:
    """The classes a module-level statement defines where the fixer looks for them (the same
    rule as ``fix.locate.find_classes``: a class, or one inside ``if``/``try``/``with``)."""
    if isinstance(stmt, ast.ClassDef):
        yield stmt.name
    elif isinstance(stmt, _COMPOUND) or type(stmt).__name__ == "TryStar":
        for field_name in ("body", "orelse", "finalbody", "handlers"):
            for item in getattr(stmt, field_name, []) or []:
                if isinstance(item, ast.ExceptHandler):
                    for inner in item.body:
                        yield from _module_level_class_names(inner)
                elif isinstance(item, ast.stmt):
                    yield from _module_level_class_names(item)
