"""One outcome for the pair: the earliest failure of the launch (``eagle3lint.common.outcomes``
stages: argument checks, model construction and weight loading, the runner's checks, start-up
calls, forward passes), a crash before a refusal before a silent failure at the same stage;
where nothing fails but something that matters is undecided, ``unknown``; else ``works``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from eagle3lint.common.outcomes import (
    CRASH,
    REFUSED,
    SILENT,
    STAGE_FORWARD,
    STAGE_LAUNCH,
    STAGE_MEMBERS,
    STAGE_RUNNER,
    UNKNOWN,
    WORKS,
)


class PreflightItem(Protocol):
    """What the fold reads of a pre-flight item (``eagle3lint.verify.configs.PreflightItem``,
    which imports this module: the protocol keeps the two apart)."""

    check: str
    message: str
    stage: float | None
    decides: str

    @property
    def outcome(self) -> str | None: ...

# Building the models and loading their weights: after the argument checks, before the
# runner looks at the loaded model.
STAGE_LOAD = 0.5

# The usual stage of each check (an item may say its own).
STAGES: dict[str, float] = {
    "target-config": STAGE_LAUNCH,
    "drafter-config": STAGE_LAUNCH,
    "launch": STAGE_LAUNCH,
    "draft-path": STAGE_LAUNCH,
    "model-type": STAGE_LAUNCH,
    "tensor-parallel": STAGE_LOAD,
    "drafter-architecture": STAGE_LOAD,
    "draft-class": STAGE_LOAD,
    "drafter-weights": STAGE_LOAD,
    "fc-shape": STAGE_LOAD,
    "lm-head-shape": STAGE_LOAD,
    "d2t-mapping": STAGE_LOAD,
    "target-class": STAGE_MEMBERS,
    "launch-options": STAGE_RUNNER,
    "defect": STAGE_FORWARD,
    "drafter-keys": STAGE_FORWARD,
    "d2t-content": STAGE_FORWARD,
    "layer-ids": STAGE_FORWARD,
    "aux-layer-ids": STAGE_FORWARD,
    "hidden-size": STAGE_FORWARD,
    "vocab-size": STAGE_FORWARD,
}
_RANK = {CRASH: 0, REFUSED: 1, SILENT: 2}


def stage_of(item: PreflightItem) -> float:
    if item.stage is not None:
        return item.stage
    return STAGES.get(item.check, STAGE_FORWARD)


def fold(items: Iterable[PreflightItem]) -> tuple[str, str]:
    """(outcome, the item's message that decided it)."""
    items = list(items)
    failing = [i for i in items if i.outcome in _RANK]
    if failing:
        first = min(failing, key=lambda i: (stage_of(i), _RANK[i.outcome or ""]))
        return first.outcome or UNKNOWN, f"{first.check}: {first.message}"
    unknown = [i for i in items if i.outcome == UNKNOWN]
    if unknown:
        first = min(unknown, key=stage_of)
        decides = f" (decided by: {first.decides})" if first.decides else ""
        return UNKNOWN, f"{first.check}: {first.message}{decides}"
    if any(i.outcome == WORKS for i in items):
        return WORKS, "every check passed"
    return UNKNOWN, "nothing could be checked"
