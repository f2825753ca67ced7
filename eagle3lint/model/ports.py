"""What the adapter base hands out, as the base itself names it: its ports.

An engine's adapter returns rule classes, fix-pattern classes, the context its rules see and a
``verify`` driver. Their implementations live in ``checks/``, ``fix/`` and ``verify/``
(``checks.base.Rule``, ``fix.planner.FixPattern``, ``checks.context.CheckContext``,
``verify.driver.ServerDriver``: every engine derives from them), which are built on the types the
base deals in (the index, the contract, the models). Naming them here, by the little the base
needs of each, keeps the base below all of them: nothing it imports leads back to it. The code
that drives a run takes them through the registry (``eagle3lint.engines``), which checks at that
seam that each is one of those classes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from eagle3lint.model.models import ModelClass


class RulePort(Protocol):
    """A rule class (``checks.base.Rule``): a stable code and name."""

    code: ClassVar[str]
    name: ClassVar[str]


class FixPatternPort(Protocol):
    """A fix-pattern class (``fix.planner.FixPattern``): its name and the codes it answers."""

    name: ClassVar[str]
    codes: ClassVar[tuple[str, ...]]


class ContextPort(Protocol):
    """The context the rules see (``checks.context.CheckContext``): at least the models."""

    models: list[ModelClass]


class ServerPort(Protocol):
    """``verify``'s driver for the engine (``verify.driver.ServerDriver``): where its knowledge
    file (launch module, readiness, crash patterns) is."""

    knowledge_file: Path
