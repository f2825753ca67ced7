"""vLLM capture rules under pipeline parallelism: the holder's loop numbers the layers it holds,
and the aux hidden states of earlier ranks must reach the last one.

Whether PP with EAGLE-3 runs at all is read from the tree: from 0.30 the runner refuses it unless
the model's decoder sets ``supports_aux_hidden_states_over_pp`` (``VllmContract.pp_guard``);
older runners never refuse it. A loop that is wrong only under PP is a warning where PP runs, and
information where this release refuses PP for the model (what enabling it would break).
"""

from __future__ import annotations

from collections.abc import Iterable

from eagle3lint.checks.capture import capture_analysis
from eagle3lint.checks.context import CheckContext
from eagle3lint.common.findings import Finding, Related
from eagle3lint.common.outcomes import CRASH, SILENT, STAGE_FORWARD, Effect
from eagle3lint.engines.vllm.context import VllmCheckContext
from eagle3lint.engines.vllm.holders import RECORDED, RESOLVED
from eagle3lint.engines.vllm.rules import VllmRule
from eagle3lint.model.capture import CaptureAnalysis, Method
from eagle3lint.model.models import TARGET, ModelClass
from eagle3lint.source.capture_facts import LoopFact
from eagle3lint.source.index import ClassRef


def _analysis(ctx: CheckContext) -> CaptureAnalysis:
    return capture_analysis(ctx)


def _holder_classes(ctx: VllmCheckContext, model: ModelClass) -> list[ClassRef]:
    if model.kind != TARGET or not ctx.claims_support(model.ref):
        return []
    holder = ctx.holder(model.ref)
    if holder.kind == RECORDED:
        # A library records the layers inside its own model: there is no decoder loop in the
        # engine to number the layers or to pack them for the next rank.
        return []
    return list(holder.classes) if holder.status == RESOLVED else []


def _ordered_models(ctx: VllmCheckContext) -> list[ModelClass]:
    return sorted(ctx.models, key=lambda m: (m.ref.module, m.summary.lineno))


def _home_first(model: ModelClass, decoder: ClassRef) -> tuple[bool, str, int]:
    """Each decoder is reported once, on the model in its own module when there is one
    (`LlamaModel`'s loop on `LlamaForCausalLM`, not on the first model that reuses it)."""
    return (model.ref.module != decoder.module, model.ref.module, model.summary.lineno)


class PipelineLocalLayerIndex(VllmRule):
    """
    ## What it does
    Reports a holder (the decoder EAGLE-3 records its layers in) whose decoder loop numbers its
    layers locally, `for idx, layer in enumerate(islice(self.layers, self.start_layer,
    self.end_layer))` (or a slice) without `start=`, while the index feeds the capture
    (`self._maybe_add_hidden_state(aux, idx + 1, ...)`, `idx in self.aux_hidden_state_layers`).
    `islice(enumerate(self.layers), ...)` and `enumerate(..., start=self.start_layer)` number
    them globally and are fine.

    ## Why is this bad?
    The requested layer ids are global. On pipeline rank 0 local and global indices agree; on
    every later rank the wrong layers match (or none), so the drafter gets the wrong hidden
    states with no error. It is a warning where this vLLM runs EAGLE-3 with pipeline
    parallelism for the model, information where the release refuses that (it says what enabling
    it would break).

    ## Example
    ```python
    for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):
        hidden_states, residual = layer(positions, hidden_states, residual)
        aux = self._maybe_add_hidden_state(aux, idx + 1, hidden_states, residual)
    ```
    Use instead: `enumerate(islice(...), start=self.start_layer)`.

    ## Fix safety
    Safe when every use of the index in the loop body is a capture (they all want the global
    id): `start=self.start_layer` is added. Display-only when the index is used for anything
    else.

    ## References
    vllm#36151; vllm#36731.
    """

    code = "E3L105"
    name = "pp-local-layer-index"
    severity = "warning"
    family = "capture"
    fix_safety = "safe"

    def check_vllm(self, ctx: VllmCheckContext) -> Iterable[Finding]:
        guard = ctx.vllm.pp_guard if ctx.vllm else None
        # One finding per loop; where decoders sharing it differ, the one PP runs for speaks.
        chosen: dict[ClassRef, tuple[ModelClass, ClassRef, Method, LoopFact, bool]] = {}
        for model in _ordered_models(ctx):
            for cls in _holder_classes(ctx, model):
                forward = _analysis(ctx).method(cls, "forward")
                if forward is None:
                    continue
                loop = next((lp for lp in forward.facts.loops if _local_index(lp)), None)
                if loop is None:
                    continue
                flag, _ = ctx.pp_flag(cls)
                refused = guard is not None and flag is not True
                earlier = chosen.get(forward.owner)
                rank = (refused, *_home_first(model, forward.owner))
                if earlier is None or rank < (earlier[4], *_home_first(earlier[0], forward.owner)):
                    chosen[forward.owner] = (model, cls, forward, loop, refused)
        for model, cls, forward, loop, refused in chosen.values():
            if refused and guard is not None:
                effect = (
                    f"this vLLM refuses EAGLE-3 with pipeline parallelism for it (`{cls.qualname}` does not set "
                    f"`{guard.flag}`; {guard.path}:{guard.line}), so nothing breaks today; enabling it would capture "
                    "the wrong layers on every rank after the first"
                )
            else:
                effect = "with pipeline parallelism, every rank after the first captures the wrong layers (or none)"
            module = ctx.index.module(forward.owner.module)
            # Where the guarding runner refuses PP for the model, only the other generation runs it.
            runners = [r for r in ctx.vindex.vpack.runner_files if guard is None or not refused or r != guard.runner]
            condition = ctx.pp_condition(runners[0] if refused and guard is not None and guard.runner and runners else "")
            evidence = Related(module.path, loop.line, "the loop numbers this rank's layers from 0") if module else None
            finding = ctx.finding(
                PipelineLocalLayerIndex, model, "forward",
                f"`{forward.owner.qualname}.forward` numbers this rank's layers from 0 (`enumerate` of a slice "
                f"without `start=`, line {loop.line}) and captures by that index, but the requested layer ids are "
                f"global: {effect}",
                [],
                severity="info" if refused else self.severity,
                path=module.path if module else None, line=loop.line, column=1,
                data={
                    "decoder": str(forward.owner), "decoder_ref": [forward.owner.module, forward.owner.qualname],
                    "loop_line": loop.line, "index": loop.index, "other_uses": loop.other_uses,
                },
                effect=Effect(SILENT, STAGE_FORWARD, evidence, condition, f"`{forward.owner.qualname}` captures by a rank-local index", self.code),
            )
            if guard is not None:
                finding.related = [Related(str(ctx.index.engine.source_root / guard.path), guard.line, f"the runner reads `{guard.flag}`")]
            yield finding


def _local_index(loop: LoopFact) -> bool:
    return loop.shape == "enumerate" and loop.sliced and not loop.start_given and loop.capture_uses > 0


class PipelineAuxNotPacked(VllmRule):
    """
    ## What it does
    Reports a holder whose class says it supports EAGLE-3 with pipeline parallelism (it
    inherits `supports_aux_hidden_states_over_pp = True`) while its own `forward`, which
    overrides the one that packs them, returns `IntermediateTensors` to the next rank without
    packing this rank's aux hidden states (`pack_local_aux_hidden_states`) or collecting the
    earlier ranks' (`collect_remote_aux_hidden_states`).

    ## Why is this bad?
    The runner trusts the inherited flag and runs EAGLE-3 with pipeline parallelism; the aux
    hidden states captured on earlier ranks are dropped on the way, and the last rank hands the
    drafter fewer states than it expects (a shape mismatch, or the wrong states). The override
    should pack them as its base does, or set the flag back to `False` (as vLLM's MiMo does).

    ## Example
    ```python
    class FooLLMModel(Qwen2Model):          # Qwen2Model: supports_aux_hidden_states_over_pp = True
        def forward(self, ...):
            ...
            if not get_pp_group().is_last_rank:
                return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})
    ```

    ## Fix safety
    Display-only.

    ## References
    vllm#45985.
    """

    code = "E3L106"
    name = "pp-aux-not-packed"
    severity = "warning"
    family = "capture"

    def check_vllm(self, ctx: VllmCheckContext) -> Iterable[Finding]:
        guard = ctx.vllm.pp_guard if ctx.vllm else None
        packers = set(ctx.vindex.vpack.pp_pack_calls)
        if guard is None or not packers:
            return
        chosen: dict[ClassRef, tuple[ModelClass, Method, ClassRef]] = {}
        for model in _ordered_models(ctx):
            for cls in _holder_classes(ctx, model):
                flag, setter = ctx.pp_flag(cls)
                forward = _analysis(ctx).method(cls, "forward")
                if flag is not True or setter is None or forward is None:
                    continue
                mro = ctx.index.mro(cls).classes
                if forward.owner not in mro or setter not in mro or mro.index(forward.owner) >= mro.index(setter):
                    continue  # the class that opts in owns the forward: it packs (or says why not)
                if not forward.facts.returns_intermediate or forward.facts.calls & packers:
                    continue
                earlier = chosen.get(forward.owner)
                if earlier is None or _home_first(model, forward.owner) < _home_first(earlier[0], forward.owner):
                    chosen[forward.owner] = (model, forward, setter)
        for model, forward, setter in chosen.values():
            module = ctx.index.module(forward.owner.module)
            finding = ctx.finding(
                PipelineAuxNotPacked, model, "forward",
                f"`{forward.owner.qualname}` inherits `{guard.flag} = True` from `{setter.qualname}`, so the runner "
                f"runs EAGLE-3 with pipeline parallelism for it, but its own `forward` hands `IntermediateTensors` "
                f"to the next rank without packing the aux hidden states (no {', '.join(f'`{p}`' for p in sorted(packers))}): "
                "with PP the earlier ranks' states never reach the drafter",
                [],
                path=module.path if module else None, line=forward.function.lineno, column=forward.function.col + 1,
                data={"decoder": str(forward.owner), "flag_from": str(setter)},
                effect=Effect(
                    CRASH, STAGE_FORWARD,
                    Related(module.path, forward.function.lineno, "hands IntermediateTensors on without the aux states") if module else None,
                    ctx.pp_condition(), f"`{forward.owner.qualname}.forward` drops earlier ranks' aux states", self.code,
                ),
            )
            finding.related = [Related(str(ctx.index.engine.source_root / guard.path), guard.line, f"the runner reads `{guard.flag}`")]
            yield finding


VLLM_CAPTURE_RULES = (PipelineLocalLayerIndex, PipelineAuxNotPacked)
