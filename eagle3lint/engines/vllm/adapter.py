"""vLLM's adapter: the hooks the core calls for a vLLM tree.

vLLM states half of its contract as a protocol (``SupportsEagle3`` in ``interfaces.py``, read by
``protocol``), finds its models in an architecture registry (``registry``, ``dispatch``,
``discovery``), builds inner models through registry factories (``index``), and has rules of its
own about what the protocol's default setter reaches (``holders``, ``collect``, ``rules``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3lint.model.adapter import EngineAdapter, LibraryWanted, ModelsInContext

if TYPE_CHECKING:
    from eagle3lint.checks.base import Rule
    from eagle3lint.fix.planner import FixPattern
    from eagle3lint.model.contract_types import Contract, ContractExtension
    from eagle3lint.source.engine import Engine
    from eagle3lint.source.index import ProjectIndex
    from eagle3lint.verify.driver import ServerDriver


class VllmAdapter(EngineAdapter):
    name = "vllm"
    rule_codes = {
        "E3L010": "holder-lacks-mixin",
        "E3L011": "forward-never-collects",
        "E3L012": "protocol-not-declared",
        "E3L013": "undeclared-eagle3-support",
        "E3L015": "platform-variants-disagree",
        "E3L016": "holder-not-provable",
        "E3L017": "model-type-not-allowed",
        "E3L018": "drafter-load-reads-target",
        "E3L019": "drafter-load-reads-config",
        "E3L105": "pp-local-layer-index",
        "E3L106": "pp-aux-not-packed",
    }
    # E3L016 says what presence-not-provable would, from the holder analysis.
    replaces_core_rules = frozenset({"E3L006"})

    def contract_extension(self, engine: Engine) -> ContractExtension:
        from eagle3lint.engines.vllm.extension import VllmContractExtension

        return VllmContractExtension(engine)

    def libraries_wanted(self, engine: Engine) -> tuple[LibraryWanted, ...]:
        """transformers, whose tables give each architecture's model types and config classes,
        where the tree has a model-type allow-list to judge them by (releases up to 0.21) or a
        drafter load that reads the target's config (E3L019)."""
        from eagle3lint.engines.vllm.drafter_load import read_drafter_load
        from eagle3lint.engines.vllm.pack import vllm_pack
        from eagle3lint.engines.vllm.protocol import read_allow_list

        vpack = vllm_pack(engine.pack)
        if read_allow_list(engine) is None:
            # The drafter load's copy of an image-token id off the target's config (E3L019) is
            # judged by the config classes' attributes.
            load = read_drafter_load(engine, vpack)
            if load is None or not load.config_reads:
                return ()
        return (LibraryWanted(vpack.types_library, vpack.requirement_files, "models/auto/modeling_auto.py"),)

    def option_defaults(self, engine: Engine) -> dict[str, str]:
        from eagle3lint.engines.vllm.pack import vllm_pack
        from eagle3lint.engines.vllm.runners import default_runner

        runner = default_runner(engine, vllm_pack(engine.pack))
        return {"runner": runner} if runner else {}

    def build_index(self, engine: Engine, texts: Mapping[str, str] | None = None) -> ProjectIndex:
        from eagle3lint.engines.vllm.discovery import build_vllm_index

        return build_vllm_index(engine, texts)

    def load_models(self, index: ProjectIndex, scope: list[Path], extra_files: list[Path]) -> object:
        from eagle3lint.engines.vllm.discovery import discover_vllm_models
        from eagle3lint.engines.vllm.index import VllmIndex

        assert isinstance(index, VllmIndex)
        index.load_files(extra_files)
        # The registry's modules in scope load as one batch, on every core.
        return discover_vllm_models(index, scope)

    def check_context(self, index: ProjectIndex, contract: Contract, scope: list[Path], loaded: object) -> ModelsInContext:
        from eagle3lint.engines.vllm.discovery import Discovery
        from eagle3lint.engines.vllm.index import VllmIndex
        from eagle3lint.engines.vllm.pipeline import vllm_context

        assert isinstance(index, VllmIndex) and isinstance(loaded, Discovery)
        models, unresolved, context = vllm_context(index, contract, scope, loaded)
        return ModelsInContext(models, unresolved, context)

    def rules(self) -> tuple[type[Rule], ...]:
        from eagle3lint.engines.vllm.capture_rules import VLLM_CAPTURE_RULES
        from eagle3lint.engines.vllm.rules import VLLM_RULES

        return (*VLLM_RULES, *VLLM_CAPTURE_RULES)

    def fix_patterns(self) -> tuple[type[FixPattern], ...]:
        from eagle3lint.engines.vllm.fixes import FIX_PATTERNS

        return FIX_PATTERNS

    def server(self) -> ServerDriver:
        from eagle3lint.engines.vllm.server import VllmServer

        return VllmServer()
