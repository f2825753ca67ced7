"""LMDeploy's architecture map, read from ``pytorch/models/module_map.py`` (never imported).

The map is built by statements, not one literal::

    LMDEPLOY_PYTORCH_MODEL_PATH = 'lmdeploy.pytorch.models'
    MODULE_MAP.update({'LlamaForCausalLM': f'{LMDEPLOY_PYTORCH_MODEL_PATH}.llama.LlamaForCausalLM'})
    DEVICE_SPECIAL_MODULE_MAP = dict(ascend=ASCEND_MODULE_MAP, maca=MACA_MODULE_MAP, camb=CAMB_MODULE_MAP)

Each value is ``<module>.<Class>``; module-level string constants are folded into the f-strings.
A device map (``ASCEND_MODULE_MAP``) overrides the main one on that device: its entries are
variants of the architecture. Architectures in the removed map (``REMOVED_MODEL_MAP``) are
refused by the engine and are not models.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from eagle3lint.engines.lmdeploy.pack import LmdeployPack
from eagle3lint.source.ast_strings import fold_string


@dataclass(frozen=True)
class MapEntry:
    architecture: str
    module: str  # lmdeploy.pytorch.models.llama
    class_name: str
    variant: str | None  # the device of a device map ("ascend"), None for the main map
    line: int


@dataclass
class ModuleMap:
    entries: list[MapEntry]
    removed: frozenset[str]
    # Values that are not a ``module.Class`` string eagle3lint can fold: (architecture, line, why).
    unreadable: list[tuple[str, int, str]]


def _constants(tree: ast.Module) -> dict[str, str]:
    out: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = stmt.value.value
    return out


def _device_maps(tree: ast.Module, name: str) -> dict[str, str]:
    """``DEVICE_SPECIAL_MODULE_MAP = dict(ascend=ASCEND_MODULE_MAP, ...)`` (or a dict literal):
    map variable -> device."""
    out: dict[str, str] = {}
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)):
            continue
        value = stmt.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
            for keyword in value.keywords:
                if keyword.arg and isinstance(keyword.value, ast.Name):
                    out[keyword.value.id] = keyword.arg
        elif isinstance(value, ast.Dict):
            for key, item in zip(value.keys, value.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(item, ast.Name):
                    out[item.id] = key.value
    return out


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module-level statements, those under ``if``/``try`` included (a map filled per platform)."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        for block in ("body", "orelse", "finalbody"):
            if isinstance(stmt, (ast.If, ast.Try)):
                out.extend(_statements(getattr(stmt, block, []) or []))
        if isinstance(stmt, ast.Try):
            for handler in stmt.handlers:
                out.extend(_statements(handler.body))
    return out


def read_module_map(tree: ast.Module, lpack: LmdeployPack) -> ModuleMap:
    constants = _constants(tree)
    devices = _device_maps(tree, lpack.device_maps)
    wanted = {name: None for name in lpack.maps} | {name: device for name, device in devices.items()}
    entries: list[MapEntry] = []
    removed: set[str] = set()
    unreadable: list[tuple[str, int, str]] = []

    def add(target: str, key: ast.expr | None, value: ast.expr, line: int) -> None:
        architecture = fold_string(key, constants.get) if key is not None else None
        if architecture is None:
            return
        if target == lpack.removed_map:
            removed.add(architecture)
            return
        qualified = fold_string(value, constants.get)
        if qualified is None or "." not in qualified:
            unreadable.append((architecture, line, "its value is not a `module.Class` string eagle3lint can read"))
            return
        module, _, class_name = qualified.rpartition(".")
        entries.append(MapEntry(architecture, module, class_name, wanted[target], line))

    for stmt in _statements(tree.body):
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            func = call.func
            if not (isinstance(func, ast.Attribute) and func.attr == "update" and isinstance(func.value, ast.Name)):
                continue
            target = func.value.id
            if target not in wanted and target != lpack.removed_map:
                continue
            for arg in call.args:
                if isinstance(arg, ast.Dict):
                    for key, value in zip(arg.keys, arg.values, strict=True):
                        add(target, key, value, value.lineno)
            for keyword in call.keywords:
                if keyword.arg:
                    add(target, ast.Constant(keyword.arg), keyword.value, keyword.value.lineno)
        elif isinstance(stmt, ast.Assign):
            for target_node in stmt.targets:
                if isinstance(target_node, ast.Subscript) and isinstance(target_node.value, ast.Name):
                    target = target_node.value.id
                    if target in wanted or target == lpack.removed_map:
                        add(target, target_node.slice, stmt.value, stmt.lineno)
                elif isinstance(target_node, ast.Name) and target_node.id in (*wanted, lpack.removed_map) and isinstance(stmt.value, ast.Dict):
                    for key, value in zip(stmt.value.keys, stmt.value.values, strict=True):
                        add(target_node.id, key, value, value.lineno)
    return ModuleMap([e for e in entries if e.architecture not in removed], frozenset(removed), unreadable)
