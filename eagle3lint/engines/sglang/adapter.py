"""SGLang's adapter: the hooks the core calls for an SGLang tree.

SGLang needs no contract facts beyond its call sites and no rules beyond the core's: its
interface is plain methods the workers call on the model object. What is its own: model
discovery (``EntryClass``), its fix patterns and its server.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint.model.adapter import EngineAdapter, ModelsInContext

if TYPE_CHECKING:
    from eagle3lint.fix.planner import FixPattern
    from eagle3lint.model.contract_types import Contract
    from eagle3lint.source.index import ProjectIndex
    from eagle3lint.source.summary_types import ModuleSummary
    from eagle3lint.verify.driver import ServerDriver


class SglangAdapter(EngineAdapter):
    name = "sglang"

    def load_models(self, index: ProjectIndex, scope: list[Path], extra_files: list[Path]) -> list[ModuleSummary]:
        from eagle3lint.engines.sglang.plugins import plugin_model_files
        from eagle3lint.model.models import in_scope, model_files_in_scope

        modules = index.load_files(model_files_in_scope(index.engine, scope))
        plugin_files = [p for p in plugin_model_files(index.engine) if in_scope(str(p), scope)]
        return modules + index.load_files([*extra_files, *plugin_files])

    def check_context(self, index: ProjectIndex, contract: Contract, scope: list[Path], loaded: object) -> ModelsInContext:
        from eagle3lint.engines.sglang.context import SglangContext
        from eagle3lint.engines.sglang.models import discover_sglang_models
        from eagle3lint.engines.sglang.plugins import mark_plugin_models, registered_models

        modules = loaded if isinstance(loaded, list) else []
        models, unresolved = discover_sglang_models(index, modules)
        if index.engine.plugins:
            models += [m for m in registered_models(index, models) if m.in_scope(scope)]
            mark_plugin_models(index, models)
        return ModelsInContext(models, unresolved, SglangContext(index=index, contract=contract, models=models))

    def fix_patterns(self) -> tuple[type[FixPattern], ...]:
        from eagle3lint.engines.sglang.fixes import FIX_PATTERNS

        return FIX_PATTERNS

    def server(self) -> ServerDriver:
        from eagle3lint.engines.sglang.server import SglangServer

        return SglangServer()
