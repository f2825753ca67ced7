"""What every rule sees: the index, the contract and the models, plus shared member analysis."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from eagle3lint.common.findings import Finding, Related
from eagle3lint.common.outcomes import (
    CRASH,
    REFUSED,
    STAGE_LAUNCH,
    WORKS,
    Effect,
    Verdict,
    member_stage,
)
from eagle3lint.model.contract_types import Contract, ContractSite, MemberContract
from eagle3lint.model.launch_options import EngineOptions
from eagle3lint.model.models import DRAFT, EAGLE3_DRAFT, TARGET, ModelClass, inner_model_choices
from eagle3lint.source.index import ClassRef, FunctionRef, MemberLookup, ProjectIndex
from eagle3lint.source.rulepack import RulePack
from eagle3lint.source.suppressions import Suppression

T = TypeVar("T")

if TYPE_CHECKING:
    from eagle3lint.model.inference import InnerModelInference


@dataclass
class MemberState:
    """How one model class stands with one interface member."""

    status: str  # "present" | "missing" | "unknown" | "delegated" | "delegation-gap"
    lookup: MemberLookup
    inner_attr: str | None = None
    inner_class: ClassRef | None = None
    note: str = ""
    # A delegation gap to an attribute ``__init__`` fills by config (one class per branch): every
    # class it may hold, and those of them that lack the member too.
    choices: list[ClassRef] = field(default_factory=list)
    lacking: list[ClassRef] = field(default_factory=list)


@dataclass
class CheckContext:
    index: ProjectIndex
    contract: Contract
    models: list[ModelClass]
    notes: list[str] = field(default_factory=list)
    # Filled once suppressions are applied: path -> comments that silenced nothing.
    unused_suppressions: dict[str, list[Suppression]] = field(default_factory=dict)
    # Filled once every rule ran: each checked model's verdict, by (qualname, variant).
    verdicts: dict[tuple[str, str | None], Verdict] = field(default_factory=dict)
    # The launch configuration the run assumes (``--engine-option``, ``engine-options``).
    options: EngineOptions = field(default_factory=EngineOptions)
    _states: dict[tuple[ClassRef, str], MemberState] = field(default_factory=dict)
    _shared: dict[str, Any] = field(default_factory=dict)
    _inference: InnerModelInference | None = None

    @property
    def pack(self) -> RulePack:
        return self.index.engine.pack

    def shared(self, key: str, make: Callable[[], T]) -> T:
        """An analysis the rules share within one run (built by ``make`` the first time)."""
        if key not in self._shared:
            self._shared[key] = make()
        value: T = self._shared[key]
        return value

    # ---- requirements --------------------------------------------------------------------
    def required_sites(self, model: ModelClass, member: MemberContract) -> list[ContractSite]:
        if model.kind == TARGET:
            return member.fatal_sites("target", "eagle3")
        if model.kind == EAGLE3_DRAFT:
            return member.fatal_sites("draft", "eagle3")
        if model.kind == DRAFT:
            return member.fatal_sites("draft", "not-eagle3")
        return []

    def requirements(self, model: ModelClass, chains: bool = False) -> list[tuple[MemberContract, list[ContractSite]]]:
        """The members the engine needs of ``model`` with their fatal sites; ``chains``: the
        attribute chains (``model.embed_tokens``) instead of the members."""
        out = []
        for member in self.contract.members.values():
            spec = self.pack.members.get(member.name)
            if not member.known or (spec is not None and spec.is_chain) != chains:
                continue
            sites = self.required_sites(model, member)
            if sites:
                out.append((member, sites))
        return out

    def chain_state(self, ref: ClassRef, chain: str, _depth: int = 0, every: bool = False) -> tuple[str, ClassRef, str]:
        """How ``ref`` stands with an attribute chain: ("present" | "missing" | "unknown", the
        class where it stops, the link that class lacks). Unknown wherever a link is a property,
        a method's result, a ``__getattr__`` or a class the index cannot name.

        Where ``__init__`` picks what a link holds by config (one class per branch), the chain
        is missing when one of them lacks the rest; with ``every``, only when all of them do
        (some of them lacking it is then unknown: which one a launch builds is not known)."""
        link, _, rest = chain.partition(".")
        lookup = self.index.lookup(ref, link)
        if lookup.status == "missing":
            return "missing", ref, link
        if lookup.status != "found" or lookup.kind not in ("instance_attr", "class_attr"):
            return "unknown", ref, link
        if not rest:
            return "present", ref, link
        held = self.index.attribute_classes(ref, link)
        if not held or not all(isinstance(h, ClassRef) for h in held) or _depth > 4:
            return "unknown", ref, link
        states = [self.chain_state(h, rest, _depth + 1, every) for h in dict.fromkeys(held) if isinstance(h, ClassRef)]
        missing = next((s for s in states if s[0] == "missing"), None)
        if every and missing is not None and any(s[0] != "missing" for s in states):
            return "unknown", ref, link
        return missing or next((s for s in states if s[0] == "unknown"), states[0])

    # ---- member analysis -----------------------------------------------------------------
    def state(self, ref: ClassRef, member: str, _depth: int = 0) -> MemberState:
        key = (ref, member)
        cached = self._states.get(key)
        if cached is not None:
            return cached
        lookup = self.index.lookup(ref, member)
        if lookup.status == "found":
            state = self._check_delegation(ref, member, lookup, _depth)
        elif lookup.status == "getattr":
            state = self._through_getattr(ref, member, lookup, _depth)
        elif lookup.status == "unknown":
            state = MemberState("unknown", lookup, note=lookup.reason)
        else:
            state = MemberState("missing", lookup)
            if _depth < 4:
                for attr, choices in self.inner_choices(ref):
                    having = [c for c in choices if self.state(c, member, _depth + 1).status in ("present", "delegated")]
                    if having:
                        lacking = [c for c in choices if c not in having]
                        state = MemberState("delegation-gap", lookup, attr, having[0], choices=choices, lacking=lacking)
                        break
        self._states[key] = state
        return state

    def inner_choices(self, ref: ClassRef) -> list[tuple[str, list[ClassRef]]]:
        """Inner-model attributes with every class each may hold, the index's first, then what
        astroid infers for factories the index cannot name."""
        choices = inner_model_choices(self.index, ref)
        inferred: dict[str, list[ClassRef]] = {}
        for attr, held in self._inferred_inner_models(ref):
            inferred.setdefault(attr, []).append(held)
        return [*choices, *inferred.items()]

    def _inferred_inner_models(self, ref: ClassRef) -> list[tuple[str, ClassRef]]:
        """Inner-model attributes built by an engine function (a factory) whose return the index
        cannot name, as astroid infers it. Asked only when a member is missing (the answer
        decides between E3L001 and E3L004), and only for factories: astroid reads whole import
        chains, far slower than the index."""
        preferred = self.pack.inner_model_attributes
        unresolved: list[str] = []
        for current in self.index.mro(ref).classes:
            cls = self.index.class_summary(current)
            if cls is None:
                continue
            for attr in preferred:
                entry = cls.instance_attrs.get(attr)
                if entry is None or not entry.constructions or attr in unresolved:
                    continue
                held = self.index.attribute_classes(ref, attr)
                if not any(isinstance(h, ClassRef) for h in held) and any(isinstance(h, FunctionRef) for h in held):
                    unresolved.append(attr)
        if not unresolved:
            return []
        if self._inference is None:
            from eagle3lint.model.inference import InnerModelInference

            self._inference = InnerModelInference(self.index)
        found: list[tuple[str, ClassRef]] = []
        for attr in unresolved:
            owner = next(
                (c for c in self.index.mro(ref).classes if attr in getattr(self.index.class_summary(c), "instance_attrs", {})),
                ref,
            )
            found.extend((attr, held) for held in self._inference.held_classes(owner, attr) if held != ref)
        return found

    def _through_getattr(self, ref: ClassRef, member: str, lookup: MemberLookup, depth: int) -> MemberState:
        attr = lookup.via_getattr
        if attr is None or depth >= 4:
            return MemberState("unknown", lookup, note="__getattr__ forwards somewhere eagle3lint cannot follow")
        held = list(dict.fromkeys(h for h in self.index.attribute_classes(ref, attr) if isinstance(h, ClassRef)))
        if not held:
            return MemberState("unknown", lookup, attr, note=f"__getattr__ forwards to self.{attr}, whose class is not known")
        return self._forwarded(lookup, attr, held, member, depth, "forwarded by __getattr__ to a class that lacks it")

    def _forwarded(self, lookup: MemberLookup, attr: str, held: list[ClassRef], member: str, depth: int, gap_note: str) -> MemberState:
        """How a class stands that forwards ``member`` to ``self.<attr>``, which holds one of
        ``held`` (several where ``__init__`` picks it by config): delegated when every choice
        has it, a gap naming the choices that lack it (all of them, or some), else unknown."""
        states = {h: self.state(h, member, depth + 1) for h in held}
        having = [h for h in held if states[h].status in ("present", "delegated")]
        lacking = [h for h in held if states[h].status in ("missing", "delegation-gap")]
        if not lacking and len(having) == len(held):
            return MemberState("delegated", lookup, attr, held[0])
        if not lacking:
            unknown = next(states[h] for h in held if h not in having)
            note = unknown.note if len(held) == 1 else f"`self.{attr}` is picked by config; for {_names(held, having)} it cannot be told: {unknown.note}"
            return MemberState("unknown", lookup, attr, held[0], note=note)
        if len(held) == 1:
            return MemberState("delegation-gap", lookup, attr, held[0], note=gap_note)
        inner = having[0] if having else lacking[0]
        return MemberState("delegation-gap", lookup, attr, inner, note=gap_note, choices=held, lacking=lacking)

    def _check_delegation(self, ref: ClassRef, member: str, lookup: MemberLookup, depth: int) -> MemberState:
        """A method whose body forwards to ``self.<attr>.<member>`` is only as good as the
        class of that attribute."""
        fn = lookup.function
        if fn is None or lookup.owner is None or depth >= 4:
            return MemberState("present", lookup)
        for attr, called in fn.self_chains:
            if called != member or attr.endswith("()"):
                continue
            if (attr, member) in fn.probed_chains:
                # ``if hasattr(self.model, m): self.model.m(...) else: ...``: absence is handled.
                continue
            held = list(dict.fromkeys(h for h in self.index.attribute_classes(ref, attr) if isinstance(h, ClassRef)))
            if not held:
                continue
            if len(held) == 1:
                inner_state = self.state(held[0], member, depth + 1)
                if inner_state.status == "missing":
                    return MemberState("delegation-gap", lookup, attr, held[0], note="delegates to a class that lacks it")
                return MemberState("delegated", lookup, attr, held[0])
            state = self._forwarded(lookup, attr, held, member, depth, "delegates to a class that lacks it")
            # The method itself is there: a choice that cannot be told does not make it unknown.
            return state if state.status == "delegation-gap" else MemberState("delegated", lookup, attr, held[0])
        return MemberState("present", lookup)

    # ---- outcomes -------------------------------------------------------------------------
    def gap_effect(self, members: list[str], sites: list[ContractSite], reason: str = "", code: str = "") -> Effect:
        """What lacking ``members`` does: the first the engine reaches (the rule pack lists them
        in that order) decides. A bare call of it anywhere (a runner, a plugin's proposer) is a
        crash (``AttributeError``); where every call is behind the engine's own check that
        raises, the engine refuses EAGLE-3 clearly."""
        order = self.start_up_order()
        first = min(members, key=lambda m: order.index(m) if m in order else len(order))
        reached = [s for s in sites if s.member == first and s.fatal] or [s for s in sites if s.fatal]
        bare = [s for s in reached if s.guard == "none"]
        chosen = bare or reached
        outcome = CRASH if bare else REFUSED if reached else WORKS
        evidence = self.related_for(chosen[:1])[0] if chosen else None
        position = order.index(first) if first in order else len(order)
        return Effect(outcome, member_stage(position), evidence, reason=reason or f"lacks `{first}`", code=code)

    def start_up_order(self) -> list[str]:
        """The interface members in the order the engine reaches them at start-up: the rule
        pack's, unless the adapter reads this release's own order (``_start_up_order``)."""
        return self.shared("start-up-order", self._start_up_order)

    def _start_up_order(self) -> list[str]:
        return list(self.pack.members)

    def engine_effects(self, model: ModelClass) -> list[Effect]:
        """What the engine does to a target besides its findings: the launch checks that refuse
        EAGLE-3 under an option (every target alike). Adapters add their own."""
        return list(self.launch_effects()) if model.kind == TARGET else []

    def launch_effects(self) -> list[Effect]:
        """The engine's launch checks that refuse EAGLE-3 under an option, as effects every
        target shares (said once per run, not on each model's row)."""
        return self.shared("launch-effects", self._launch_effects)

    def _launch_effects(self) -> list[Effect]:
        engine = self.index.engine
        effects = []
        for refusal in self.contract.launch_refusals:
            spec = self.pack.options.get(refusal.option)
            if spec is None:
                continue
            evidence = Related(str(engine.absolute(refusal.path)), refusal.line, f"the engine refuses the launch: {refusal.message}")
            effects.append(
                Effect(REFUSED, STAGE_LAUNCH, evidence, ((spec.name, spec.on_value()),), f"this release refuses EAGLE-3 with {spec.described_on()}")
            )
        return effects

    # ---- fixes ------------------------------------------------------------------------------
    def implementation_refusals(self, findings: list[Finding]) -> dict[int, str]:
        """For the E3L020 findings of models with no EAGLE-3 code: why the fix planner has no
        fix implementing EAGLE-3 in each (by ``id(finding)``); a finding left out gets one. An
        engine with a fix that implements EAGLE-3 answers in its own context, as its planner
        decides, so that the check offers a fix exactly where ``fix`` writes one."""
        return {id(finding): "no fix implements EAGLE-3 for this engine" for finding in findings}

    # ---- finding helpers ------------------------------------------------------------------
    def model_note(self, model: ModelClass) -> str:
        """What the engine says of the model besides its members, appended to its findings."""
        return ""

    def delegation_message(self, model: ModelClass, members: list[str], state: MemberState, sites: list[ContractSite]) -> str | None:
        """What a wrapper that lacks ``members`` its inner model has (E3L004) must be told, where
        the engine's contract makes it more than a missing forward (vLLM: the protocol); None
        for the plain message."""
        return None

    def gap_note(self, model: ModelClass, members: list[str]) -> str:
        """Why the engine refuses a model that lacks these members, beyond the members themselves
        (an engine whose check function vouches for them says which check fails); "" if nothing."""
        return ""

    def related_for(self, sites: list[ContractSite]) -> list[Related]:
        engine = self.index.engine
        return [
            Related(
                str(engine.absolute(site.path)),
                site.line,
                f"{site.receiver}.{site.member} in {site.function} ({site.describe_guard()})",
            )
            for site in sites
        ]

    def finding(
        self,
        rule: type,
        model: ModelClass,
        member: str,
        message: str,
        sites: list[ContractSite],
        severity: str | None = None,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
        data: dict[str, object] | None = None,
        effect: Effect | None = None,
        model_note: bool = True,
    ) -> Finding:
        """``model_note``: False where the message already says what the engine's note on the
        model would (vLLM's allow-list), so that it is not said twice."""
        return Finding(
            code=rule.code,  # type: ignore[attr-defined]
            rule=rule.name,  # type: ignore[attr-defined]
            severity=severity or rule.severity,  # type: ignore[attr-defined]
            path=path or model.path,
            line=line if line is not None else model.summary.lineno,
            column=column if column is not None else model.summary.col + 1,
            class_name=model.ref.qualname.rsplit(".", 1)[-1],
            qualname=f"{model.ref.module}.{model.ref.qualname}",
            method=member,
            message=message + (self.model_note(model) if model_note else ""),
            related=self.related_for(sites),
            data=data or {},
            variant=model.variant,
            effect=effect,
        )


def _names(held: list[ClassRef], having: list[ClassRef]) -> str:
    return ", ".join(f"`{h.qualname}`" for h in held if h not in having)


def severity_for(sites: list[ContractSite]) -> str:
    return "error" if any(s.fatal for s in sites) else "warning"


def guard_phrase(sites: list[ContractSite]) -> str:
    """How the engine meets the missing members at these call sites: bare calls (an opaque
    ``AttributeError``), its own check that refuses EAGLE-3 clearly, or, where the members
    differ, which is which (the one the engine reaches first decides the outcome)."""
    count = len(sites)
    where = f"{count} call site{'s' if count != 1 else ''}"
    bare = list(dict.fromkeys(s.member for s in sites if s.guard == "none"))
    checked = list(dict.fromkeys(s.member for s in sites if s.guard != "none" and s.member not in bare))
    if bare and checked:
        return (
            f"the engine checks for {_quoted(checked)} and refuses EAGLE-3 with its own error, and calls "
            f"{_quoted(bare)} bare (an AttributeError); {where}"
        )
    if bare:
        return f"unguarded: a bare AttributeError at start-up; {where}"
    return f"the engine checks for it and refuses EAGLE-3 with its own error; {where}"


def _quoted(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def role_phrase(model: ModelClass) -> str:
    return "target" if model.kind == TARGET else "draft"


__all__ = ["DRAFT", "EAGLE3_DRAFT", "TARGET", "CheckContext", "Finding", "MemberState"]
