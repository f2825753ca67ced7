"""The original's ``ast`` for editing and proving a file, without parsing all of it again.

Editing (``apply``) and the proof (``proof``) need the edited module-level statements whole and
of every other one only its kind and its lines (the proof compares their text: a module-level
statement starts with the tokenizer in its initial state, so the same text is the same tree).
The index's summary of the file already holds that layout, made from a full parse of the very
same bytes (its digest says so): the edited statements are parsed alone, at their own line
numbers, and the others stand in as empty nodes of their kind at their place. Where anything
does not match up (another text, a statement that does not parse alone to exactly itself, a
class defined in more than one statement), the whole file is parsed, as before.
"""

from __future__ import annotations

import ast
import hashlib
import warnings
from collections.abc import Sequence

from eagle3lint.common.lines import source_lines
from eagle3lint.fix.edits import Edit, ImportName
from eagle3lint.fix.texts import SourceFile
from eagle3lint.source.layout import TopStatement

# (the digest of the bytes a layout was made from, the layout), as the index's summary has it.
Layout = tuple[str, tuple[TopStatement, ...]]

_DEFINITIONS = ("ClassDef", "FunctionDef", "AsyncFunctionDef")


def original_tree(source: SourceFile, layout: Layout | None, edits: Sequence[Edit]) -> ast.Module:
    """A tree of the original to edit and prove (its edited statements are the caller's own:
    the proof consumes them). Raises ``SyntaxError`` as a parse of the file would."""
    tree = _skeleton(source, layout, edits) if layout is not None else None
    return tree if tree is not None else source.fresh_tree()


def _skeleton(source: SourceFile, layout: Layout, edits: Sequence[Edit]) -> ast.Module | None:
    digest, statements = layout
    if not statements or digest != hashlib.sha256(source.data).hexdigest():
        return None
    wanted: set[int] = set()
    for edit in edits:
        if isinstance(edit, ImportName):
            hits = [n for n, stmt in enumerate(statements) if stmt[2] == edit.line]
            if edit.extend:
                wanted.update(hits)
        else:
            hits = [n for n, stmt in enumerate(statements) if edit.class_path[0] in stmt[6]]
        if len(hits) != 1:
            return None  # the whole parse says why, as before
        if not isinstance(edit, ImportName):
            wanted.add(hits[0])
    lines = source_lines(source.text)
    body: list[ast.stmt] = []
    for n, stmt in enumerate(statements):
        node = _parsed_alone(source.path, lines, stmt) if n in wanted else _stand_in(stmt)
        if node is None:
            return None
        body.append(node)
    return ast.Module(body=body, type_ignores=[])


def _parsed_alone(path: str, lines: list[str], stmt: TopStatement) -> ast.stmt | None:
    """The statement parsed from its own lines at their line numbers; None unless that gives
    exactly it (its kind and its extent as the layout has them)."""
    kind, first, lineno, end, col, end_col, _ = stmt
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in engine code are not ours
            body = ast.parse("\n" * (first - 1) + "".join(lines[first - 1 : end]), filename=path).body
    except (SyntaxError, ValueError):
        return None
    if len(body) != 1:
        return None
    node = body[0]
    if type(node).__name__ != kind or (node.lineno, node.end_lineno, node.col_offset, node.end_col_offset) != (lineno, end, col, end_col):
        return None
    return node


def _stand_in(stmt: TopStatement) -> ast.stmt | None:
    """An empty node of the statement's kind at its place: what the editor and the proof read of
    a statement no edit touches (its kind, its lines, where its decorators start)."""
    kind, first, lineno, end, col, end_col, _ = stmt
    cls = getattr(ast, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, ast.stmt)):
        return None
    node = cls()
    node.lineno, node.end_lineno, node.col_offset, node.end_col_offset = lineno, end, col, end_col
    if kind in _DEFINITIONS:
        node.name = ""  # type: ignore[attr-defined]  # never the class an edit looks for
        node.decorator_list = [ast.Name(id="", lineno=first)] if first < lineno else []  # type: ignore[attr-defined]
    return node
