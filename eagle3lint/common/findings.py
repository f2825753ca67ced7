"""The diagnostic model every reporter and the fixer share."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eagle3lint.common.locations import Related

if TYPE_CHECKING:
    from eagle3lint.common.outcomes import Effect

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Fix:
    applicability: str  # "safe" | "unsafe" | "display-only"
    description: str
    diff: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "applicability": self.applicability,
            "description": self.description,
            "diff": self.diff,
        }


@dataclass
class Finding:
    code: str
    rule: str
    severity: str
    path: str
    line: int
    column: int
    class_name: str
    qualname: str
    method: str
    message: str
    related: list[Related] = field(default_factory=list)
    fix: Fix | None = None
    # Facts the fixer needs (delegate attribute, inner class, call arity); not reported.
    data: dict[str, Any] = field(default_factory=dict)
    variant: str | None = None
    # What it does when EAGLE-3 runs on the model (outcome, stage, the engine's evidence, the
    # launch options it needs); None for findings that change no outcome (dead code, hygiene).
    effect: Effect | None = None
    # False when the launch options it needs are off in this run (it is then information).
    applies: bool = True

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.path, self.line, self.column, self.code, self.method)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "rule": self.rule,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "class": self.class_name,
            "qualname": self.qualname,
            "method": self.method,
            "message": self.message,
            "related": [r.to_json() for r in self.related],
            "fix": self.fix.to_json() if self.fix else None,
        }
        if self.variant is not None:
            out["variant"] = self.variant
        if self.effect is not None:
            out.update(self.effect.to_json())
            out["applies"] = self.applies
        return out


@dataclass(frozen=True)
class FileError:
    """A file that could not be analysed; the rest of the tree still is."""

    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


__all__ = ["SEVERITY_ORDER", "FileError", "Finding", "Fix", "Related"]
