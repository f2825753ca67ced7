"""What the presence rules say alike: a member described, the names listed, the stage a crash
comes at, a stub's effect (split out of ``presence``)."""

from __future__ import annotations

from eagle3lint.checks.context import (
    CheckContext,
)
from eagle3lint.common.outcomes import CRASH, SILENT, Effect, member_stage
from eagle3lint.model.contract_types import ContractSite
from eagle3lint.source.rulepack import MemberSpec


def describe_member(spec: MemberSpec) -> str:
    if not spec.summary:
        return "the project's eagle3lint configuration requires it"
    if spec.kind == "attribute":
        return f"`{spec.name}` is {spec.summary}"
    return f"it {spec.summary}"


def _stage(ctx: CheckContext, member: str) -> float:
    order = ctx.start_up_order()
    return member_stage(order.index(member) if member in order else len(order))


def _stub_effect(ctx: CheckContext, member: str, raises: bool, sites: list[ContractSite], code: str) -> Effect:
    """A stub that raises crashes; the capture setter that does nothing leaves the drafter
    without states; any other stub hands the engine ``None`` where it unpacks a value."""
    spec = ctx.pack.capture
    silent = not raises and spec is not None and member in spec.setters and spec.uncaptured == SILENT
    evidence = ctx.related_for(sites[:1])[0] if sites else None
    return Effect(SILENT if silent else CRASH, _stage(ctx, member), evidence, reason=f"`{member}` is a stub", code=code)


def _names(names: list[str], quote_only: bool = False) -> str:
    """```a```, ```a`` and ``b```: class names by their last part unless ``quote_only``."""
    quoted = [f"`{n if quote_only else n.rsplit('.', 1)[-1]}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _describe_all(ctx: CheckContext, names: list[str]) -> str:
    """What the missing members do, first to last: ``set_x tells ...; get_y hands ...``."""
    parts = []
    for name in names:
        spec = ctx.pack.members.get(name)
        if spec is not None and spec.summary:
            parts.append(f"`{name}` {spec.summary}" if spec.kind == "method" else f"`{name}` is {spec.summary}")
    return "; ".join(parts) or "the project's eagle3lint configuration requires them"
