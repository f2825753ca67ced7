"""The text of every file the fixer reads, as read: bytes, encoding, text, and its ``ast``.

The bytes are kept so the writer can refuse a file that changed on disk since it was read.
``overlay`` gives a view where some files have new text (the second run of the proof).
"""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
import warnings
from dataclasses import dataclass, field

from eagle3lint.common.findings import FileError
from eagle3lint.common.lines import source_lines
from eagle3lint.source.sources import read_source


@dataclass
class SourceFile:
    path: str
    data: bytes  # exactly as read (what the writer compares against)
    encoding: str
    text: str
    _tree: ast.Module | None = field(default=None, repr=False)
    # Statements parsed alone, by (kind, name, first line, last line): planning runs again
    # after every pass and asks for the same classes and methods.
    _pieces: dict[tuple[str, str, int, int], ast.stmt | None] = field(default_factory=dict, repr=False)

    def tree(self) -> ast.Module:
        """The file's ``ast``, parsed once and shared: do not modify it."""
        if self._tree is None:
            self._tree = self.fresh_tree()
        return self._tree

    def fresh_tree(self) -> ast.Module:
        """A parse of the file's own, for a caller that modifies it."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in engine code are not ours
            return ast.parse(self.text, filename=self.path)

    def __getstate__(self) -> dict[str, object]:
        # Edit workers get the text, not the parent's tree: pickling a whole ``ast`` costs more
        # than the worker parsing it again.
        return {**self.__dict__, "_tree": None, "_pieces": {}}

    def class_def(self, name: str, lineno: int, end_lineno: int) -> ast.ClassDef | None:
        """The module-level ``class`` statement on these lines, parsed alone (a class is a
        small part of a model file) and once; None when it cannot be parsed on its own.
        Shared: do not modify it."""
        node = self._piece("class", name, lineno, end_lineno)
        return node if isinstance(node, ast.ClassDef) else None

    def method_def(self, name: str, lineno: int, end_lineno: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The method ``def``-ed on these lines of a class body, parsed alone inside a stand-in
        class (real line and column numbers kept) and once; None when that does not give
        exactly it. Shared: do not modify it."""
        node = self._piece("method", name, lineno, end_lineno)
        return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None

    def _piece(self, kind: str, name: str, lineno: int, end_lineno: int) -> ast.stmt | None:
        key = (kind, name, lineno, end_lineno)
        if key not in self._pieces:
            self._pieces[key] = self._parse_piece(kind == "method", name, lineno, end_lineno)
        return self._pieces[key]

    def _parse_piece(self, in_class: bool, name: str, lineno: int, end_lineno: int) -> ast.stmt | None:
        """The one statement named ``name`` starting on ``lineno``; a method is parsed as the
        body of a stand-in class on the line before it."""
        lines = source_lines(self.text)[lineno - 1 : end_lineno]
        if not lines:
            return None
        if in_class:
            if lineno < 2 or not lines[0][:1].isspace():
                return None
            head = "\n" * (lineno - 2) + "class _:\n"
        else:
            if not lines[0].startswith("class "):
                return None
            head = "\n" * (lineno - 1)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # Leading newlines give the real line numbers without re-walking the tree.
                body = ast.parse(head + "".join(lines), filename=self.path).body
        except SyntaxError:
            return None
        if in_class:
            body = body[0].body if len(body) == 1 and isinstance(body[0], ast.ClassDef) else []
        node = body[0] if len(body) == 1 else None
        if node is None or getattr(node, "name", None) != name or node.lineno != lineno:
            return None
        return node

    def encode(self, text: str) -> bytes:
        return text.encode(self.encoding)


def decode(path: str, data: bytes) -> SourceFile | FileError:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return FileError(path, f"bad encoding declaration: {exc}")
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        return FileError(path, f"cannot be decoded as {encoding}: {exc}")
    return SourceFile(path, data, encoding, text)


class SourceSet:
    def __init__(self, base: SourceSet | None = None, overrides: dict[str, str] | None = None) -> None:
        self._files: dict[str, SourceFile | FileError] = {}
        self._base = base
        for path, text in (overrides or {}).items():
            original = base.get(path) if base else None
            encoding = original.encoding if isinstance(original, SourceFile) else "utf-8"
            self._files[path] = SourceFile(path, text.encode(encoding), encoding, text)

    def get(self, path: str) -> SourceFile | FileError:
        found = self._files.get(path)
        if found is None:
            if self._base is not None:
                found = self._base.get(path)
            else:
                data = read_source(path)
                found = data if isinstance(data, FileError) else decode(path, data)
            self._files[path] = found
        return found

    def overlay(self, texts: dict[str, str]) -> SourceSet:
        return SourceSet(base=self, overrides=texts)

    def digests(self) -> dict[str, str]:
        """The SHA-256 of each file's bytes as this set holds them (as read from disk, or an
        overlay's new text); ``""`` for one that could not be read (it matches no content, so
        whatever relies on it is redone)."""
        return {
            path: hashlib.sha256(found.data).hexdigest() if isinstance(found, SourceFile) else ""
            for path, found in self._files.items()
        }
