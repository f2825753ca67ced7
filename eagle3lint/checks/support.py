"""Support rules: what a model's verdict says on its own (``eagle3lint.checks.verdicts``)."""

from __future__ import annotations

from collections.abc import Iterable

from eagle3lint.checks.base import Rule
from eagle3lint.checks.context import CheckContext, guard_phrase
from eagle3lint.checks.verdicts import NOT_IMPLEMENTED, model_key
from eagle3lint.common.findings import Finding
from eagle3lint.common.outcomes import CRASH, REFUSED, SILENT, Effect
from eagle3lint.model.contract_types import ContractSite
from eagle3lint.model.models import TARGET


class Eagle3NotImplemented(Rule):
    """
    ## What it does
    Reports, as information, a target model class with no EAGLE-3 code anywhere: neither it, its
    bases nor the inner models it holds have an EAGLE-3 member (SGLang's
    `set_eagle3_layers_to_capture`, vLLM's `SupportsEagle3` members) or the hidden-state capture
    (`capture_aux_hidden_states`/`layers_to_capture`, `aux_hidden_state_layers`). What counts as
    EAGLE-3 code is listed in the rule pack's `[verdict]` table.

    It stands for every member the class lacks: those are one cause, not an error each. Errors
    are kept for classes that have part of EAGLE-3 and would crash or capture the wrong thing.
    The message says how the engine refuses the model (a bare `AttributeError` after the
    weights load, or a clear error at start-up).

    ## Why is this bad?
    It is not a defect: the model never claimed EAGLE-3, and asking for it fails at start-up.
    Projects built for EAGLE-3 (a fork that must support it on every target) can make it an
    error: `[tool.eagle3lint.severity] E3L020 = "error"`.

    ## Example
    ```python
    class FooForCausalLM(nn.Module):   # a decoder loop, an LM head, no EAGLE-3 code
        def __init__(self, config):
            self.model = FooModel(config)
            self.lm_head = ParallelLMHead(...)
    ```

    ## Fix safety (SGLang)
    Unsafe, and only for the common shape: the setter, the capture in the decoder loop (what
    the next layer receives, proven from the decoder layer's `forward`: `hidden_states +
    residual` after pre-norm layers, `hidden_states` alone after post-norm ones), the hand-off
    to the logits processor and the embedding getter, all together. Any other shape gets no
    fix: a half implementation would turn a clear refusal into a crash. The message offers the
    fix only where the fix planner makes it (`eagle3lint fix --unsafe-fixes` shows it), and
    otherwise says why there is none.

    ## Fix safety (vLLM)
    No fix implements EAGLE-3 on vLLM; the message says so.
    """

    code = "E3L020"
    name = "eagle3-not-implemented"
    severity = "info"
    fix_safety = "unsafe"
    family = "support"
    after_verdicts = True

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        chosen = [
            model
            for model in ctx.models
            if model.kind == TARGET and getattr(ctx.verdicts.get(model_key(model)), "status", None) == NOT_IMPLEMENTED
        ]
        findings: list[Finding] = []
        for model in chosen:
            missing: list[tuple[str, list[ContractSite]]] = [
                (member.name, sites)
                for member, sites in ctx.requirements(model)
                if ctx.state(model.ref, member.name).status in ("missing", "delegation-gap")
            ]
            sites = list(dict.fromkeys(s for _, member_sites in missing for s in member_sites))
            names = [name for name, _ in missing]
            effect = ctx.gap_effect(names, sites, code=self.code) if sites else None
            if effect is not None:
                lacks = ", ".join(f"`{n}`" for n in names)
                # The lead agrees with the outcome the engine reaches first: a bare call is no refusal.
                lead = {CRASH: "a launch with EAGLE-3 crashes: ", REFUSED: "the engine refuses it: "}.get(effect.outcome, "")
                refusal = f"{lead}it lacks {lacks} ({guard_phrase(sites)}){ctx.gap_note(model, names)}"
            else:
                refusal = _launch_phrase(getattr(ctx.verdicts.get(model_key(model)), "decided", None))
            findings.append(ctx.finding(
                Eagle3NotImplemented,
                model,
                names[0] if names else "",
                f"`{model.summary.name}` does not implement EAGLE-3 (no EAGLE-3 member or hidden-state "
                f"capture in it, its bases or its inner models); {refusal}",
                sites,
                severity=self.severity,
                data={"members": names, "implement_as": "E3L001"},
                effect=effect,
            ))
        # The offer is the fix planner's own decision on these very findings: never a promise
        # that `fix` does not keep.
        refusals = ctx.implementation_refusals(findings) if findings else {}
        for finding in findings:
            why = refusals.get(id(finding))
            finding.message += f"; no automatic fix: {why}" if why else "; an unsafe fix implements it (`eagle3lint fix --unsafe-fixes` shows it)"
        return findings


_OUTCOME_PHRASES = {
    CRASH: "a launch with EAGLE-3 crashes",
    SILENT: "a launch with EAGLE-3 runs, and the drafter gets the wrong hidden states",
    REFUSED: "the engine refuses a launch with EAGLE-3",
}


def _launch_phrase(decided: Effect | None) -> str:
    """What a launch does with a model the engine asks no member of, from its verdict (another
    finding's effect, or the engine's own: a config it never admits, a fallback it takes)."""
    if decided is None or decided.outcome not in _OUTCOME_PHRASES:
        return "this engine version asks nothing of it"
    return f"the engine asks no member of it, but {_OUTCOME_PHRASES[decided.outcome]} ({decided.cause})"


class ReplacementDropsEagle3(Rule):
    """
    ## What it does
    Reports a plugin's model class (an out-of-tree package checked with the engine: a hardware
    plugin, an external model package) that replaces the engine's own class for an
    architecture, where the engine's class implements EAGLE-3 and the plugin's has no EAGLE-3
    code at all (it, its bases and its inner models).

    ## Why is this bad?
    With the plugin installed the engine builds the plugin's class for that architecture: a
    model EAGLE-3 works with upstream fails at start-up once the plugin is there
    (vllm-ascend's torchair `CustomQwen2ForCausalLM` replaces vLLM's `Qwen2ForCausalLM` and
    drops `SupportsEagle3`). It stands for the members the class lacks.

    ## Example
    ```python
    # plugin: ModelRegistry.register_model("Qwen2ForCausalLM", "my_plugin.qwen2:MyQwen2ForCausalLM")
    class MyQwen2ForCausalLM(nn.Module, SupportsPP):   # upstream's has SupportsEagle3
        ...
    ```
    Use instead: derive from the engine's class (`class MyQwen2ForCausalLM(Qwen2ForCausalLM)`),
    or implement its EAGLE-3 members.

    ## Fix safety
    Display-only: which of the engine's members apply to the plugin's class is the author's call.
    """

    code = "E3L021"
    name = "replacement-drops-eagle3"
    family = "support"
    regression = True

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        from eagle3lint.checks.verdicts import eagle3_evidence

        for model in ctx.models:
            replaced = model.replaces
            if model.kind != TARGET or replaced is None or replaced == model.ref:
                continue
            own, _ = eagle3_evidence(ctx.index, model.ref, ctx.inner_choices)
            upstream, _ = eagle3_evidence(ctx.index, replaced)
            if own or not upstream:
                continue
            missing = [
                (member.name, sites)
                for member, sites in ctx.requirements(model)
                if ctx.state(model.ref, member.name).status in ("missing", "delegation-gap")
            ]
            sites = list(dict.fromkeys(s for _, member_sites in missing for s in member_sites))
            names = [name for name, _ in missing]
            lacks = f": it lacks {', '.join(f'`{n}`' for n in names)} ({guard_phrase(sites)})" if sites else ""
            engine = ctx.index.engine.name
            yield ctx.finding(
                ReplacementDropsEagle3,
                model,
                names[0] if names else "",
                f"`{model.summary.name}` replaces {engine}'s `{replaced.qualname}` ({replaced.module}), which implements "
                f"EAGLE-3 ({upstream}), with a class that has no EAGLE-3 code: with the plugin installed, EAGLE-3 on "
                f"{', '.join(model.architectures) or 'this architecture'} stops working{lacks}",
                sites,
                data={"members": names, "replaced": str(replaced), "replaces": [[code, n] for n in names for code in ("E3L001", "E3L004")]},
                effect=ctx.gap_effect(names, sites, reason=f"replaces `{replaced.qualname}` with a class without EAGLE-3", code=self.code) if sites else None,
            )


SUPPORT_RULES: tuple[type[Rule], ...] = (Eagle3NotImplemented, ReplacementDropsEagle3)
