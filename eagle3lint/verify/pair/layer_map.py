"""Which hidden states the drafter reads, at this release, for this pair: the ids its config
names (in a key the release's runner reads, else the release's default), the target's setter
run on them, the decoder's capture, and the concatenation the drafter receives (in layer
order). Each id is said as "drafter id k reads layer L's output", and compared with what the
drafter was trained on: a different state is a silent failure; a count the drafter's fusion layer
cannot take is a crash, or silent where the release's draft forward skips the fusion layer for
states as wide as its own (``width_guard``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eagle3lint.verify.configs import ACCEPTANCE, CRASH, OK, PROBLEM, UNKNOWN, PreflightResult
from eagle3lint.verify.model_files import describe
from eagle3lint.verify.pair.capture_map import CaptureRule, capture_rule, describe_state
from eagle3lint.verify.pair.context import PairContext
from eagle3lint.verify.pair.draft_class import width_guard
from eagle3lint.verify.pair.drafter import (
    MAX_IDS,
    DrafterIds,
    framework_defaults,
    layer_ids,
    read_drafter_ids,
)
from eagle3lint.verify.pair.evaluate import Unresolved
from eagle3lint.verify.pair.id_keys import KeyRead, keys_read
from eagle3lint.verify.pair.setter import SetterResult, default_ids, run_setter

CHECK = "layer-ids"


@dataclass
class LayerRow:
    """One of the drafter's inputs: the id it names, the state it was trained on, what it reads."""

    position: int
    drafter_id: int | None
    trained: int | None
    reads: int | None
    # The release's lines that decide what it reads ("file:line"), and why it was trained on it.
    captured_by: list[str] = field(default_factory=list)
    trained_because: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "drafter_id": self.drafter_id,
            "trained_on": describe_state(self.trained) if self.trained is not None else None,
            "reads": describe_state(self.reads) if self.reads is not None else None,
            "captured_by": self.captured_by,
            "trained_because": self.trained_because,
        }


@dataclass
class LayerMap:
    rows: list[LayerRow] = field(default_factory=list)
    passed: list[int] | None = None  # the ids the runner hands the setter (None: the default)
    received: list[int] = field(default_factory=list)  # the states the drafter receives, in order
    # What the release's default ids would give (None where that is not derived).
    default_received: list[int] | None = None


def check_layer_ids(ctx: PairContext, result: PreflightResult) -> LayerMap | None:
    """Add the layer-id item(s) to ``result``; the map, when it could be derived."""
    target, drafter = ctx.target, ctx.drafter
    if target is None or drafter is None or ctx.target_class is None:
        return None
    n = target.num_hidden_layers
    if n is None:
        result.add(CHECK, UNKNOWN, "the target's num_hidden_layers is unknown", decides="the target's config.json num_hidden_layers")
        return None
    ids = read_drafter_ids(drafter, ctx.frameworks, ctx.meaning_override, n)
    if ids.invalid:
        result.add(CHECK, PROBLEM, f"{drafter.path}/config.json: {ids.invalid}", CRASH, evidence=[_config(ids.key or "")])
        return None
    if _aux_off(drafter) and _reads_flag(ctx, "use_aux_hidden_state"):
        result.add(CHECK, OK, "the drafter sets eagle_config.use_aux_hidden_state false: it takes the target's final hidden state, no aux layers", evidence=[_config("eagle_config.use_aux_hidden_state")])
        return None
    reads = keys_read(ctx.code, ctx.facts, ctx.launch.runner)
    unreadable = _unreadable_read(drafter, reads)
    if unreadable is not None:
        # The value the runner reads is no list of ids, whichever other key holds valid ones.
        value = drafter.get(unreadable.key)
        result.add(
            CHECK, PROBLEM,
            f"{drafter.path}/config.json: `{unreadable.key}` is {describe(value)}, not a list of at most {MAX_IDS} integers "
            f"({ctx.where} reads it: {ctx.rel(unreadable.path)}:{unreadable.line})",
            CRASH, evidence=[_config(unreadable.key)],
        )
        return None
    passed, read = _passed_ids(drafter, reads)
    try:
        setter, rule, values = _capture(ctx, passed, n)
    except Unresolved as problem:
        # The place the reading stopped at, as a file:line to open (unless the reason names it).
        place = f"{ctx.rel(problem.path)}:{problem.line}" if problem.path and problem.line else ""
        line = f" ({place})" if place and place not in problem.reason else ""
        result.add(
            CHECK, UNKNOWN,
            f"which layers {ctx.target_class.summary.name} captures on {ctx.where} is not derived: {problem.reason}{line}",
            decides=f"{problem.reason} in the release's code",
        )
        return None
    received = sorted({s for s in (rule.state(v, n) for v in values) if s is not None})
    unreached = sorted(v for v in values if rule.state(v, n) is None)
    layer_map = LayerMap(passed=passed, received=received, default_received=received if passed is None else _default_received(ctx, n))
    evidence = _evidence(ctx, setter, rule, read, reads)
    trained = ids.states()
    _rows(layer_map, ids, trained, received)
    captured_by = [f"{e['where']}:{e['line']}" for e in evidence if e.get("kind") == "release" and e.get("line")]
    for row in layer_map.rows:
        row.captured_by = captured_by
        row.trained_because = ids.meaning_from if row.trained is not None else ""
    source = _source(ctx, ids, passed, read, reads)
    if trained is None:
        want = _fused_states(ctx, target.hidden_size)
        if want is not None and len(received) != want:
            # Whatever the drafter was trained on: a shallow target's ids collide (the capture
            # records each layer once), and the fusion layer gets fewer states than it takes.
            impact, why = _width(ctx, len(received), want, target.hidden_size)
            said = "; ".join(_row_text(r) for r in layer_map.rows)
            result.add(
                CHECK, UNKNOWN if impact == UNKNOWN_IMPACT else PROBLEM,
                f"{source}: over the target's {n} layers they name {len(received)} distinct states, the drafter fuses {want}: {why}. {said}",
                impact if impact != UNKNOWN_IMPACT else None, evidence=evidence, layers=[r.to_json() for r in layer_map.rows],
                decides="what the release's runner does when the target returns no aux states" if impact == UNKNOWN_IMPACT else "",
            )
            return layer_map
        _untrained(ctx, result, layer_map, source, n, evidence)
        return layer_map
    said = "; ".join(_row_text(r) for r in layer_map.rows)
    convention = f" (what the ids mean: {ids.meaning_from})"
    if len(received) != len(trained):
        impact, why = _width(ctx, len(received), len(trained), target.hidden_size)
        lost = f"; ids the forward never reaches: {_capture_text(unreached)}" if unreached else ""
        result.add(
            CHECK, UNKNOWN if impact == UNKNOWN_IMPACT else PROBLEM,
            f"{source}: the drafter was trained on {len(trained)} states but receives {len(received)}{lost}: {why}. {said}{convention}",
            impact if impact != UNKNOWN_IMPACT else None, evidence=evidence, layers=[r.to_json() for r in layer_map.rows],
            decides="what the release's runner does when the target returns no aux states" if impact == UNKNOWN_IMPACT else "",
        )
    elif received != trained:
        result.add(
            CHECK, PROBLEM,
            f"{source}: the drafter gets other hidden states than it was trained on, so almost every draft is rejected: {said}{convention}",
            ACCEPTANCE, evidence=evidence, layers=[r.to_json() for r in layer_map.rows],
        )
    else:
        result.add(CHECK, OK, f"{source}: {said}{convention}", evidence=evidence, layers=[r.to_json() for r in layer_map.rows])
    return layer_map


# ---- the ids the runner passes ------------------------------------------------------------------


def _passed_ids(drafter: Any, reads: list[KeyRead]) -> tuple[list[int] | None, KeyRead | None]:
    for read in reads:
        value = drafter.get(read.key)
        ids = layer_ids(value)
        if ids:  # the runners treat an empty list as "none given"
            return ids, read
    return None, None


def _unreadable_read(drafter: Any, reads: list[KeyRead]) -> KeyRead | None:
    """The first key the runner reads, in its order, whose value is present but no list of
    ids (up to the key whose ids it takes)."""
    for read in reads:
        value = drafter.get(read.key)
        if value is None:
            continue
        ids = layer_ids(value)
        if ids is None:
            return read
        if ids:
            return None
    return None


def _aux_off(drafter: Any) -> bool:
    return drafter.get("eagle_config.use_aux_hidden_state") is False


def _reads_flag(ctx: PairContext, leaf: str) -> bool:
    """Whether the release reads a drafter flag (its runner's or its draft class's files)."""
    from eagle3lint.verify.pair.draft_checks import release_texts

    return any(f'"{leaf}"' in text for _path, text in release_texts(ctx))


def _source(ctx: PairContext, ids: DrafterIds, passed: list[int] | None, read: KeyRead | None, reads: list[KeyRead]) -> str:
    runner = f" (runner {ctx.launch.runner})" if ctx.launch.runner else ""
    if passed is not None and read is not None:
        return f"{ctx.where}{runner} reads `{read.key}` {passed} ({ctx.rel(read.path)}:{read.line})"
    known = ", ".join(f"`{r.key}`" for r in reads) or "no drafter key"
    if ids.key is not None:
        return f"{ctx.where}{runner} reads {known}, not the drafter's `{ids.key}` {ids.ids}: it uses its default ids"
    return f"{ctx.where}{runner} reads {known} and the drafter names none: it uses its default ids"


def _capture(ctx: PairContext, passed: list[int] | None, n: int) -> tuple[SetterResult, CaptureRule, set[int]]:
    """The setter run on the ids the runner passes (or on the release's default), and the
    decoder's capture of what it recorded."""
    assert ctx.target_class is not None
    pp = ctx.launch.pp > 1
    ids = passed
    if ids is None and ctx.facts.default_from == "getter":
        ids, _where = default_ids(ctx.code, ctx.analysis, ctx.target_class.ref, ctx.facts, n, pp)
    setter = run_setter(ctx.code, ctx.analysis, ctx.target_class.ref, ctx.facts, ids, n, pp)
    rule, values = _rule(ctx, setter, n)
    return setter, rule, values


def _default_received(ctx: PairContext, n: int) -> list[int] | None:
    try:
        _setter, rule, values = _capture(ctx, None, n)
    except Unresolved:
        return None
    return sorted({s for s in (rule.state(v, n) for v in values) if s is not None})


def _rule(ctx: PairContext, setter: SetterResult, n: int) -> tuple[CaptureRule, set[int]]:
    """The capture the decoder reads of what the setter recorded (a setter may record both a
    list and per-layer markers: the one its forward reads counts)."""
    captured = setter.captured()
    if not captured:
        raise Unresolved(f"{setter.setter.text if setter.setter else 'the setter'} records no capture state")
    found: list[tuple[CaptureRule, set[int]]] = []
    problems: list[Unresolved] = []
    collect = ctx.engine.pack.capture.collect_calls if ctx.engine.pack.capture else frozenset()
    for path, name, values in captured:
        holders = ctx.code.holders(ctx.analysis, ctx.target_class.ref, path) if path and ctx.target_class else [ctx.target_class.ref] if ctx.target_class else None
        if not holders:
            problems.append(Unresolved(f"what `self.{'.'.join(path)}` holds"))
            continue
        for holder in holders:
            try:
                found.append((capture_rule(ctx.code, holder, name, name in ctx.facts.markers, collect, n), values))
            except Unresolved as problem:
                problems.append(problem)
    if not found:
        raise problems[0]
    first_rule, first_values = found[0]
    states = {tuple(sorted(s for s in (r.state(v, n) for v in vals) if s is not None)) for r, vals in found}
    if len(states) > 1:
        raise Unresolved("the classes the setter reaches capture different layers")
    return first_rule, first_values


# ---- rows and messages ----------------------------------------------------------------------


def _rows(layer_map: LayerMap, ids: DrafterIds, trained: list[int] | None, received: list[int]) -> None:
    count = max(len(trained or []), len(received))
    for position in range(count):
        layer_map.rows.append(
            LayerRow(
                position,
                ids.ids[position] if ids.ids is not None and position < len(ids.ids) else None,
                trained[position] if trained is not None and position < len(trained) else None,
                received[position] if position < len(received) else None,
            )
        )


def _row_text(row: LayerRow) -> str:
    reads = describe_state(row.reads) if row.reads is not None else "nothing (no state left for it)"
    name = f"drafter id {row.drafter_id}" if row.drafter_id is not None else f"drafter input {row.position}"
    if row.trained is not None and row.trained != row.reads:
        return f"{name} reads {reads} but was trained on {describe_state(row.trained)}"
    return f"{name} reads {reads}"


def _capture_text(values: list[int]) -> str:
    shown = ", ".join(f"capture index {v}" for v in values[:8])
    return shown + (f" and {len(values) - 8} more" if len(values) > 8 else "")


def _width(ctx: PairContext, got: int, want: int, target_hidden: int | None) -> tuple[str, str]:
    """What the release's draft model does with ``got`` aux states when built for ``want`` (the
    width its fusion layer is built with, where the draft class says it)."""
    init = ctx.extra.get("draft_init")
    if init is not None and init.fc_width and target_hidden and init.fc_width % target_hidden == 0:
        want = init.fc_width // target_hidden
    if got == 0:
        return UNKNOWN_IMPACT, "no aux state at all reaches the drafter"
    guard = width_guard(ctx.code, ctx.draft_class.ref, ctx.index, ctx.facts) if ctx.draft_class is not None else None
    drafter_hidden = ctx.drafter.hidden_size if ctx.drafter is not None else None
    if guard is not None and target_hidden is not None and drafter_hidden is not None and got * target_hidden == drafter_hidden:
        return ACCEPTANCE, (
            f"their width equals the drafter's hidden size, so its forward skips the fusion layer "
            f"({ctx.rel(guard[0])}:{guard[1]}) and runs on one state it was not trained on"
        )
    return CRASH, f"the fusion layer takes {want} states: a shape error (mat1 and mat2 shapes cannot be multiplied)"


def _fused_states(ctx: PairContext, target_hidden: int | None) -> int | None:
    """How many states the drafter's fusion layer takes: its width over the target's hidden size,
    as the release's draft class builds it (None where the release does not say)."""
    init = ctx.extra.get("draft_init")
    if init is not None and init.fc_width and target_hidden and init.fc_width % target_hidden == 0:
        return int(init.fc_width // target_hidden)
    return None


# An impact for a width problem the release's code does not decide.
UNKNOWN_IMPACT = "unknown"


def _untrained(ctx: PairContext, result: PreflightResult, layer_map: LayerMap, source: str, n: int, evidence: list[dict[str, Any]]) -> None:
    """The drafter's config does not say its layers: what it reads, and what would decide it."""
    reads = ", ".join(describe_state(s) for s in layer_map.received)
    defaults = framework_defaults(ctx.frameworks, n)
    shared = {tuple(states) for _, states in defaults}
    if len(shared) == 1:
        # Every trainer eagle3lint knows defaults to the same states for this depth: a drafter
        # whose config names none was, as far as its files tell, trained on them.
        states = list(next(iter(shared)))
        names = ", ".join(f.name for f, _ in defaults)
        default = ", ".join(describe_state(s) for s in states)
        rows = [r.to_json() for r in layer_map.rows]
        if states == layer_map.received:
            result.add(
                CHECK, OK,
                f"{source}: the drafter reads {reads}, the default of every trainer known here ({names}) for a {n}-layer "
                "target; its config names no ids (acceptance depends on it having been trained on that default)",
                evidence=evidence, layers=rows,
            )
        else:
            result.add(
                CHECK, PROBLEM,
                f"{source}: the drafter reads {reads}, but every trainer known here ({names}) defaults to {default} for a "
                f"{n}-layer target, and its config names no other ids: a drafter trained on its trainer's default gets "
                "other hidden states, so almost every draft is rejected",
                ACCEPTANCE, evidence=evidence, layers=rows,
                decides="which target layers the drafter was trained on (its training script or model card)",
            )
        return
    result.add(
        CHECK, UNKNOWN,
        f"{source}: the drafter reads {reads}; its config does not record which layers it was trained on",
        decides="which target layers the drafter was trained on", evidence=evidence, layers=[r.to_json() for r in layer_map.rows],
    )


def _config(key: str) -> dict[str, Any]:
    return {"kind": "config", "where": f"config.json: {key}", "line": None}


def _evidence(ctx: PairContext, setter: SetterResult, rule: CaptureRule, read: KeyRead | None, reads: list[KeyRead]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if read is not None:
        out.append({"kind": "config", "where": f"config.json: {read.key}", "line": None})
        out.append({"kind": "release", "where": ctx.rel(read.path), "line": read.line, "what": f"the runner reads `{read.key}`"})
    if setter.setter is not None:
        out.append({"kind": "release", "where": ctx.rel(setter.setter.path), "line": setter.setter.line, "what": setter.setter.text})
    for branch in setter.branches:
        out.append({"kind": "release", "where": ctx.rel(branch.path), "line": branch.line, "what": branch.text})
    for (_path, name), where in setter.where.items():
        out.append({"kind": "release", "where": ctx.rel(where.path), "line": where.line, "what": f"writes `{name}`"})
    out.append({"kind": "release", "where": ctx.rel(rule.path), "line": rule.loop_line, "what": f"captures {rule.how}"})
    for value, (state, line) in sorted(rule.extra.items()):
        out.append({"kind": "release", "where": ctx.rel(rule.path), "line": line, "what": f"capture index {value} is {describe_state(state)}"})
    for skipped in setter.skipped:
        out.append({"kind": "release", "where": ctx.rel(skipped.path), "line": skipped.line, "what": f"not followed: {skipped.text}"})
    return out
