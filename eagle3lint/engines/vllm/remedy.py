"""The remedy for a vLLM wrapper that lacks the EAGLE-3 members its inner model has.

The runner refuses such a wrapper because ``supports_eagle3()`` is false: the protocol is a
runtime-checkable ``Protocol`` with a ``supports_eagle3`` ClassVar flag that only inheriting it
provides, so methods that delegate never make it true. The remedy therefore starts from the
protocol: declare it, and delegate the setter (and the getter) to the inner model only where the
protocol's default would not reach a holder that collects, and check that what the setter then
reaches really collects (:mod:`eagle3lint.engines.vllm.holders`, ``collect``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from eagle3lint.engines.vllm.collect import YES as COLLECTS_YES
from eagle3lint.engines.vllm.holders import NO_INNER, RESOLVED, Holder
from eagle3lint.engines.vllm.tristate import NO, YES
from eagle3lint.source.index import ClassRef

if TYPE_CHECKING:
    from eagle3lint.engines.vllm.context import VllmCheckContext


@dataclass
class ProtocolRemedy:
    protocol: str
    # Why declaring the protocol alone is not enough ("" when it is: the default reaches a
    # holder that inherits the mixin it asserts and collects).
    default_problem: str
    delegate: str | None = None  # the attribute the setter (and the getter) are forwarded to
    inner: ClassRef | None = None
    members: list[str] = field(default_factory=list)  # forwarded to ``self.<delegate>``
    holder: Holder | None = None  # what the setter reaches once the remedy is in
    # What still fails once declared and delegated ("" when it is proven to collect), and the
    # holder class that lacks the mixin / the collection (a fix may add them).
    remaining: str = ""
    lacks_mixin: list[ClassRef] = field(default_factory=list)
    not_collecting: list[ClassRef] = field(default_factory=list)

    @property
    def proven(self) -> bool:
        return not self.remaining

    def steps(self) -> str:
        """The remedy in words: "declare X and forward `a` to `self.b`"."""
        parts = [f"declare {self.protocol}"]
        if self.members and self.delegate:
            parts.append(f"forward {_names(self.members)} to `self.{self.delegate}`")
        if self.lacks_mixin:
            parts.append(f"add the mixin to {_names([c.qualname for c in self.lacks_mixin])}")
        if self.not_collecting:
            parts.append(f"collect aux hidden states in {_names([c.qualname + '.forward' for c in self.not_collecting])}")
        return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def protocol_remedy(
    ctx: VllmCheckContext, model: ClassRef, delegate: str | None, inner: ClassRef | None, members: list[str]
) -> ProtocolRemedy | None:
    """The remedy for ``model`` (which does not declare the protocol), whose ``self.<delegate>``
    holds ``inner``, a class with ``members`` (those the engine calls and ``model`` lacks); None
    where the protocol is not what is missing."""
    proto = ctx.protocol
    if proto is None or ctx.declared(model).value != NO:
        return None
    setter = ctx.vindex.vpack.setter
    default = ctx.holder(model, assume_default=True)
    problem = _holder_problem(ctx, default, f"the protocol's default `{setter}` would reach")
    remedy = ProtocolRemedy(proto.name, problem, holder=default)
    if not problem:
        return remedy
    if delegate is None or inner is None:
        remedy.remaining = problem
        return remedy
    remedy.delegate, remedy.inner = delegate, inner
    inner_lookup = ctx.holders.setter_lookup(inner)
    if inner_lookup.status != "found":
        remedy.remaining = f"`{inner.qualname}` has no `{setter}` to forward to"
        return remedy
    reached = ctx.holder(inner)
    inherited = ctx.holders.is_protocol_class(inner_lookup.owner)
    if inherited and default.status == RESOLVED and reached.status == RESOLVED and set(reached.classes) == set(default.classes):
        # The inner model's setter is the protocol's default and reaches the same decoder:
        # forwarding changes nothing; the decoder is what needs the work.
        remedy.remaining = problem
    else:
        remedy.members = [setter]
        # The getters the engine calls: forwarded where the inner model has its own (its
        # defaults belong to what it holds); else the protocol's default on the wrapper serves.
        for getter in members:
            lookup = ctx.index.lookup(inner, getter)
            if getter != setter and lookup.status == "found" and lookup.owner is not None and not ctx.holders.is_protocol_class(lookup.owner):
                remedy.members.append(getter)
        remedy.holder = replace(reached, path=_joined(delegate, reached.path))
        own = f"the {proto.name} default" if inherited else "its own"
        remedy.remaining = _holder_problem(ctx, remedy.holder, f"`self.{delegate}` (`{inner.qualname}`) has {own} `{setter}`, which reaches")
    if remedy.holder is not None and remedy.holder.status == RESOLVED:
        remedy.lacks_mixin = [c for c in remedy.holder.classes if remedy.holder.asserted_mixin and ctx.inherits_mixin(c) == NO]
        remedy.not_collecting = [c for c in remedy.holder.classes if ctx.holder_collects(remedy.holder, c).value != COLLECTS_YES]
    return remedy


def describe_remedy(ctx: VllmCheckContext, remedy: ProtocolRemedy) -> str:
    """What the finding says after the refusal: why declaring alone is or is not enough, and
    what is proven of the rest."""
    setter = ctx.vindex.vpack.setter
    if not remedy.default_problem:
        return f"declaring {remedy.protocol} is enough: its default `{setter}` reaches a decoder that collects"
    text = f"declaring it is not enough: {remedy.default_problem}"
    if remedy.holder is not None and remedy.delegate and remedy.inner and remedy.members:
        holder = remedy.holder
        if remedy.proven:
            collects = ctx.holder_collects(holder, holder.classes[0]).where if holder.classes else ""
            text += (
                f"; `self.{remedy.delegate}` (`{remedy.inner.qualname}`) has its own `{setter}`, which reaches "
                f"`{holder.path}` ({_names([c.qualname for c in holder.classes])}), collecting in `{collects}`"
            )
        else:
            text += f"; {remedy.remaining}"
    elif remedy.remaining and remedy.remaining != remedy.default_problem:
        text += f"; {remedy.remaining}"
    return f"{text}: {remedy.steps()}"


def _holder_problem(ctx: VllmCheckContext, holder: Holder, lead: str) -> str:
    """Why ``holder`` would not work (``lead`` says who reaches it), or "" when it inherits the
    mixin it must and its ``forward`` collects."""
    if holder.status == NO_INNER and holder.reached is not None:
        return f"{lead} `{holder.path}` and asks it for `.model`, which `{holder.reached.qualname}` lacks"
    if holder.status != RESOLVED or not holder.classes:
        return f"{lead} what eagle3lint cannot tell ({holder.reason or 'not resolved'})"
    for cls in holder.classes:
        where = f"{lead} `{holder.path}` (`{cls.qualname}`)"
        if holder.asserted_mixin and ctx.inherits_mixin(cls) != YES:
            return f"{where}, which does not inherit {holder.asserted_mixin}"
        verdict = ctx.holder_collects(holder, cls)
        if verdict.value != COLLECTS_YES:
            return f"{where}, whose `forward` does not collect aux hidden states" + (f" ({verdict.where})" if verdict.value != "no" and verdict.where else "")
    return ""


def _joined(delegate: str, path: str) -> str:
    return f"self.{delegate}" + (path[len("self") :] if path.startswith("self") else f".{path}")


def _names(names: list[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
