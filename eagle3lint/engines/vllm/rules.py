"""vLLM rules: the SupportsEagle3 protocol, the holder the setter reaches, and what it collects.

The presence rules (E3L001-E3L005) apply to vLLM too, against the members the runner calls;
these add what vLLM's protocol-and-mixin contract makes possible to get wrong. Every fact comes
from the tree in front of us (see ``eagle3lint contract``), so each release is held to its own
contract.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from eagle3lint.checks.base import Rule
from eagle3lint.checks.context import guard_phrase, severity_for
from eagle3lint.common.findings import Finding, Related
from eagle3lint.common.outcomes import (
    CRASH,
    REFUSED,
    STAGE_FORWARD,
    STAGE_RUNNER,
    UNKNOWN,
    Effect,
)
from eagle3lint.engines.vllm.collect import NO as COLLECTS_NO
from eagle3lint.engines.vllm.collect import UNKNOWN as COLLECTS_UNKNOWN
from eagle3lint.engines.vllm.collect import YES as COLLECTS_YES
from eagle3lint.engines.vllm.context import (
    NO,
    YES,
    VllmCheckContext,
    refused_phrase,
)
from eagle3lint.engines.vllm.holders import NO_INNER, NO_SETTER, RECORDED, RESOLVED
from eagle3lint.engines.vllm.load_rules import (
    DrafterLoadReadsConfig,
    DrafterLoadReadsTarget,
    ModelTypeNotAllowed,
)
from eagle3lint.engines.vllm.rule_base import (
    VllmRule,
    _check_related,
    _holder_names,
    _lacks_asserted_mixin,
    _refusal_evidence,
    _setter_sites,
    _setter_stage,
    _targets,
    _walk_related,
)
from eagle3lint.model.models import TARGET, ModelClass


class HolderLacksMixin(VllmRule):
    """
    ## What it does
    Reports a model that declares `SupportsEagle3` and relies on the protocol's default
    `set_aux_hidden_state_layers`, when the object that default reaches (the *holder*: the
    decoder, found through `get_language_model()` / `language_model`, then `.model`) does not
    inherit `EagleModelMixin`, or does not exist where the default requires it.

    The walk and the assertion are read from the protocol's own default body, so the rule follows
    the vLLM release in front of it; releases whose default bodies assert nothing are not checked.

    ## Why is this bad?
    `supports_eagle3()` is true, so the runner goes ahead and calls the setter, whose default
    body asserts `isinstance(holder, EagleModelMixin)`: start-up dies on an `AssertionError`
    after the weights load.

    ## Example
    ```python
    class FooModel(nn.Module):  # the decoder: no EagleModelMixin
        ...
    class FooForCausalLM(nn.Module, SupportsEagle3):
        def __init__(self, *, vllm_config, prefix=""):
            self.model = FooModel(vllm_config=vllm_config)
    ```
    Use instead: `class FooModel(nn.Module, EagleModelMixin)`, collecting with
    `self._maybe_add_hidden_state(...)` in its decoder loop.

    ## Fix safety
    Unsafe: `EagleModelMixin` is added to the decoder's bases (with its import) and, when its
    loop has the common shape (`for idx, layer in enumerate(islice(self.layers, ...))`,
    `hidden_states, residual = layer(...)`, `return hidden_states`), the
    `_maybe_add_hidden_state` calls are added to it, as in vLLM's own Llama (`forward`
    changes). Any other loop shape is display-only.
    """

    code = "E3L010"
    name = "holder-lacks-mixin"
    fix_safety = "unsafe"

    def check_vllm(self, ctx: VllmCheckContext) -> Iterable[Finding]:
        for model in _targets(ctx):
            if ctx.protocol is None or ctx.declared(model.ref).value != YES:
                continue
            holder = ctx.holder(model.ref)
            if not holder.asserted_mixin:
                continue
            related = _walk_related(ctx) + ctx.related_for(_setter_sites(ctx))
            if holder.status == NO_INNER and holder.reached is not None:
                yield self._finding(
                    ctx, model,
                    f"`{model.summary.name}` declares {ctx.protocol.name}, but {holder.via} of "
                    f"`{ctx.vindex.vpack.setter}` needs `{holder.path}` to have `.model` and "
                    f"`{holder.reached.qualname}` has none: start-up fails on the assertion",
                    related, {"path": holder.path, "holder": str(holder.reached), "mixin": holder.asserted_mixin},
                )
                continue
            if holder.status != RESOLVED:
                continue
            for cls in holder.classes:
                if ctx.inherits_mixin(cls) != NO:
                    continue
                # One cause: a decoder without the mixin does not collect either (E3L011 would
                # say so again); the fix adds both.
                either = " (and its `forward` never collects aux hidden states)" if ctx.holder_collects(holder, cls).value == COLLECTS_NO else ""
                picked = f"; `__init__` picks it by config among {_holder_names(holder)}" if len(holder.classes) > 1 else ""
                yield self._finding(
                    ctx, model,
                    f"`{model.summary.name}` declares {ctx.protocol.name}, but {holder.via} of "
                    f"`{ctx.vindex.vpack.setter}` reaches `{holder.path}` (`{cls.qualname}`{picked}), which does "
                    f"not inherit {holder.asserted_mixin}{either}: start-up fails on the assertion",
                    related, {"path": holder.path, "holder": str(cls), "mixin": holder.asserted_mixin},
                )

    def _finding(self, ctx: VllmCheckContext, model: ModelClass, message: str, related: list[Related], data: dict[str, object]) -> Finding:
        setter = ctx.vindex.vpack.setter
        effect = Effect(
            CRASH, _setter_stage(ctx), related[0] if related else None,
            reason=f"the default `{setter}` asserts {data.get('mixin')} on `{data.get('path')}`", code=self.code,
        )
        finding = ctx.finding(HolderLacksMixin, model, setter, message, [], data=data, effect=effect)
        finding.related = related
        return finding


class ForwardNeverCollects(VllmRule):
    """
    ## What it does
    Reports a model the runner will ask for EAGLE-3 hidden states (it declares `SupportsEagle3`,
    or, in trees without the protocol, implements the setter) whose holder's `forward` never
    collects them: it neither reads the recorded layer ids (`self.aux_hidden_state_layers`) nor
    calls the mixin's collector (`_maybe_add_hidden_state`), directly or through a helper method
    or a sub-module it calls. Where the setter instead registers a library's recorder per layer
    (vLLM's Transformers modeling backend: `self.model._can_record_outputs[key] =
    OutputRecorder(...)` and a switch per layer), the class's own `forward` must hand the switches
    to the recording model and return the recorded states; one that neither does nor returns
    `super().forward(...)` as it is never collects either.

    ## Why is this bad?
    With EAGLE-3 on, the runner unpacks the model output as `(hidden_states, aux_hidden_states)`.
    A forward that returns a plain tensor makes that unpacking fail on the first step (or,
    worse, silently split the batch dimension).

    ## Example
    ```python
    class FooModel(nn.Module, EagleModelMixin):
        def forward(self, input_ids, positions):
            for layer in self.layers:
                hidden_states, residual = layer(positions, hidden_states, residual)
            return self.norm(hidden_states)  # never collects
    ```
    Use instead: collect in the loop with `aux = self._maybe_add_hidden_state(aux, idx,
    hidden_states, residual)` and `return hidden_states, aux` when `aux` is not empty.

    ## Fix safety
    Unsafe, for a decoder loop of the common shape (see `holder-lacks-mixin`): the
    `_maybe_add_hidden_state` calls before, in and after the loop (and the mixin when the
    decoder lacks it). Any other shape, or a tree whose mixin has no collector, is display-only.
    """

    code = "E3L011"
    name = "forward-never-collects"
    fix_safety = "unsafe"

    def check_vllm(self, ctx: VllmCheckContext) -> Iterable[Finding]:
        for model in _targets(ctx):
            if not ctx.claims_support(model.ref):
                continue
            holder = ctx.holder(model.ref)
            if holder.status != RESOLVED:
                continue
            for cls in holder.classes:
                verdict = ctx.holder_collects(holder, cls)
                if verdict.value != COLLECTS_NO or _lacks_asserted_mixin(ctx, model, holder, cls):
                    continue
                forward = ctx.index.lookup(cls, "forward")
                owner = forward.owner or cls
                owner_module = ctx.index.module(owner.module)
                fn = forward.function
                if holder.kind == RECORDED and holder.recording is not None:
                    # The layers are recorded by the library; only the class's forward can hand
                    # the runner what was recorded.
                    recorded = (
                        f"`{model.summary.name}` registers {holder.recording.describe()} for the EAGLE-3 layers "
                        f"(via {holder.via}), but `{owner.qualname}.forward` never returns what it records: "
                    )
                else:
                    recorded = (
                        f"`{model.summary.name}` records the EAGLE-3 layers in `{holder.path}` (`{cls.qualname}`, "
                        f"via {holder.via}), but `{owner.qualname}.forward` never collects aux hidden states: "
                    )
                yield ctx.finding(
                    ForwardNeverCollects,
                    model,
                    ctx.vindex.vpack.setter,
                    recorded + "the runner fails unpacking `(hidden_states, aux_hidden_states)`",
                    _setter_sites(ctx),
                    path=owner_module.path if owner_module and fn else None,
                    line=fn.lineno if fn else None,
                    column=fn.col + 1 if fn else None,
                    data={"holder": str(cls), "path": holder.path},
                    effect=Effect(
                        CRASH, STAGE_FORWARD,
                        Related(owner_module.path, fn.lineno, f"`{owner.qualname}.forward` returns no aux hidden states") if owner_module and fn else None,
                        reason=f"`{owner.qualname}.forward` never collects aux hidden states", code=self.code,
                    ),
                )


class ProtocolNotDeclared(VllmRule):
    """
    ## What it does
    Reports a model that implements the EAGLE-3 setter itself but for which
    `supports_eagle3()` is false: it lacks a protocol member, typically the
    `supports_eagle3` ClassVar flag that only inheriting `SupportsEagle3` provides.

    ## Why is this bad?
    The runner checks `supports_eagle3(model)` before calling anything and raises
    `RuntimeError: Model does not support EAGLE3 interface` when it is false. The methods are
    never called: the work is there, the model still cannot run EAGLE-3.

    ## Example
    ```python
    class FooForCausalLM(nn.Module, SupportsPP):  # SupportsEagle3 missing
        def set_aux_hidden_state_layers(self, layers):
            self.model.aux_hidden_state_layers = layers
    ```
    Use instead: `class FooForCausalLM(nn.Module, SupportsPP, SupportsEagle3)`.

    ## Fix safety
    Unsafe: `SupportsEagle3` is added to the bases (with its import), after which the runner
    calls the class's own methods, which nothing proved right.
    """

    code = "E3L012"
    name = "protocol-not-declared"
    fix_safety = "unsafe"

    def check_vllm(self, ctx: VllmCheckContext) -> Iterable[Finding]:
        proto = ctx.protocol
        if proto is None:
            return
        for model in _targets(ctx):
            declared = ctx.declared(model.ref)
            if declared.value != NO or not ctx.implements_setter(model.ref):
                continue
            finding = ctx.finding(
                ProtocolNotDeclared,
                model,
                ctx.vindex.vpack.setter,
                f"`{model.summary.name}` implements `{ctx.vindex.vpack.setter}` but does not inherit "
                f"{proto.name} (it lacks {', '.join(f'`{m}`' for m in declared.missing)}): "
                f"`{proto.check_function or 'the check'}()` is false and the runner raises at start-up",
                [],
                data={"protocol": proto.name, "missing": declared.missing},
                effect=Effect(REFUSED, STAGE_RUNNER, _refusal_evidence(ctx), reason=f"does not declare {proto.name}", code=self.code),
            )
            finding.related = _check_related(ctx)
            yield finding


class UndeclaredEagle3Support(VllmRule):
    """
    ## What it does
    Reports a model that does not declare `SupportsEagle3` although the protocol's default
    setter would work for it: the object the default reaches already inherits the mixin the
    default asserts and its `forward` already collects aux hidden states. The model is one line
    away from EAGLE-3 support.

    The finding stands for the protocol members the engine needs and the class lacks (which
    the protocol's defaults supply): they are not reported again one by one (E3L001, E3L004),
    and it takes their severity (an error where the runner refuses the model at start-up).
    With no such member it is information. Suppressing it brings the member findings back;
    suppressing every one of those suppresses it too.

    ## Why is this bad?
    The runner refuses EAGLE-3 for the model with a clear message. But the decoder already does
    the work (often shared with a sibling model that does declare the protocol), so a deployer
    asking for EAGLE-3 is turned away for want of one base class.

    ## Example
    ```python
    class FooForCausalLM(nn.Module, SupportsPP):  # FooModel collects; only the base is missing
        ...
    ```
    Use instead: `class FooForCausalLM(nn.Module, SupportsPP, SupportsEagle3)`, then verify
    acceptance with a drafter trained for the model.

    ## Fix safety
    Safe: `SupportsEagle3` is added to the bases (with its import from the module the tree
    defines it in); the analysis proved that the decoder the default setter reaches inherits
    the mixin and collects. Whether a drafter trained for the model is accepted is for
    `eagle3lint verify` to confirm.
    """

    code = "E3L013"
    name = "undeclared-eagle3-support"
    severity = "error"
    fix_safety = "safe"

    def check_vllm(self, ctx: VllmCheckContext) -> Iterable[Finding]:
        proto = ctx.protocol
        vpack = ctx.vindex.vpack
        if proto is None or vpack.setter not in proto.walks:
            return
        for model in _targets(ctx):
            if ctx.declared(model.ref).value != NO or ctx.index.lookup(model.ref, vpack.setter).status != "missing":
                continue
            holder = ctx.holder(model.ref, assume_default=True)
            if holder.status != RESOLVED or not holder.classes:
                continue
            if holder.asserted_mixin and any(ctx.inherits_mixin(c) != YES for c in holder.classes):
                continue
            getter_walk = next((proto.walks[g] for g in vpack.getter_names if g in proto.walks), None)
            if getter_walk and any(
                ctx.index.lookup(c, attr).status != "found" for c in holder.classes for attr in getter_walk.required_attributes
            ):
                continue
            verdicts = [ctx.holder_collects(holder, c) for c in holder.classes]
            if any(v.value != COLLECTS_YES for v in verdicts):
                continue
            # The members the engine needs and the class lacks are what declaring the protocol
            # supplies (its defaults): one finding, with their severity, says it all.
            provided = {m.name for m in proto.members}
            gaps = [
                (member.name, sites)
                for member, sites in ctx.requirements(model)
                if member.name in provided and ctx.state(model.ref, member.name).status in ("missing", "delegation-gap")
            ]
            sites = list(dict.fromkeys(s for _, member_sites in gaps for s in member_sites))
            ready = (
                f"`{holder.path}` ({_holder_names(holder)}) already collects aux hidden states in "
                f"`{verdicts[0].where}`; add {proto.name} to its bases"
            )
            judgement = ctx.type_judgement(model)
            allow = ctx.vllm.allow_list if ctx.vllm else None
            # The allow-list refuses every checkpoint first: the base class alone changes nothing.
            listed_first = judgement is not None and judgement.all_refused and allow is not None
            if judgement is not None and allow is not None and listed_first:
                away = (
                    f"declaring {proto.name} is not enough: this vLLM's allow-list ({allow.path}:{allow.line}) "
                    f"refuses its checkpoints first ({refused_phrase(judgement)}), so the type must be added to "
                    f"the list too (E3L017). {ready[0].upper()}{ready[1:]}"
                )
            else:
                away = f"it is one line away from EAGLE-3 support: {ready}"
            if gaps:
                message = (
                    f"`{model.summary.name}` does not declare {proto.name}, so it lacks "
                    f"{', '.join(f'`{name}`' for name, _ in gaps)} ({guard_phrase(sites)}); {away}"
                )
            elif listed_first:
                message = f"`{model.summary.name}`: {away}"
            else:
                message = f"`{model.summary.name}` is one line away from EAGLE-3 support: {ready}"
            finding = ctx.finding(
                UndeclaredEagle3Support,
                model,
                proto.name,
                message,
                sites,
                severity=severity_for(sites) if sites else "info",
                effect=Effect(
                    REFUSED, STAGE_RUNNER, _refusal_evidence(ctx) or next(iter(ctx.related_for(sites[:1])), None),
                    reason=f"does not declare {proto.name}" + ("" if listed_first else " (one line away)"), code=self.code,
                ) if sites else None,
                data={
                    "protocol": proto.name,
                    "holder": str(holder.classes[0]),
                    "path": holder.path,
                    "replaces": [[code, name] for name, _ in gaps for code in ("E3L001", "E3L004")],
                },
                model_note=not listed_first,  # listed first, it says what the allow-list note would
            )
            yield finding


class PlatformVariantsDisagree(VllmRule):
    """
    ## What it does
    Reports an architecture whose platform variants (the classes a `vllm/models/<name>/`
    package picks for NVIDIA, AMD, XPU or CPU) disagree on EAGLE-3 support: some declare
    `SupportsEagle3`, others do not. The finding is on each variant that lacks it.

    ## Why is this bad?
    The same checkpoint and drafter work on one platform and are refused with a `RuntimeError`
    on another: a deployment tested on one GPU vendor breaks when moved to the other.

    ## Example
    ```python
    # vllm/models/foo/__init__.py
    if current_platform.is_rocm():
        from .amd.model import FooForCausalLM      # no SupportsEagle3
    else:
        from .nvidia.model import FooForCausalLM   # SupportsEagle3
    ```

    ## Fix safety
    Display-only.
    """

    code = "E3L015"
    name = "platform-variants-disagree"
    severity = "warning"

    def check_vllm(self, ctx: VllmCheckContext) -> Iterable[Finding]:
        if ctx.protocol is None:
            return
        by_arch: dict[str, list[ModelClass]] = defaultdict(list)
        for model in ctx.all_models:
            if model.kind == TARGET:
                for architecture in model.architectures:
                    by_arch[architecture].append(model)
        checked = {id(m) for m in ctx.models}
        reported: set[int] = set()
        for architecture, variants in sorted(by_arch.items()):
            if len(variants) < 2 or not any(v.variant for v in variants):
                continue
            states = {id(v): ctx.declared(v.ref).value for v in variants}
            supporting = [v for v in variants if states[id(v)] == YES]
            if not supporting:
                continue
            for variant in variants:
                if states[id(variant)] != NO or id(variant) not in checked or id(variant) in reported:
                    continue
                reported.add(id(variant))
                names = ", ".join(sorted(v.variant or "default" for v in supporting))
                finding = ctx.finding(
                    PlatformVariantsDisagree,
                    variant,
                    ctx.protocol.name,
                    f"`{architecture}` supports EAGLE-3 on {names} but not on "
                    f"{variant.variant or 'default'} (`{variant.ref}` does not inherit {ctx.protocol.name})",
                    [],
                    data={"architecture": architecture, "supporting": [str(v.ref) for v in supporting]},
                    effect=Effect(REFUSED, STAGE_RUNNER, _refusal_evidence(ctx), reason=f"this platform's variant does not declare {ctx.protocol.name}", code=self.code),
                )
                root_module = ctx.index.module(supporting[0].ref.module)
                if root_module is not None:
                    finding.related = [Related(root_module.path, supporting[0].summary.lineno, f"{supporting[0].variant or 'default'} variant declares it")]
                yield finding


class HolderNotProvable(VllmRule):
    """
    ## What it does
    Reports, as information, a model the runner will ask for EAGLE-3 hidden states when
    eagle3lint cannot prove statically which object records the layers or whether it collects:
    typically an inner model chosen from the HF config at run time
    (`init_vllm_registered_model(...)` without literal `architectures`), a `get_language_model()`
    that returns a computed module, or a base class outside the engine; or a setter that
    registers a library's recorder per layer but names the recorded layers other than this
    engine's ids do, calls a method that may raise before it records (vLLM 0.18's version
    check), or a `forward` that takes apart what the recording `forward` returns.

    ## Why is this bad?
    It may be fine. It is reported so that "no errors" is not mistaken for "proven": these are
    the models to verify on a GPU (`eagle3lint verify`) before relying on EAGLE-3.

    ## Example
    ```python
    self.language_model = init_vllm_registered_model(
        vllm_config=vllm_config, hf_config=config.text_config, prefix="language_model")
    ```

    ## Fix safety
    Display-only.
    """

    code = "E3L016"
    name = "holder-not-provable"
    severity = "info"
    unprovable = True

    def check_vllm(self, ctx: VllmCheckContext) -> Iterable[Finding]:
        for model in _targets(ctx):
            if not ctx.claims_support(model.ref):
                continue
            holder = ctx.holder(model.ref)
            reason = ""
            if holder.status == RESOLVED:
                unknown = [v for v in (ctx.holder_collects(holder, c) for c in holder.classes) if v.value == COLLECTS_UNKNOWN]
                if not unknown:
                    continue
                if holder.kind == RECORDED:
                    reason = f"whether `{holder.classes[0].qualname}` returns what its recorders record: {unknown[0].where}"
                else:
                    reason = f"whether `{holder.path}` collects aux hidden states: {unknown[0].where}"
            elif holder.status not in (NO_INNER, NO_SETTER):
                reason = f"what `{ctx.vindex.vpack.setter}` reaches ({holder.via or 'setter'}"
                reason += f", at `{holder.path}`" if holder.path != "self" else ""
                reason += f"): {holder.reason}"
            else:
                continue
            yield ctx.finding(
                HolderNotProvable,
                model,
                ctx.vindex.vpack.setter,
                f"`{model.summary.name}` cannot be proven statically; eagle3lint cannot tell {reason}",
                [],
                data={"path": holder.path, "reason": holder.reason},
                effect=Effect(UNKNOWN, _setter_stage(ctx), None, reason=f"eagle3lint cannot tell {reason}", code=self.code),
            )



VLLM_RULES: tuple[type[Rule], ...] = (
    HolderLacksMixin,
    ForwardNeverCollects,
    ProtocolNotDeclared,
    UndeclaredEagle3Support,
    PlatformVariantsDisagree,
    HolderNotProvable,
    ModelTypeNotAllowed,
    DrafterLoadReadsTarget,
    DrafterLoadReadsConfig,
)
