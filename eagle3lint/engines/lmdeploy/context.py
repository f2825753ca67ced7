"""What LMDeploy's rules see: the core's context, the release's contract facts, and for each target
the builders of its checkpoints (``checkpoints``) and its capture flow (``flow``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from eagle3lint.checks.context import CheckContext
from eagle3lint.common.findings import Finding, Related
from eagle3lint.common.outcomes import SILENT, STAGE_FORWARD, Effect
from eagle3lint.engines.lmdeploy.analysis import ModelAnalysis
from eagle3lint.engines.lmdeploy.builders import NEVER, Place
from eagle3lint.engines.lmdeploy.checkpoints import families
from eagle3lint.engines.lmdeploy.facts import LmdeployContract
from eagle3lint.engines.lmdeploy.flow import (
    CAPTURES,
    NONE,
    PASSES,
    Flow,
    FlowReader,
    Spot,
    flow_reader,
)
from eagle3lint.engines.lmdeploy.flow import UNKNOWN as UNKNOWN_FLOW
from eagle3lint.engines.lmdeploy.pack import lmdeploy_pack
from eagle3lint.model.models import TARGET, ModelClass, classify, inner_model_choices
from eagle3lint.source.index import ClassRef

if TYPE_CHECKING:
    from eagle3lint.fix.planner import FixPattern

# The draft's warm-up (the first forward passes, before any request), and serving, where what the
# drafter reads decides acceptance: a warm-up crash is seen before a silent failure.
STAGE_WARMUP = STAGE_FORWARD
STAGE_SERVING = STAGE_FORWARD + 0.5


@dataclass
class LmdeployContext(CheckContext):
    # The engine's fix patterns (the adapter hands them in): E3L020 offers a fix exactly where
    # the planner makes one with them.
    fix_patterns: tuple[type[FixPattern], ...] = ()

    @property
    def lcontract(self) -> LmdeployContract | None:
        value = self.contract.extra.get("lmdeploy")
        return value if isinstance(value, LmdeployContract) else None

    def inner_choices(self, ref: ClassRef) -> list[tuple[str, list[ClassRef]]]:
        """The inner models the index names. LMDeploy's wrappers that build their language model
        with a factory (``build_model_from_hf_config(text_config)``) pick it from the checkpoint's
        config at run time through the architecture map: no static inference can name it, and
        trying costs astroid seconds on the engine's import chains."""
        return inner_model_choices(self.index, ref)

    def reader(self) -> FlowReader:
        return self.shared("lmdeploy-flow", lambda: flow_reader(self.index))

    def analysis(self, model: ModelClass) -> ModelAnalysis | None:
        """The model's checkpoints' builders and its capture flow (targets of a tree whose
        contract was read)."""
        contract = self.lcontract
        if contract is None or model.kind != TARGET:
            return None
        cache: dict[tuple[str, str | None], ModelAnalysis] = self.shared("lmdeploy-analysis", dict)
        key = (f"{model.ref.module}.{model.ref.qualname}", model.variant)
        found = cache.get(key)
        if found is None:
            reader = self.reader()
            fams = families(contract, model.architectures or [model.summary.name], lmdeploy_pack(self.pack).architecture_suffixes)
            try:
                flow = reader.flow(model.ref)
                graph = reader.graph(model.ref) if flow.status in (CAPTURES, PASSES) else None
            except RecursionError:
                # A model nested deeper than the stack allows: nothing is claimed of its flow.
                flow, graph = Flow(UNKNOWN_FLOW, why=f"`{model.summary.name}` is nested too deeply to follow"), None
            wrapper = None
            if flow.status == PASSES and flow.chain:
                held = [h for h in self.index.attribute_classes(model.ref, flow.chain[0]) if isinstance(h, ClassRef)]
                if held and classify(self.index, held[0])[0] == TARGET:
                    wrapper = held[0]
            found = cache[key] = ModelAnalysis(fams, flow, graph, wrapper)
        return found

    def engine_effects(self, model: ModelClass) -> list[Effect]:
        """Besides the findings: a target no decoder of which captures, launched through a builder
        that opts it in without naming layers, runs on the proposer's fallback (silent)."""
        effects = super().engine_effects(model)
        analysis = self.analysis(model)
        contract = self.lcontract
        if analysis is None or contract is None or analysis.flow.status != NONE:
            return effects
        plain = [f for f in analysis.families if f.builder.refusal is None and contract.opted_in(f.builder) != NEVER and f.builder.layers == NEVER]
        if plain:
            reason = f"no decoder captures; {plain[0].builder.name} opts it in, and the proposer falls back to the last hidden state"
            effects.append(Effect(SILENT, STAGE_SERVING, self.fallback(), reason=reason))
        return effects

    # ---- evidence -----------------------------------------------------------------------------
    def at(self, place: Place, message: str) -> Related:
        """A line of the engine (relative to its package root)."""
        return Related(str(self.index.engine.root / place.path), place.line, message)

    def at_spot(self, spot: Spot, message: str) -> Related:
        return Related(spot.path, spot.line, message)

    def fallback(self, message: str = "") -> Related | None:
        contract = self.lcontract
        if contract is None or contract.fallback is None:
            return None
        text = message or f"the proposer swaps in `{lmdeploy_pack(self.pack).aux_key}` only when the target returns it; else the drafter reads the last hidden state"
        return self.at(contract.fallback, text)

    def implementation_refusals(self, findings: list[Finding]) -> dict[int, str]:
        """Why the fix planner implements EAGLE-3 in none of these findings' models, as ``fix``
        plans them; first, without planning, where the checkpoints' builder refuses the method
        or leaves the model out (a capture would stay empty)."""
        from eagle3lint.engines.lmdeploy.shape import builders_problem
        from eagle3lint.fix.planner import FixEnv, planner_refusals

        def first(finding: Finding, env: FixEnv) -> str | None:
            model = env.model_for(finding)
            try:
                return builders_problem(self.lcontract, self.analysis(model)) if model is not None else None
            except RecursionError:
                return "nested too deeply to read"

        return planner_refusals(self, findings, self.fix_patterns, first)
