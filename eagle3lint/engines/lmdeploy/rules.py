"""LMDeploy's rules: the config builders of a target's checkpoints, and the captured hidden
states on their way from the decoder to the drafter.

Each finding carries what the engine does (its effect): a builder's refusal acts before the
weights load, a target the builders never opt in crashes at the draft's warm-up, and every gap
in the capture's way is silent: the proposer keeps the last hidden state when the target's output
lacks ``aux_hidden_states`` (``pytorch/spec_decode/base.py``), and the EAGLE-3 draft applies its
``fc`` only when the width differs from its embedding's, so it runs, with acceptance near 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from eagle3lint.checks.base import Rule
from eagle3lint.checks.context import CheckContext
from eagle3lint.common.findings import Finding, Related
from eagle3lint.common.outcomes import CRASH, REFUSED, SILENT, STAGE_LAUNCH, Effect
from eagle3lint.engines.lmdeploy.builders import NEVER, SET
from eagle3lint.engines.lmdeploy.checkpoints import Family
from eagle3lint.engines.lmdeploy.context import (
    STAGE_SERVING,
    STAGE_WARMUP,
    LmdeployContext,
    ModelAnalysis,
)
from eagle3lint.engines.lmdeploy.facts import EMPTY, PROVIDED
from eagle3lint.engines.lmdeploy.flow import CAPTURES, CONFIG, CONTEXT, DROPS, LOSES, NONE, PASSES
from eagle3lint.engines.lmdeploy.pack import lmdeploy_pack
from eagle3lint.model.models import TARGET, ModelClass


class LmdeployRule(Rule):
    engines = ("lmdeploy",)
    family = "capture"

    def check(self, ctx: CheckContext) -> Iterable[Finding]:
        if not isinstance(ctx, LmdeployContext) or ctx.lcontract is None:
            return
        for model in sorted(ctx.models, key=lambda m: (m.ref.module, m.summary.lineno)):
            if model.kind != TARGET:
                continue
            analysis = ctx.analysis(model)
            if analysis is not None:
                yield from self.check_model(ctx, model, analysis)

    def check_model(self, ctx: LmdeployContext, model: ModelClass, analysis: ModelAnalysis) -> Iterator[Finding]:
        raise NotImplementedError


def _name(model: ModelClass) -> str:
    return model.summary.name


def _working(family: Family) -> bool:
    """The builder lets the launch go on (it neither refuses nor leaves the target out)."""
    return family.builder.refusal is None


class SpecMethodRefused(LmdeployRule):
    """
    ## What it does
    Reports a target whose checkpoints' config builder (`pytorch/configurations/`) refuses the
    EAGLE-3 method when it builds the target's config: `assert spec_method == 'deepseek_mtp'`
    (an `AssertionError`), `raise ValueError('Unsupported speculative method ...')` (the engine's
    own refusal). The builder is the one LMDeploy picks for the checkpoint (`model_type`,
    `architectures[0]`); a class serving several kinds of checkpoint gets one finding per builder.

    ## Why is this bad?
    `--speculative-algorithm eagle3` stops before any weights load: with a bare assertion that
    says nothing of EAGLE-3 (a crash), or with the engine's message (a refusal, a warning).
    Capture code in the model does not help while its builder refuses the method.

    ## Example
    ```python
    class DeepseekV2ModelConfigBuilder(AutoModelConfigBuilder):
        @classmethod
        def build(cls, hf_config, model_path=None, is_draft_model=False, spec_method=None, **kwargs):
            if spec_method is not None:
                assert spec_method == 'deepseek_mtp'
    ```

    ## Fix safety
    Display-only: admitting the method means the builder must also name the capture layers and
    the model capture them; the finding says which builder and line.
    """

    code = "E3L030"
    name = "spec-method-refused"
    severity = "error"
    family = "support"

    def check_model(self, ctx: LmdeployContext, model: ModelClass, analysis: ModelAnalysis) -> Iterator[Finding]:
        for family in analysis.families:
            refusal = family.builder.refusal
            if refusal is None:
                continue
            if refusal.kind == "assert":
                does = f"fails `{refusal.message}`" if refusal.message.startswith("assert ") else f"fails an assertion ('{refusal.message}')"
                what = "an AssertionError before the weights load (a crash that says nothing of EAGLE-3)"
                outcome = CRASH
            else:
                does = f"raises {refusal.exception}('{refusal.message}')"
                what = "the engine refuses the launch before the weights load"
                outcome = REFUSED
            where = f"{refusal.place.path}:{refusal.place.line}"
            via = f" (in {refusal.builder})" if refusal.builder and refusal.builder != family.builder.name else ""
            message = (
                f"`{_name(model)}`: LMDeploy builds the config of {family.describe()} with {family.builder.name}, which "
                f"{does}{via} for --speculative-algorithm {ctx.lcontract.method if ctx.lcontract else 'eagle3'} ({where}): {what}"
            )
            evidence = ctx.at(refusal.place, f"{family.builder.name}: {refusal.message}")
            effect = Effect(outcome, STAGE_LAUNCH, evidence, reason=f"{family.builder.name} refuses the method ({where})", code=self.code)
            yield ctx.finding(SpecMethodRefused, model, family.builder.name, message, [], effect=effect, data={"builder": family.builder.name})


class SpeculationNotEnabled(LmdeployRule):
    """
    ## What it does
    Reports a target whose checkpoints' config builder never opts it into speculative decoding
    (`cfg.model_paradigm = 'ar_spec'` when a speculative method is set), where the release's
    plain strategies cannot run beside the draft: LMDeploy then builds the non-speculative
    strategies, and the draft's warm-up calls their `make_dummy` with `target_hidden_size`,
    which it does not take.

    ## Why is this bad?
    The launch crashes with a `TypeError` at start-up, after the target's weights load, whatever
    the model itself implements. For a class with no EAGLE-3 code at all, E3L020 stands for it
    (the outcome still says so).

    ## Example
    ```python
    class DefaultModelConfigBuilder(AutoModelConfigBuilder):
        @classmethod
        def build(cls, hf_config, model_path=None, **kwargs):
            return ModelConfig(...)   # model_paradigm stays 'ar'
    ```

    ## Fix safety
    Display-only: the builder for these checkpoints needs `model_paradigm = 'ar_spec'` and the
    capture layers for EAGLE-3 (the `config-builder` template shows the lines).
    """

    code = "E3L031"
    name = "speculation-not-enabled"
    severity = "error"
    family = "support"
    member_gap = True

    def check_model(self, ctx: LmdeployContext, model: ModelClass, analysis: ModelAnalysis) -> Iterator[Finding]:
        contract = ctx.lcontract
        if contract is None or contract.paradigm_crash is None:
            return
        for family in analysis.families:
            if not _working(family) or contract.opted_in(family.builder) != NEVER:
                continue
            builder = family.builder
            message = (
                f"`{_name(model)}`: no config builder opts {family.describe()} into speculative decoding "
                f"({builder.name}, {builder.place.path}:{builder.place.line}, never sets "
                f"`{lmdeploy_pack(ctx.pack).paradigm_attribute} = '{lmdeploy_pack(ctx.pack).paradigm_value}'`): {contract.paradigm_why}"
            )
            evidence = ctx.at(contract.paradigm_crash, "the draft's warm-up calls the target strategy's make_dummy with arguments only the speculative one takes")
            effect = Effect(CRASH, STAGE_WARMUP, evidence, reason=f"{builder.name} never opts it into speculative decoding", code=self.code)
            yield ctx.finding(
                SpeculationNotEnabled, model, builder.name, message, [], effect=effect,
                data={"builder": builder.name, "builder_path": builder.place.path, "builder_line": builder.place.line},
            )


class AuxLayersNeverRead(LmdeployRule):
    """
    ## What it does
    Reports a target whose checkpoints' config builder names capture layers for EAGLE-3
    (`hf_config.aux_hidden_state_layers = (2, n // 2, n - 3)`) while no decoder under the class
    reads them: no layer loop captures, nothing returns `aux_hidden_states`.

    ## Why is this bad?
    The launch goes on and the drafter reads the target's last hidden state instead of the three
    captured ones: the EAGLE-3 draft skips its `fc` (same width), runs, and acceptance collapses,
    with no error. Kimi-K2 checkpoints on `DeepseekV2ForCausalLM` in LMDeploy 0.17-0.18 are
    such a case: the Kimi-K2 builder sets the layers, the DeepSeek model never reads them.

    ## Example
    ```python
    # configurations/kimi_k2.py
    hf_config.aux_hidden_state_layers = (2, cfg.num_layers // 2, cfg.num_layers - 3)
    # models/deepseek_v2.py: DeepseekV2Model.forward has no capture in its loop
    ```

    ## Fix safety
    Unsafe where the decoder loop has the common shape (the `decoder-capture` template: the
    read in `__init__`, the capture in the loop, the dict return); display-only otherwise.
    """

    code = "E3L108"
    name = "aux-layers-never-read"
    severity = "error"

    def check_model(self, ctx: LmdeployContext, model: ModelClass, analysis: ModelAnalysis) -> Iterator[Finding]:
        if analysis.flow.status != NONE:
            return
        for family in analysis.families:
            builder = family.builder
            if not _working(family) or builder.layers != SET or ctx.lcontract is None or ctx.lcontract.opted_in(builder) == NEVER:
                continue
            place = builder.layers_place or builder.place
            message = (
                f"`{_name(model)}`: {builder.name} names EAGLE-3 capture layers for {family.describe()} "
                f"({place.path}:{place.line}), but no decoder under `{_name(model)}` reads them ({analysis.flow.why}): "
                "the drafter reads the last hidden state (acceptance near 1, no error)"
            )
            related = [ctx.at(place, f"{builder.name} sets the capture layers")]
            evidence = ctx.fallback()
            effect = Effect(SILENT, STAGE_SERVING, evidence, reason="capture layers set but never read", code=self.code)
            yield _with(ctx.finding(AuxLayersNeverRead, model, builder.name, message, [], effect=effect, data={"builder": builder.name}), related)


def _with(finding: Finding, related: list[Related]) -> Finding:
    """The finding with these places first among its related ones."""
    finding.related = [*related, *finding.related]
    return finding


class AuxLayersNotProvided(LmdeployRule):
    """
    ## What it does
    Reports a target whose decoder captures in its layer loop, but reads its capture layers from
    a place nothing fills for EAGLE-3: a config attribute (`aux_hidden_state_layers`) that the
    config builder of its checkpoints never sets, or the build context
    (`spec_model_ctx.target_aux_hidden_state_layers`), which the release fills only for another
    method (LMDeploy 0.18.0: `SpecDecodeConfig.from_config` sets `target_layer_ids` for DFlash).

    ## Why is this bad?
    The layer set is empty, so the loop captures nothing and the output carries no
    `aux_hidden_states`: the drafter reads the last hidden state, with no error.

    ## Example
    ```python
    self.aux_hidden_state_layers = get_build_model_context().spec_model_ctx.target_aux_hidden_state_layers
    # config.py: target_layer_ids is set only under `if method == 'dflash':`
    ```

    ## Fix safety
    Display-only where the layers come from the build context (the engine must fill it for
    EAGLE-3); where they come from the config, the builder's line is the `config-builder`
    template (display-only: a builder serves every model of its checkpoints).
    """

    code = "E3L112"
    name = "aux-layers-not-provided"
    severity = "error"

    def check_model(self, ctx: LmdeployContext, model: ModelClass, analysis: ModelAnalysis) -> Iterator[Finding]:
        flow, contract = analysis.flow, ctx.lcontract
        if flow.status not in (CAPTURES, PASSES) or flow.source is None or contract is None:
            return
        source = flow.source
        decoder = flow.decoder.qualname if flow.decoder else _name(model)
        read = [ctx.at_spot(source.spot, f"{decoder} reads its capture layers here")] if source.spot else []
        if source.kind == CONTEXT:
            if contract.context.state != EMPTY:
                return
            where = contract.context.place
            message = (
                f"`{_name(model)}`: `{decoder}` captures the layers of the build context "
                f"(`{lmdeploy_pack(ctx.pack).context_attribute}`), which this release fills only for another method "
                f"({contract.context.why}{f'; {where.path}:{where.line}' if where else ''}): it captures nothing for "
                f"{contract.method}, and the drafter reads the last hidden state"
            )
            evidence = ctx.at(where, contract.context.why) if where else ctx.fallback()
            effect = Effect(SILENT, STAGE_SERVING, evidence, reason=f"capture layers come from the build context, empty for {contract.method}", code=self.code)
            yield _with(ctx.finding(AuxLayersNotProvided, model, source.attribute, message, [], effect=effect, data={"source": CONTEXT}), read)
            return
        if source.kind != CONFIG:
            return
        for family in analysis.families:
            builder = family.builder
            if not _working(family) or builder.layers != NEVER:
                continue
            message = (
                f"`{_name(model)}`: `{decoder}` captures the layers named by the config's "
                f"`{lmdeploy_pack(ctx.pack).layers_attribute}`, which {builder.name} ({builder.place.path}:{builder.place.line}) "
                f"never sets for {family.describe()}: it captures nothing, and the drafter reads the last hidden state"
            )
            effect = Effect(SILENT, STAGE_SERVING, ctx.fallback(), reason=f"{builder.name} names no capture layers", code=self.code)
            finding = ctx.finding(
                AuxLayersNotProvided, model, builder.name, message, [], effect=effect,
                data={"source": CONFIG, "builder": builder.name, "builder_path": builder.place.path, "builder_line": builder.place.line},
            )
            yield _with(finding, read)


class AuxNotReturned(LmdeployRule):
    """
    ## What it does
    Reports a causal LM whose decoder captures the EAGLE-3 hidden states and returns them as
    `aux_hidden_states`, while its own `forward` does not pass them on: it returns something
    else than the decoder's output (a tensor taken from it) and sets no `aux_hidden_states` key.

    ## Why is this bad?
    The proposer finds no `aux_hidden_states` in the target's output and keeps the last hidden
    state: the drafter reads the wrong states, with no error.

    ## Example
    ```python
    def forward(self, input_ids, ...):
        outputs = self.model(input_ids, ...)
        return outputs['hidden_states']
    ```

    ## Fix safety
    Unsafe (`forward` changes): where the forward returns the decoder's hidden states from its
    output, it returns the whole output instead (the `dict-return` template); display-only
    otherwise.
    """

    code = "E3L109"
    name = "aux-not-returned"
    severity = "error"

    def check_model(self, ctx: LmdeployContext, model: ModelClass, analysis: ModelAnalysis) -> Iterator[Finding]:
        flow = analysis.flow
        if flow.status != DROPS or flow.drops_language_model is not None or flow.dropped_at is None:
            return
        at = flow.dropped_at
        decoder = flow.decoder.qualname if flow.decoder else "its decoder"
        message = (
            f"`{_name(model)}`: `{decoder}` captures and returns `{lmdeploy_pack(ctx.pack).aux_key}`, but "
            f"`{at.owner}.{at.function}` does not pass it on ({flow.why}): the drafter reads the last hidden state"
        )
        effect = Effect(SILENT, STAGE_SERVING, ctx.at_spot(at, f"{at.owner}.{at.function} drops the captured states"), reason="captured but not returned", code=self.code)
        yield ctx.finding(AuxNotReturned, model, at.function, message, [], effect=effect, data={"owner": at.owner, "line": at.line})


class AuxDroppedByCudaGraph(LmdeployRule):
    """
    ## What it does
    Reports a target whose eager `forward` returns the captured `aux_hidden_states`, while its
    CUDA-graph output path drops them: `get_outputs_cudagraph` is the mixin's default (which
    copies only `hidden_states`), or an override that never names the key.

    ## Why is this bad?
    Decoding runs under CUDA graphs unless `--eager-mode` is given: every decode step then hands
    the proposer no captured states, and the drafter reads the last hidden state (prefill still
    works). Acceptance collapses with no error; with `--eager-mode` it works, slower.

    ## Example
    ```python
    class MyForCausalLM(nn.Module, CudaGraphMixin):
        def forward(self, ...):
            return self.model(...)          # a dict with aux_hidden_states
        # no get_outputs_cudagraph: CudaGraphMixin's keeps hidden_states only
    ```

    ## Fix safety
    Safe where the class inherits the mixin's default and its forward passes the decoder's
    output on: an override that calls the default and keeps the key (the `cuda-graph-key`
    template). Display-only for an override of its own.
    """

    code = "E3L110"
    name = "aux-dropped-by-cuda-graph"
    severity = "error"

    def check_model(self, ctx: LmdeployContext, model: ModelClass, analysis: ModelAnalysis) -> Iterator[Finding]:
        graph = analysis.graph
        if graph is None or graph.status != LOSES or analysis.wrapper is not None:
            return
        yield _graph_finding(ctx, AuxDroppedByCudaGraph, model, analysis)


def _graph_finding(ctx: LmdeployContext, rule: type[LmdeployRule], model: ModelClass, analysis: ModelAnalysis) -> Finding:
    graph = analysis.graph
    assert graph is not None
    method = lmdeploy_pack(ctx.pack).graph_method
    spot = graph.spot
    if graph.default and spot is not None:
        how = f"`{method}` is the default of `{spot.owner}` ({spot.path}:{spot.line}), which keeps only `hidden_states`"
    elif spot is not None:
        how = f"`{spot.owner}.{method}` ({spot.path}:{spot.line}) never names `{lmdeploy_pack(ctx.pack).aux_key}`"
    else:
        how = f"its `{method}` never names `{lmdeploy_pack(ctx.pack).aux_key}`"
    via = f" (through `self.{'.'.join(graph.via)}`)" if graph.via else ""
    wrapped = f"its language model `{analysis.wrapper.qualname}` captures, but " if analysis.wrapper is not None else ""
    message = (
        f"`{_name(model)}`: {wrapped}the eager forward returns the captured states, while the CUDA-graph path drops them: "
        f"{how}{via}; every decode step under CUDA graphs hands the drafter the last hidden state (works with --eager-mode)"
    )
    evidence = ctx.at_spot(spot, f"{spot.owner}.{method} drops the captured states") if spot else None
    effect = Effect(SILENT, STAGE_SERVING, evidence, condition=(("cuda-graphs", "on"),), reason="the CUDA-graph outputs drop the captured states", code=rule.code)
    return ctx.finding(rule, model, method, message, [], effect=effect, data={"default": graph.default, "via": list(graph.via)})


class WrapperDropsAux(LmdeployRule):
    """
    ## What it does
    Reports a wrapper (a multimodal model around a language model) whose language model
    captures and returns `aux_hidden_states`, while the wrapper does not pass them on: its
    `forward` returns something else than the language model's output, or its CUDA-graph output
    path (`get_outputs_cudagraph`) neither names the key nor delegates to the language model.

    ## Why is this bad?
    The proposer only sees the wrapper's output: it finds no captured states and keeps the last
    hidden state (silently; under CUDA graphs only, for the graph path). Kimi-K2.5 in LMDeploy
    does it right: `KimiK25ForConditionalGeneration.forward` returns `self.language_model(...)`
    and its `get_outputs_cudagraph` delegates to the language model's.

    ## Example
    ```python
    class MyVLForConditionalGeneration(nn.Module, CudaGraphMixin):
        def forward(self, ...):
            return self.language_model(...)
        # get_outputs_cudagraph: CudaGraphMixin's, which drops aux_hidden_states
    ```

    ## Fix safety
    Safe for the graph path: a `get_outputs_cudagraph` that delegates to the language model's,
    where that one keeps the key (the `cuda-graph-delegate` template). Display-only for the
    eager forward.
    """

    code = "E3L111"
    name = "wrapper-drops-aux"
    severity = "error"

    def check_model(self, ctx: LmdeployContext, model: ModelClass, analysis: ModelAnalysis) -> Iterator[Finding]:
        flow = analysis.flow
        if flow.status == DROPS and flow.drops_language_model is not None and flow.dropped_at is not None:
            at = flow.dropped_at
            message = (
                f"`{_name(model)}`: its language model `{flow.drops_language_model.qualname}` captures and returns "
                f"`{lmdeploy_pack(ctx.pack).aux_key}`, but `{at.owner}.{at.function}` does not pass it on: "
                "the drafter reads the last hidden state"
            )
            effect = Effect(SILENT, STAGE_SERVING, ctx.at_spot(at, f"{at.owner}.{at.function} drops the captured states"), reason="the wrapper drops the captured states", code=self.code)
            yield ctx.finding(WrapperDropsAux, model, at.function, message, [], effect=effect, data={"path": "eager"})
            return
        graph = analysis.graph
        if graph is not None and graph.status == LOSES and analysis.wrapper is not None:
            finding = _graph_finding(ctx, WrapperDropsAux, model, analysis)
            finding.data["path"] = "cuda-graph"
            finding.data["language_model"] = analysis.flow.chain[0] if analysis.flow.chain else ""
            yield finding


class CaptureRefusedUnderOption(LmdeployRule):
    """
    ## What it does
    Reports a target that raises when a launch option's branch meets capture state: Kimi-K2's
    causal LM raises `RuntimeError('... auxiliary hidden-state capture is not supported with
    microbatch execution')` when `--enable-microbatch` is on and capture layers are set.

    ## Why is this bad?
    With the option, the engine stops at the first forward pass with its own message (a clear
    refusal); without it nothing happens. Information unless the run assumes the option
    (`--engine-option microbatch`).

    ## Example
    ```python
    if get_step_ctx_manager().current_context().enable_microbatch:
        if self.model.aux_hidden_state_layers:
            raise RuntimeError('auxiliary hidden-state capture is not supported with microbatch execution')
    ```

    ## Fix safety
    Display-only: launch without the option.
    """

    code = "E3L113"
    name = "capture-refused-under-option"
    severity = "warning"

    def check_model(self, ctx: LmdeployContext, model: ModelClass, analysis: ModelAnalysis) -> Iterator[Finding]:
        flow = analysis.flow
        if flow.status not in (CAPTURES, PASSES):
            return
        for raised in flow.raises:
            spec = ctx.pack.options.get(raised.option)
            if spec is None:
                continue
            at = raised.spot
            message = (
                f"`{_name(model)}`: with {spec.described_on()}, `{at.owner}.{at.function}` raises "
                f"{raised.exception}('{raised.message}') while capture layers are set ({at.path}:{at.line})"
            )
            effect = Effect(REFUSED, STAGE_WARMUP, ctx.at_spot(at, f"{raised.exception}: {raised.message}"), ((spec.name, spec.on_value()),), f"refused with {spec.described_on()}", self.code)
            yield ctx.finding(CaptureRefusedUnderOption, model, raised.option, message, [], effect=effect)


LMDEPLOY_RULES: tuple[type[Rule], ...] = (
    SpecMethodRefused,
    SpeculationNotEnabled,
    AuxLayersNeverRead,
    AuxNotReturned,
    AuxDroppedByCudaGraph,
    WrapperDropsAux,
    AuxLayersNotProvided,
    CaptureRefusedUnderOption,
)

__all__ = ["LMDEPLOY_RULES", "PROVIDED"]
