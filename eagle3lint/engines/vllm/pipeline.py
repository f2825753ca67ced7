"""The vLLM half of ``run_check``: index, registry models, and the context the rules see."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from eagle3lint.engines.vllm.context import VllmCheckContext
from eagle3lint.engines.vllm.discovery import Discovery, build_vllm_index, discover_vllm_models
from eagle3lint.engines.vllm.index import VllmIndex
from eagle3lint.engines.vllm.protocol import VllmContract
from eagle3lint.engines.vllm.rule_context import VllmRuleContext
from eagle3lint.model.contract_types import Contract
from eagle3lint.model.models import ModelClass, UnresolvedEntry
from eagle3lint.source.engine import Engine


@dataclass
class VllmPrepared:
    index: VllmIndex
    models: list[ModelClass]
    unresolved: list[UnresolvedEntry]
    context: VllmCheckContext


@contextmanager
def gc_paused() -> Iterator[None]:
    """Summaries are many small long-lived objects: the cyclic collector would rescan them
    again and again while the index grows, for nothing (they hold no cycles worth freeing)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def prepare_vllm(engine: Engine, contract: Contract, scope: list[Path]) -> VllmPrepared:
    extra = contract.extra.get("vllm")
    vllm_contract = extra if isinstance(extra, VllmContract) else VllmContract(None)
    index = build_vllm_index(engine)
    # A single file outside the registry can still be the reporting scope.
    index.load_files([p for p in scope if p.is_file() and p.suffix == ".py"])
    discovery = discover_vllm_models(index, scope)
    checked = [m for m in discovery.models if m.in_scope(scope)]
    context = VllmRuleContext(
        index=index, contract=contract, models=checked, vllm=vllm_contract, all_models=discovery.models
    )
    if discovery.registry is None:
        context.notes.append("no architecture registry found (model_executor/models/registry.py): no models to check")
    models = [*discovery.models, *discovery.registered_only]
    return VllmPrepared(index, models, discovery.unresolved, context)


def vllm_context(
    index: VllmIndex, contract: Contract, scope: list[Path], discovery: Discovery
) -> tuple[list[ModelClass], list[UnresolvedEntry], VllmCheckContext]:
    """The models and the rule context, once discovery (run while the parse pool was up) and the
    contract are both in hand."""
    extra = contract.extra.get("vllm")
    vllm_contract = extra if isinstance(extra, VllmContract) else VllmContract(None)
    checked = [m for m in discovery.models if m.in_scope(scope)]
    context = VllmRuleContext(
        index=index, contract=contract, models=checked, vllm=vllm_contract, all_models=discovery.models
    )
    if discovery.registry is None:
        context.notes.append("no architecture registry found (model_executor/models/registry.py): no models to check")
    return [*discovery.models, *discovery.registered_only], discovery.unresolved, context
