"""LMDeploy's fix patterns (filled below)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eagle3lint.fix.planner import FixPattern

if TYPE_CHECKING:
    from eagle3lint.engines.lmdeploy.context import LmdeployContext
    from eagle3lint.models import ModelClass

FIX_PATTERNS: tuple[type[FixPattern], ...] = ()


def implementation_refusal(ctx: LmdeployContext, model: ModelClass) -> str | None:
    return "no fix implements EAGLE-3 for this engine"
