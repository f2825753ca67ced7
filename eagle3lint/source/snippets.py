"""Re-reading one function's syntax tree, for the few places a summary is not enough.

Summaries keep no bodies (that is what keeps the index cheap). The holder analysis needs a body
now and then: a setter override, a ``_init_model`` factory method, the ``with
self._mark_language_model(...)`` block of an ``__init__``. Those are parsed on their own, from
the function's lines only, and cached. The fixer's re-check gives the edited texts, which are
read instead of the files on disk.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Mapping

from eagle3lint.common.lines import line_texts
from eagle3lint.source.sources import decode_source, read_source


class SnippetReader:
    def __init__(self, texts: Mapping[str, str] | None = None) -> None:
        # Numbered as the ``ast`` numbers them (``str.splitlines`` also splits at form feeds).
        self._lines: dict[str, list[str] | None] = {path: line_texts(text) for path, text in (texts or {}).items()}
        self._trees: dict[tuple[str, int, int], ast.Module | None] = {}

    def lines(self, path: str) -> list[str] | None:
        if path not in self._lines:
            data = read_source(path)
            text = decode_source(path, data) if isinstance(data, bytes) else None
            self._lines[path] = line_texts(text) if isinstance(text, str) else None
        return self._lines[path]

    def parse(self, path: str, start: int, end: int) -> ast.Module | None:
        """The statements on lines ``start..end`` (1-based, inclusive), parsed on their own."""
        key = (path, start, end)
        if key in self._trees:
            return self._trees[key]
        tree: ast.Module | None = None
        lines = self.lines(path)
        if lines is not None and 0 < start <= end <= len(lines):
            chunk = lines[start - 1 : end]
            source = "\n".join(chunk)
            if chunk[0][:1].isspace():
                # An indented def or statement parses as the body of a dummy block.
                source = "if True:\n" + source
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tree = ast.parse(source)
            except (SyntaxError, ValueError, RecursionError):
                tree = None
        self._trees[key] = tree
        return tree

    def statement_at(self, path: str, start: int, end: int, line: int) -> ast.stmt | None:
        """The innermost statement of lines ``start..end`` that begins on ``line``."""
        tree = self.parse(path, start, end)
        if tree is None:
            return None
        offset = start - 1 - (1 if (self.lines(path) or [""])[start - 1][:1].isspace() else 0)
        found: ast.stmt | None = None
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt) and node.lineno + offset == line:
                found = node
        return found
