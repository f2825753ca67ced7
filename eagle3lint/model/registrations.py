"""Model registrations in an out-of-tree package, read without importing it.

Two shapes, named by each engine's rule pack (``[plugins]``): a registration call
``<Registry>.register_model("Arch", target)`` (vLLM; ``target`` a ``"package.module:Class"``
string or a class object) and a write into the registry's dict
``<Registry>.models["Arch"] = Class`` (SGLang). The calls sit in the function an entry point
names, in helpers it calls, or in other modules (a second registration site used in one run mode
only): every one in the package is read, under any ``if`` (env-flag branches register different
classes for one architecture; each is a registration). Names are folded where the source states
them: module-level string constants, f-strings of those and ``__name__``, a ``for`` over a
literal tuple of names, a local bound to ``getattr(importlib.import_module("m"), "C")``.
"""

from __future__ import annotations

import ast
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

from eagle3lint.common.findings import FileError
from eagle3lint.source.ast_names import dotted_name
from eagle3lint.source.ast_strings import fold_string
from eagle3lint.source.index import ClassRef, ProjectIndex
from eagle3lint.source.plugins import PluginPackage
from eagle3lint.source.sources import decode_source, module_name, read_source, syntax_problem


@dataclass(frozen=True)
class PluginRegistration:
    architecture: str
    module: str  # the class's module (the plugin's, or the engine's for an upstream class)
    class_name: str
    path: str  # the file of the call, and its line
    line: int
    function: str  # the function the call is in ("" at module level)
    plugin: PluginPackage


def _module_constants(tree: ast.Module, module: str) -> dict[str, str]:
    constants: dict[str, str] = {"__name__": module}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = _fold(stmt.value, constants)
            if value is not None:
                constants[stmt.targets[0].id] = value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            value = _fold(stmt.value, constants)
            if value is not None:
                constants[stmt.target.id] = value
    return constants


def _fold(node: ast.expr, names: dict[str, str]) -> str | None:
    """A string the expression always has: a literal, a known name (not a module binding), an
    f-string or ``+`` of them."""

    def known(name: str) -> str | None:
        bound = names.get(name)
        return None if bound is None or bound.startswith(_MODULE) else bound

    return fold_string(node, known)


# A local name bound to ``import_module("m")`` holds this prefix and the module's name: never an
# architecture or a "module:Class" target itself.
_MODULE = "\0module="


def _imported_module(node: ast.expr, names: dict[str, str]) -> str | None:
    """``import_module("m")`` -> "m"."""
    if not isinstance(node, ast.Call) or not node.args or (dotted_name(node.func) or "").rsplit(".", 1)[-1] != "import_module":
        return None
    module = _fold(node.args[0], names)
    return module if module and not module.startswith(_MODULE) else None


def _imported_class(node: ast.expr, names: dict[str, str]) -> str | None:
    """``getattr(import_module("m"), "C")``, or ``getattr(mod, "C")`` after
    ``mod = import_module("m")`` -> "m:C"."""
    if not (isinstance(node, ast.Call) and dotted_name(node.func) == "getattr" and len(node.args) >= 2):
        return None
    inner, attr = node.args[0], _fold(node.args[1], names)
    if attr is None:
        return None
    bound = names.get(inner.id, "") if isinstance(inner, ast.Name) else ""
    module = bound[len(_MODULE) :] if bound.startswith(_MODULE) else _imported_module(inner, names)
    return f"{module}:{attr}" if module else None


@dataclass(frozen=True)
class RegistrationShapes:
    """What a registration looks like in one engine (its rule pack's ``[plugins]``)."""

    calls: tuple[str, ...] = ()  # ``register_model``
    registries: tuple[str, ...] = ()  # ``ModelRegistry`` (any receiver named like a registry)
    registry_dict: str = ""  # ``models`` in ``ModelRegistry.models["Arch"] = Class``

    def needles(self) -> tuple[bytes, ...]:
        return tuple(n.encode() for n in (*self.calls, *([f".{self.registry_dict}["] if self.registry_dict else [])))


class _Reader:
    def __init__(self, index: ProjectIndex, plugin: PluginPackage, module: str, path: str, constants: dict[str, str], shapes: RegistrationShapes) -> None:
        self.index, self.plugin, self.module, self.path = index, plugin, module, path
        self.constants = constants
        self.calls, self.registries, self.shapes = shapes.calls, shapes.registries, shapes
        self.found: list[PluginRegistration] = []
        self.is_package = False

    def _import_source(self, stmt: ast.ImportFrom) -> str | None:
        if not stmt.level:
            return stmt.module
        parts = self.module.split(".")
        base = parts if self.is_package else parts[:-1]
        if stmt.level - 1 > len(base):
            return None
        base = base[: len(base) - (stmt.level - 1)]
        return ".".join([*base, *([stmt.module] if stmt.module else [])]) or None

    def _registry(self, node: ast.expr) -> bool:
        receiver = (dotted_name(node) or "").lower()
        return any(r.lower() in receiver for r in self.registries) or "registry" in receiver

    def assign(self, stmt: ast.Assign, local: dict[str, str], function: str) -> None:
        """``<Registry>.models["Arch"] = Class``."""
        if not self.shapes.registry_dict or len(stmt.targets) != 1:
            return
        target = stmt.targets[0]
        if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute)):
            return
        if target.value.attr != self.shapes.registry_dict or not self._registry(target.value.value):
            return
        architecture = _fold(target.slice, {**self.constants, **local})
        dotted = dotted_name(stmt.value)
        imported = local.get(dotted or "", "")
        if ":" in imported:
            module, _, name = imported.partition(":")
            resolved: object = ClassRef(module, name)
        else:
            resolved = self.index.resolve(self.module, dotted) if dotted else None
        if architecture is not None and isinstance(resolved, ClassRef):
            self.found.append(PluginRegistration(architecture, resolved.module, resolved.qualname, self.path, stmt.lineno, function, self.plugin))

    def body(self, stmts: list[ast.stmt], function: str, local: dict[str, str], loops: dict[str, list[str]]) -> None:
        for stmt in stmts:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.body(stmt.body, stmt.name if not function else f"{function}.{stmt.name}", dict(local), {})
                continue
            if isinstance(stmt, ast.ClassDef):
                self.body(stmt.body, stmt.name, dict(local), {})
                continue
            if isinstance(stmt, ast.ImportFrom) and function:
                # ``from .models.x import Cls`` inside the registering function.
                source = self._import_source(stmt)
                for alias in stmt.names if source else ():
                    local[alias.asname or alias.name] = f"{source}:{alias.name}"
            if isinstance(stmt, ast.Assign):
                self.assign(stmt, local, function)
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                names = {**self.constants, **local}
                module = _imported_module(stmt.value, names)
                value = _MODULE + module if module else _fold(stmt.value, names) or _imported_class(stmt.value, names)
                if value is not None:
                    local[stmt.targets[0].id] = value
            if isinstance(stmt, (ast.For, ast.AsyncFor)) and isinstance(stmt.target, ast.Name) and isinstance(stmt.iter, (ast.Tuple, ast.List, ast.Set)):
                values = [_fold(e, {**self.constants, **local}) for e in stmt.iter.elts]
                if all(v is not None for v in values):
                    self.body(stmt.body, function, local, {**loops, stmt.target.id: [v for v in values if v is not None]})
                    self.body(stmt.orelse, function, local, loops)
                    continue
            for node in ast.walk(stmt) if not isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.Try)) else self._own_nodes(stmt):
                if isinstance(node, ast.Call):
                    self.call(node, function, local, loops)
            for block in _blocks(stmt):
                self.body(block, function, local, loops)

    @staticmethod
    def _own_nodes(stmt: ast.stmt) -> list[ast.AST]:
        """The expressions of a compound statement's header (its bodies are read as bodies)."""
        heads: list[ast.AST] = []
        for name in ("test", "iter", "items", "target"):
            value = getattr(stmt, name, None)
            if isinstance(value, list):
                for item in value:
                    heads.extend(ast.walk(item))
            elif isinstance(value, ast.AST):
                heads.extend(ast.walk(value))
        return heads

    def call(self, node: ast.Call, function: str, local: dict[str, str], loops: dict[str, list[str]]) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in self.calls:
            return
        # register_model(model_arch, model_cls), positionally or by keyword (vLLM's names).
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        positional = [a for a in node.args if not isinstance(a, ast.Starred)]
        arch_node = positional[0] if positional else keywords.get("model_arch")
        target_node = positional[1] if len(positional) > 1 else keywords.get("model_cls")
        if arch_node is None or target_node is None or not self._registry(func.value):
            return
        names = {**self.constants, **local}
        if isinstance(arch_node, ast.Name) and arch_node.id in loops:
            architectures = loops[arch_node.id]
        else:
            folded = _fold(arch_node, names)
            architectures = [folded] if folded is not None else []
        target = _fold(target_node, names) or _imported_class(target_node, names)
        ref: ClassRef | None = None
        if target is not None and ":" in target:
            module, _, cls = target.partition(":")
            ref = ClassRef(module.strip(), cls.strip())
        elif target is None:
            dotted = dotted_name(target_node)
            resolved = self.index.resolve(self.module, dotted) if dotted else None
            ref = resolved if isinstance(resolved, ClassRef) else None
        if ref is not None and not self.index.engine.owns(ref.module) and self.index.class_summary(ref) is None:
            return  # a class of a package the run does not read
        if ref is None:
            return
        for architecture in architectures:
            self.found.append(PluginRegistration(architecture, ref.module, ref.qualname, self.path, node.lineno, function, self.plugin))


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [stmt.body]
    if isinstance(stmt, ast.Try):
        return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
    return []


def read_registrations(index: ProjectIndex, plugin: PluginPackage, shapes: RegistrationShapes) -> list[PluginRegistration]:
    """Every registration in the plugin package, in file and line order."""
    found: list[PluginRegistration] = []
    needles = shapes.needles()
    if not needles:
        return found
    for dirpath, dirnames, filenames in os.walk(plugin.root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for filename in sorted(f for f in filenames if f.endswith(".py")):
            path = os.path.join(dirpath, filename)
            data = read_source(path)
            if isinstance(data, FileError):
                index.errors.setdefault(data.path, data)  # a registration may be in it: said, not skipped
                continue
            if not any(n in data for n in needles):
                continue
            text = decode_source(path, data)
            if isinstance(text, FileError):
                index.errors.setdefault(text.path, text)
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tree = ast.parse(text, filename=path)
            except SyntaxError as exc:
                index.errors.setdefault(path, FileError(path, f"{syntax_problem(exc)}; its model registrations are not read"))
                continue
            except (ValueError, RecursionError) as exc:
                index.errors.setdefault(path, FileError(path, f"cannot be parsed: {type(exc).__name__}; its model registrations are not read"))
                continue
            module, is_package = module_name(plugin.root, Path(path))
            reader = _Reader(index, plugin, module, path, _module_constants(tree, module), shapes)
            reader.is_package = is_package
            reader.body(tree.body, "", {}, {})
            found.extend(reader.found)
    return found
