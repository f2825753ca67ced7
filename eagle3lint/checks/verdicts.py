"""One verdict per model class: what it has (its status) and what the engine does (its outcome).

The outcome, under the run's launch options, is the first active :class:`~eagle3lint.common.outcomes.Effect`
of a launch: the findings' effects and the engine's own (a launch check that refuses an option).
The status follows from it and from the EAGLE-3 code the class has:

* ``supported``: it has EAGLE-3 code and the outcome is ``works``.
* ``broken``: it has part of EAGLE-3 (implements, inherits, declares or wraps part of the path)
  and the outcome is ``crash`` or ``silent``: every error is on such a model.
* ``incomplete``: it has part or all of EAGLE-3 and the engine refuses it clearly (the protocol,
  one member, an allow-list word missing): one step from working, a warning.
* ``not-implemented``: no EAGLE-3 code anywhere in it; its outcome is whatever the release does
  (a clear refusal, or a crash where the engine calls unguarded). Its member findings are one
  cause, reported once as information (E3L020).
* ``unknown``: what the engine does cannot be proven statically.
* ``not-a-target``: draft heads, embedding, reward, encoder-only models.

Severity follows the status (broken: error; incomplete: warning; not-implemented: info), and a
finding whose launch options are off in this run is information that names them.
What counts as EAGLE-3 code is rule-pack data (``[verdict]`` in ``rules/<engine>.toml``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from eagle3lint.common.outcomes import (
    FAILS,
    OUTCOMES,
    REFUSED,
    WORKS,
    ConditionalOutcome,
    Effect,
    Verdict,
    first_effect,
)
from eagle3lint.common.outcomes import UNKNOWN as OUTCOME_UNKNOWN

if TYPE_CHECKING:
    from eagle3lint.checks.base import Rule
    from eagle3lint.checks.context import CheckContext
    from eagle3lint.common.findings import Finding
    from eagle3lint.model.launch_options import EngineOptions
    from eagle3lint.model.models import ModelClass
    from eagle3lint.source.index import ClassRef, ProjectIndex

SUPPORTED = "supported"
BROKEN = "broken"
INCOMPLETE = "incomplete"
NOT_IMPLEMENTED = "not-implemented"
UNKNOWN = "unknown"
NOT_A_TARGET = "not-a-target"
STATUSES = (SUPPORTED, BROKEN, INCOMPLETE, NOT_IMPLEMENTED, UNKNOWN, NOT_A_TARGET)

_MAX_DEPTH = 3


def model_key(model: ModelClass) -> tuple[str, str | None]:
    return (f"{model.ref.module}.{model.ref.qualname}", model.variant)


def finding_key(finding: Finding) -> tuple[str, str | None]:
    return (finding.qualname, finding.variant)


InnerChoices = Callable[["ClassRef"], list[tuple[str, list["ClassRef"]]]]


def eagle3_evidence(index: ProjectIndex, ref: ClassRef, inner_choices: InnerChoices | None = None, _depth: int = 0, _seen: frozenset[ClassRef] = frozenset()) -> tuple[str, bool]:
    """The first piece of EAGLE-3 code found for ``ref`` (its MRO, then the inner models it may
    hold, as ``inner_choices`` gives them), in words, "" when there is none; and whether a
    lookup could not tell (a base outside the engine)."""
    from eagle3lint.model.models import inner_model_choices

    pack = index.engine.pack
    choices = inner_choices or (lambda r: inner_model_choices(index, r))
    undecided = False
    for name in (*pack.eagle3_members, *pack.capture_attributes):
        lookup = index.lookup(ref, name)
        if lookup.status == "found" and lookup.owner is not None:
            owner = "" if lookup.owner == ref else f" (from `{lookup.owner.qualname}`)"
            what = f"`{name}`" if name in pack.eagle3_members else f"the capture attribute `{name}`"
            return f"has {what}{owner}", False
        undecided = undecided or lookup.status == "unknown"
    if _depth >= _MAX_DEPTH:
        return "", undecided
    seen = _seen | {ref}
    for attr, held_classes in choices(ref):
        for held in held_classes:
            if held in seen:
                continue
            inner, inner_undecided = eagle3_evidence(index, held, inner_choices, _depth + 1, seen)
            if inner:
                return f"`self.{attr}` ({held.qualname}) {inner}", False
            undecided = undecided or inner_undecided
    return "", undecided


def decide(ctx: CheckContext, findings: list[Finding], rules: list[type[Rule]]) -> tuple[list[Finding], dict[tuple[str, str | None], Verdict]]:
    """The verdict of every checked model, each finding's severity from it, and the findings
    without the member gaps of models that do not implement EAGLE-3 (E3L020 stands for them)."""
    by_code = {rule.code: rule for rule in rules}
    by_model: dict[tuple[str, str | None], list[Finding]] = {}
    for finding in findings:
        by_model.setdefault(finding_key(finding), []).append(finding)
    verdicts: dict[tuple[str, str | None], Verdict] = {}
    dropped: set[int] = set()
    for model in ctx.models:
        key = model_key(model)
        if key in verdicts:
            continue
        own = standing(by_model.get(key, []))
        verdict = _verdict(ctx, model, own, by_code)
        verdicts[key] = verdict
        if verdict.status == NOT_IMPLEMENTED:
            dropped.update(id(f) for f in own if getattr(by_code.get(f.code), "member_gap", False))
    for model in ctx.models:
        verdict = verdicts[model_key(model)]
        model.status, model.status_reason = verdict.status, verdict.reason
        model.outcome, model.decided, model.conditions = verdict.outcome, verdict.decided, list(verdict.conditions)
    kept = [f for f in findings if id(f) not in dropped]
    for finding in kept:
        set_severity(finding, verdicts.get(finding_key(finding)), ctx.options)
    return kept, verdicts


def set_severity(finding: Finding, verdict: Verdict | None, options: EngineOptions) -> None:
    """A finding's severity from its model's status: an error only where the model is broken
    and this finding is a crash or a silent failure under the run's options."""
    effect = finding.effect
    if effect is None:
        return
    if not options.active(effect.condition):
        finding.applies = False
        finding.severity = "info"
        described = options.describe(effect.condition)
        flags = " ".join(f"--engine-option {name}={value}" if value not in ("on",) else f"--engine-option {name}" for name, value in effect.condition)
        finding.message += f" [only with {described}, off in this run: `{flags}` assumes it]"
        return
    if verdict is None or verdict.status == NOT_A_TARGET:
        return  # a draft head or a class outside the checked models keeps its rule's severity
    if effect.outcome == OUTCOME_UNKNOWN:
        finding.severity = "info"
    elif verdict.status == BROKEN and effect.outcome in FAILS:
        finding.severity = "error"
    elif effect.outcome in FAILS or effect.outcome == REFUSED:
        finding.severity = "warning" if finding.severity == "error" or verdict.status == INCOMPLETE else finding.severity
    if verdict.status != BROKEN and finding.severity == "error":
        finding.severity = "warning"


def standing(findings: list[Finding]) -> list[Finding]:
    """The findings of one model without those another stands for (``data["replaces"]``: vLLM's
    one-line-away finding stands for the member gaps the protocol's defaults fill)."""
    replaced = {(code, member) for f in findings for code, member in f.data.get("replaces", ())}
    return [f for f in findings if (f.code, f.method) not in replaced]


def model_effects(ctx: CheckContext, model: ModelClass, own: list[Finding]) -> list[Effect]:
    return [*(f.effect for f in own if f.effect is not None), *ctx.engine_effects(model)]


def _verdict(ctx: CheckContext, model: ModelClass, own: list[Finding], by_code: dict[str, type[Rule]]) -> Verdict:
    from eagle3lint.model.models import TARGET

    if model.kind != TARGET:
        return Verdict(NOT_A_TARGET, model.reason)
    evidence, undecided = eagle3_evidence(ctx.index, model.ref, ctx.inner_choices)
    effects = model_effects(ctx, model, own)
    options = ctx.options
    decided = first_effect([e for e in effects if options.active(e.condition)])
    regression = any(getattr(by_code.get(f.code), "regression", False) for f in own if f.effect is decided)
    has_eagle3 = bool(evidence) or regression
    conditions = tuple(_conditions(ctx, effects, decided))
    outcome = decided.outcome if decided else WORKS
    proof = decided
    why = decided.cause if decided is not None else ""
    if decided is not None and decided.outcome in FAILS:
        if has_eagle3:
            return Verdict(BROKEN, f"{outcome}: {why}", evidence, outcome, proof, conditions)
        return Verdict(NOT_IMPLEMENTED, f"no EAGLE-3 code in the class, its bases or its inner models; {outcome}: {why}", "", outcome, proof, conditions)
    if decided is not None and decided.outcome == REFUSED:
        if has_eagle3:
            return Verdict(INCOMPLETE, f"refused: {why}", evidence, outcome, proof, conditions)
        return Verdict(NOT_IMPLEMENTED, f"no EAGLE-3 code in the class, its bases or its inner models; refused: {why}", "", outcome, proof, conditions)
    if decided is not None:  # unknown
        return Verdict(UNKNOWN, why, evidence, outcome, proof, conditions)
    if not evidence and undecided:
        return Verdict(UNKNOWN, "cannot tell whether it has EAGLE-3 code (a base outside the engine)", "", OUTCOME_UNKNOWN, None, conditions)
    if not evidence:
        return Verdict(NOT_IMPLEMENTED, "no EAGLE-3 code in the class, its bases or its inner models", "", OUTCOME_UNKNOWN, None, conditions)
    warnings = sorted({f.code for f in own if f.severity == "warning" and f.effect is None})
    tail = f"; warnings: {', '.join(warnings)}" if warnings else ""
    return Verdict(SUPPORTED, f"EAGLE-3 interface complete ({evidence}){tail}", evidence, WORKS, None, conditions)


def _conditions(ctx: CheckContext, effects: list[Effect], decided: Effect | None) -> list[ConditionalOutcome]:
    """The options under which the outcome would differ: each condition of an effect that does
    not act in this run, tried on its own. Refusals every target shares (a launch check of the
    engine) are said once per run, not on every row."""
    options = ctx.options
    current = decided.outcome if decided else WORKS
    shared = {e.condition for e in ctx.launch_effects()}
    out: list[ConditionalOutcome] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for effect in sorted(effects, key=lambda e: e.stage):
        condition = effect.condition
        if not condition or options.active(condition) or condition in seen or condition in shared:
            continue
        seen.add(condition)
        with_it = first_effect([e for e in effects if options.active(e.condition) or e.condition == condition])
        if with_it is None or with_it.outcome == current:
            continue
        out.append(ConditionalOutcome(condition, options.describe(condition), with_it.outcome, with_it.evidence, with_it.cause))
    return out


def status_counts(models: list[ModelClass]) -> dict[str, int]:
    """How many models have each status, in :data:`STATUSES` order (those with none: 0)."""
    counts = dict.fromkeys(STATUSES, 0)
    for model in models:
        if model.status in counts:
            counts[model.status] += 1
    return counts


def outcome_counts(models: list[ModelClass]) -> dict[str, int]:
    """How many target models have each outcome (classes that are not targets have none)."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for model in models:
        if model.outcome in counts:
            counts[model.outcome] += 1
    return counts


def without_outcome(reason: str, outcome: str | None) -> str:
    """A verdict's reason without the outcome it starts with (``crash: E3L001: ...``), for a
    line that has said the outcome already (``broken, crash: E3L001: ...``, not ``crash: crash:``)."""
    if outcome and reason.startswith(f"{outcome}: "):
        return reason[len(outcome) + 2 :]
    return reason
