"""An interface member that is there but fails in its own body: it reads an attribute chain off
``self`` that the class certainly lacks (E3L023)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from eagle3lint.checks.base import Rule
from eagle3lint.checks.context import CheckContext, role_phrase
from eagle3lint.common.findings import Finding
from eagle3lint.common.outcomes import CRASH, Effect, member_stage
from eagle3lint.model.contract_types import ContractSite
from eagle3lint.model.models import ModelClass
from eagle3lint.source.attribute_writes import (
    AttributeWrite,
    EngineTexts,
    attribute_writes,
    opens_attributes,
)
from eagle3lint.source.index import ClassRef, MemberLookup


@dataclass(frozen=True)
class BrokenRead:
    """A read of ``self.<chain>`` that raises: ``holder`` (what ``self.<chain[:at]>`` holds)
    has no ``link``."""

    chain: tuple[str, ...]
    path: str
    line: int
    column: int
    holder: ClassRef
    link: str
    at: int  # how many links of the chain resolve before ``link``


class MemberReadsMissingAttribute(Rule):
    """
    ## What it does
    Reports an interface member the class has whose own body reads, on every call, an attribute
    chain off `self` that is certainly not there: `return self.model.embed_tokens.weight, ...`
    where `self.model` holds a class with no `embed_tokens`.

    Certainly: not in the holder or any of its bases, no `__getattr__` but `nn.Module`'s, no
    `setattr`/`register_*` of it (or of a computed name) in those classes, no write of it on an
    object that may be such a holder anywhere in the engine, and whatever branch `__init__`
    takes. Every call: not under an `if` (an `isinstance(..., PPMissingLayer)` or `hasattr`
    guard), in a `try` with handlers, a conditional expression's arm, or after a statement that
    may return or raise early.

    It is an error where the engine reaches the call at start-up, bare, under the run's launch
    options; where start-up stops earlier at a member the class lacks (the release's own order,
    as for E3L001), a warning that says so: the member fails next once that one is fixed.

    ## Why is this bad?
    The presence rules see the member and are satisfied; the engine then calls it and the read
    raises `AttributeError` while the drafter is set up. SGLang 0.5.23's draft worker calls
    `get_embed_and_head` before the attention backends' check for
    `set_eagle3_layers_to_capture`, so `OPTForCausalLM`, whose getter reads
    `self.model.embed_tokens` while `OPTModel` keeps the embedding in
    `self.decoder.embed_tokens`, crashes instead of being refused (confirmed by the engine's
    CPU start-up).

    ## Example
    ```python
    class FooModel(nn.Module):
        def __init__(self, config):
            self.decoder = FooDecoder(config)       # holds embed_tokens

    class FooForCausalLM(nn.Module):
        def __init__(self, config):
            self.model = FooModel(config)
        def get_embed_and_head(self):
            return self.model.embed_tokens.weight, self.lm_head.weight
    ```
    Use instead: read the attribute where it lives (`self.model.decoder.embed_tokens`), or give
    the holder a property for it.

    ## Fix safety
    Display-only: where the attribute lives is the model author's call.
    """

    code = "E3L023"
    name = "member-reads-missing-attr"

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        reader = _BodyReads(ctx)
        order = ctx.start_up_order()
        for model in ctx.models:
            if model.role is None:
                continue
            required = sorted(ctx.requirements(model), key=lambda pair: _position(order, pair[0].name))
            # The first member start-up stops at, and why (the class lacks it, it always raises,
            # its own body fails): a later member's read is not reached.
            stopped: tuple[str, str] | None = None
            for member, sites in required:
                state = ctx.state(model.ref, member.name)
                if state.status in ("missing", "delegation-gap"):
                    stopped = stopped or (member.name, "which the class lacks")
                    continue
                lookup = state.lookup
                fn = lookup.function
                if state.status not in ("present", "delegated") or fn is None or lookup.owner is None or fn.is_property:
                    continue
                if fn.always_raises:
                    stopped = stopped or (member.name, "which always raises")
                    continue
                broken = reader.first_broken(model.ref, lookup, member.name)
                # A call the engine makes bare: a guard of its own might catch the error.
                bare = [s for s in sites if s.guard == "none" and s.access == "call"]
                if broken is None or not bare:
                    continue
                yield self._finding(ctx, model, member.name, broken, bare, order, stopped)
                stopped = stopped or (member.name, "whose body fails first")

    def _finding(
        self,
        ctx: CheckContext,
        model: ModelClass,
        member: str,
        broken: BrokenRead,
        sites: list[ContractSite],
        order: list[str],
        stopped: tuple[str, str] | None,
    ) -> Finding:
        chain = broken.chain
        read = f"self.{'.'.join(chain)}"
        failing = f"self.{'.'.join(chain[: broken.at + 1])}"
        prefix = ".".join(chain[: broken.at])
        owner = model.summary.name
        lacking = (
            f"`{owner}` has no `self.{broken.link}`"
            if not prefix
            else f"`self.{prefix}` holds `{broken.holder.qualname}`, which has no `{broken.link}`{_elsewhere(ctx, broken)}"
        )
        site = sites[0]
        message = (
            f"`{owner}.{member}` reads `{read}`, but {lacking}: the engine's call of `{member}` on the "
            f"{role_phrase(model)} model ({site.path}:{site.line}, unguarded) raises AttributeError"
        )
        data: dict[str, object] = {"member": member, "chain": ".".join(chain), "holder": str(broken.holder), "link": broken.link}
        if stopped is not None:
            # Start-up stops earlier (E3L001, E3L004 or E3L003 say where): this is said, and
            # left out of the outcome, which that member decides.
            first, why = stopped
            return ctx.finding(
                MemberReadsMissingAttribute, model, member,
                f"{message} once start-up gets there; on this release it stops first at `{first}`, {why}",
                sites, severity="warning", path=broken.path, line=broken.line, column=broken.column,
                data={**data, "reached": False},
            )
        effect = Effect(
            CRASH,
            member_stage(_position(order, member)),
            ctx.related_for(sites[:1])[0],
            reason=f"`{member}` reads `{failing}`, which `{broken.holder.qualname}` lacks" if prefix else f"`{member}` reads `{failing}`, which it lacks",
            code=self.code,
        )
        return ctx.finding(
            MemberReadsMissingAttribute, model, member, message, sites,
            path=broken.path, line=broken.line, column=broken.column, data={**data, "reached": True}, effect=effect,
        )


def _position(order: list[str], member: str) -> int:
    return order.index(member) if member in order else len(order)


def _elsewhere(ctx: CheckContext, broken: BrokenRead) -> str:
    """Where the holder keeps an attribute of that name one level down (``decoder.embed_tokens``),
    as a hint; "" when none of its attributes' classes has it."""
    index = ctx.index
    for current in index.mro(broken.holder).classes:
        cls = index.class_summary(current)
        if cls is None:
            continue
        for attr in cls.instance_attrs:
            held = [h for h in index.attribute_classes(broken.holder, attr) if isinstance(h, ClassRef)]
            if held and all(index.lookup(h, broken.link).status == "found" for h in held):
                return f" (it has `{attr}.{broken.link}`)"
    return ""


class _BodyReads:
    """The members' bodies as read for this rule, and what may give a class an attribute its
    summary does not name; both cached for the run."""

    def __init__(self, ctx: CheckContext) -> None:
        self.ctx = ctx
        self.index = ctx.index
        self._writes: dict[str, _Writes] = ctx.shared("member-body-writes", dict)
        self._open: dict[tuple[ClassRef, str], bool] = ctx.shared("member-body-open", dict)
        self._texts: EngineTexts = ctx.shared("member-body-texts", lambda: EngineTexts(ctx.index.engine))

    def first_broken(self, ref: ClassRef, lookup: MemberLookup, member: str) -> BrokenRead | None:
        """The first read of ``lookup``'s body, as an instance of ``ref`` runs it, that raises."""
        fn, owner = lookup.function, lookup.owner
        module = self.index.module(owner.module) if owner is not None else None
        if fn is None or module is None or not fn.walked:
            return None
        for chain, line, column in fn.sure_reads:
            # ``self.inner.<member>(...)`` is a delegation: E3L004 judges it.
            if len(chain) < 2 or member in chain[1:]:
                continue
            status, holder, link = self.ctx.chain_state(ref, ".".join(chain), every=True)
            if status != "missing" or self.is_open(holder, link):
                continue
            at = _resolved_links(self.ctx, ref, chain, holder, link)
            if at is None:
                continue
            return BrokenRead(chain, module.path, line, column + 1, holder, link, at)
        return None

    # ---- attributes a class may be given at run time ---------------------------------------
    def is_open(self, holder: ClassRef, link: str) -> bool:
        """Whether ``holder`` instances may have ``link`` though no class of its MRO names it:
        a class of the MRO writes attributes by computed name, or the engine writes ``link`` on
        an object that may be one (or that cannot be told)."""
        key = (holder, link)
        if key not in self._open:
            writes = self._writes.setdefault(link, _Writes(attribute_writes(self._texts, link)))
            self._open[key] = self._sets_itself(holder, link) or any(self._may_hold(w, holder) for w in writes)
        return self._open[key]

    def _sets_itself(self, holder: ClassRef, link: str) -> bool:
        for current in self.index.mro(holder).classes:
            cls = self.index.class_summary(current)
            module = self.index.module(current.module)
            if cls is None or module is None:
                return True
            lines = self.index.snippets.lines(module.path)
            if lines is None or opens_attributes(lines[cls.lineno - 1 : cls.end_lineno], link):
                return True
        return False

    def _may_hold(self, write: AttributeWrite, holder: ClassRef) -> bool:
        """Whether the object ``write`` writes on may be a ``holder``: only a ``self.a.b`` chain
        in a class the index reads can be told apart (``layer.weight = ...`` may be anything)."""
        if not write.receiver.startswith("self.") or write.owner is None or not _PLAIN.fullmatch(write.receiver):
            return True
        held = _held_classes(self.ctx, ClassRef(write.module, write.owner), write.receiver.split(".")[1:])
        if held is None:
            return True
        related = set(self.index.mro(holder).classes)
        return any(h in related or holder in self.index.mro(h).classes for h in held)


_PLAIN = re.compile(r"self(?:\.\w+)+")


class _Writes:
    """The engine's writes of one attribute name, read as far as a question needs: a name
    written on arbitrary objects (``layer.weight = ...``) is settled by the first few files, not
    by reading the whole engine."""

    def __init__(self, source: Iterator[AttributeWrite]) -> None:
        self._source = source
        self._seen: list[AttributeWrite] = []

    def __iter__(self) -> Iterator[AttributeWrite]:
        yield from self._seen
        for write in self._source:
            self._seen.append(write)
            yield write


def _held_classes(ctx: CheckContext, ref: ClassRef, links: list[str]) -> list[ClassRef] | None:
    """The classes ``self.<links>`` may hold in an instance of ``ref``; None where a link
    cannot be followed."""
    if ctx.index.class_summary(ref) is None:
        return None
    return ctx.index.path_classes(ref, links)


def _resolved_links(ctx: CheckContext, ref: ClassRef, chain: tuple[str, ...], holder: ClassRef, link: str) -> int | None:
    """How many links of ``chain`` lead to ``holder`` before ``link`` (0: ``ref`` itself lacks
    the first); None where the chain does not reach it so."""
    for at in range(len(chain)):
        if chain[at] != link:
            continue
        held = [ref] if at == 0 else _held_classes(ctx, ref, list(chain[:at]))
        if held is not None and holder in held:
            return at
    return None
