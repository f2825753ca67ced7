"""One verdict per model class, from the rules' findings and the EAGLE-3 code the class has.

* ``supported``: it has EAGLE-3 code (its MRO, or an inner model it holds) and nothing wrong.
* ``broken``: it has EAGLE-3 code (implements, inherits, declares or wraps part of the path) and
  an error: the engine would crash, or the drafter would get the wrong hidden states.
* ``not-implemented``: no EAGLE-3 code anywhere in it; the engine refuses it. Its member
  findings are one cause, reported once as information (E3L020), never as errors.
* ``unknown``: something the engine needs cannot be proven present or absent statically.
* ``not-a-target``: draft heads, embedding, reward, encoder-only models.

What counts as EAGLE-3 code is rule-pack data (``[verdict]`` in ``rules/<engine>.toml``): the
members only EAGLE-3 uses and the attributes of the hidden-state capture.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle3lint.checks.base import Rule
    from eagle3lint.checks.context import CheckContext
    from eagle3lint.findings import Finding
    from eagle3lint.index import ClassRef, ProjectIndex
    from eagle3lint.models import ModelClass

SUPPORTED = "supported"
BROKEN = "broken"
NOT_IMPLEMENTED = "not-implemented"
UNKNOWN = "unknown"
NOT_A_TARGET = "not-a-target"
STATUSES = (SUPPORTED, BROKEN, NOT_IMPLEMENTED, UNKNOWN, NOT_A_TARGET)

_MAX_DEPTH = 3


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str
    # Why the class counts as having EAGLE-3 code ("" when it has none).
    evidence: str = ""


def model_key(model: ModelClass) -> tuple[str, str | None]:
    return (f"{model.ref.module}.{model.ref.qualname}", model.variant)


def finding_key(finding: Finding) -> tuple[str, str | None]:
    return (finding.qualname, finding.variant)


InnerChoices = Callable[["ClassRef"], list[tuple[str, list["ClassRef"]]]]


def eagle3_evidence(index: ProjectIndex, ref: ClassRef, inner_choices: InnerChoices | None = None, _depth: int = 0, _seen: frozenset[ClassRef] = frozenset()) -> tuple[str, bool]:
    """The first piece of EAGLE-3 code found for ``ref`` (its MRO, then the inner models it may
    hold, as ``inner_choices`` gives them), in words, "" when there is none; and whether a
    lookup could not tell (a base outside the engine)."""
    from eagle3lint.models import inner_model_choices

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
    """The verdict of every checked model, and the findings without the member gaps of models
    that do not implement EAGLE-3 (E3L020 stands for them, once)."""
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
        own = _standing(by_model.get(key, []))
        verdict = _verdict(ctx, model, own, by_code)
        verdicts[key] = verdict
        if verdict.status == NOT_IMPLEMENTED:
            dropped.update(id(f) for f in own if getattr(by_code.get(f.code), "member_gap", False))
    for model in ctx.models:
        verdict = verdicts[model_key(model)]
        model.status, model.status_reason = verdict.status, verdict.reason
    return [f for f in findings if id(f) not in dropped], verdicts


def _standing(findings: list[Finding]) -> list[Finding]:
    """The findings of one model without those another stands for (``data["replaces"]``: vLLM's
    one-line-away finding stands for the member gaps the protocol's defaults fill)."""
    replaced = {(code, member) for f in findings for code, member in f.data.get("replaces", ())}
    return [f for f in findings if (f.code, f.method) not in replaced]


def _verdict(ctx: CheckContext, model: ModelClass, own: list[Finding], by_code: dict[str, type[Rule]]) -> Verdict:
    from eagle3lint.models import TARGET

    if model.kind != TARGET:
        return Verdict(NOT_A_TARGET, model.reason)
    errors = [f for f in own if f.severity == "error"]
    unprovable = [f for f in own if getattr(by_code.get(f.code), "unprovable", False)]
    evidence, undecided = eagle3_evidence(ctx.index, model.ref, ctx.inner_choices)
    codes = ", ".join(sorted({f.code for f in errors}))
    if errors:
        if evidence or any(getattr(by_code.get(f.code), "regression", False) for f in errors):
            return Verdict(BROKEN, f"{codes}: {_first_line(errors[0].message)}", evidence)
        return Verdict(NOT_IMPLEMENTED, "no EAGLE-3 code in the class, its bases or its inner models")
    if unprovable:
        return Verdict(UNKNOWN, f"{unprovable[0].code}: {_first_line(unprovable[0].message)}", evidence)
    if not evidence and undecided:
        return Verdict(UNKNOWN, "cannot tell whether it has EAGLE-3 code (a base outside the engine)")
    if not evidence:
        return Verdict(NOT_IMPLEMENTED, "no EAGLE-3 code in the class, its bases or its inner models")
    warnings = sorted({f.code for f in own if f.severity == "warning"})
    tail = f"; warnings: {', '.join(warnings)}" if warnings else ""
    return Verdict(SUPPORTED, f"EAGLE-3 interface complete ({evidence}){tail}", evidence)


def _first_line(message: str) -> str:
    return message.split("\n", 1)[0]


def status_counts(models: list[ModelClass]) -> dict[str, int]:
    """How many models have each status, in :data:`STATUSES` order (those with none: 0)."""
    counts = dict.fromkeys(STATUSES, 0)
    for model in models:
        if model.status in counts:
            counts[model.status] += 1
    return counts
