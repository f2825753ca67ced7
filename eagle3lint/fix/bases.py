"""Planning "add this class to a class's bases, and import it": where in the bases the method
resolution order allows it, and which import binds the name (an existing
``from <module> import ...`` of the module that defines it, or a new one after the module's
leading imports). Engine-neutral; the planner only reads the index and the ``ast``."""

from __future__ import annotations

import ast
import bisect

from eagle3lint.fix.edits import AddBase, Edit, ImportName
from eagle3lint.source.index import ClassRef, External, ProjectIndex
from eagle3lint.source.summary_types import ModuleSummary
from eagle3lint.source.summary_walk import dotted

# A typing.Protocol subclass also derives from typing.Generic.
_PROTOCOLS = {"typing.Protocol", "typing_extensions.Protocol"}
_GENERICS = {"typing.Generic", "typing_extensions.Generic"}


class BaseProblem(Exception):
    """The base cannot be added by a fix (the reason is shown with the suggestion)."""


def base_edits(index: ProjectIndex, module: ModuleSummary, leading: ast.Module, cls: ast.ClassDef, ref: ClassRef, base: ClassRef) -> list[Edit]:
    """Edits adding ``base`` to the bases of ``ref`` (its ``class`` statement: ``cls``, in
    ``module``) and importing it when the module does not bind it yet; :class:`BaseProblem`
    otherwise. ``leading``: the module's statements before its first class or function."""
    class_path = tuple(ref.qualname.split("."))
    if "." in base.qualname:
        raise BaseProblem(f"`{base.qualname}` is a nested class")
    position = _position(index, ref, cls, base)
    edits: list[Edit] = [AddBase(module.path, class_path, base.qualname, position, base.module)]
    edits += import_edits(index, module, leading, base, _first_line(cls))
    return edits


def _first_line(stmt: ast.stmt) -> int:
    return min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])


def _ancestors(index: ProjectIndex, base: ClassRef) -> tuple[set[ClassRef], set[str]]:
    """The classes ``base`` derives from, and the outside classes (``typing.Protocol``) among them."""
    mro = index.mro(base)
    externals: set[str] = set()
    for current in mro.classes:
        summary = index.class_summary(current)
        for text in summary.bases if summary else []:
            resolved = index.resolve(current.module, text)
            if isinstance(resolved, External):
                externals.add(resolved.qualified)
    if externals & _PROTOCOLS:
        externals |= _GENERICS
    return set(mro.classes[1:]), externals


def _position(index: ProjectIndex, ref: ClassRef, cls: ast.ClassDef, base: ClassRef) -> int:
    """After the last positional base, unless one of them is an ancestor of ``base`` (such as
    ``Generic[T]`` for a protocol): a class must come before its ancestors, or Python cannot
    build the method resolution order."""
    classes, externals = _ancestors(index, base)
    for position, node in enumerate(cls.bases):
        if isinstance(node, ast.Starred):
            raise BaseProblem(f"the bases of `{ref.qualname}` are computed (`*{ast.unparse(node.value)}`)")
        text = dotted(node)
        resolved = index.resolve(ref.module, text) if text else None
        if (isinstance(resolved, ClassRef) and resolved in classes) or (isinstance(resolved, External) and resolved.qualified in externals):
            return position
    return len(cls.bases)


def import_edits(index: ProjectIndex, module: ModuleSummary, tree: ast.Module, target: ClassRef, before_line: int) -> list[Edit]:
    """What binds ``target``'s name in ``module`` before ``before_line``: nothing when a
    module-level import above already does; else the name joins a ``from`` import of its module,
    or a new ``from <module> import <name>`` follows the module's leading imports. ``tree``
    holds the module's leading statements (at least those before its first class or function);
    a name bound anywhere else in the module is seen through ``module``, the summary."""
    name = target.qualname
    binding = _module_level_binding(tree, name)
    if index.resolve(module.module, name) == target:
        if binding is not None and binding.lineno < before_line and isinstance(binding, (ast.Import, ast.ImportFrom)):
            return []
        if binding is None and name not in module.imports and module.star_imports:
            return []  # `from ... import *` binds it
        raise BaseProblem(f"`{name}` is not imported at module level before line {before_line}")
    if binding is not None or name in module.imports or name in module.classes or name in module.functions or name in module.aliases:
        raise BaseProblem(f"`{name}` already names something else in {module.path}")
    for stmt in tree.body:
        if stmt.lineno >= before_line:
            break
        if isinstance(stmt, ast.ImportFrom) and _absolute(stmt, module) == target.module and not any(a.name == "*" for a in stmt.names):
            names = [alias.name for alias in stmt.names]
            position = bisect.bisect(names, name) if names == sorted(names) else len(names)
            return [ImportName(module.path, _written(stmt), name, stmt.lineno, True, position)]
    anchor = None
    for stmt in tree.body:
        if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) or stmt.lineno >= before_line:
            break
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            anchor = stmt
    if anchor is None:
        raise BaseProblem(f"{module.path} has no module-level import to put `from {target.module} import {name}` after")
    return [ImportName(module.path, _module_text(module, tree, target.module), name, anchor.lineno, False)]


def _module_level_binding(tree: ast.Module, name: str) -> ast.stmt | None:
    """The first module-level statement (outside any block) that binds ``name``."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound == name:
                    return stmt
        elif isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
            return stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return stmt
    return None


def _package(module: ModuleSummary) -> list[str]:
    parts = module.module.split(".")
    return parts if module.is_package else parts[:-1]


def _absolute(stmt: ast.ImportFrom, module: ModuleSummary) -> str:
    if not stmt.level:
        return stmt.module or ""
    package = _package(module)
    base = package[: len(package) - (stmt.level - 1)] if stmt.level > 1 else package
    return ".".join([*base, *([stmt.module] if stmt.module else [])])


def _written(stmt: ast.ImportFrom) -> str:
    return "." * stmt.level + (stmt.module or "")


def _module_text(module: ModuleSummary, tree: ast.Module, target_module: str) -> str:
    """``.interfaces`` when the module is a sibling and the file already imports relatively;
    the absolute name otherwise."""
    package, _, last = target_module.rpartition(".")
    relative = any(isinstance(s, ast.ImportFrom) and s.level for s in tree.body)
    if relative and ".".join(_package(module)) == package:
        return f".{last}"
    return target_module
