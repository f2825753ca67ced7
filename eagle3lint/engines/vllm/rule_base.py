"""What every vLLM rule shares: the rule base (vLLM's check context only) and the contract's
sites and evidence the rules cite (the setter's call sites, the runner's check, the stage a
finding happens at)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from eagle3lint.checks.base import Rule
from eagle3lint.checks.context import CheckContext
from eagle3lint.common.findings import Finding, Related
from eagle3lint.common.outcomes import (
    member_stage,
)
from eagle3lint.engines.vllm.context import (
    NO,
    YES,
    VllmCheckContext,
)
from eagle3lint.engines.vllm.holders import Holder
from eagle3lint.model.contract_types import ContractSite
from eagle3lint.model.models import TARGET, ModelClass
from eagle3lint.source.index import ClassRef


class VllmRule(Rule):
    engines: ClassVar[tuple[str, ...]] = ("vllm",)

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        if not isinstance(ctx, VllmCheckContext):
            return []
        return self.check_vllm(ctx)

    def check_vllm(self, ctx: VllmCheckContext) -> Iterable[Finding]:
        raise NotImplementedError


def _setter_sites(ctx: VllmCheckContext) -> list[ContractSite]:
    member = ctx.contract.members.get(ctx.vindex.vpack.setter)
    return [s for s in member.sites if s.fatal] if member else []


def _check_related(ctx: VllmCheckContext) -> list[Related]:
    engine = ctx.index.engine
    if ctx.vllm is None:
        return []
    return [
        Related(str(engine.absolute(site.path)), site.line, f"{site.check}({site.argument}) in {site.function}: the runner raises when it is false")
        for site in ctx.vllm.check_sites
        if site.guard == "error"
    ]


def _walk_related(ctx: VllmCheckContext) -> list[Related]:
    proto = ctx.protocol
    if proto is None:
        return []
    walk = proto.walks.get(ctx.vindex.vpack.setter)
    if walk is None:
        return []
    path = str(ctx.index.engine.source_root / proto.path)
    return [Related(path, walk.line, f"default {walk.method}: {walk.describe()}")]


def _targets(ctx: VllmCheckContext) -> list[ModelClass]:
    return [m for m in ctx.models if m.kind == TARGET]


def _lacks_asserted_mixin(ctx: VllmCheckContext, model: ModelClass, holder: Holder, cls: ClassRef) -> bool:
    """What E3L010 reports for this holder class (it then says the forward does not collect)."""
    return (
        ctx.protocol is not None
        and ctx.declared(model.ref).value == YES
        and bool(holder.asserted_mixin)
        and ctx.inherits_mixin(cls) == NO
    )


def _setter_stage(ctx: VllmCheckContext) -> float:
    order = list(ctx.pack.members)
    setter = ctx.vindex.vpack.setter
    return member_stage(order.index(setter) if setter in order else 0)


def _refusal_evidence(ctx: VllmCheckContext) -> Related | None:
    """The runner's ``if not supports_eagle3(model): raise``."""
    related = _check_related(ctx)
    return related[0] if related else None


def _holder_names(holder: Holder) -> str:
    return ", ".join(f"`{c.qualname}`" for c in holder.classes)


