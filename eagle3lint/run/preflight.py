"""Pre-flight: what can be known before a GPU is touched, for this target, this drafter, this
release and these launch options.

Reads the target's and the drafter's ``config.json``, the drafter's safetensors headers and its
small ``d2t`` tensor, runs the static check on the target's class in the engine tree, and, where
the engine tree is read, the pair checks of ``eagle3lint.verify.pair`` (the layers the drafter
reads as the release's code computes them, what its draft class accepts, known defects of the
release, the launch's argument checks). Each item says what it does to the launch (works,
crash, silent, refused, unknown) and what it rests on; the result folds them into one outcome.
The model folders are untrusted input (``model_files``): a file that cannot be read safely is a
problem naming it, never a hang.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eagle3lint.source.engine import Engine
from eagle3lint.verify.configs import (
    ACCEPTANCE,
    CRASH,
    NOTE,
    OK,
    PROBLEM,
    REFUSED,
    SKIPPED,
    UNKNOWN,
    ConfigError,
    ModelConfig,
    PreflightResult,
    drafter_value_problems,
    read_model_config,
)
from eagle3lint.verify.knowledge import EngineKnowledge
from eagle3lint.verify.model_files import MAX_SIZE, ModelFileError, OutsideFolder, describe
from eagle3lint.verify.pair.context import Launch, PairContext
from eagle3lint.verify.pair.d2t import check_d2t_content
from eagle3lint.verify.safetensors_header import CheckpointTensors, read_checkpoint


def run_preflight(
    target_path: str,
    drafter_path: str | None,
    knowledge: EngineKnowledge,
    engine: Engine | None,
    static_check: bool = True,
    engine_options: tuple[str, ...] = (),
    launch: Launch | None = None,
    drafter_ids: str | None = None,
) -> PreflightResult:
    """``engine_options``: the launch options the static check assumes (from ``--pp`` and
    ``--engine-option``), so that ``check``, ``models`` and the pre-flight give one answer;
    ``launch``: the rest of the launch (``--tp``, raw server flags, the speculative flags);
    ``drafter_path`` None: EAGLE-3 launched without a drafter; ``drafter_ids``: what the
    drafter's layer ids mean, where the user says so (``output`` or ``hidden_states``)."""
    result = PreflightResult()
    launch = launch or Launch()
    launch.draft_given = drafter_path is not None
    if launch.pp > 1 and not any(o.split("=", 1)[0] == "pp" for o in engine_options):
        # The launch's PP is the static check's too (a runner generation may refuse it).
        engine_options = (f"pp={launch.pp}", *engine_options)
    result.target = _load(result, "target-config", target_path)
    result.drafter = _load(result, "drafter-config", drafter_path) if drafter_path is not None else None
    target, drafter = result.target, result.drafter
    models: list[Any] = []
    checked = None
    if engine is not None and static_check:
        checked = _static_check(result, engine, target, engine_options)
        models = checked.models if checked is not None else []
    elif target is not None:
        reason = "no engine tree found (give --release or --engine-root)" if engine is None else "not requested"
        result.add("target-class", SKIPPED, f"static check of {target.architecture}: {reason}", forced_outcome="unknown",
                   decides="the engine's source: --release NAME==VERSION, --engine-root or an installed engine")
    if drafter is not None:
        _check_drafter_architecture(result, drafter, knowledge, models, engine)
    tensors = _check_weights(result, target, drafter, knowledge) if drafter is not None else None
    pair = _pair_context(engine, checked, knowledge, launch, target, drafter, tensors, drafter_ids) if engine is not None and checked is not None else None
    if target is not None and drafter is not None:
        _check_hidden_size(result, target, drafter)
        _check_vocab(result, target, drafter)
        if pair is None:
            _check_aux_layers(result, target, drafter, knowledge)
        else:
            result.aux_layer_ids = _drafter_layer_ids(drafter, knowledge)
    if pair is not None:
        _pair_checks(pair, result)
    if drafter is not None and tensors is not None:
        if pair is None or "fc_width" not in pair.extra:
            _check_fc(result, target, drafter, tensors, knowledge)
        check_d2t_content(pair, result, tensors, Path(drafter.path), _full_vocab(target, drafter))
    if pair is None and target is not None and drafter is not None:
        result.add(
            "layer-ids", SKIPPED,
            "which layers the drafter reads is decided by the release's code (the target's setter, its decoder, the runner), which was not read",
            forced_outcome="unknown", decides="the engine's source: --release NAME==VERSION, --engine-root or an installed engine",
        )
    result.launch = _launch_json(launch, checked)
    return result


def _pair_context(
    engine: Engine, checked: Any, knowledge: EngineKnowledge, launch: Launch, target: ModelConfig | None,
    drafter: ModelConfig | None, tensors: CheckpointTensors | None, drafter_ids: str | None,
) -> PairContext | None:
    from eagle3lint.model.capture import CaptureAnalysis
    from eagle3lint.verify.pair.source import ReleaseCode

    index = checked.index
    if index is None or engine.pack.capture is None:
        return None
    launch.options = dict(checked.options.values) if checked.options is not None else {}
    return PairContext(
        engine=engine, index=index, code=ReleaseCode(engine.root, index), analysis=CaptureAnalysis(index, engine.pack.capture),
        facts=knowledge.pair, frameworks=knowledge.frameworks, drafter_keys=knowledge.drafter_keys, launch=launch,
        target=target, drafter=drafter, target_class=_target_class(checked.models, target),
        draft_class=_draft_class(checked.models, drafter, knowledge), tensors=tensors, meaning_override=drafter_ids,
        models=list(checked.models),
    )


def _pair_checks(ctx: PairContext, result: PreflightResult) -> None:
    from eagle3lint.source.rulepack import rules_dir
    from eagle3lint.verify.pair.defects import check_defects, parse_defects
    from eagle3lint.verify.pair.draft_checks import check_draft_class, check_drafter_keys
    from eagle3lint.verify.pair.launch import check_launch, check_tensor_parallel
    from eagle3lint.verify.pair.layer_map import check_layer_ids

    check_launch(ctx, result)
    check_tensor_parallel(ctx, result)
    if ctx.drafter is not None and ctx.draft_class is None and result.drafter is not None:
        result.add("draft-class", UNKNOWN, f"{ctx.where} has no EAGLE-3 draft class for {ctx.drafter.architecture}: its constraints are not read",
                   decides="a drafter architecture the release registers")
    init = check_draft_class(ctx, result)
    if init is not None:
        ctx.extra["draft_init"] = init
        if init.fc_width is not None:
            ctx.extra["fc_width"] = init.fc_width
    check_drafter_keys(ctx, result)
    layer_map = check_layer_ids(ctx, result)
    if layer_map is not None:
        ctx.extra["ids_passed"] = layer_map.passed is not None
        if layer_map.default_received is not None:
            ctx.extra["ids_custom"] = layer_map.passed is not None and layer_map.received != layer_map.default_received
    defects = parse_defects(rules_dir() / f"{ctx.engine.name}.toml", ctx.engine.pack.raw.get("defect"))
    check_defects(ctx, result, defects)


def _target_class(models: list[Any], target: ModelConfig | None) -> Any:
    if target is None or target.architecture is None:
        return None
    arch = target.architecture
    classes = [m for m in models if m.entry == arch or arch in m.architectures or m.summary.name == arch]
    return next((m for m in classes if m.status), classes[0] if classes else None)


def _draft_class(models: list[Any], drafter: ModelConfig | None, knowledge: EngineKnowledge) -> Any:
    from eagle3lint.model.models import EAGLE3_DRAFT

    if drafter is None or drafter.architecture is None:
        return None
    loaded = knowledge.loaded_architecture(drafter.architecture)
    return next((m for m in models if m.kind == EAGLE3_DRAFT and loaded in (m.entry, m.summary.name, *m.architectures)), None)


def _drafter_layer_ids(drafter: ModelConfig, knowledge: EngineKnowledge) -> list[int] | None:
    from eagle3lint.verify.pair.drafter import read_drafter_ids

    return read_drafter_ids(drafter, knowledge.frameworks).ids


def _full_vocab(target: ModelConfig | None, drafter: ModelConfig) -> int | None:
    return (target.vocab_size if target else None) or drafter.vocab_size


def _launch_json(launch: Launch, checked: Any) -> dict[str, Any]:
    return {
        "tp": launch.tp,
        "pp": launch.pp,
        "options": checked.options.to_json() if checked is not None and checked.options is not None else None,
        "engine_args": list(launch.engine_args),
        "num_steps": launch.num_steps,
        "eagle_topk": launch.eagle_topk,
        "num_draft_tokens": launch.num_draft_tokens,
        "draft_model_path": launch.draft_given,
    }


def _load(result: PreflightResult, check: str, path: str) -> ModelConfig | None:
    try:
        exists = Path(path).exists()
    except OSError as exc:  # a name the file system cannot hold (ENAMETOOLONG), a hub id's shape or not
        result.add(check, PROBLEM, f"{path}: not a usable path ({exc.strerror or exc})", CRASH)
        return None
    if not exists:
        result.add(check, SKIPPED, f"{path} is not a local folder (a hub id?): its config is not checked",
                   forced_outcome="unknown", decides=f"a local copy of {path} (download it and give its folder)")
        return None
    try:
        config = read_model_config(path)
    except OutsideFolder as exc:
        result.add(check, SKIPPED, f"{exc}: its config is not checked", forced_outcome="unknown", decides="a config.json inside the model folder")
        return None
    except ConfigError as exc:
        result.add(check, PROBLEM, str(exc), CRASH)
        return None
    invalid = [*config.invalid, *(drafter_value_problems(config.raw) if check == "drafter-config" else ())]
    if invalid:
        for problem in invalid:
            result.add(check, PROBLEM, f"{Path(path) / 'config.json'}: {problem}", CRASH)
        return config
    where = f" (sizes from {config.sizes_from})" if config.sizes_from else ""
    result.add(
        check,
        OK,
        f"{config.architecture or 'no architectures'}: hidden {config.hidden_size}, vocab {config.vocab_size}, "
        f"{_layers(config.num_hidden_layers)}{where}",
    )
    return config


def _no_target_class(result: PreflightResult, engine: Engine, target: ModelConfig) -> None:
    """A target config.json naming no class (``architectures`` missing or ``[]``): both engines
    pick the model class from that list (vLLM: "No model architectures are specified"), so the
    server cannot load the target whatever the drafter is."""
    said = "has no `architectures`" if "architectures" not in target.raw else "has `architectures`: []"
    result.add(
        "target-class", PROBLEM,
        f"{Path(target.path) / 'config.json'} {said}: {engine.name} {engine.version} chooses the target's model class "
        "from that list and cannot load the target (the class and its layer map are not checked)",
        CRASH,
    )


def _layers(n: object) -> str:
    """``1 layer``, ``32 layers``."""
    return f"{n} layer" if n == 1 else f"{n} layers"


# What a model's outcome means for the launch (the item's impact).
_OUTCOME_IMPACT = {"crash": CRASH, "silent": ACCEPTANCE, "refused": REFUSED}


def _static_check(result: PreflightResult, engine: Engine, target: ModelConfig | None, engine_options: tuple[str, ...] = ()) -> Any:
    from eagle3lint.checks.verdicts import without_outcome
    from eagle3lint.engines import server_for
    from eagle3lint.run.runner import run_check
    from eagle3lint.settings.config import Settings

    settings = Settings()
    settings.engine_options = tuple(engine_options)
    # The pair checks read the release's code through the project index: a full run, uncached
    # (docs/verify.md): the working directory may be the downloaded checkpoint folder, which a
    # pre-flight never writes in.
    checked = run_check(engine, scope=[engine.root], settings=settings, need_index=True, use_cache=False)
    models = checked.models
    if target is not None:
        # What the engine refuses before the model class matters (vLLM's old model-type list).
        server_for(engine.name).preflight(result, engine, checked.contract, target)
    if target is not None and target.raw.get("architectures") in (None, []):
        _no_target_class(result, engine, target)
    if target is None or target.architecture is None:
        return checked
    arch = target.architecture
    classes = [m for m in models if m.entry == arch or arch in m.architectures or m.summary.name == arch]
    names = {arch} | {m.summary.name for m in classes}
    where = f"{engine.name} {engine.version}"
    if not classes:
        if models:
            result.add("target-class", PROBLEM, f"{where} has no model class for architecture {arch}: the server will refuse the target", CRASH)
        else:
            result.add("target-class", SKIPPED, f"no model classes discovered in {engine.root}; {arch} not checked", forced_outcome="unknown",
                       decides="an engine tree with model classes")
        return checked
    result.target_class_path = classes[0].path
    findings = [f for f in checked.findings if f.class_name in names]
    result.target_findings = findings
    assumed = f" under {checked.options.label()}" if checked.options is not None and checked.options.label() else ""
    model = next((m for m in classes if m.status), classes[0])
    # The model's verdict is the answer `check` and `models` give for the same options.
    impact = _OUTCOME_IMPACT.get(model.outcome)
    decided = model.decided
    evidence = decided.evidence if decided is not None else None
    detail = {"path": evidence.path, "line": evidence.line} if evidence is not None else {}
    stage = decided.stage if decided is not None else None
    if impact is not None:
        result.add("target-class", PROBLEM, f"{arch}: {model.status}, {model.outcome}{assumed}: {without_outcome(model.status_reason, model.outcome)}", impact, rule=decided.code if decided else None, stage=stage, **detail)
    elif model.outcome == "works":
        result.add("target-class", OK, f"{arch} ({model.path}) works with EAGLE-3 on {where}{assumed}", path=model.path)
    else:
        result.add("target-class", NOTE, f"{arch}: {model.status}{assumed}: {model.status_reason}", path=model.path,
                   forced_outcome="unknown" if model.outcome == "unknown" else None,
                   decides="what the static check could not prove about the target class" if model.outcome == "unknown" else "")
    for condition in model.conditions:
        result.add("launch-options", NOTE, f"{arch}: {condition.outcome} with {condition.described}: {condition.reason}")
    for finding in findings:
        if decided is not None and finding.code == decided.code and impact is not None:
            continue  # said above, as the verdict
        status = NOTE if finding.severity == "info" or not finding.applies else PROBLEM if finding.severity == "error" else NOTE
        cause = _OUTCOME_IMPACT.get(finding.effect.outcome) if finding.effect is not None else None
        effect_stage = finding.effect.stage if finding.effect is not None else None
        result.add("target-class", status, finding.message, cause if status == PROBLEM else None, rule=finding.code, path=finding.path, line=finding.line, stage=effect_stage)
    return checked


def _check_drafter_architecture(
    result: PreflightResult, drafter: ModelConfig, knowledge: EngineKnowledge, models: list[Any], engine: Engine | None
) -> None:
    from eagle3lint.model.models import EAGLE3_DRAFT

    arch = drafter.architecture
    if arch is None:
        result.add("drafter-architecture", PROBLEM, f"{drafter.path}/config.json names no architectures", CRASH)
        return
    loaded = knowledge.loaded_architecture(arch)
    shown = arch if loaded == arch else f"{arch} (loaded as {loaded})"
    eagle3 = [m for m in models if m.kind == EAGLE3_DRAFT]
    engine_name = f"{knowledge.engine} {engine.version}" if engine else knowledge.engine
    if eagle3:
        names = {n for m in eagle3 for n in (m.entry, m.summary.name, *m.architectures)}
        known = {n for m in models for n in (m.entry, m.summary.name, *m.architectures)}
        source = ""
    else:
        names = known = set(knowledge.eagle3_architectures)
        source = " (from eagle3lint's list: the engine tree was not read)"
    if loaded in names:
        result.add("drafter-architecture", OK, f"{shown} is an EAGLE-3 drafter {engine_name} can load{source}")
    elif loaded in known:
        result.add("drafter-architecture", PROBLEM, f"{shown} is a model {engine_name} has, but not an EAGLE-3 drafter", CRASH)
    else:
        choices = ", ".join(sorted(names))
        result.add(
            "drafter-architecture",
            PROBLEM,
            f"{shown} is not an EAGLE-3 drafter {engine_name} can load{source}; it knows: {choices}",
            CRASH,
        )


def _check_hidden_size(result: PreflightResult, target: ModelConfig, drafter: ModelConfig) -> None:
    declared = drafter.target_hidden_size
    drafter_in = declared or drafter.hidden_size
    key = "target_hidden_size" if declared else "hidden_size"
    if drafter_in is None or target.hidden_size is None:
        result.add("hidden-size", SKIPPED, "hidden size missing from a config.json")
    elif drafter_in != target.hidden_size:
        result.add(
            "hidden-size",
            PROBLEM,
            f"drafter {key} {drafter_in} != target hidden_size {target.hidden_size}: the drafter's fc layer "
            "cannot take the target's hidden states (mat1 and mat2 shapes cannot be multiplied)",
            CRASH,
        )
    else:
        result.add("hidden-size", OK, f"drafter {key} {drafter_in} matches the target's")


def _check_vocab(result: PreflightResult, target: ModelConfig, drafter: ModelConfig) -> None:
    if target.vocab_size is None or drafter.vocab_size is None:
        result.add("vocab-size", SKIPPED, "vocab_size missing from a config.json")
    elif drafter.vocab_size < target.vocab_size:
        result.add(
            "vocab-size",
            PROBLEM,
            f"drafter vocab_size {drafter.vocab_size} < target vocab_size {target.vocab_size}: target token ids "
            "past the drafter's embedding index out of range (the drafter was built for another tokenizer)",
            CRASH,
        )
    elif drafter.vocab_size > target.vocab_size:
        result.add("vocab-size", NOTE, f"drafter vocab_size {drafter.vocab_size} > target's {target.vocab_size} (padding, or another tokenizer)")
    else:
        result.add("vocab-size", OK, f"vocab_size {target.vocab_size} on both")


def _configured_ids(drafter: ModelConfig, keys: tuple[str, ...]) -> tuple[Any, str | None]:
    for key in keys:
        value = drafter.get(key)
        if value is not None:
            return value, key
    return None, None


def _check_aux_layers(result: PreflightResult, target: ModelConfig, drafter: ModelConfig, knowledge: EngineKnowledge) -> None:
    aux = knowledge.aux
    n = target.num_hidden_layers
    if n is None:
        result.add("aux-layer-ids", SKIPPED, "target num_hidden_layers unknown")
        return
    engine = knowledge.engine
    value, key = _configured_ids(drafter, aux.config_keys)
    if value is None:
        default = aux.default_ids(n)
        result.aux_layer_ids = default
        ignored, ignored_key = _configured_ids(drafter, aux.ignored_keys)
        if ignored is not None:
            result.add(
                "aux-layer-ids",
                PROBLEM,
                f"the drafter names layers {describe(ignored)} in `{ignored_key}`, which {engine} does not read (it reads "
                f"`{aux.config_keys[0]}`): it captures its default {default} instead. {aux.convention}",
                ACCEPTANCE,
            )
        else:
            result.add(
                "aux-layer-ids",
                NOTE,
                f"the drafter names no aux layers; {engine} uses its default {default} for {_layers(n)} (acceptance "
                f"drops if the drafter was trained on others). {aux.convention}",
            )
        return
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) and abs(v) <= MAX_SIZE for v in value):
        result.add("aux-layer-ids", PROBLEM, f"`{key}` is {describe(value)}, not a list of integers", CRASH)
        return
    ids: list[int] = value
    result.aux_layer_ids = ids
    low, high = aux.valid_range(n)
    outside = [i for i in ids if not low <= i <= high]
    if outside:
        result.add(
            "aux-layer-ids",
            PROBLEM,
            f"aux layer ids {_ids(outside)} (from `{key}`) are outside {low}..{high} for a {n}-layer target: those states "
            f"are never captured and the drafter gets fewer inputs than its fc layer expects. {aux.convention}",
            CRASH,
        )
    elif aux.fixed_count and len(ids) != aux.fixed_count:
        result.add(
            "aux-layer-ids",
            PROBLEM,
            f"`{key}` names {_layers(len(ids))} but {engine}'s drafter takes exactly {aux.fixed_count} "
            "(mat1 and mat2 shapes cannot be multiplied)",
            CRASH,
        )
    else:
        result.add("aux-layer-ids", OK, f"aux layer ids {_ids(ids)} (from `{key}`) are inside the target's {_layers(n)}. {aux.convention}")


def _ids(ids: list[int]) -> str:
    """Layer ids for a message: a config can list a million of them."""
    return str(ids) if len(ids) <= 16 else f"[{', '.join(map(str, ids[:16]))}, ...] ({len(ids)} ids)"


def _check_weights(result: PreflightResult, target: ModelConfig | None, drafter: ModelConfig, knowledge: EngineKnowledge) -> CheckpointTensors | None:
    """The header checks of the drafter's weights; the tensors, for the checks that read more."""
    folder = Path(drafter.path)
    try:
        tensors = read_checkpoint(folder)
    except OutsideFolder as exc:
        result.add("drafter-weights", SKIPPED, f"{exc}: tensor checks skipped", forced_outcome="unknown", decides="weights inside the drafter's folder")
        return None
    except ModelFileError as exc:
        result.add("drafter-weights", PROBLEM, str(exc), CRASH)
        return None
    if tensors is None:
        if any(folder.glob("*.bin")) or any(folder.glob("*.pt")):
            result.add("drafter-weights", SKIPPED, f"{folder} holds PyTorch pickles, not safetensors: tensor checks skipped",
                       forced_outcome="unknown", decides="the drafter's tensors in safetensors form (pickles are never loaded here)")
        else:
            # A folder with the config alone (the weights not downloaded yet, or the wrong
            # folder given) is a question for the user, not the engine's crash: what the config
            # says is checked, what the tensors say is not.
            result.add(
                "drafter-weights", SKIPPED,
                f"{folder} holds no weights (*.safetensors, *.bin): the tensor checks (d2t mapping, lm_head, fusion layer) are skipped",
                forced_outcome="unknown", decides=f"the drafter's weights in {folder} (download them, or give the folder that holds them)",
            )
        return None
    result.add("drafter-weights", OK, f"{len(tensors.tensors)} tensors in {len(tensors.files)} safetensors file(s)")
    _check_d2t(result, target, drafter, tensors)
    _check_lm_head(result, drafter, tensors)
    return tensors


def _draft_vocab(drafter: ModelConfig) -> int | None:
    return drafter.draft_vocab_size or drafter.vocab_size


def _check_d2t(result: PreflightResult, target: ModelConfig | None, drafter: ModelConfig, tensors: CheckpointTensors) -> None:
    draft_vocab = _draft_vocab(drafter)
    full_vocab = (target.vocab_size if target else None) or drafter.vocab_size
    if draft_vocab is None or full_vocab is None:
        result.add("d2t-mapping", SKIPPED, "vocab sizes unknown")
        return
    d2t = tensors.find("d2t")
    if draft_vocab >= full_vocab:
        result.add("d2t-mapping", OK, f"the drafter predicts the full vocabulary ({draft_vocab}); no d2t mapping needed")
    elif d2t is None:
        result.add(
            "d2t-mapping",
            PROBLEM,
            f"draft_vocab_size {draft_vocab} < vocab_size {full_vocab} but the checkpoint has no `d2t` tensor: draft "
            "token ids are taken as target ids, so almost every draft is rejected",
            ACCEPTANCE,
        )
    elif d2t.shape != (draft_vocab,):
        result.add(
            "d2t-mapping",
            PROBLEM,
            f"`{d2t.name}` has shape {list(d2t.shape)}, expected [{draft_vocab}] (draft_vocab_size): weight loading fails",
            CRASH,
        )
    else:
        result.add("d2t-mapping", OK, f"`{d2t.name}` maps {draft_vocab} draft ids into the {full_vocab}-token vocabulary")


def _check_fc(
    result: PreflightResult, target: ModelConfig | None, drafter: ModelConfig, tensors: CheckpointTensors, knowledge: EngineKnowledge
) -> None:
    fc = tensors.find("fc.weight")
    hidden_in = drafter.target_hidden_size or drafter.hidden_size
    count = len(result.aux_layer_ids) if result.aux_layer_ids else (knowledge.aux.fixed_count or 3)
    if fc is None or hidden_in is None or len(fc.shape) != 2:
        return
    expected = [drafter.hidden_size, hidden_in * count]
    if list(fc.shape) != expected:
        result.add(
            "fc-shape",
            PROBLEM,
            f"`{fc.name}` has shape {list(fc.shape)}; {count} aux layers of hidden size {hidden_in} need {expected} "
            "(mat1 and mat2 shapes cannot be multiplied, or weight loading fails)",
            CRASH,
        )
    else:
        result.add("fc-shape", OK, f"`{fc.name}` {list(fc.shape)} takes {count} aux states of size {hidden_in}")


def _check_lm_head(result: PreflightResult, drafter: ModelConfig, tensors: CheckpointTensors) -> None:
    head = tensors.find("lm_head.weight")
    draft_vocab = _draft_vocab(drafter)
    if head is None or draft_vocab is None or not head.shape:
        return
    if head.shape[0] != draft_vocab:
        result.add(
            "lm-head-shape",
            PROBLEM,
            f"`{head.name}` has {head.shape[0]} rows but draft_vocab_size is {draft_vocab}: weight loading fails",
            CRASH,
        )
    else:
        result.add("lm-head-shape", OK, f"`{head.name}` predicts {draft_vocab} draft tokens")
