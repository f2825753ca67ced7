"""Presence rules: is every member the engine needs really there, and callable as called?"""

from __future__ import annotations

from collections.abc import Iterable

from eagle3lint.checks.base import Rule
from eagle3lint.checks.context import (
    CheckContext,
    guard_phrase,
    role_phrase,
    severity_for,
)
from eagle3lint.checks.member_body import MemberReadsMissingAttribute
from eagle3lint.checks.presence_phrases import _describe_all, _names, _stub_effect, describe_member
from eagle3lint.checks.presence_provided import (
    PresenceNotProvable,
    SignatureMismatch,
    StaleInterfaceOverride,
    WrapperDelegationGap,
)
from eagle3lint.common.findings import Finding
from eagle3lint.model.models import DRAFT, EAGLE3_DRAFT, TARGET


class MissingTargetMethod(Rule):
    """
    ## What it does
    Reports a target-model class (a generative model EAGLE-3 can draft for) that lacks a member
    the engine uses on the target model without a fallback.

    The list of members, their roles and how each call is guarded come from the engine's own
    source (see `eagle3lint contract`), so the rule follows the engine version in front of it.

    ## Why is this bad?
    The engine calls the member unconditionally once EAGLE-3 is enabled. With the member missing,
    the server dies with an `AttributeError` (or, in engines that probe first, a clear error)
    after loading the weights, which on a large model takes many minutes and a full GPU node.

    ## Example
    ```python
    class FooForCausalLM(nn.Module):
        def __init__(self, config):
            self.model = FooModel(config)
            self.lm_head = ParallelLMHead(...)
        # no set_eagle3_layers_to_capture / get_embed_and_head
    ```
    Use instead: implement the members (capture in the decoder loop; return the embedding and
    the LM head).

    ## Fix safety
    The fix for a causal LM with the common decoder shape is unsafe (it changes `forward`); other
    shapes are display-only.
    """

    code = "E3L001"
    name = "missing-target-method"
    fix_safety = "unsafe"
    member_gap = True

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        for model in ctx.models:
            if model.kind != TARGET:
                continue
            # One finding per class: once the first member the engine calls is missing, start-up
            # stops there and the others cannot be reached (they are named in it).
            missing = [
                (member, sites)
                for member, sites in ctx.requirements(model)
                if ctx.state(model.ref, member.name).status == "missing"
            ]
            if not missing:
                continue
            order = ctx.start_up_order()
            missing.sort(key=lambda pair: order.index(pair[0].name) if pair[0].name in order else len(order))
            first, _ = missing[0]
            spec = ctx.pack.members[first.name]
            sites = list(dict.fromkeys(s for _, member_sites in missing for s in member_sites))
            names = [member.name for member, _ in missing]
            described = describe_member(spec) if len(names) == 1 else _describe_all(ctx, names)
            yield ctx.finding(
                MissingTargetMethod,
                model,
                first.name,
                f"`{model.summary.name}` lacks {_names(names, quote_only=True)}, which the engine uses on the "
                f"target model ({guard_phrase(sites)}){ctx.gap_note(model, names)}; {described}",
                sites,
                severity=severity_for(sites),
                data={
                    "kind": spec.kind,
                    "call_args": max(s.positional_args for s in sites if s.member == first.name),
                    "members": names,
                },
                effect=ctx.gap_effect(names, sites, code=self.code),
            )


class MissingDraftMethod(Rule):
    """
    ## What it does
    Reports a draft-head class (EAGLE, EAGLE-3, MTP, NextN) that lacks a member the engine uses on
    the draft model without a fallback. EAGLE-3 heads are checked against the calls made for
    EAGLE-3; other heads against the calls made for the other algorithms.

    ## Why is this bad?
    The speculative worker wires the draft to the target at start-up (`set_embed`,
    `set_embed_and_head`, `hot_token_id`); a missing member is an `AttributeError` before the
    first request is served.

    ## Example
    ```python
    class FooForCausalLMEagle3(nn.Module):
        def set_embed_and_head(self, embed, head): ...
        # the engine calls set_embed() for EAGLE-3 heads that keep their own LM head
    ```

    ## Fix safety
    Display-only: a draft head's weights layout decides the implementation.
    """

    code = "E3L002"
    name = "missing-draft-method"

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        for model in ctx.models:
            if model.kind not in (EAGLE3_DRAFT, DRAFT):
                continue
            for member, sites in ctx.requirements(model):
                state = ctx.state(model.ref, member.name)
                if state.status not in ("missing", "delegation-gap"):
                    continue
                spec = ctx.pack.members[member.name]
                algorithm = "EAGLE-3" if model.kind == EAGLE3_DRAFT else "EAGLE/MTP"
                yield ctx.finding(
                    MissingDraftMethod,
                    model,
                    member.name,
                    f"draft head `{model.summary.name}` lacks `{member.name}`, which the engine uses "
                    f"on the {algorithm} draft model ({guard_phrase(sites)}); {describe_member(spec)}",
                    sites,
                    severity=severity_for(sites),
                    effect=ctx.gap_effect([member.name], sites, code=self.code),
                )


class StubMethod(Rule):
    """
    ## What it does
    Reports an interface member that resolves (through the class's MRO) only to a stub: a body
    of `...`, `pass`, a docstring alone, or `raise NotImplementedError`.

    ## Why is this bad?
    The engine finds the member, so nothing fails at the `hasattr` probe; the stub then raises,
    or silently does nothing: a capture setter that does nothing leaves the drafter without
    hidden states and acceptance collapses to about 1 token per step.

    ## Example
    ```python
    class Base(nn.Module):
        def set_eagle3_layers_to_capture(self, layer_ids=None):
            raise NotImplementedError
    class FooForCausalLM(Base): ...
    ```

    ## Fix safety
    Display-only.
    """

    code = "E3L003"
    name = "stub-method"

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        for model in ctx.models:
            if model.role is None:
                continue
            for member, sites in ctx.requirements(model):
                state = ctx.state(model.ref, member.name)
                fn = state.lookup.function
                if state.status != "present" or fn is None or not fn.is_stub or state.lookup.owner is None:
                    continue
                owner = state.lookup.owner
                owner_module = ctx.index.module(owner.module)
                where = "" if owner == model.ref else f" (inherited from `{owner.qualname}`)"
                yield ctx.finding(
                    StubMethod,
                    model,
                    member.name,
                    f"`{model.summary.name}.{member.name}` is only a stub{where}; the engine calls it "
                    f"on the {role_phrase(model)} model and gets no real implementation",
                    sites,
                    severity=severity_for(sites),
                    path=owner_module.path if owner_module else model.path,
                    line=fn.lineno,
                    column=fn.col + 1,
                    effect=_stub_effect(ctx, member.name, fn.always_raises, sites, self.code),
                )


class MissingAttributeChain(Rule):
    """
    ## What it does
    Reports a target model class that lacks a link of an attribute chain the engine or a plugin
    reads off the target without a guard (rule pack members with a dotted name, e.g.
    `model.embed_tokens`: a proposer sharing the target's embedding with the drafter). The
    class has no `self.model`, or what `self.model` holds has no `embed_tokens`.

    ## Why is this bad?
    The read raises `AttributeError` while the drafter is loaded, after the target's weights:
    vllm-ascend 0.11.0's `EagleProposer.load_model` reads `model.model.embed_tokens` for EAGLE
    and EAGLE-3 alike, so a multimodal wrapper that keeps its decoder in `self.language_model`
    fails there (upstream vLLM asks `get_language_model()` and `hasattr` first).

    ## Example
    ```python
    class FooForConditionalGeneration(nn.Module, SupportsEagle3):
        def __init__(self, *, vllm_config, prefix=""):
            self.language_model = FooForCausalLM(...)   # no self.model
    ```
    Use instead: guard the read in the proposer (`get_language_model()`, `hasattr`), or give the
    class the attribute the proposer expects.

    ## Fix safety
    No fix is generated: which side should change is the plugin author's call.
    """

    code = "E3L022"
    name = "missing-attribute-chain"
    member_gap = True  # a class with no EAGLE-3 code is refused anyway: E3L020 stands for it

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        for model in ctx.models:
            if model.kind != TARGET:
                continue
            for member, sites in ctx.requirements(model, chains=True):
                status, where, link = ctx.chain_state(model.ref, member.name)
                if status != "missing":
                    continue
                path = member.name.split(".")
                lacking = (
                    f"has no `self.{link}`"
                    if where == model.ref
                    else f"holds `{where.qualname}` in `self.{'.'.join(path[: path.index(link)])}`, which has no `{link}`"
                )
                receivers = ", ".join(dict.fromkeys(f"`{s.receiver}.{member.name}`" for s in sites))
                yield ctx.finding(
                    MissingAttributeChain,
                    model,
                    member.name,
                    f"`{model.summary.name}` {lacking}, but {receivers} is read off the target model "
                    f"({guard_phrase(sites)}): loading the drafter fails",
                    sites,
                    severity=severity_for(sites),
                    data={"chain": member.name, "link": link},
                    effect=ctx.gap_effect([member.name], sites, reason=f"lacks `{member.name}` (read off the target)", code=self.code),
                )
                break


PRESENCE_RULES: tuple[type[Rule], ...] = (
    MissingTargetMethod,
    MissingDraftMethod,
    StubMethod,
    WrapperDelegationGap,
    SignatureMismatch,
    PresenceNotProvable,
    StaleInterfaceOverride,
    MissingAttributeChain,
    MemberReadsMissingAttribute,
)
