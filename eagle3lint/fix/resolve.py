"""Does a fix's code resolve? Every ``self.<attr>`` it reads must exist in the class it lands in.

A suggestion that uses an attribute the class does not have (``self.config`` in a wrapper that
keeps no config) raises the moment it runs: it is worse than no code. Each ``self.x`` the inserted
code reads must be found along the class's MRO, assigned in ``__init__``, or be added by the same
fix; for ``self.x.y`` one of the classes ``self.x`` may hold must have ``y`` (when they are all
known). What cannot be decided (a base outside the engine, a run-time choice) is not held
against the fix.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint.fix.edits import AddBase, Edit, InsertMembers, InsertStatements
from eagle3lint.source.index import ClassRef

if TYPE_CHECKING:
    from eagle3lint.source.index import ProjectIndex


def unresolved_references(index: ProjectIndex, edits: tuple[Edit, ...] | list[Edit]) -> list[str]:
    """Why the code of ``edits`` would use an attribute its class lacks (empty when it would not)."""
    by_class: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    added: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    new_bases: dict[tuple[str, tuple[str, ...]], list[ClassRef]] = {}
    for edit in edits:
        if isinstance(edit, AddBase) and edit.defined_in:
            new_bases.setdefault((edit.path, edit.class_path), []).append(ClassRef(edit.defined_in, edit.name))
        if isinstance(edit, (InsertMembers, InsertStatements)):
            key = (edit.path, edit.class_path)
            by_class.setdefault(key, []).append(edit.source)
            if isinstance(edit, InsertMembers):
                added.setdefault(key, set()).add(edit.name)
    problems: list[str] = []
    for (path, class_path), sources in by_class.items():
        ref = ClassRef(index.request_for(Path(path)).module, ".".join(class_path))
        if index.class_summary(ref) is None:
            continue
        reads, stores = _self_references(sources)
        defined = stores | added.get((path, class_path), set())
        bases = new_bases.get((path, class_path), [])
        for chain in sorted(reads):
            if any(index.lookup(base, chain[0]).status == "found" for base in bases):
                continue  # a member of a base the same fix adds
            problem = _problem(index, ref, chain, defined)
            if problem:
                problems.append(problem)
    return list(dict.fromkeys(problems))


def _self_references(sources: list[str]) -> tuple[set[tuple[str, ...]], set[str]]:
    """``self.a.b`` chains read (at most two steps) and ``self.a`` attributes assigned."""
    reads: set[tuple[str, ...]] = set()
    stores: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(_dedented(source))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                if isinstance(node.ctx, ast.Store):
                    stores.add(node.attr)
                else:
                    reads.add((node.attr,))
            elif (
                isinstance(node.value, ast.Attribute)
                and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "self"
                and isinstance(node.ctx, ast.Load)
            ):
                reads.add((node.value.attr, node.attr))
    return reads, stores


def _dedented(source: str) -> str:
    import textwrap

    return textwrap.dedent(source)


def _problem(index: ProjectIndex, ref: ClassRef, chain: tuple[str, ...], defined: set[str]) -> str | None:
    head = chain[0]
    if head in defined:
        return None
    lookup = index.lookup(ref, head)
    if lookup.status == "missing":
        return f"the code would use `self.{head}`, which `{ref.qualname}` does not have"
    if len(chain) < 2 or lookup.status != "found":
        return None
    held = [h for h in index.attribute_classes(ref, head) if isinstance(h, ClassRef)]
    if not held or len(held) != len(index.attribute_classes(ref, head)):
        return None  # not every class it may hold is known: nothing to hold against the fix
    # One class per branch (a placeholder on other pipeline ranks, a backbone chosen by config):
    # the code is wrong only when none of them has the attribute.
    if all(index.lookup(h, chain[1]).status == "missing" for h in held):
        names = " or ".join(f"`{h.qualname}`" for h in dict.fromkeys(held))
        return f"the code would use `self.{head}.{chain[1]}`, which `self.{head}` ({names}) does not have"
    return None
