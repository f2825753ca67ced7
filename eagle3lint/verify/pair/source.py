"""The release's code as the pair pre-flight reads it: a file's syntax tree, a method's body
found through the project index, the files under a folder. Files are read as the analysis reads
them (regular files only, decoded per PEP 263); one that cannot be read is None, never an error."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from eagle3lint.model.capture import CaptureAnalysis
from eagle3lint.source.ast_names import dotted_parts
from eagle3lint.source.index import ClassRef, ProjectIndex
from eagle3lint.source.sources import decode_source, read_source

# Releases' files are at most a few hundred kilobytes; a file past this is not read.
_MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Method:
    """A method as a class runs it: the class that defines it, its file and its syntax tree."""

    owner: ClassRef
    path: str
    node: ast.FunctionDef | ast.AsyncFunctionDef


class ReleaseCode:
    """Parsed files of one engine tree, each parsed once."""

    def __init__(self, root: Path, index: ProjectIndex | None = None) -> None:
        self.root = root
        self.index = index
        self._trees: dict[str, ast.Module | None] = {}
        self._texts: dict[str, str | None] = {}

    def text(self, path: str | Path) -> str | None:
        key = str(path)
        if key not in self._texts:
            data = read_source(key)
            text = None
            if isinstance(data, bytes) and len(data) <= _MAX_FILE_BYTES:
                decoded = decode_source(key, data)
                text = decoded if isinstance(decoded, str) else None
            self._texts[key] = text
        return self._texts[key]

    def tree(self, path: str | Path) -> ast.Module | None:
        key = str(path)
        if key not in self._trees:
            text = self.text(key)
            tree = None
            if text is not None:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        tree = ast.parse(text)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None
            self._trees[key] = tree
        return self._trees[key]

    def files(self, rel: str) -> list[Path]:
        """``rel`` (relative to the package root): the file, or a folder's ``.py`` files."""
        target = self.root / rel
        if rel.endswith("/"):
            return sorted(p for p in target.rglob("*.py") if p.is_file()) if target.is_dir() else []
        return [target] if target.is_file() else []

    def search(self, rels: list[str], pattern: re.Pattern[str]) -> Iterator[tuple[Path, int, str]]:
        """Lines matching ``pattern`` in the files ``rels`` name: (file, line number, line)."""
        for rel in rels:
            for path in self.files(rel):
                text = self.text(path)
                if text is None or not pattern.search(text):
                    continue
                for number, line in enumerate(text.splitlines(), start=1):
                    if pattern.search(line):
                        yield path, number, line

    # ---- classes and methods through the index ----------------------------------------------
    def class_node(self, ref: ClassRef) -> tuple[str, ast.ClassDef] | None:
        if self.index is None:
            return None
        module = self.index.module_of(ref)
        summary = self.index.class_summary(ref)
        if module is None or summary is None:
            return None
        tree = self.tree(module.path)
        if tree is None:
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == summary.name and node.lineno == summary.lineno:
                return module.path, node
        return None

    def method(self, ref: ClassRef, name: str) -> Method | None:
        """``name`` as an instance of ``ref`` runs it (along its MRO)."""
        if self.index is None:
            return None
        lookup = self.index.lookup(ref, name)
        if lookup.status != "found" or lookup.owner is None or lookup.function is None:
            return None
        found = self.class_node(lookup.owner)
        if found is None:
            return None
        path, cls = found
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name and node.lineno == lookup.function.lineno:
                return Method(lookup.owner, path, node)
        return None

    def next_method(self, ref: ClassRef, after: ClassRef, name: str) -> Method | None:
        """``super().<name>`` inside ``after``'s method, for an instance of ``ref``."""
        if self.index is None:
            return None
        classes = self.index.mro(ref).classes
        if after not in classes:
            return None
        for current in classes[classes.index(after) + 1 :]:
            summary = self.index.class_summary(current)
            if summary is not None and name in summary.methods:
                return self.method(current, name)
        return None

    def holders(self, analysis: CaptureAnalysis, top: ClassRef, path: tuple[str, ...]) -> list[ClassRef] | None:
        """The classes ``self.<path>`` may hold in an instance of ``top``: the index's answer, or
        where ``__init__`` builds it through a factory method of its own (``self.model =
        self._init_model(...)``, whose ``return LlamaModel(...)`` says the class)."""
        found = analysis.holders(top, path)
        if found is not None or self.index is None:
            return found
        current = [top]
        for step in path:
            following: list[ClassRef] = []
            for cls in current:
                direct = analysis.holders(cls, (step,))
                classes = direct if direct is not None else self._built_by_factory(cls, step)
                if not classes:
                    return None
                following.extend(classes)
            current = list(dict.fromkeys(following))
        return current

    def _built_by_factory(self, ref: ClassRef, attr: str) -> list[ClassRef]:
        if self.index is None:
            return []
        init = self.method(ref, "__init__")
        if init is None:
            return []
        factories = []
        for node in ast.walk(init.node):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and dotted_parts(node.targets[0]) == ("self", attr) and isinstance(node.value, ast.Call):
                func = dotted_parts(node.value.func)
                if func is not None and len(func) == 2 and func[0] == "self":
                    factories.append(func[1])
        out: list[ClassRef] = []
        for factory in factories:
            method = self.method(ref, factory)
            if method is None:
                return []
            for node in ast.walk(method.node):
                if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
                    name = dotted_parts(node.value.func)
                    target = self.index.resolve(method.owner.module, ".".join(name)) if name else None
                    if not isinstance(target, ClassRef):
                        return []
                    out.append(target)
        return out

    def relative(self, path: str | Path) -> str:
        """A path as a message shows it: relative to the engine's source root where it lies there."""
        try:
            return str(Path(path).relative_to(self.root.parent))
        except ValueError:
            return str(path)
