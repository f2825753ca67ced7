"""The SGLang CPU probe: run inside the *engine's* interpreter, one launch per process.

    ENGINE_PYTHON cpu_probe.py SPEC.json

SGLang publishes no CPU kernels for machines without AMX, yet its own start-up code runs on CPU
far enough to call the EAGLE-3 interface on the target: ``sglang.Engine`` in-process with dummy
weights, ``torch_native`` attention and the EAGLE-3 flags. Its scheduler process builds the real
target class, asks it to capture the auxiliary layers (``set_eagle3_layers_to_capture``), loads the
drafter, hands it the target's embedding and head (``get_embed_and_head`` / ``set_embed_and_head``)
and then stops at a wall common to every class: ``speculative/draft_utils.py`` has no CPU
attention backend for drafting. Reaching that wall means every interface call succeeded; an
exception before it is the class's outcome.

SPEC names the architecture (or a model folder), the mode (``base``: the target alone, generating
a few tokens; ``eagle``: with a one-layer EAGLE-3 drafter) and where to write the record. The
scheduler runs in a spawned child: the engine is given this file's ``scheduler_entry`` as its
scheduler function, so the child (which re-imports this file as ``__mp_main__``) installs the
hooks, records the ids and interface calls into the same record, and ends the launch (the whole
process group) once the outcome is known, so nothing after it overwrites the record.

This file is never imported by eagle3lint (it imports sglang and torch); the linter only runs it.
What the probes share (the record, loading the shrinker, a config class's defaults) is
``eagle3lint_probe``, on the launch's PYTHONPATH (``enginerun/probe_path/``), so the scheduler
child finds it too.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import eagle3lint_probe as common
from eagle3lint_probe import STAND_IN_HOW, Record

SPEC_ENV = "EAGLE3LINT_SGLANG_PROBE_SPEC"
KILL_GROUP_ENV = "EAGLE3LINT_SGLANG_PROBE_KILL_GROUP"
# The model type a stand-in config was registered under (the scheduler child registers it too).
STAND_IN_ENV = "EAGLE3LINT_SGLANG_PROBE_STAND_IN"

# The wall every class reaches once its interface calls passed: no drafting attention backend on
# CPU (speculative/draft_utils.py, "EAGLE is not supported in [decode] attention backend ...").
WALL = re.compile(r"EAGLE is not supported in (decode )?attention backend")
WALL_FILE = "speculative/draft_utils.py"

# The members of the EAGLE-3 interface whose calls the probe records, on the target and the drafter.
INTERFACE = ("set_eagle3_layers_to_capture", "get_embed_and_head", "set_embed_and_head", "get_embed", "set_embed", "get_lm_head")

PROMPT = list(range(3, 19))

# CPU has no Mamba state snapshots (0.5.23's arg_groups/mamba_hook.py asserts so before any
# process starts): the radix cache's extra-buffer strategy hybrid Mamba models get by default is
# refused. Without the radix cache (a serving-time prefix cache the interface calls never touch)
# they start as they do on GPUs.
NO_STATE_SNAPSHOTS = "requires platform support for Mamba cache state snapshots"


# ---- the config ---------------------------------------------------------------------------------

def _sglang_configs() -> dict[str, Any]:
    """SGLang's own config classes, by model type (those transformers lacks)."""
    import importlib

    for name in ("sglang.srt.utils.hf_transformers.common", "sglang.srt.utils.hf_transformers_utils", "sglang.srt.hf_transformers_utils"):
        try:
            registry = importlib.import_module(name)._CONFIG_REGISTRY
        except (ImportError, AttributeError):
            continue
        return dict(registry) if isinstance(registry, dict) else {c.model_type: c for c in registry}
    return {}


def _config_class(architecture: str) -> tuple[str, Any, str]:
    """(model type, config class, how it was found) for an architecture."""
    from transformers import CONFIG_MAPPING

    own = _sglang_configs()
    model_type = common.arch_model_types().get(architecture)
    how = "transformers' auto tables"
    if model_type is None:
        # SGLang-only architectures: the config class whose model type the architecture starts with.
        best = common.model_type_by_name(architecture, [*own.keys(), *CONFIG_MAPPING.keys()])
        if best is None:
            # Remote code only (InternLM3...): Llama's config under the architecture's own model
            # type, registered with transformers in this process and the scheduler's, as vLLM's
            # probe does (a checkpoint's config.json gives such a class every key it reads; what
            # Llama's lacks, the launch names and the sweep adds on its retry).
            stem = common.stem(architecture).lower()
            if not stem:
                raise LookupError(f"no config class found for {architecture}")
            return stem, _stand_in_config(stem), "no config class of its own: " + STAND_IN_HOW
        model_type, how = best, "the architecture's name"
    if model_type in own:
        return model_type, own[model_type], how + " (SGLang's config)"
    return model_type, CONFIG_MAPPING[model_type], how


def _stand_in_config(model_type: str) -> Any:
    from transformers import AutoConfig, LlamaConfig

    name = f"StandIn_{re.sub(r'[^A-Za-z0-9_]', '_', model_type)}_Config"
    stand_in = globals().get(name)
    if stand_in is None:
        stand_in = type(name, (LlamaConfig,), {"model_type": model_type})
        # A module attribute, so that the config pickles to the scheduler child by name (which
        # defines it again when it imports this module: STAND_IN_ENV, below).
        globals()[name] = stand_in
    AutoConfig.register(model_type, stand_in, exist_ok=True)
    os.environ[STAND_IN_ENV] = model_type
    return stand_in


if os.environ.get(STAND_IN_ENV):
    # The scheduler child imports this module (spawn) before it unpickles the config it is given.
    _stand_in_config(os.environ[STAND_IN_ENV])


# Fields a release reads from a model type's (or an architecture's) config without a default and
# its config class lacks (published checkpoints carry them): 0.5.9's Kimi-K2.5 wrapper sizes its
# projector by vt_hidden_size; 0.5.9's Ministral-3 reads transformers 5's rope_parameters, which
# the transformers beside it (4.57, whose closest config class is Ministral's) has not.
READ_WITHOUT_DEFAULT: dict[str, dict[str, Any]] = {
    "kimi_k25": {"vt_hidden_size": 128},
    "Ministral3ForCausalLM": {"rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}},
}


def _text_levels(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The language-model configs nested in a multimodal one, at any depth (Qwen3-Omni's is
    thinker_config.text_config)."""
    found = []
    for key, value in config.items():
        if isinstance(value, dict):
            if key == "text_config":
                found.append(value)
            found.extend(_text_levels(value))
    return found


def _mrope_sections(level: dict[str, Any]) -> list[int]:
    """Three M-RoPE sections adding up to half the head size (Qwen-VL checkpoints: 24, 20, 20 of 64)."""
    heads = level.get("num_attention_heads") or 1
    half = int(level.get("head_dim") or level.get("hidden_size", 128) // heads) // 2
    return [half - 2 * (half * 5 // 16), half * 5 // 16, half * 5 // 16]


# The families whose language model rotates by M-RoPE (Qwen2/2.5/3-VL, Qwen3-Omni...): their model
# types name them.
MROPE_FAMILY = re.compile(r"(^|_)(vl|omni)(_|$)")


def _fit_multimodal(config: dict[str, Any], notes: list[str], tower_keys: tuple[str, ...]) -> None:
    """An M-RoPE family's language model with no rope scaling at all (the class default): SGLang's
    VL models test ``"mrope_section" in config.rope_scaling`` and published checkpoints carry the
    M-RoPE sections there. Not an MLA language model (Kimi-K2.5's): its CPU rotary is YaRN's."""
    if not MROPE_FAMILY.search(str(config.get("model_type"))):
        return
    if not any(isinstance(config.get(k), dict) for k in tower_keys) and "thinker_config" not in config:
        return
    for level in _text_levels(config):
        if "kv_lora_rank" in level:
            continue
        if "rope_scaling" in level and level["rope_scaling"] is None and not isinstance(level.get("rope_parameters"), dict):
            level["rope_scaling"] = {"rope_type": "default", "mrope_section": _mrope_sections(level)}
            notes.append(f"text_config.rope_scaling: {level['rope_scaling']} (M-RoPE, as multimodal checkpoints carry)")


def _fit_sliding(level: dict[str, Any], notes: list[str]) -> None:
    """A class default with a sliding window and every layer full (Mellum's, Laguna's): the
    hybrid-SWA start-up needs a sliding layer, and checkpoints have them (three in four here)."""
    kinds = level.get("layer_types")
    window = level.get("sliding_window")
    if (
        isinstance(kinds, list) and len(kinds) > 1 and all(k == "full_attention" for k in kinds)
        and isinstance(window, int) and not isinstance(window, bool) and window > 0 and level.get("use_sliding_window") is not False
    ):
        level["layer_types"] = ["full_attention" if i % 4 == 3 else "sliding_attention" for i in range(len(kinds))]
        notes.append(f"layer_types: {level['layer_types']} (a sliding window with no sliding layer)")


def _cpu_fit(config: dict[str, Any], mla_sizes: dict[str, int], tower_keys: tuple[str, ...] = ()) -> list[str]:
    """What a launch needs of a built config, whatever the class: MLA's rotary embedding on CPU is
    the DeepSeek-YaRN one (the CPU MLA path reads its scaling factors); a nested language-model
    config names its architecture, as a checkpoint's does (DeepSeek's start-up reads
    ``architectures[0]`` of the config it is given)."""
    notes = []
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    for key in ("text_config", "language_config", "llm_config"):
        nested = config.get(key)
        if isinstance(nested, dict) and not nested.get("architectures"):
            causal = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(str(nested.get("model_type")))
            if isinstance(causal, str):
                nested["architectures"] = [causal]
                notes.append(f"{key}.architectures: [{causal}] (its model type's causal LM)")
    wanted = {**READ_WITHOUT_DEFAULT.get(str(config.get("model_type")), {})}
    for architecture in config.get("architectures") or ():
        wanted.update(READ_WITHOUT_DEFAULT.get(str(architecture), {}))
    _fit_multimodal(config, notes, tower_keys)
    for key, value in wanted.items():
        for level in common.levels(config):
            if level.get(key) is None:
                level[key] = value
                notes.append(f"{key}: {value!r} (read without a default; checkpoints carry it)")
    for level in common.levels(config):
        if level.get("rope_scaling") == {}:
            # An empty scaling is no scaling (get_rope raises "Unknown RoPE scaling type" on {}).
            level["rope_scaling"] = None
            notes.append("rope_scaling: None (the class default is {})")
        if level.get("rope_parameters") == {}:
            # Qwen3.5's layers read rope_theta from it and hand it to get_rope on 0.5.9 (None or
            # {} fail); checkpoints carry the default rotary's parameters.
            level["rope_parameters"] = {"rope_type": "default", "rope_theta": level.get("rope_theta") or 10000.0}
            notes.append(f"rope_parameters: {level['rope_parameters']} (the class default is {{}})")
        _fit_sliding(level, notes)
        heads = level.get("num_attention_heads")
        if "head_dim" in level and level["head_dim"] is None and isinstance(heads, int) and heads and isinstance(level.get("hidden_size"), int):
            # A class default of None (Mistral's, MiniMax-M2's): SGLang's getattr(config, "head_dim",
            # hidden // heads) takes the None; checkpoints carry the size.
            level["head_dim"] = level["hidden_size"] // heads
            notes.append(f"head_dim: {level['head_dim']} (hidden_size / num_attention_heads; the class default is None)")
        if isinstance(level.get("qk_rope_head_dim"), int) or "kv_lora_rank" in level:
            for key, size in mla_sizes.items():
                # MLA sizes a class default leaves None or lacks (MiniCPM3's, Mistral-Large-3's,
                # whose closest config class is Mistral's): SGLang adds them up (kv_lora_rank +
                # qk_rope_head_dim); checkpoints carry them all. A None q_lora_rank means no query
                # LoRA and stays.
                if key != "q_lora_rank" and key != "qk_head_dim" and level.get(key) is None:
                    level[key] = size
                    notes.append(f"{key}: {size} (an MLA size the class default leaves None)")
        if isinstance(level.get("hidden_activation"), str) and level.get("hidden_act") != level["hidden_activation"]:
            # Gemma's config class keeps a legacy hidden_act beside the activation it uses; SGLang
            # wants both to name it (a checkpoint's config does).
            level["hidden_act"] = level["hidden_activation"]
            notes.append(f"hidden_act: {level['hidden_act']} (as hidden_activation)")
        if "kv_lora_rank" in level and "n_routed_experts" in level and level.get("moe_layer_freq") is None:
            # DeepSeek's sparse-layer test reads it; transformers' config class has no such field.
            level["moe_layer_freq"] = 1
            notes.append("moe_layer_freq: 1 (DeepSeek-V2/V3 checkpoints carry it)")
        if "kv_lora_rank" in level and "n_routed_experts" in level and "topk_method" not in level:
            level["topk_method"] = None  # read by the MoE gate; V3's config class has no such field
            notes.append("topk_method: None (DeepSeek-V2/V3's gate reads it)")
        if "kv_lora_rank" in level and not isinstance(level.get("rope_scaling"), dict):
            level["rope_scaling"] = {
                "type": "deepseek_yarn", "rope_type": "deepseek_yarn", "factor": 1.0, "original_max_position_embeddings": 4096,
                "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0,
            }
            notes.append("MLA: rope_scaling deepseek_yarn (factor 1)")
    return notes


def _launched_config_class(architecture: str) -> tuple[str, str, Any, str]:
    model_type, cls, how = _config_class(architecture)
    # The config class's own type (transformers' tables name LlamaForCausalLM under code_llama).
    return architecture, getattr(cls, "model_type", None) or model_type, cls, how


def _fit(config: dict[str, Any], added: dict[str, Any], shrink: Any) -> list[str]:
    if set(added) & set(shrink.STAND_IN_MOE):
        # The launch asked for an expert setting the class default lacks (Mistral-Large-3's
        # closest config class is Mistral's, dense): the class is a mixture of experts, and its
        # checkpoints carry the whole set, not one key a launch.
        added = {**shrink.STAND_IN_MOE, **added}
    common.add_attributes(config, added)
    return _cpu_fit(config, shrink.MLA_SIZES, shrink.TOWER_KEYS)


def build_folders(spec: dict[str, Any], record: Record, shrink: Any) -> tuple[str, str | None]:
    return common.build_folders(spec, record, shrink, _launched_config_class, lambda config, added: _fit(config, added, shrink))


# ---- the scheduler child ------------------------------------------------------------------------

def _end_launch() -> None:
    """The outcome is written: end the launch now (the probe is its process group's leader when
    the sweep starts it), so that no teardown message overwrites it."""
    if os.environ.get(KILL_GROUP_ENV) == "1":
        os.killpg(os.getpgid(0), signal.SIGKILL)
    os._exit(0)


def _watch_interface(model: Any, role: str, record: Record) -> None:
    """Record each call of an interface member the model's class has (the instance attribute
    shadows the method; ``hasattr`` answers as before)."""
    for name in INTERFACE:
        if not callable(getattr(type(model), name, None)):
            continue
        original = getattr(model, name)

        def call(*args: Any, __name: str = name, __original: Any = original, **kwargs: Any) -> Any:
            entry: dict[str, Any] = {"role": role, "member": __name}
            if __name == "set_eagle3_layers_to_capture":
                ids = args[0] if args else kwargs.get("layer_ids")
                entry["ids"] = None if ids is None else [int(x) for x in ids]
                if role == "target" and "ids" not in record.data:
                    record.data["ids"] = entry["ids"]
            record.data.setdefault("interface_calls", []).append(entry)
            try:
                result = __original(*args, **kwargs)
            except BaseException as exc:
                entry["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                record.write()
                raise
            entry["ok"] = True
            if __name == "set_eagle3_layers_to_capture":
                # What the target took (the ids it was given, or its own default where none were).
                holders = model.modules() if hasattr(model, "modules") else [model]
                for holder in holders:
                    taken = getattr(holder, "layers_to_capture", None)
                    if isinstance(taken, (list, tuple)):
                        entry["captures"] = [int(x) for x in taken]
                        if role == "target":
                            record.data["captures"] = entry["captures"]
                        break
            record.write()
            return result

        setattr(model, name, call)


def _install_hooks(record: Record) -> None:
    import torch
    from sglang.srt.mem_cache import memory_pool
    from sglang.srt.model_executor import model_runner

    original_load = model_runner.ModelRunner.load_model

    def load_model(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original_load(self, *args, **kwargs)
        role = "drafter" if getattr(self, "is_draft_worker", False) else "target"
        model = self.model
        record.data.setdefault("classes", {})[role] = type(model).__name__
        if role == "target":
            record.data["target_class"] = type(model).__name__
            record.data["target_members"] = [n for n in INTERFACE if callable(getattr(type(model), n, None))]
        _watch_interface(model, role, record)
        record.write()
        return result

    model_runner.ModelRunner.load_model = load_model
    # The drafter's set_embed (Llama's) waits for the GPU after swapping the embedding: on CPU there
    # is nothing to wait for, and torch's CUDA calls assert. Only these two, which return nothing.
    if not torch.cuda.is_available():
        torch.cuda.synchronize = lambda *a, **k: None
        torch.cuda.empty_cache = lambda *a, **k: None
    # The KV-cache copy of speculative decoding (a GPU kernel: a Triton launch on 0.5.9, an
    # sgl_kernel call on 0.5.23) has no CPU path and is no part of the EAGLE-3 interface.
    for pool in vars(memory_pool).values():
        if isinstance(pool, type) and "_init_kv_copy_and_warmup" in vars(pool):
            def no_copy(self: Any) -> None:
                self._kv_copy_config = None
                record.data["kv_copy_skipped"] = True

            setattr(pool, "_init_kv_copy_and_warmup", no_copy)  # noqa: B010


def scheduler_entry(*args: Any, **kwargs: Any) -> Any:
    """The engine's scheduler function in the spawned child: hooks, then SGLang's own."""
    spec = json.loads(Path(os.environ[SPEC_ENV]).read_text(encoding="utf-8"))
    record = Record(spec["out"], fresh=False)
    from sglang.srt.managers import scheduler as scheduler_module

    _install_hooks(record)
    original_init = scheduler_module.Scheduler.__init__

    def init(self: Any, *a: Any, **k: Any) -> None:
        try:
            original_init(self, *a, **k)
        except BaseException as exc:
            record.data["error"] = common.error(exc)
            record.data["failed_in"] = "init"
            message = str(exc)
            if spec["mode"] == "eagle" and WALL.search(message) and any(WALL_FILE in f for f in record.data["error"]["frames"]):
                record.data["ok"] = True
                record.data["wall"] = f"{WALL_FILE}: {message.splitlines()[0] if message else ''}"
            record.data["decided"] = True
            record.phase("stopped" if record.data["ok"] else "failed")
            _end_launch()
            raise
        record.data["scheduler_ready"] = True
        record.write()

    scheduler_module.Scheduler.__init__ = init
    return scheduler_module.run_scheduler_process(*args, **kwargs)


# ---- the run --------------------------------------------------------------------------------------

def _engine_class() -> Any:
    from sglang.srt.entrypoints.engine import Engine

    return type(Engine)("Eagle3lintProbeEngine", (Engine,), {"run_scheduler_process_func": staticmethod(scheduler_entry)})


def _record_child_failure(record: Record) -> None:
    """SGLang answers a child's death with SIGQUIT to the probe (its handler kills the launch):
    first write down that a process of the engine failed before the scheduler decided."""
    original_signal = signal.signal

    def note_then(handler: Any) -> Any:
        def on_quit(signum: int, frame: Any) -> None:
            record.reload()
            if not record.data.get("decided"):
                record.data["failed_in"] = record.data.get("phase")
                record.data["error"] = {
                    "type": "EngineProcessDied",
                    "message": "a process of the engine (scheduler or detokenizer) died before the scheduler decided; see the launch's log",
                    "frames": [],
                }
                record.phase("failed")
            if callable(handler):
                handler(signum, frame)
            else:
                os._exit(1)

        return on_quit

    def patched(signum: Any, handler: Any) -> Any:
        if signum == signal.SIGQUIT:
            handler = note_then(handler)
        return original_signal(signum, handler)

    signal.signal = patched  # type: ignore[assignment]
    original_signal(signal.SIGQUIT, note_then(None))


def start_engine(engine_cls: Any, args: dict[str, Any], record: Record) -> Any:
    """The engine, started with ``args``; a hybrid Mamba model CPU cannot snapshot is started
    again without the radix cache, and the record says so."""
    try:
        return engine_cls(**args)
    except AssertionError as exc:
        if NO_STATE_SNAPSHOTS not in str(exc):
            raise
    args["disable_radix_cache"] = True
    setup = record.data.setdefault("setup", {})
    setup.setdefault("changes", []).append("disable_radix_cache: True (the default Mamba cache strategy needs state snapshots, which CPU lacks)")
    record.write()
    return engine_cls(**args)


def main() -> int:
    spec_path = sys.argv[1]
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    record = Record(spec["out"], fresh=True)
    record.data["mode"] = spec["mode"]
    shrink = common.load("eagle3lint_probe_shrink", spec["shrink_path"])
    os.environ[SPEC_ENV] = spec_path
    if os.getpgid(0) == os.getpid():
        os.environ[KILL_GROUP_ENV] = "1"
    _record_child_failure(record)
    engine = None
    try:
        record.phase("setup")
        target, drafter = build_folders(spec, record, shrink)
        record.phase("import")
        import sglang

        record.data["engine_version"] = sglang.__version__
        engine_cls = _engine_class()
        record.phase("init")
        args: dict[str, Any] = dict(
            model_path=target, device="cpu", load_format="dummy", skip_tokenizer_init=True, disable_cuda_graph=True,
            attention_backend="torch_native", dtype="float32", context_length=256, max_total_tokens=2048,
            max_running_requests=4, enable_multimodal=False, trust_remote_code=False, log_level="error",
            mem_fraction_static=0.5, grammar_backend="none",
        )
        if drafter is not None:
            args.update(
                speculative_algorithm="EAGLE3", speculative_draft_model_path=drafter, speculative_num_steps=3,
                speculative_eagle_topk=1, speculative_num_draft_tokens=4,
            )
        engine = start_engine(engine_cls, args, record)
        record.reload()
        record.phase("generate")
        out = engine.generate(input_ids=PROMPT, sampling_params={"max_new_tokens": spec.get("max_tokens", 8), "ignore_eos": True})
        record.data["tokens"] = len(out.get("output_ids") or []) if isinstance(out, dict) else None
        record.data["ok"] = True
        record.phase("done")
    except BaseException as exc:
        record.reload()
        if record.data.get("decided"):
            return 0 if record.data.get("ok") else 1
        record.data["failed_in"] = record.data["phase"]
        record.data["error"] = common.error(exc)
        record.phase("failed")
        return 1
    finally:
        if engine is not None:
            with contextlib.suppress(Exception):
                engine.shutdown()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("SGLANG_USE_CPU_ENGINE", "1")
    sys.exit(main())
