"""What SGLang's rules see: the core's context, and which models a fix can implement EAGLE-3 in."""

from __future__ import annotations

from eagle3lint.checks.context import CheckContext
from eagle3lint.common.findings import Finding


class SglangContext(CheckContext):
    def implementation_refusals(self, findings: list[Finding]) -> dict[int, str]:
        """Why the fix planner implements EAGLE-3 in none of these findings' models: its own
        plans, made as ``fix`` makes them; a finding left out gets the unsafe fix."""
        from eagle3lint.engines.sglang.fixes import implementation_refusals

        return implementation_refusals(self, findings)
