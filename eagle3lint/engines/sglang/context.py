"""What SGLang's rules see: the core's context, the order this release reaches the interface
members at start-up, and which models a fix can implement EAGLE-3 in."""

from __future__ import annotations

from eagle3lint.checks.context import CheckContext
from eagle3lint.common.findings import Finding
from eagle3lint.model.contract_types import ContractSite


class SglangContext(CheckContext):
    def _start_up_order(self) -> list[str]:
        """The rule pack's order with the target's members put in the order this release's
        scheduler reaches them (``eagle3lint.engines.sglang.startup``): 0.5.23 builds the draft
        worker, which calls ``get_embed_and_head``, before the attention backends check for
        ``set_eagle3_layers_to_capture``."""
        from eagle3lint.engines.sglang.startup import start_up_order

        order = list(self.pack.members)
        sites: dict[str, list[ContractSite]] = {}
        for member in self.contract.members.values():
            if member.known and member.name in order:
                target = [s for s in member.fatal_sites("target", "eagle3") if s.access == "call"]
                if target:
                    sites[member.name] = target
        if len(sites) < 2:
            return order
        return start_up_order(order, self.index.engine.root, sites)

    def implementation_refusals(self, findings: list[Finding]) -> dict[int, str]:
        """Why the fix planner implements EAGLE-3 in none of these findings' models: its own
        plans, made as ``fix`` makes them; a finding left out gets the unsafe fix."""
        from eagle3lint.engines.sglang.fixes import implementation_refusals

        return implementation_refusals(self, findings)
