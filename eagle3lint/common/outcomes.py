"""What the engine does when it is launched with EAGLE-3 on a model: the outcome, and its causes.

A finding says what is wrong; its :class:`Effect` says what that does at run time, when in the
launch it acts, where the engine's source shows it, and under which launch options it holds.
A model's outcome is the first active effect of a launch (``eagle3lint.checks.verdicts``):

* ``works``    nothing stops it, and the drafter gets the states it asks for;
* ``crash``    an exception the engine does not mean as a refusal (an ``AttributeError``, an
  assertion, an unpack or shape error);
* ``silent``   it runs, and the drafter gets wrong or missing hidden states (acceptance ~1);
* ``refused``  the engine's own check stops it with a message about EAGLE-3 (a ``hasattr`` guard
  that raises, ``supports_eagle3()`` false, a model-type allow-list);
* ``unknown``  what it does cannot be proven statically.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eagle3lint.common.locations import Related

WORKS = "works"
CRASH = "crash"
SILENT = "silent"
REFUSED = "refused"
UNKNOWN = "unknown"
OUTCOMES = (WORKS, CRASH, SILENT, REFUSED, UNKNOWN)
FAILS = frozenset({CRASH, SILENT})

# When in a launch a cause acts; the earliest active one decides the outcome.
STAGE_LAUNCH = 0.0  # argument and config checks, before the weights load (allow-lists, options)
STAGE_RUNNER = 1.0  # the runner's check of the loaded model (``supports_eagle3()``)
STAGE_MEMBERS = 2.0  # interface calls at start-up, in the order the release reaches them (CheckContext.start_up_order)
STAGE_FORWARD = 3.0  # the forward passes: warm-up, CUDA-graph capture, serving

# A launch option a cause needs: (option name, value), e.g. ("pp", "on"), ("runner", "v1").
Requirement = tuple[str, str]


def member_stage(position: int) -> float:
    """The stage of the ``position``-th member the engine reaches at start-up."""
    return STAGE_MEMBERS + min(position, 99) / 100


@dataclass(frozen=True)
class Effect:
    """What a cause does when EAGLE-3 runs on the model."""

    outcome: str
    stage: float
    # The engine's guard or the failing line (absolute path, line, what happens there).
    evidence: Related | None = None
    # Launch options it needs, all of them (empty: every launch).
    condition: tuple[Requirement, ...] = ()
    # Why, in a few words, for a model's row ("lacks `get_embed_and_head`").
    reason: str = ""
    code: str = ""  # the finding it comes from ("" for an engine fact, not a finding)

    @property
    def cause(self) -> str:
        """Why, with the finding's code first where a finding caused it (``E3L011: ...``)."""
        return f"{self.code}: {self.reason}" if self.code else self.reason

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "evidence": self.evidence.to_json() if self.evidence else None,
            "condition": [{"option": name, "value": value} for name, value in self.condition],
        }


@dataclass(frozen=True)
class ConditionalOutcome:
    """How a model's outcome changes when a launch option is on: ``crash with
    --enable-two-batch-overlap``."""

    condition: tuple[Requirement, ...]
    described: str  # the condition as a user types it
    outcome: str
    evidence: Related | None = None
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "condition": [{"option": name, "value": value} for name, value in self.condition],
            "described": self.described,
            "outcome": self.outcome,
            "evidence": self.evidence.to_json() if self.evidence else None,
            "reason": self.reason,
        }


def first_effect(effects: list[Effect]) -> Effect | None:
    """The effect that decides a launch: the earliest that is not ``works``."""
    acting = [e for e in effects if e.outcome != WORKS]
    return min(acting, key=lambda e: e.stage) if acting else None


@dataclass(frozen=True)
class Verdict:
    """One model class's verdict (``eagle3lint.checks.verdicts`` decides it): its status, and what the
    engine does with it."""

    status: str
    reason: str
    # Why the class counts as having EAGLE-3 code ("" when it has none).
    evidence: str = ""
    # What the engine does under the run's options ("" for a class that is not a target), the
    # engine's file:line for it, and the options under which it would differ.
    outcome: str = ""
    decided: Effect | None = None
    conditions: tuple[ConditionalOutcome, ...] = field(default=())
