"""What a check produces: the findings, the models they are about, and what it could not read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle3lint.contract import Contract
    from eagle3lint.engine import Engine
    from eagle3lint.findings import FileError, Finding
    from eagle3lint.index import ProjectIndex
    from eagle3lint.launch_options import EngineOptions
    from eagle3lint.models import ModelClass, UnresolvedEntry


@dataclass
class CheckResult:
    engine: Engine
    contract: Contract
    findings: list[Finding]
    errors: list[FileError]
    models: list[ModelClass]
    unresolved: list[UnresolvedEntry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    index: ProjectIndex | None = None
    suppressed: int = 0
    baselined: int = 0
    scope: list[Path] = field(default_factory=list)
    # The launch configuration the verdicts assume (None: the engine's defaults).
    options: EngineOptions | None = None

    def reported_models(self) -> list[ModelClass]:
        """The classes the run gives a verdict, in the reporting scope: what ``check -v``, the
        JSON summary and ``models`` all list and count."""
        return [m for m in self.models if m.status and (not self.scope or m.in_scope(self.scope))]
