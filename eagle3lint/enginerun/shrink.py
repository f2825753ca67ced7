"""Shrink a model config (its class defaults, as a dict) to a size a 2-core CPU runs in seconds,
keeping it consistent: heads divide the width, KV heads divide the heads in the same ratio,
experts cover top-k, per-layer lists follow the layer count, and every token id stays inside the
vocabulary.

Standard library only: the engine probe imports this module inside the engine's interpreter.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

# The language model's sizes: hidden 128 in 4 heads of 32 (a head size every CPU attention
# backend compiles), 8 layers (EAGLE-3's default ids 2, n//2, n-3 stay distinct from 6 layers on).
TEXT_HIDDEN = 128
TEXT_HEADS = 4
HEAD_DIM = 32
TEXT_LAYERS = 8
INTERMEDIATE = 256
MOE_INTERMEDIATE = 64
MAX_EXPERTS = 8
MAX_TOP_K = 2
VOCAB = 2048
MIN_POSITIONS = 1024
# Vision and audio towers: two layers of 64 wide in 2 heads.
TOWER_HIDDEN = 64
TOWER_HEADS = 2
TOWER_LAYERS = 2
TOWER_INTERMEDIATE = 128

HIDDEN_KEYS = ("hidden_size", "d_model", "n_embd", "embed_dim", "model_dim", "dim", "width", "n_embed")
INTERMEDIATE_KEYS = (
    "intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size", "decoder_ffn_dim", "encoder_ffn_dim",
    "mlp_dim", "inner_hidden_size", "ffn_intermediate_size", "dense_intermediate_size",
)
MOE_INTERMEDIATE_KEYS = (
    "moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size", "moe_ffn_hidden_size",
    "expert_ffn_hidden_size", "moe_shared_expert_intermediate_size",
)
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "decoder_layers", "encoder_layers", "depth", "num_decoder_layers")
HEAD_KEYS = ("num_attention_heads", "n_head", "num_heads", "n_heads", "decoder_attention_heads", "encoder_attention_heads")
KV_HEAD_KEYS = ("num_key_value_heads", "n_head_kv", "num_kv_heads", "multi_query_group_num", "n_kv_heads", "num_query_groups")
HEAD_DIM_KEYS = ("head_dim", "kv_channels", "attention_head_dim", "head_size")
EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts", "n_experts")
TOP_K_KEYS = ("num_experts_per_tok", "moe_topk", "moe_top_k", "n_activated_experts", "num_experts_per_token", "moe_k", "top_k")
GROUP_KEYS = ("n_group", "topk_group", "num_expert_group")
SHARED_EXPERT_KEYS = ("n_shared_experts", "num_shared_experts", "moe_num_shared_experts")
VOCAB_KEYS = ("vocab_size", "n_vocab", "padded_vocab_size")
POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx")
DENSE_PREFIX_KEYS = ("first_k_dense_replace", "first_k_dense", "num_dense_layers")
# Multi-head latent attention: a latent of 64, an MHA head of 48 + 16 where MLA is turned off.
MLA_SIZES = {"kv_lora_rank": 64, "q_lora_rank": 64, "qk_nope_head_dim": 48, "qk_rope_head_dim": 16, "v_head_dim": 64, "qk_head_dim": 64}
# Linear-attention and state-space sizes.
STATE_SIZES = {
    "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 32, "linear_value_head_dim": 32,
    "mamba_d_state": 16, "ssm_state_size": 16, "state_size": 16, "mamba_n_heads": 4, "mamba_head_dim": 32,
    "mamba_n_groups": 1, "n_groups": 1, "time_step_rank": 8,
}
TOWER_KEYS = ("vision_config", "audio_config", "vision_tower_config", "speech_config", "encoder_config", "visual", "vit_config")
TEXT_KEYS = ("text_config", "language_config", "llm_config", "thinker_config", "decoder_config")


@dataclass
class Shrunk:
    """The shrunken config, and what changed (``path: old -> new``) for the report."""

    config: dict[str, Any]
    changes: list[str] = field(default_factory=list)
    # The language model's layer count, hidden size and vocabulary, for the drafter.
    layers: int = TEXT_LAYERS
    hidden: int = TEXT_HIDDEN
    vocab: int = VOCAB


@dataclass(frozen=True)
class _Targets:
    hidden: int
    heads: int
    layers: int
    intermediate: int


TEXT = _Targets(TEXT_HIDDEN, TEXT_HEADS, TEXT_LAYERS, INTERMEDIATE)
TOWER = _Targets(TOWER_HIDDEN, TOWER_HEADS, TOWER_LAYERS, TOWER_INTERMEDIATE)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _first(config: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        if _is_int(config.get(key)):
            return int(config[key])
    return None


def shrink_config(config: dict[str, Any], layers: int = TEXT_LAYERS) -> Shrunk:
    """A shrunken copy of ``config`` (a model config's ``to_dict()``): the language model at
    hidden 128, ``layers`` layers; towers (vision, audio) at two layers of 64; token ids kept
    inside a vocabulary of at most 2048."""
    result = Shrunk(copy.deepcopy(config), layers=layers)
    text = _Targets(TEXT_HIDDEN, TEXT_HEADS, layers, INTERMEDIATE)
    _shrink_level(result.config, text, "", result.changes)
    _shrink_nested(result.config, text, "", result.changes)
    vocab = _vocab(result.config)
    result.vocab = vocab
    _remap_ids(result.config, vocab, {}, "", result.changes)
    return result


def _shrink_nested(config: dict[str, Any], text: _Targets, where: str, changes: list[str]) -> None:
    """The language-model and tower configs nested in ``config``, at any depth (Qwen3-Omni's
    language model is thinker_config.text_config, its towers thinker_config.vision_config...)."""
    for key in TEXT_KEYS:
        if isinstance(config.get(key), dict):
            _shrink_level(config[key], text, f"{where}{key}.", changes)
            _shrink_nested(config[key], text, f"{where}{key}.", changes)
    for key in TOWER_KEYS:
        if isinstance(config.get(key), dict):
            tower = config[key]
            _shrink_level(tower, TOWER, f"{where}{key}.", changes)
            # A projector into the language model reads the tower's output at the text width.
            for out in ("out_hidden_size", "projection_dim", "output_dim", "out_dim", "text_hidden_size"):
                if _is_int(tower.get(out)):
                    _set(tower, out, TEXT_HIDDEN, f"{where}{key}.", changes)


def _vocab(config: dict[str, Any]) -> int:
    found = _first(config, VOCAB_KEYS)
    if found is not None:
        return found
    for key in TEXT_KEYS:
        if isinstance(config.get(key), dict):
            nested = _vocab(config[key])
            if nested != VOCAB or _first(config[key], VOCAB_KEYS) is not None:
                return nested
    return VOCAB


def _set(config: dict[str, Any], key: str, value: Any, where: str, changes: list[str]) -> None:
    old = config.get(key)
    if old != value:
        config[key] = value
        changes.append(f"{where}{key}: {old!r} -> {value!r}")


def _shrink_level(config: dict[str, Any], targets: _Targets, where: str, changes: list[str]) -> None:
    old_layers = _first(config, LAYER_KEYS)
    old_heads = _first(config, HEAD_KEYS)
    old_hidden = _first(config, HIDDEN_KEYS)
    for key in HIDDEN_KEYS:
        # Set, not only capped: a smaller default width would give heads no CPU backend compiles.
        if _is_int(config.get(key)) and config[key] > 0:
            _set(config, key, targets.hidden, where, changes)
    for key in INTERMEDIATE_KEYS:
        if _is_int(config.get(key)) and config[key] > targets.intermediate:
            _set(config, key, targets.intermediate, where, changes)
    for key in MOE_INTERMEDIATE_KEYS:
        if _is_int(config.get(key)) and config[key] > MOE_INTERMEDIATE:
            _set(config, key, MOE_INTERMEDIATE, where, changes)
        elif key in config and config[key] is None and targets is not TOWER and key == "moe_intermediate_size":
            # A class default of None (Kimi-Linear's): engines take it modulo a padding size;
            # checkpoints carry it.
            _set(config, key, MOE_INTERMEDIATE, where, changes)
    for key in LAYER_KEYS:
        if _is_int(config.get(key)):
            _set(config, key, targets.layers, where, changes)
    for key in HEAD_KEYS:
        if _is_int(config.get(key)):
            _set(config, key, targets.heads, where, changes)
    for key in KV_HEAD_KEYS:
        if _is_int(config.get(key)):
            _set(config, key, _kv_heads(config[key], old_heads, targets.heads), where, changes)
    for key in HEAD_DIM_KEYS:
        if _is_int(config.get(key)):
            _set(config, key, targets.hidden // targets.heads, where, changes)
    experts = None
    for key in EXPERT_KEYS:
        if _is_int(config.get(key)) and config[key] > 0:
            experts = min(config[key], MAX_EXPERTS)
            _set(config, key, experts, where, changes)
    for key in TOP_K_KEYS:
        if _is_int(config.get(key)) and config[key] > 0 and (experts is not None or key != "top_k"):
            _set(config, key, min(config[key], MAX_TOP_K, experts or MAX_TOP_K), where, changes)
        elif key in config and config[key] is None and experts is not None and key != "top_k":
            # A class default of None routes to no experts (checkpoints set it).
            _set(config, key, min(MAX_TOP_K, experts), where, changes)
    if old_hidden:
        # Widths stated as a multiple of the hidden size (Zamba2's attention_hidden_size = 2 x
        # hidden) keep the multiple.
        for key, value in list(config.items()):
            if (
                isinstance(key, str) and key.endswith(("hidden_size", "_dim")) and _is_int(value)
                and key not in (*HIDDEN_KEYS, *INTERMEDIATE_KEYS, *MOE_INTERMEDIATE_KEYS)
                and value > targets.hidden and value % old_hidden == 0 and value // old_hidden <= 4
            ):
                _set(config, key, targets.hidden * (value // old_hidden), where, changes)
    for key in GROUP_KEYS:
        # A class default of None leaves grouped top-k routing without groups (checkpoints set it).
        if key in config and (config[key] is None or (_is_int(config[key]) and config[key] > 1)):
            _set(config, key, 1, where, changes)
    if targets is not TOWER and old_heads is not None and not any(k in config for k in HEAD_DIM_KEYS):
        # Checkpoints carry the head size where the class default leaves it out (and the engine
        # reads it without a fallback).
        _set(config, "head_dim", targets.hidden // targets.heads, where, changes)
    if _is_int(config.get("rotary_dim")) and config["rotary_dim"] > targets.hidden // targets.heads:
        _set(config, "rotary_dim", targets.hidden // targets.heads, where, changes)
    for key in SHARED_EXPERT_KEYS:
        if _is_int(config.get(key)) and config[key] > 1:
            _set(config, key, 1, where, changes)
    for key in DENSE_PREFIX_KEYS:
        if _is_int(config.get(key)) and config[key] >= targets.layers:
            _set(config, key, 1, where, changes)
    for key in POSITION_KEYS:
        if _is_int(config.get(key)) and config[key] < MIN_POSITIONS:
            _set(config, key, MIN_POSITIONS, where, changes)
    for key, size in {**MLA_SIZES, **STATE_SIZES}.items():
        if _is_int(config.get(key)) and config[key] > size:
            _set(config, key, size, where, changes)
    heads, head = config.get("mamba_n_heads"), config.get("mamba_d_head")
    if isinstance(heads, int) and isinstance(head, int) and _is_int(config.get("mamba_d_ssm")) and config["mamba_d_ssm"] != heads * head:
        # A Mamba width stated apart from its heads is their product (Falcon-H1's config checks
        # it, and the class default's head size was derived from the full width).
        _set(config, "mamba_d_ssm", heads * head, where, changes)
    for key in VOCAB_KEYS:
        if _is_int(config.get(key)) and config[key] > VOCAB:
            _set(config, key, VOCAB, where, changes)
    if old_layers is not None:
        _per_layer_lists(config, old_layers, targets.layers, where, changes)


def _kv_heads(old_kv: int, old_heads: int | None, heads: int) -> int:
    """KV heads in the original ratio to the heads (MHA stays MHA, MQA stays one head)."""
    if old_heads and old_kv > 0 and old_heads % old_kv == 0:
        group = old_heads // old_kv
        return max(1, heads // group) if heads % group == 0 or group > heads else 1
    return heads


def _per_layer_lists(config: dict[str, Any], old_layers: int, layers: int, where: str, changes: list[str]) -> None:
    """A list with one entry per layer is cut to the new count; a list of layer indices (a key
    naming layers) keeps the indices still inside the model."""
    for key, value in list(config.items()):
        if isinstance(value, dict) and "layer" in key and value and all(str(k).isdigit() for k in value):
            # Per-layer settings keyed by layer index: those still inside the model.
            inside = {k: v for k, v in value.items() if int(k) < layers}
            if inside != value:
                _set(config, key, inside, where, changes)
            continue
        if not isinstance(value, list) or not value:
            continue
        if len(value) == old_layers and old_layers != layers:
            _set(config, key, _cut_per_layer(value, layers), where, changes)
        elif "layer" in key and all(_is_int(v) for v in value):
            kept = [v for v in value if 0 <= v < layers]
            if kept != value:
                _set(config, key, kept, where, changes)


def _cut_per_layer(value: list[Any], layers: int) -> list[Any]:
    """A per-layer list at ``layers`` entries; a list of layer kinds (strings) keeps every kind
    the model had (the last layers take the kinds the first ``layers`` lack), so that a hybrid
    model stays hybrid: engines check a hybrid architecture has at least one layer of each kind."""
    cut = value[:layers] if len(value) > layers else value + value[-1:] * (layers - len(value))
    if all(isinstance(v, str) for v in value):
        lacking = list(dict.fromkeys(v for v in value if v not in cut))
        if lacking and len(lacking) < layers:
            cut = cut[: layers - len(lacking)] + lacking
    return cut


def _is_id_key(key: object) -> bool:
    return isinstance(key, str) and key.endswith(("_token_id", "_token_index", "_token_ids", "_id", "_index")) and "layer" not in key and key != "model_id"


def _remap_ids(node: Any, vocab: int, mapping: dict[int, int], where: str, changes: list[str]) -> None:
    """Every token id at or past ``vocab`` moves to a distinct id at the top of the vocabulary
    (the same old id to the same new one, wherever it appears)."""
    if not isinstance(node, dict):
        return
    for key, value in list(node.items()):
        if isinstance(value, dict) and key not in ("id2label", "label2id"):
            _remap_ids(value, vocab, mapping, f"{where}{key}.", changes)
        elif _is_id_key(key):
            if _is_int(value) and value >= vocab:
                _set(node, key, _new_id(value, vocab, mapping), where, changes)
            elif isinstance(value, list) and any(_is_int(v) and v >= vocab for v in value):
                _set(node, key, [_new_id(v, vocab, mapping) if _is_int(v) and v >= vocab else v for v in value], where, changes)


def _new_id(old: int, vocab: int, mapping: dict[int, int]) -> int:
    if old not in mapping:
        mapping[old] = vocab - 1 - len(mapping)
    return mapping[old]


def drafter_config(hidden: int, vocab: int, dtype: str = "float32") -> dict[str, Any]:
    """A one-layer Llama EAGLE-3 drafter for a target of this width and vocabulary."""
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": 1,
        "num_attention_heads": max(1, hidden // HEAD_DIM),
        "num_key_value_heads": max(1, hidden // HEAD_DIM // 2),
        "head_dim": HEAD_DIM,
        "vocab_size": vocab,
        "draft_vocab_size": vocab,
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": dtype,
    }


# What a stand-in config (Llama's, for a remote-code class) starts from when the architecture is
# a mixture of experts: the keys such checkpoints carry, at the shrunken sizes, so that the
# launch does not spend a retry on each.
STAND_IN_MOE = {
    "num_experts": MAX_EXPERTS, "n_routed_experts": MAX_EXPERTS, "num_experts_per_tok": MAX_TOP_K,
    "moe_intermediate_size": MOE_INTERMEDIATE, "num_shared_experts": 1, "n_shared_experts": 1,
    "first_k_dense_replace": 1, "norm_topk_prob": True, "n_group": 1, "topk_group": 1,
    "moe_shared_expert_intermediate_size": MOE_INTERMEDIATE,
}


def stand_in_defaults(architecture: str) -> dict[str, Any]:
    """Keys a stand-in config for ``architecture`` starts with beyond Llama's."""
    return dict(STAND_IN_MOE) if "moe" in architecture.lower() else {}


def guess_missing(name: str, vocab: int = VOCAB) -> Any:
    """A value for a config attribute the class default lacks but the engine reads (checkpoints
    carry it): by its name, the smallest value that keeps a launch consistent. Not a claim about
    real checkpoints: the record lists every guess."""
    lowered = name.lower()
    if lowered.endswith(("token_id", "token_index", "_id")):
        return vocab - 64
    if "rope_parameters" in lowered or lowered == "rope_scaling":
        return {"rope_type": "default", "rope_theta": 10000.0}
    if "theta" in lowered or "rope_base" in lowered:
        return 10000.0
    if lowered in MLA_SIZES:
        # An MLA size a class default lacks (MiniCPM3's, GLM-5's kv_lora_rank): None would be
        # added up with the rotary size.
        return MLA_SIZES[lowered]
    if lowered.endswith("_lora_rank"):
        return MLA_SIZES["kv_lora_rank"]
    if "eps" in lowered:
        return 1e-6
    if "activation" in lowered or lowered.endswith(("_act", "act_fn")):
        return "silu"
    if lowered.endswith(("_func", "_function")):
        return "softmax"
    if "dropout" in lowered or lowered.endswith("_pdrop"):
        return 0.0
    if lowered.endswith("_act") or lowered.startswith("hidden_act") or lowered.endswith("activation"):
        return "silu"
    if lowered.startswith(("use_", "is_", "enable_", "has_")):
        return False
    if lowered.startswith("norm_"):
        return True
    if lowered.endswith(("head_dim", "_head_size")) or lowered in ("rotary_dim", "rope_dim"):
        return HEAD_DIM
    if lowered.endswith("_interval"):
        # Every n-th layer of a kind (Qwen3-Next's full_attention_interval, 4 in its checkpoints):
        # both kinds stay among the shrunken layers.
        return 4
    if lowered.endswith("_freq"):
        # A MoE layer every n layers (DeepSeek's moe_layer_freq, 1 in its checkpoints).
        return 1
    if lowered.startswith("first_k") or lowered.endswith("_replace"):
        return 1
    if lowered in EXPERT_KEYS:
        return MAX_EXPERTS
    if lowered in TOP_K_KEYS:
        return MAX_TOP_K
    if lowered in LAYER_KEYS:
        return TEXT_LAYERS
    if lowered in HEAD_KEYS or lowered in KV_HEAD_KEYS:
        return TEXT_HEADS
    if lowered.endswith(("hidden_size", "_dim", "_size", "_width")):
        return TEXT_HIDDEN
    if lowered.startswith(("num_", "n_")) or lowered.endswith(("_layers", "_heads", "_experts")):
        return 1
    if "factor" in lowered or "scale" in lowered or "ratio" in lowered:
        return 1.0
    if lowered.endswith(("_base", "_multiplier")):
        # muP-style widths a size is divided by (MiniCPM's dim_model_base): the width itself.
        return TEXT_HIDDEN if lowered.endswith("_base") else 1.0
    return None
