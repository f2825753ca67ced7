"""Platform-dispatched model packages: one registered name, one class per platform.

Newer vLLM trees keep some models in ``vllm/models/<name>/`` packages whose ``__init__`` picks
the implementation for the current platform, either with module-level branches
(``if current_platform.is_rocm(): from .amd.model import X``) or with a module ``__getattr__``
that imports lazily. Statically every runtime branch is a *variant*: each is checked, and a
finding says which variant it is in. ``if TYPE_CHECKING:`` branches only serve type checkers and
are skipped.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass

from eagle3lint.engines.vllm.pack import VllmPack
from eagle3lint.source.index import ClassRef, ProjectIndex
from eagle3lint.source.sources import decode_source, read_source
from eagle3lint.source.summary_walk import dotted


@dataclass(frozen=True)
class Variant:
    label: str  # "nvidia", "amd", "rocm", "default", ...
    ref: ClassRef


@dataclass(frozen=True)
class _Source:
    module: str  # where the name is imported from
    name: str  # its name there; "" when a whole module is imported (``from .amd import model``)
    alias: str  # the name bound in the package
    conditions: tuple[str, ...]  # platform labels of the enclosing branches, outermost first


_TYPE_CHECKING = "TYPE_CHECKING"


def _platform_word(test: ast.expr) -> str | None:
    """``current_platform.is_rocm()`` -> "rocm"; ``current_platform.device_type == "tpu"`` -> "tpu"."""
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.startswith("is_"):
            return node.func.attr[3:]
        if isinstance(node, ast.Compare) and len(node.comparators) == 1:
            right = node.comparators[0]
            if isinstance(right, ast.Constant) and isinstance(right.value, str):
                return right.value
    return None


def _strip_type_checking(test: ast.expr) -> tuple[bool, ast.expr | None]:
    """(only_type_checking, runtime part): ``TYPE_CHECKING or X`` -> (False, X)."""
    if dotted(test) in (_TYPE_CHECKING, f"typing.{_TYPE_CHECKING}"):
        return True, None
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        rest = [v for v in test.values if dotted(v) not in (_TYPE_CHECKING, f"typing.{_TYPE_CHECKING}")]
        if len(rest) != len(test.values):
            if len(rest) == 1:
                return False, rest[0]
            return False, ast.BoolOp(op=ast.Or(), values=rest)
    return False, test


class _DispatchReader:
    def __init__(self, package: str, markers: tuple[str, ...]) -> None:
        self.package = package
        self.markers = markers
        self.sources: list[_Source] = []

    def resolve_from(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        parts = self.package.split(".")
        if node.level > 1:
            parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts)
        return f"{base}.{node.module}" if node.module else base

    def is_platform_test(self, test: ast.expr) -> bool:
        text = ast.unparse(test)
        return any(marker in text for marker in self.markers)

    def body(self, stmts: list[ast.stmt], conditions: tuple[str, ...], dispatching: bool) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.If):
                only_tc, runtime = _strip_type_checking(stmt.test)
                if only_tc:
                    self.body(stmt.orelse, conditions, dispatching)
                    continue
                assert runtime is not None
                if self.is_platform_test(runtime):
                    word = _platform_word(runtime) or "platform"
                    negated = isinstance(runtime, ast.UnaryOp) and isinstance(runtime.op, ast.Not)
                    yes, no = (f"not-{word}", word) if negated else (word, f"not-{word}")
                    self.body(stmt.body, (*conditions, yes), True)
                    self.body(stmt.orelse, (*conditions, no), True)
                else:
                    self.body(stmt.body, conditions, dispatching)
                    self.body(stmt.orelse, conditions, dispatching)
            elif isinstance(stmt, ast.ImportFrom):
                base = self.resolve_from(stmt)
                for alias in stmt.names:
                    if alias.name == "*":
                        continue
                    self.sources.append(_Source(base, alias.name, alias.asname or alias.name, conditions))
            elif isinstance(stmt, ast.FunctionDef) and stmt.name == "__getattr__" and not conditions:
                self.body(stmt.body, ("lazy",), True)
            elif isinstance(stmt, ast.Try):
                self.body(stmt.body, conditions, dispatching)


def _label(source: _Source, package: str, vpack: VllmPack) -> str:
    module = source.module
    if module.startswith(package + "."):
        first = module[len(package) + 1 :].split(".")[0]
        if first in vpack.platform_folders:
            return first
    positive = [c for c in source.conditions if not c.startswith("not-") and c != "lazy"]
    return positive[-1] if positive else "default"


_CACHE: dict[tuple[str, str], list[_Source] | None] = {}


def _sources(index: ProjectIndex, module: str, vpack: VllmPack) -> list[_Source] | None:
    root = index.engine.source_root_for(module) or index.engine.source_root
    key = (str(root), module)
    if key in _CACHE:
        return _CACHE[key]
    base = root.joinpath(*module.split("."))
    path = base / "__init__.py"
    result: list[_Source] | None = None
    if path.is_file():
        data = read_source(str(path))
        if isinstance(data, bytes) and any(m.encode() in data for m in vpack.platform_markers):
            text = decode_source(str(path), data)
            if isinstance(text, str):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        tree = ast.parse(text)
                except (SyntaxError, ValueError, RecursionError):
                    tree = None  # the index reports the file; dispatch is then simply unknown
                if tree is not None:
                    reader = _DispatchReader(module, vpack.platform_markers)
                    reader.body(tree.body, (), False)
                    result = reader.sources
    _CACHE[key] = result
    return result


def platform_variants(index: ProjectIndex, module: str, name: str, vpack: VllmPack) -> list[Variant] | None:
    """The classes ``module.name`` may be at run time, when the package dispatches on the
    platform; None when it does not (ordinary resolution applies)."""
    sources = _sources(index, module, vpack)
    if not sources:
        return None
    found: dict[ClassRef, list[str]] = {}
    for source in sources:
        if not source.conditions:
            if source.alias == name:
                return None  # an unconditional import wins: no dispatch for this name
            continue
        candidate: object
        if source.alias == name:
            candidate = index.resolve_qualified(f"{source.module}.{source.name}")
        elif index.is_module(f"{source.module}.{source.name}"):
            candidate = index.resolve(f"{source.module}.{source.name}", name) if index.module(f"{source.module}.{source.name}") else None
        else:
            continue
        if isinstance(candidate, ClassRef):
            labels = found.setdefault(candidate, [])
            label = _label(source, module, vpack)
            if label not in labels:
                labels.append(label)
    if len(found) < 2:
        return None
    all_labels = [label for labels in found.values() for label in labels]
    variants = []
    for ref, labels in found.items():
        label = "+".join(labels)
        if any(all_labels.count(one) > 1 for one in labels):
            label = f"{label}:{ref.module.rsplit('.', 1)[-1]}"
        variants.append(Variant(label, ref))
    return variants
