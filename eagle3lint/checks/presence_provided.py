"""Presence rules on how a member is provided: a wrapper that does not delegate it (E3L004),
a signature that does not take the call (E3L005), presence that cannot be proven (E3L006), a
stale override of the interface (E3L014) (split out of ``presence``, which lists every
presence rule in ``PRESENCE_RULES``)."""

from __future__ import annotations

from collections.abc import Iterable

from eagle3lint.checks.base import Rule
from eagle3lint.checks.context import (
    CheckContext,
    MemberState,
    guard_phrase,
    role_phrase,
    severity_for,
)
from eagle3lint.checks.presence_phrases import _names, _stage
from eagle3lint.common.findings import Finding
from eagle3lint.common.outcomes import CRASH, UNKNOWN, Effect
from eagle3lint.model.contract_types import ContractSite
from eagle3lint.model.models import TARGET, ModelClass


class WrapperDelegationGap(Rule):
    """
    ## What it does
    Reports a wrapper (typically a multimodal `...ForConditionalGeneration`) that holds an inner
    language model whose class provides an interface member, while the wrapper neither defines
    nor delegates it — or delegates it to an attribute whose class lacks it.

    A *dispatcher* is a wrapper too: a class whose `__init__` picks its implementation by config
    (from a literal table, `_VERSIONS.get(version)`, or an `if`/`elif` chain) and whose
    `__getattr__` forwards to the instance it built, as SGLang's `MiniCPMV` does. Each class it
    may pick is judged: when every one lacks the member, the engine fails as on a missing member
    (`hasattr` runs the `__getattr__`, which raises `AttributeError`: a crash where the call is
    bare, a refusal behind the engine's check); when some lack it, the finding names which.

    ## What it does (vLLM)
    On vLLM the members are the `SupportsEagle3` protocol's, and the runner asks
    `supports_eagle3(model)` before calling any: a runtime-checkable protocol whose
    `supports_eagle3` ClassVar flag only inheriting the protocol provides. So the message starts
    from the protocol: the wrapper does not declare it, and forwarding methods alone never makes
    the check true. It then says whether declaring is enough (what the protocol's default setter
    would reach, through `get_language_model()` / `language_model`, then `.model`, and whether
    that object inherits `EagleModelMixin` and collects), and what the inner model's own setter
    reaches instead.

    ## Why is this bad? (SGLang)
    The engine calls the member on the outer object it loaded. The inner model could answer, but
    nothing forwards the call: where the engine calls it bare (0.5.9) the server dies with an
    `AttributeError` after the weights load (a crash: an error); where it checks first (0.5.23's
    `hasattr` guard) it refuses EAGLE-3 with its own message (a warning: the model is one
    delegation away). The member the release reaches first decides: 0.5.23 builds the draft worker,
    which calls `get_embed_and_head` bare, before that guard, so a wrapper that forwards neither
    crashes there. This is the Kimi-K2.5 crash: `KimiK25ForConditionalGeneration` holds a
    `DeepseekV3ForCausalLM` in `self.language_model` and lacked `set_eagle3_layers_to_capture`.

    ## Why is this bad? (vLLM)
    The runner refuses EAGLE-3 for the model (`RuntimeError: Model does not support EAGLE3
    interface`) although its language model supports it: vLLM 0.33.0's
    `KimiVLForConditionalGeneration` holds a `DeepseekV2ForCausalLM`. Declaring the protocol
    alone is not enough there: its default setter would reach `DeepseekV2Model`, which does not
    inherit `EagleModelMixin`, and start-up would die on the default's assertion instead.

    ## Example (SGLang)
    ```python
    class FooForConditionalGeneration(nn.Module):
        def __init__(self, config):
            self.language_model = LlamaForCausalLM(config.text_config)
    ```
    Use instead (with the parameters the release's call sites pass and the inner setter takes:
    SGLang 0.4.x calls it with none):
    ```python
        def set_eagle3_layers_to_capture(self, layer_ids=None):
            self.language_model.set_eagle3_layers_to_capture(layer_ids)
    ```

    ## Example (vLLM)
    ```python
    class FooVLForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsPP):
        def __init__(self, *, vllm_config, prefix=""):
            self.language_model = DeepseekV2ForCausalLM(...)  # its own setter writes
                                                              # self.model.aux_hidden_state_layers
    ```
    Use instead:
    ```python
    class FooVLForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsPP, SupportsEagle3):
        def set_aux_hidden_state_layers(self, layers):
            self.language_model.set_aux_hidden_state_layers(layers)
    ```
    (only the declaration where the protocol's default reaches a decoder that inherits the
    mixin and collects; that case is E3L013).

    ## Fix safety (SGLang)
    Safe: the delegate attribute and its class are resolved statically and the inserted method
    only forwards the call; its parameters and the forwarded call follow the engine's call sites
    and the inner member's own signature, and a call site the inner member cannot take makes the
    fix display-only.

    ## Fix safety (vLLM)
    `SupportsEagle3` is added to the bases (with its import), and the setter is forwarded only
    where the protocol's default cannot reach a holder that inherits the mixin and collects
    (a getter only where the inner model has one of its own). Safe where the analysis proved
    that what the setter then reaches collects; unsafe where the holder's mixin or collect calls
    must be added too (its `forward` changes), or where the wrapper's own protocol methods then
    run unproven; display-only otherwise, with the reason.
    """

    code = "E3L004"
    name = "wrapper-delegation-gap"
    fix_safety = "safe"
    member_gap = True

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        for model in ctx.models:
            if model.kind != TARGET:
                continue
            # One finding per cause: the members one attribute should forward and does not.
            gaps: dict[tuple[object, ...], list[tuple[str, MemberState, list[ContractSite]]]] = {}
            for member, sites in ctx.requirements(model):
                state = ctx.state(model.ref, member.name)
                if state.status != "delegation-gap" or state.inner_class is None:
                    continue
                cause = (state.inner_attr, state.lookup.status == "missing", state.lookup.kind, tuple(state.lacking))
                gaps.setdefault(cause, []).append((member.name, state, sites))
            for members in gaps.values():
                yield self._finding(ctx, model, members)

    @staticmethod
    def _finding(ctx: CheckContext, model: ModelClass, members: list[tuple[str, MemberState, list[ContractSite]]]) -> Finding:
        # The member the engine reaches first leads (and names the cause).
        order = ctx.start_up_order()
        members = sorted(members, key=lambda item: order.index(item[0]) if item[0] in order else len(order))
        first, state, _ = members[0]
        assert state.inner_class is not None
        names = [name for name, _, _ in members]
        sites = list(dict.fromkeys(s for _, _, member_sites in members for s in member_sites))
        listed = _names(names, quote_only=True)
        them = "it" if len(names) == 1 else "them"
        inner = state.inner_class.qualname
        if state.lookup.status == "missing" and state.lacking:
            having = [c.qualname for c in state.choices if c not in state.lacking]
            message = (
                f"`{model.summary.name}` does not delegate {listed} to "
                f"`self.{state.inner_attr}`, whose class `__init__` picks by config: "
                f"{_names(having)} {'has' if len(having) == 1 else 'have'} {them}, "
                f"{_names([c.qualname for c in state.lacking])} {'does' if len(state.lacking) == 1 else 'do'} not; "
                f"the engine calls {them} on the target model ({guard_phrase(sites)})"
            )
        elif state.lookup.status == "missing":
            message = ctx.delegation_message(model, names, state, sites) or (
                f"`{model.summary.name}` does not delegate {listed} to "
                f"`self.{state.inner_attr}` ({inner}), which has {them}; the engine calls {them} on "
                f"the target model ({guard_phrase(sites)})"
            )
        elif state.choices:
            through = " (through `__getattr__`)" if state.lookup.kind == "getattr" else ""
            message = (
                f"`{model.summary.name}` forwards {listed}{through} to `self.{state.inner_attr}`, whose class "
                f"`__init__` picks by config: {_choice_phrases(ctx, state, first, them)}; the engine calls {them} "
                f"on the target model ({guard_phrase(sites)})"
            )
        else:
            through = " (through `__getattr__`)" if state.lookup.kind == "getattr" else ""
            forwarded = listed if len(names) > 1 else f"`{model.summary.name}.{first}`"
            message = (
                f"{forwarded}{through} {'forward' if len(names) > 1 else 'forwards'} to `self.{state.inner_attr}` "
                f"({inner}), which lacks {them}; the engine calls {them} on the target model "
                f"({guard_phrase(sites)})"
            )
        return ctx.finding(
            WrapperDelegationGap,
            model,
            first,
            message,
            sites,
            severity=severity_for(sites),
            effect=_delegation_effect(ctx, names, sites, state, first),
            data={
                "delegate": state.inner_attr,
                "inner_class": str(state.inner_class),
                "inner_provides": state.lookup.status == "missing",
                "lacking": [str(c) for c in state.lacking],
                "choices": [str(c) for c in state.choices],
                "members": names,
            },
        )


class SignatureMismatch(Rule):
    """
    ## What it does
    Reports an interface method that exists but cannot accept the arguments the engine passes
    at one of its call sites (too few or too many positional arguments, or a required
    keyword-only parameter).

    ## Why is this bad?
    SGLang calls `set_eagle3_layers_to_capture()` with no argument when CUDA graphs are captured
    and with the layer ids at start-up; a method with a required `layer_ids` parameter raises
    `TypeError: ... missing 1 required positional argument` during graph capture.

    ## Example
    ```python
    def set_eagle3_layers_to_capture(self, layer_ids):  # engine also calls it with no argument
        ...
    ```
    Use instead: `def set_eagle3_layers_to_capture(self, layer_ids=None):`.

    ## Fix safety
    Display-only.
    """

    code = "E3L005"
    name = "signature-mismatch"

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        for model in ctx.models:
            if model.role is None:
                continue
            for member, sites in ctx.requirements(model):
                state = ctx.state(model.ref, member.name)
                fn = state.lookup.function
                if state.status not in ("present", "delegated") or fn is None or fn.is_property:
                    continue
                if state.lookup.kind != "method":
                    continue
                bad = [
                    s
                    for s in sites
                    if s.access == "call"
                    and (
                        not fn.params.accepts_positional(s.positional_args)
                        or any(k not in fn.params.positional + fn.params.keyword_only and not fn.params.has_varkw for k in s.keyword_args)
                    )
                ]
                if not bad:
                    continue
                arities = sorted({s.positional_args for s in bad})
                owner = state.lookup.owner
                owner_module = ctx.index.module(owner.module) if owner else None
                counts = " or ".join(str(a) for a in arities)
                yield ctx.finding(
                    SignatureMismatch,
                    model,
                    member.name,
                    f"`{model.summary.name}.{member.name}{fn.params.render()}` cannot be called with "
                    f"{counts} positional argument{'s' if arities != [1] else ''} as the engine does",
                    bad,
                    severity=severity_for(bad),
                    path=owner_module.path if owner_module else model.path,
                    line=fn.lineno,
                    column=fn.col + 1,
                    effect=Effect(
                        CRASH, _stage(ctx, member.name), ctx.related_for(bad[:1])[0],
                        reason=f"`{member.name}` cannot take the engine's arguments (TypeError)", code=self.code,
                    ),
                )


class PresenceNotProvable(Rule):
    """
    ## What it does
    Reports, as information, a model class the engine needs a member of when eagle3lint cannot
    prove statically whether the member is there: a base class outside the engine, or a
    `__getattr__` that forwards to an object whose class cannot be named (built by a call eagle3lint
    cannot follow, or picked by config among classes one of which it cannot read). A class picked
    from a literal table is followed choice by choice (E3L004 names those that lack the member).

    ## Why is this bad?
    Nothing is known to be wrong, but nothing is known to be right either: the first time the
    engine will tell is start-up with EAGLE-3 on GPUs. An unknown is never reported as an error;
    this note says where a human (or `eagle3lint verify`) should look.

    ## Example
    ```python
    class FooV(nn.Module):
        def __init__(self, config):
            self.inner = load_backbone(config)   # a factory whose return cannot be followed
        def __getattr__(self, name):
            return getattr(self.inner, name)
    ```

    ## Fix safety
    Display-only.
    """

    code = "E3L006"
    name = "presence-not-provable"
    severity = "info"
    unprovable = True

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        for model in ctx.models:
            if model.role is None:
                continue
            for member, sites in ctx.requirements(model):
                state = ctx.state(model.ref, member.name)
                if state.status != "unknown":
                    continue
                why = state.note or state.lookup.reason or "it cannot be resolved statically"
                yield ctx.finding(
                    PresenceNotProvable,
                    model,
                    member.name,
                    f"cannot prove that `{model.summary.name}` has `{member.name}`, which the engine uses on "
                    f"the {role_phrase(model)} model ({guard_phrase(sites)}): {why}",
                    sites,
                    severity="info",
                    effect=Effect(
                        UNKNOWN, _stage(ctx, member.name), ctx.related_for(sites[:1])[0] if sites else None,
                        reason=f"cannot prove it has `{member.name}`: {why}", code=self.code,
                    ),
                )


class StaleInterfaceOverride(Rule):
    """
    ## What it does
    Reports a method named after a former interface member (e.g.
    `get_eagle3_aux_hidden_state_layers`) in an engine version whose runner calls only its
    successor (`get_eagle3_default_aux_hidden_state_layers`). Former names are listed in the
    rule pack; whether the engine still calls them is read from the engine's call sites.

    ## Why is this bad?
    Nothing calls the method any more: it is dead code, and the behaviour it was written for
    (custom default layers, a delegation) silently stopped. When the class inherits a default for
    the new name, that default now runs instead of the override.

    ## Example
    ```python
    class FooForConditionalGeneration(nn.Module, SupportsEagle3):
        def get_eagle3_aux_hidden_state_layers(self):  # renamed in vLLM 0.18.0
            return self.language_model.get_eagle3_aux_hidden_state_layers()
    ```
    Use instead: rename it to `get_eagle3_default_aux_hidden_state_layers`, or delete it when the
    inherited default is right.

    ## Fix safety
    Safe: the method is renamed to the current member (and a call of the former name it
    forwards to a delegate with it). Display-only when the class already defines the current
    member or the former name is still used elsewhere in the module.
    """

    code = "E3L014"
    name = "stale-interface-override"
    severity = "warning"
    fix_safety = "safe"

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        renames: dict[str, str] = {}
        for name, spec in ctx.pack.members.items():
            current_member = ctx.contract.members.get(name)
            if current_member is None or not any(s.fatal for s in current_member.sites):
                continue
            for former in spec.former_names:
                entry = ctx.contract.members.get(former)
                if entry is None or not entry.sites:
                    renames[former] = name
        if not renames:
            return
        seen: set[tuple[str, str]] = set()
        for model in ctx.models:
            for current in ctx.index.mro(model.ref).classes:
                cls = ctx.index.class_summary(current)
                module = ctx.index.module(current.module)
                if cls is None or module is None:
                    continue
                for former, successor in renames.items():
                    fn = cls.methods.get(former)
                    if fn is None or (str(current), former) in seen:
                        continue
                    seen.add((str(current), former))
                    own = successor in cls.methods
                    tail = (
                        f"`{cls.name}` defines `{successor}` too"
                        if own
                        else f"rename it to `{successor}`"
                    )
                    yield Finding(
                        code=self.code,
                        rule=self.name,
                        severity=self.severity,
                        path=module.path,
                        line=fn.lineno,
                        column=fn.col + 1,
                        class_name=cls.name,
                        qualname=str(current),
                        method=former,
                        message=(
                            f"`{cls.name}.{former}` is never called: this engine version calls `{successor}` "
                            f"instead; dead code ({tail})"
                        ),
                        related=ctx.related_for([s for s in ctx.contract.members[successor].sites if s.fatal]),
                        data={"former": former, "successor": successor},
                        variant=model.variant if current == model.ref else None,
                    )


def _choice_phrases(ctx: CheckContext, state: MemberState, member: str, them: str) -> str:
    """Each class ``__init__`` may pick, and how it stands with the member: ``A` has it`,
    ``B` lacks it (its `self.llm`, `LlamaForCausalLM`, has it)``."""
    it = them
    parts = []
    for choice in state.choices:
        if choice not in state.lacking:
            parts.append(f"`{choice.qualname}` has {it}")
            continue
        inner = ctx.state(choice, member)
        if inner.status == "delegation-gap" and inner.lookup.status == "missing" and inner.inner_class is not None:
            parts.append(f"`{choice.qualname}` lacks {it} (its `self.{inner.inner_attr}`, `{inner.inner_class.qualname}`, has {it})")
        elif inner.status == "delegation-gap" and inner.inner_class is not None:
            parts.append(f"`{choice.qualname}` forwards {it} to `self.{inner.inner_attr}` (`{inner.inner_class.qualname}`), which lacks {it}")
        else:
            parts.append(f"`{choice.qualname}` lacks {it}")
    return ", ".join(parts)


def _delegation_effect(ctx: CheckContext, names: list[str], sites: list[ContractSite], state: MemberState, first: str) -> Effect:
    """A wrapper that lacks the member meets the engine's guard (a refusal where it has one), and
    so does one whose ``__getattr__`` forwards to a class without it (``hasattr`` is false: the
    forward raises ``AttributeError``); a wrapper that has it and forwards to a class without it
    passes every guard and crashes inside its own method (``AttributeError``). Where ``__init__``
    picks the class by config, the choices that lack it decide: they fail as it does."""
    if state.lookup.status == "missing":
        return ctx.gap_effect(names, sites, reason=f"does not delegate `{first}` to `self.{state.inner_attr}`", code=WrapperDelegationGap.code)
    if state.lookup.kind == "getattr":
        which = _lacking_phrase(state)
        return ctx.gap_effect(names, sites, reason=f"`__getattr__` forwards `{first}` to `self.{state.inner_attr}`{which}", code=WrapperDelegationGap.code)
    evidence = ctx.related_for(sites[:1])[0] if sites else None
    which = _lacking_phrase(state)
    return Effect(CRASH, _stage(ctx, first), evidence, reason=f"`{first}` forwards to `self.{state.inner_attr}`{which}", code=WrapperDelegationGap.code)


def _lacking_phrase(state: MemberState) -> str:
    """``, which lacks it`` or, for a class picked by config, which of the choices lack it."""
    if not state.choices:
        return ", which lacks it"
    lacking = _names([c.qualname for c in state.lacking])
    if len(state.lacking) == len(state.choices):
        return f", picked by config: none of its choices has it ({lacking})"
    return f", picked by config: {lacking} {'lacks' if len(state.lacking) == 1 else 'lack'} it"
