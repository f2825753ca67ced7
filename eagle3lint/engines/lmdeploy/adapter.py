"""LMDeploy's adapter: the hooks the core calls for an LMDeploy tree.

LMDeploy asks almost nothing of a model object; its EAGLE-3 contract is a data flow from the
config builders (``facts``: read once per release, kept in ``Contract.extra["lmdeploy"]``) through
the model's capture and outputs (``flow``) to the proposer. The architecture map is read by
``registry``/``models``; ``context`` and ``rules`` turn the two halves into findings and outcomes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint.model.adapter import EngineAdapter, ModelsInContext

if TYPE_CHECKING:
    from eagle3lint.checks.base import Rule
    from eagle3lint.fix.planner import FixPattern
    from eagle3lint.model.contract_types import Contract, ContractExtension
    from eagle3lint.source.engine import Engine
    from eagle3lint.source.index import ProjectIndex
    from eagle3lint.verify.driver import ServerDriver


class LmdeployAdapter(EngineAdapter):
    name = "lmdeploy"
    rule_codes = {
        "E3L030": "spec-method-refused",
        "E3L031": "speculation-not-enabled",
        "E3L108": "aux-layers-never-read",
        "E3L109": "aux-not-returned",
        "E3L110": "aux-dropped-by-cuda-graph",
        "E3L111": "wrapper-drops-aux",
        "E3L112": "aux-layers-not-provided",
        "E3L113": "capture-refused-under-option",
    }

    def contract_extension(self, engine: Engine) -> ContractExtension:
        from eagle3lint.engines.lmdeploy.facts import LmdeployContractExtension

        return LmdeployContractExtension(engine)

    def load_models(self, index: ProjectIndex, scope: list[Path], extra_files: list[Path]) -> object:
        from eagle3lint.engines.lmdeploy.models import discover

        index.load_files(extra_files)
        return discover(index, scope)

    def check_context(self, index: ProjectIndex, contract: Contract, scope: list[Path], loaded: object) -> ModelsInContext:
        from eagle3lint.engines.lmdeploy.context import LmdeployContext
        from eagle3lint.engines.lmdeploy.models import Discovery, lmdeploy_models

        discovery = loaded if isinstance(loaded, Discovery) else Discovery(None, None)
        models, unresolved = lmdeploy_models(index, discovery)
        return ModelsInContext(models, unresolved, LmdeployContext(index=index, contract=contract, models=models, fix_patterns=self.fix_patterns()))

    def rules(self) -> tuple[type[Rule], ...]:
        from eagle3lint.engines.lmdeploy.rules import LMDEPLOY_RULES

        return LMDEPLOY_RULES

    def fix_patterns(self) -> tuple[type[FixPattern], ...]:
        from eagle3lint.engines.lmdeploy.fixes import FIX_PATTERNS

        return FIX_PATTERNS

    def server(self) -> ServerDriver:
        from eagle3lint.engines.lmdeploy.server import LmdeployServer

        return LmdeployServer()
