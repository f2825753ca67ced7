"""The items of the release's draft class for this drafter: the guards its construction reaches
(a layer count it refuses, a required key), the width its fusion layer is built with against the
checkpoint's ``fc.weight``, and the drafter config keys that change what the drafter computes
(``[[drafter_key]]``) that the release never reads (the drafter then runs without them)."""

from __future__ import annotations

from pathlib import Path

from eagle3lint.verify.configs import (
    ACCEPTANCE,
    CRASH,
    NOTE,
    OK,
    PROBLEM,
    REFUSED,
    UNKNOWN,
    PreflightResult,
)
from eagle3lint.verify.model_files import describe
from eagle3lint.verify.pair.context import PairContext
from eagle3lint.verify.pair.draft_class import DraftInit, module_files, run_draft_init

CHECK = "draft-class"
MISSING_CHECK = "draft-class-keys"
KEYS_CHECK = "drafter-keys"


def check_draft_class(ctx: PairContext, result: PreflightResult) -> DraftInit | None:
    drafter, draft = ctx.drafter, ctx.draft_class
    if drafter is None or draft is None:
        return None
    init = run_draft_init(ctx.code, ctx.facts, draft.ref, drafter.raw)
    name = f"{draft.summary.name} ({ctx.where})"
    certain = [g for g in init.guards if g.certain]
    for guard in certain:
        source = {"kind": "release", "where": ctx.rel(guard.path), "line": guard.line, "what": guard.message}
        if guard.kind == "raise":
            result.add(CHECK, PROBLEM, f"{name} refuses this drafter while it is built: {guard.message!r} ({ctx.rel(guard.path)}:{guard.line})", REFUSED, evidence=[source])
        elif guard.kind == "error":
            result.add(CHECK, PROBLEM, f"{name} cannot be built for this drafter's config: {guard.message} ({ctx.rel(guard.path)}:{guard.line})", CRASH, evidence=[source])
        else:
            result.add(CHECK, PROBLEM, f"{name} fails an assertion while it is built: `{guard.message}` ({ctx.rel(guard.path)}:{guard.line})", CRASH, evidence=[source])
    if certain:
        return init
    if init.exhausted is not None:
        reason, path, line = init.exhausted
        result.add(
            CHECK, UNKNOWN, f"{name}: the evaluation of its construction stopped at {ctx.rel(path)}:{line}: {reason}",
            decides=f"what {ctx.rel(path)}:{line} builds for this config (the release's code, read by a person)",
        )
        return init
    fc = ctx.tensors.find(f"{ctx.facts.fc_attribute}.weight") if ctx.tensors is not None else None
    if init.fc_width is not None and init.fc_where is not None:
        where = f"{ctx.rel(init.fc_where[0])}:{init.fc_where[1]}"
        evidence = [{"kind": "release", "where": ctx.rel(init.fc_where[0]), "line": init.fc_where[1], "what": f"builds {ctx.facts.fc_attribute} for {init.fc_width} inputs"}]
        if fc is not None and len(fc.shape) == 2 and fc.shape[1] != init.fc_width:
            result.add(
                CHECK, PROBLEM,
                f"{name} builds its fusion layer for {init.fc_width} inputs ({where}) but the checkpoint's `{fc.name}` takes {fc.shape[1]}: weight loading fails",
                CRASH, evidence=[*evidence, {"kind": "tensor", "where": fc.name, "line": None}],
            )
            return init
        result.add(CHECK, OK, f"{name} builds for this drafter's config (its fusion layer takes {init.fc_width} inputs, {where})", evidence=evidence)
    else:
        result.add(CHECK, OK, f"{name} builds for this drafter's config; no guard of its construction refuses it")
    if init.missing:
        model_type = drafter.get("model_type")
        keys = ", ".join(f"`{k}` ({ctx.rel(p)}:{line})" for k, (p, line) in sorted(init.missing.items()))
        result.add(
            MISSING_CHECK, NOTE,
            f"{name} reads keys the drafter's config.json lacks, without a default of its own: {keys}; the transformers "
            f"config class of model_type {describe(model_type)} gives them (its default), or the build fails (an AttributeError)",
            evidence=[{"kind": "release", "where": ctx.rel(p), "line": line, "what": f"reads `{k}`"} for k, (p, line) in sorted(init.missing.items())],
        )
    return init


def check_drafter_keys(ctx: PairContext, result: PreflightResult) -> None:
    drafter, draft = ctx.drafter, ctx.draft_class
    if drafter is None or draft is None:
        return
    texts = release_texts(ctx)
    for key in ctx.drafter_keys:
        value = drafter.get(key.name)
        if value is None or value == key.default:
            continue
        config = {"kind": "config", "where": f"config.json: {key.name}", "line": None}
        reader = next((path for path, text in texts if f'"{key.leaf}"' in text or f"'{key.leaf}'" in text or f".{key.leaf}" in text), None)
        if reader is not None:
            result.add(KEYS_CHECK, OK, f"`{key.name}: {describe(value)}` ({key.effect}) is read by {ctx.where} ({ctx.rel(reader)})", evidence=[config, {"kind": "release", "where": ctx.rel(reader), "line": None}])
            continue
        since = dict(key.read_since).get(ctx.engine.name)
        elsewhere = f"; {ctx.engine.name} {since} and later read it" if since else ""
        impact = ACCEPTANCE if key.outcome == "silent" else CRASH
        result.add(
            KEYS_CHECK, PROBLEM,
            f"`{key.name}: {describe(value)}` ({key.effect}) is never read by {ctx.where} (not in its draft class's files nor its runner's): "
            f"the drafter runs without it{elsewhere} ({key.reference})",
            impact, evidence=[config, {"kind": "reference", "where": key.reference, "line": None}],
        )


def release_texts(ctx: PairContext) -> list[tuple[Path, str]]:
    """The files that may read a drafter's config: its draft class's (with its bases' and the
    modules it imports from) and the runner's."""
    paths: list[Path] = []
    if ctx.draft_class is not None:
        paths.extend(module_files(ctx.code, ctx.draft_class.ref, ctx.index, imports=True))
    for rel in ctx.facts.files_for(ctx.launch.runner):
        paths.extend(ctx.code.files(rel))
    out = []
    for path in dict.fromkeys(paths):
        text = ctx.code.text(path)
        if text is not None:
            out.append((path, text))
    return out
