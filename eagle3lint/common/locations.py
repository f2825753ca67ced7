"""A place in a file with what happens there: the engine's call site, guard or failing line.

Findings list them (``Finding.related``) and outcomes point at one (``Effect.evidence``); it lives
on its own so that neither of those modules needs the other's types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Related:
    """A secondary location, typically the engine call site that needs the member."""

    path: str
    line: int
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "message": self.message}
