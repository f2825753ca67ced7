"""What a check produces: the findings, the models they are about, and what it could not read."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle3lint.common.findings import FileError, Finding
    from eagle3lint.model.contract_types import Contract
    from eagle3lint.model.launch_options import EngineOptions
    from eagle3lint.model.models import ModelClass, UnresolvedEntry
    from eagle3lint.source.engine import Engine
    from eagle3lint.source.index import ProjectIndex


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
    # What ``suppressed`` and ``baselined`` count (SARIF carries them, marked suppressed), and the
    # baseline the run read (None: none).
    suppressed_findings: list[Finding] = field(default_factory=list)
    baselined_findings: list[Finding] = field(default_factory=list)
    baseline: str | None = None
    # Why the baseline named was not applied to this tree (written for another one); None: it was.
    baseline_skipped: str | None = None
    # Files ``exclude``/``extend-exclude`` name: neither their findings nor their models are reported.
    excluded: frozenset[str] = frozenset()
    # ``--min-severity``: the least severity reported, and how many findings under it were not.
    min_severity: str | None = None
    below_severity: int = 0

    def keep_severity(self, level: str) -> None:
        """Report only the findings at or above ``level`` (the rest counted, never silently
        gone: the summary says how many)."""
        from eagle3lint.common.findings import SEVERITY_ORDER

        limit = SEVERITY_ORDER[level]
        kept = [f for f in self.findings if SEVERITY_ORDER.get(f.severity, 0) <= limit]
        self.min_severity = level
        self.below_severity = len(self.findings) - len(kept)
        self.findings = kept

    def in_reporting_scope(self, model: ModelClass) -> bool:
        return (not self.scope or model.in_scope(self.scope)) and model.path not in self.excluded

    def reported_models(self) -> list[ModelClass]:
        """The classes the run gives a verdict, in the reporting scope: what ``check -v``, the
        JSON summary and ``models`` all list and count."""
        return [m for m in self.models if m.status and self.in_reporting_scope(m)]
