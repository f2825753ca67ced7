"""Which drafter config keys the release's runner reads the layer ids from, per runner
generation: ``getattr(hf_config, "eagle_aux_hidden_state_layer_ids", None)`` reads the top-level
key; ``eagle_config = getattr(hf_config, "eagle_config", None)`` then ``eagle_config["..."]``
(or ``.get``) reads the nested one. Read from the runner's files (``[pair] id_files``), in order.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from eagle3lint.source.ast_names import dotted_parts
from eagle3lint.verify.pair.facts import PairFacts
from eagle3lint.verify.pair.source import ReleaseCode


@dataclass(frozen=True)
class KeyRead:
    key: str  # dotted: "eagle_aux_hidden_state_layer_ids", "eagle_config.layer_ids"
    path: str
    line: int


def _literal(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _config_receiver(node: ast.AST) -> bool:
    path = dotted_parts(node)
    return path is not None and ("config" in path[-1] or path[-1].endswith("hf_config"))


def keys_read(code: ReleaseCode, facts: PairFacts, runner: str) -> list[KeyRead]:
    """The id keys the runner of generation ``runner`` reads, in file and line order."""
    out: list[KeyRead] = []
    for rel in facts.files_for(runner):
        for path in code.files(rel):
            text = code.text(path)
            if text is None or not any(k in text for k in facts.id_keys):
                continue
            tree = code.tree(path)
            if tree is None:
                continue
            for fn in ast.walk(tree):
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out.extend(_reads_in(fn, facts, str(path)))
    seen: set[str] = set()
    ordered = []
    for read in sorted(out, key=lambda r: (r.path, r.line)):
        if read.key not in seen:
            seen.add(read.key)
            ordered.append(read)
    return ordered


def _sections(fn: ast.FunctionDef | ast.AsyncFunctionDef, facts: PairFacts) -> dict[str, set[str]]:
    """Names bound to a sub-config: ``eagle_config = getattr(x.hf_config, "eagle_config", None)``
    (``or {}`` allowed), or through a loop over literal section names."""
    loops: dict[str, set[str]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, (ast.Tuple, ast.List)):
            names = {s for s in (_literal(e) for e in node.iter.elts) if s is not None}
            loops[node.target.id] = names
    bound: dict[str, set[str]] = {}
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        if isinstance(value, ast.BoolOp):
            value = value.values[0]
        sections: set[str] = set()
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "getattr" and len(value.args) >= 2:
            literal = _literal(value.args[1])
            if literal is not None:
                sections = {literal}
            elif isinstance(value.args[1], ast.Name):
                sections = loops.get(value.args[1].id, set())
        elif isinstance(value, ast.Attribute) and _config_receiver(value.value):
            sections = {value.attr}
        sections &= set(facts.id_sections)
        if sections:
            bound.setdefault(node.targets[0].id, set()).update(sections)
    return bound


def _reads_in(fn: ast.FunctionDef | ast.AsyncFunctionDef, facts: PairFacts, path: str) -> list[KeyRead]:
    bound = _sections(fn, facts)
    keys = set(facts.id_keys)
    out = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2:
            key = _literal(node.args[1])
            if key in keys and _config_receiver(node.args[0]):
                out.append(KeyRead(key, path, node.lineno))
        elif isinstance(node, ast.Attribute) and node.attr in keys and _config_receiver(node.value):
            out.append(KeyRead(node.attr, path, node.lineno))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
            key, receiver = _literal(node.args[0]), node.func.value
            if key in keys and isinstance(receiver, ast.Name) and receiver.id in bound:
                out.extend(KeyRead(f"{s}.{key}", path, node.lineno) for s in sorted(bound[receiver.id]))
        elif isinstance(node, ast.Subscript):
            key, receiver = _literal(node.slice), node.value
            if key in keys and isinstance(receiver, ast.Name) and receiver.id in bound:
                out.extend(KeyRead(f"{s}.{key}", path, node.lineno) for s in sorted(bound[receiver.id]))
    return out
