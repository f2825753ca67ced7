"""astroid, for the few things the fast index cannot follow.

The index resolves ``self.x = SomeClass(...)`` by name. When the constructor is a value it
cannot name — a parameter with a class as its default (``language_model_cls=Qwen3LLMModel``), a
variable, a factory function's return — astroid's inference can, still without importing or
running anything: it reads the engine's source as the index does. It is slow next to the index,
so it is asked only where the answer changes a finding (a wrapper that lacks a member, whose
inner model could not be named), and each answer is kept for the run.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eagle3lint.source.index import ClassRef, ProjectIndex

# Inferred values looked at per attribute: enough for an if/else of constructors.
MAX_INFERRED = 8


@contextlib.contextmanager
def _engine_on_search_path(root: str) -> Iterator[None]:
    """astroid finds modules through ``sys.path`` (to read them, never to import them)."""
    sys.path.insert(0, root)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(root)


class InnerModelInference:
    def __init__(self, index: ProjectIndex) -> None:
        self.index = index
        self._answers: dict[tuple[ClassRef, str], list[ClassRef]] = {}

    def held_classes(self, owner: ClassRef, attr: str) -> list[ClassRef]:
        """Engine classes ``self.<attr>`` may hold in ``owner`` (its last ``__init__`` assignment),
        as far as astroid can tell; empty when it cannot."""
        key = (owner, attr)
        if key not in self._answers:
            try:
                self._answers[key] = self._infer(owner, attr)
            except Exception:  # astroid on code it cannot follow: no answer, never a crash
                self._answers[key] = []
        return self._answers[key]

    def _infer(self, owner: ClassRef, attr: str) -> list[ClassRef]:
        import astroid

        from eagle3lint.source.index import ClassRef

        module = self.index.module(owner.module)
        if module is None:
            return []
        with _engine_on_search_path(str(self.index.engine.source_root)):
            tree = astroid.MANAGER.ast_from_file(module.path, modname=owner.module, source=True)
            node: Any = tree
            for part in owner.qualname.split("."):
                node = node[part]
            assignments = [
                a for a in node.instance_attrs.get(attr, []) if a.frame().name == "__init__" and hasattr(a.parent, "value")
            ]
            if not assignments:
                return []
            last = max(assignments, key=lambda a: a.lineno)
            found: list[ClassRef] = []
            for n, value in enumerate(last.parent.value.infer()):
                if n >= MAX_INFERRED:
                    break
                proxied = getattr(value, "_proxied", None)
                qualified = proxied.qname() if proxied is not None and hasattr(proxied, "qname") else None
                if not qualified:
                    continue
                resolved = self.index.resolve_qualified(qualified)
                if isinstance(resolved, ClassRef) and resolved not in found:
                    found.append(resolved)
            return found
