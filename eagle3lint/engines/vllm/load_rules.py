"""vLLM rules on what the launch reads before the model runs: the model-type allow-list
(E3L017) and what the drafter load reads from the target and its config (E3L018, E3L019)."""

from __future__ import annotations

from collections.abc import Iterable

from eagle3lint.common.findings import Finding, Related
from eagle3lint.common.outcomes import (
    CRASH,
    REFUSED,
    STAGE_LAUNCH,
    STAGE_RUNNER,
    UNKNOWN,
    Effect,
)
from eagle3lint.engines.vllm.context import (
    VllmCheckContext,
    checkpoints_phrase,
    refused_phrase,
)
from eagle3lint.engines.vllm.drafter_load import DrafterLoad
from eagle3lint.engines.vllm.model_types import Checkpoint
from eagle3lint.engines.vllm.rule_base import VllmRule, _targets
from eagle3lint.model.models import ModelClass


class ModelTypeNotAllowed(VllmRule):
    """
    ## What it does
    Reports a target with EAGLE-3 code whose checkpoints this vLLM refuses by their model type:
    releases up to 0.21 accept `--speculative-config` with `eagle3` only when the target's
    `hf_text_config.model_type` contains a word of a list in the speculative config
    (`aux_hidden_states_supported`, `eagle3_target_supported` in 0.10.x). The list is read from
    the release's source; each architecture's model types from the tables of the transformers
    release the engine pins (`MODEL_FOR_CAUSAL_LM_MAPPING_NAMES` and the other
    `*_MAPPING_NAMES` of `modeling_auto.py`: a class maps to every type that lists it) and from
    the engine's own config registry (`_CONFIG_REGISTRY`). A multimodal wrapper is judged by its
    text sub-config's type where its config class names one.

    A warning where every checkpoint of every architecture of the class is refused; information
    naming the refused ones where some are admitted, or where some architecture's types (or a
    wrapper's text type, `AutoConfig`) cannot be told statically. Where no transformers release
    can be read at all (a tree without its dist-info whose requirement files pin none, and none
    installed), information that the list's verdict is unknown: the class's outcome is `unknown`
    with that reason, never `works`. A class with no EAGLE-3 code at all gets no finding: its
    `eagle3-not-implemented` says it.

    ## Why is this bad?
    The server refuses to start with `ValueError: eagle3 is only supported for [...] models`,
    before the weights load: every EAGLE-3 member the class implements is never reached, and
    declaring `SupportsEagle3` alone (`undeclared-eagle3-support`) does not help.

    ## Example
    ```python
    # vllm/config/speculative.py
    aux_hidden_states_supported = ["llama", "qwen", ...]   # no "mistral"

    # vllm/model_executor/models/mistral.py
    class MistralForCausalLM(LlamaForCausalLM):   # SupportsEagle3 inherited: supported otherwise
        ...
    ```
    Use instead: add the model type (`"mistral"`) to the list, or upgrade to a release without
    it (0.22.0 dropped it).

    ## Fix safety
    Display-only: the list is the engine's, not the model's.
    """

    code = "E3L017"
    name = "model-type-not-allowed"
    severity = "warning"
    def check_vllm(self, ctx: VllmCheckContext) -> Iterable[Finding]:
        from eagle3lint.checks.verdicts import eagle3_evidence

        allow = ctx.vllm.allow_list if ctx.vllm else None
        tables = ctx.vllm.model_types if ctx.vllm else None
        if allow is None or tables is None:
            return
        where = f"{allow.path}:{allow.line}"
        listed = ", ".join(allow.model_types)
        evidence = Related(
            str(ctx.index.engine.absolute(allow.path)), allow.line,
            f"the speculative config refuses EAGLE-3 unless the text model_type contains one of: {listed}",
        )
        for model in _targets(ctx):
            judgement = ctx.type_judgement(model)
            if judgement is not None and not judgement.refused and tables.unreadable and not judgement.allowed:
                # No transformers release to read the types from (a tree without its metadata
                # and no pin in its requirement files): the list may refuse it, never "works".
                if eagle3_evidence(ctx.index, model.ref, ctx.inner_choices)[0]:
                    yield self._types_unknown(ctx, model, where, listed, evidence, tables.origin)
                continue
            if judgement is None or not judgement.refused:
                continue
            if not eagle3_evidence(ctx.index, model.ref, ctx.inner_choices)[0]:
                continue
            data: dict[str, object] = {
                "allow_list": f"{allow.path}:{allow.line}",
                "refused": [[c.architecture, c.model_type, c.text.model_type] for c in judgement.refused],
                "allowed": [[c.architecture, c.model_type, c.text.model_type] for c in judgement.allowed],
                "types_from": tables.origin,
            }
            if judgement.all_refused:
                reason = refused_phrase(judgement)
                message = (
                    f"`{model.summary.name}` checkpoints carry model type {_types_of(judgement.refused)} "
                    f"({_sources(judgement.refused, tables.label)}), which the allow-list at {where} ({listed}) "
                    f"does not contain: this vLLM refuses EAGLE-3 for them before the weights load; the type "
                    f"must be added to the list"
                )
                effect: Effect | None = Effect(REFUSED, STAGE_LAUNCH, evidence, reason=reason, code=self.code)
                severity = self.severity
            else:
                admitted = [
                    *(f"{checkpoints_phrase(judgement.allowed)} admitted" for _ in [0] if judgement.allowed),
                    *(f"{checkpoints_phrase(judgement.undetermined)}: {judgement.undetermined[0].text.via}, which cannot be told statically" for _ in [0] if judgement.undetermined),
                    *(f"no table knows the model types of {', '.join(f'`{a}`' for a in judgement.unknown_architectures)}" for _ in [0] if judgement.unknown_architectures),
                ]
                message = (
                    f"`{model.summary.name}`: the allow-list at {where} ({listed}) refuses EAGLE-3 for "
                    f"checkpoints of {checkpoints_phrase(judgement.refused)} before the weights load "
                    f"({_sources(judgement.refused, tables.label)}); " + "; ".join(admitted)
                )
                effect, severity = None, "info"
            # The message names the list and the types itself: the note would say it twice.
            finding = ctx.finding(ModelTypeNotAllowed, model, "", message, [], severity=severity, data=data, effect=effect, model_note=False)
            finding.related = [evidence]
            yield finding

    def _types_unknown(self, ctx: VllmCheckContext, model: ModelClass, where: str, listed: str, evidence: Related, why: str) -> Finding:
        reason = f"which model type its checkpoints carry cannot be read ({why}), and the allow-list at {where} decides by it"
        message = (
            f"`{model.summary.name}`: the allow-list at {where} ({listed}) refuses EAGLE-3 for checkpoints whose model "
            f"type contains none of its words, and {why}: the model types of its checkpoints cannot be read (give the "
            "tree its requirement files or dist-info, or check a published release with --release)"
        )
        effect = Effect(UNKNOWN, STAGE_LAUNCH, evidence, reason=reason, code=self.code)
        finding = ctx.finding(
            ModelTypeNotAllowed, model, "", message, [], severity="info", data={"allow_list": where, "types_from": None},
            effect=effect, model_note=False,
        )
        finding.related = [evidence]
        return finding


# The drafter loads after the weights and before the runner's check of the loaded model.
STAGE_DRAFTER_LOAD = (STAGE_LAUNCH + STAGE_RUNNER) / 2


class DrafterLoadReadsTarget(VllmRule):
    """
    ## What it does
    Reports a target that vLLM's EAGLE proposer cannot load the drafter against: while the
    drafter loads (`self.drafter.load_model(self.model)`), the proposer shares the target's
    embedding with it, taking the target's language model (`get_language_model()` for a class
    that declares `SupportsMultiModal`, the target itself otherwise), then that model's
    `.model`, then its `embed_tokens` or `embedding`, and raising `AttributeError` where one
    is missing. The reads, their messages, the pipeline-parallel test around them and the
    runner that loads the drafter before its EAGLE-3 check are read from the release's own
    source; the attributes from the project index (assignments in `__init__` along the MRO,
    properties, class attributes). A class whose attributes cannot be told (an unresolved base,
    `__getattr__`, `setattr`, a language model chosen at run time) gets no finding.

    ## Why is this bad?
    The runner loads the drafter before it checks whether the target supports EAGLE-3: the
    launch dies on `AttributeError: Target model does not have 'model' attribute` (or `'embed_tokens'
    or 'embedding'`), whatever the class implements. A class without EAGLE-3 code crashes
    instead of being refused with the engine's clear message; a class with complete EAGLE-3
    code never runs it.

    ## Example
    ```python
    class FooForCausalLM(nn.Module, SupportsEagle3):
        def __init__(self, *, vllm_config, prefix=""):
            self.transformer = FooModel(vllm_config=vllm_config)  # the proposer wants `.model`
    ```
    Use instead: keep the decoder in `self.model`, with its embedding in `embed_tokens` (or
    `embedding`).

    ## Fix safety
    Display-only: renaming a model's attributes changes its checkpoint's weight names.
    """

    code = "E3L018"
    name = "drafter-load-reads-target"
    severity = "error"

    def check_vllm(self, ctx: VllmCheckContext) -> Iterable[Finding]:
        load = ctx.vllm.drafter_load if ctx.vllm else None
        if load is None:
            return
        engine = ctx.index.engine
        runner_related = _drafter_load_site(ctx, load)
        for model in _targets(ctx):
            crash = ctx.drafter_crash(model)
            if crash is None:
                continue
            read = crash.read
            names = crash.names
            lacking = ", ".join(f"`{c.qualname}`" for c in crash.lacking)
            wanted = " or ".join(f"`{n}`" for n in names)
            where = "the target itself" if crash.language_model == "self" else f"`{crash.language_model}` (its `{load.language_model}()`)"
            at = "" if crash.reached == crash.language_model else f"; it reaches `{crash.reached}`"
            message = (
                f"`{model.summary.name}`: vLLM loads the drafter before it checks EAGLE-3 support, and the proposer's "
                f"`{load.proposer}.load_model` takes the target's language model, here {where}{at}: {lacking} has no "
                f"{wanted}, so the launch crashes with `AttributeError: {read.message}`"
            )
            evidence = Related(str(engine.absolute(load.path)), read.line, f"the drafter load raises AttributeError({read.message!r})")
            finding = ctx.finding(
                DrafterLoadReadsTarget, model, "", message, [],
                data={
                    "message": read.message,
                    "language_model": crash.language_model,
                    "reached": crash.reached,
                    "lacks": list(names),
                    "classes": [str(c) for c in crash.lacking],
                    "multimodal": crash.multimodal,
                },
                effect=Effect(
                    CRASH, STAGE_DRAFTER_LOAD, evidence, ctx.drafter_condition(crash),
                    reason=f"the drafter load raises `AttributeError: {read.message}`", code=self.code,
                ),
                model_note=False,
            )
            finding.related = [evidence, *runner_related]
            yield finding


def _drafter_load_site(ctx: VllmCheckContext, load: DrafterLoad) -> list[Related]:
    """Where the runner loads the drafter before its EAGLE-3 check (the first such call)."""
    engine = ctx.index.engine
    return [
        Related(str(engine.absolute(call.path)), call.line, "the runner loads the drafter here, before its EAGLE-3 check")
        for call in load.runner_calls
        if call.before_check
    ][:1]


# The image-token copy comes first in the proposer's load_model, before the language model's reads.
STAGE_DRAFTER_CONFIG = (STAGE_LAUNCH + 2 * STAGE_DRAFTER_LOAD) / 3


class DrafterLoadReadsConfig(VllmRule):
    """
    ## What it does
    Reports a multimodal target whose HF config lacks the image-token attribute vLLM's EAGLE
    proposer copies off it while the drafter loads: the proposer's `load_model` picks the
    attribute by the target's class name (`config.image_token_id` for the classes it lists,
    `config.image_token_index` for every other multimodal class) and reads
    `target_model.config.<attribute>` bare. The names, the branches and the attributes are read
    from the release's own source; the config classes an architecture's checkpoints load as from
    transformers' tables (the release the engine pins) and the engine's config registry, and
    what they define from their source (class-level fields, `self.x = ...`, properties,
    `attribute_map` keys, along the bases up to `PreTrainedConfig`). A finding only where every
    config class is known and none defines the attribute; a config whose class cannot be told
    (remote code, no transformers tables) gets none.

    ## Why is this bad?
    The runner loads the drafter before it checks whether the target supports EAGLE-3: the
    launch dies on `AttributeError: '<Config>' object has no attribute 'image_token_index'`
    whatever the class implements, unless the checkpoint's `config.json` carries the key itself.

    ## Example
    ```python
    class FooConfig(PreTrainedConfig):
        model_type = "foo"
        image_token_id: int = 151655  # the proposer reads `image_token_index` for Foo
    ```
    Use instead: map the name in the config (`attribute_map = {"image_token_index":
    "image_token_id"}`), or have the engine list the class among those it reads
    `image_token_id` for.

    ## Fix safety
    Display-only: the config class and the engine's list are outside the model file.
    """

    code = "E3L019"
    name = "drafter-load-reads-config"
    severity = "error"

    def check_vllm(self, ctx: VllmCheckContext) -> Iterable[Finding]:
        load = ctx.vllm.drafter_load if ctx.vllm else None
        tables = ctx.vllm.model_types if ctx.vllm else None
        condition = load.runner_condition() if load is not None else None
        if load is None or tables is None or condition is None:
            return
        engine = ctx.index.engine
        template = ctx.vindex.vpack.drafter_config_message or "'{config}' object has no attribute '{attribute}'"
        runner_related = _drafter_load_site(ctx, load)
        for model in _targets(ctx):
            crash = ctx.config_crash(model)
            if crash is None:
                continue
            read = crash.read
            attribute = read.attribute
            first = crash.config_classes[0]
            engine_message = template.format(config=first, attribute=attribute)
            configs = ", ".join(f"`{c}`" for c in crash.config_classes)
            branch = (
                "is not among the classes the proposer names, so it takes the default branch"
                if not read.classes else "is among the classes the proposer names for it"
            )
            at = f"{load.path}:{read.line}"
            message = (
                f"`{model.summary.name}`: vLLM loads the drafter before it checks EAGLE-3 support, and the proposer's "
                f"`{load.proposer}.load_model` copies `{load.config_attribute}.{attribute}` off a multimodal target "
                f"({at}); `{model.summary.name}` {branch}, but its checkpoints' config ({configs}, {tables.label or 'transformers'}) "
                f"defines no `{attribute}`, so the launch crashes with `AttributeError: {engine_message}` "
                f"(unless the checkpoint's config.json carries the key itself)"
            )
            evidence = Related(str(engine.absolute(load.path)), read.line, f"the drafter load reads `{load.config_attribute}.{attribute}` off the target")
            finding = ctx.finding(
                DrafterLoadReadsConfig, model, "", message, [],
                data={
                    "attribute": attribute,
                    "branch": list(read.classes) if read.classes else None,
                    "configs": [{"architecture": a, "config": c} for a, c in crash.configs],
                    "message": engine_message,
                },
                effect=Effect(
                    CRASH, STAGE_DRAFTER_CONFIG, evidence, condition,
                    reason=f"the drafter load raises `AttributeError: {engine_message}`", code=self.code,
                ),
                model_note=False,
            )
            finding.related = [evidence, *runner_related]
            yield finding


def _types_of(checkpoints: list[Checkpoint]) -> str:
    return ", ".join(dict.fromkeys(c.describe() for c in checkpoints))


def _sources(checkpoints: list[Checkpoint], label: str) -> str:
    """Where the types were read: transformers' tables (which release) or vLLM's registry."""
    parts = []
    if any(c.source == "transformers" for c in checkpoints):
        parts.append(f"{label}'s tables")
    if any(c.source == "vllm" for c in checkpoints):
        parts.append("vLLM's config registry")
    return "types from " + " and ".join(parts)
