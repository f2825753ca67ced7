"""The engine-run machinery without an engine: the config shrinker on configs shaped as real
config classes' defaults are, the state-to-layer matcher on synthetic tensors (tuples of floats),
the outcome of a run from its records, and the command's usage errors."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from eagle3lint.enginerun.matcher import Recording, indistinct_streams, judge_capture, match_states
from eagle3lint.enginerun.outcome import SETUP_FAILED, TIMEOUT, UNMATCHED, classify
from eagle3lint.enginerun.shrink import HEAD_DIM, TEXT_HIDDEN, VOCAB, drafter_config, shrink_config
from tests.helpers import run_cli

# Facts of transformers' defaults (names and values, not code): LlamaConfig, Qwen3MoeConfig,
# DeepseekV3Config, Qwen2VLConfig (a text config with a vision tower and image ids past the vocabulary).
LLAMA = {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
         "num_key_value_heads": 32, "head_dim": 128, "vocab_size": 32000, "max_position_embeddings": 2048,
         "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": None, "id2label": {0: "LABEL_0"}}
QWEN3_MOE = {"hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_hidden_layers": 24,
             "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "num_experts": 128,
             "num_experts_per_tok": 8, "vocab_size": 151936, "mlp_only_layers": [], "decoder_sparse_step": 1,
             "layer_types": ["full_attention"] * 24}
DEEPSEEK_V3 = {"hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
               "num_attention_heads": 128, "num_key_value_heads": 128, "n_routed_experts": 256, "n_shared_experts": 1,
               "num_experts_per_tok": 8, "n_group": 8, "topk_group": 4, "first_k_dense_replace": 3, "kv_lora_rank": 512,
               "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280,
               "bos_token_id": 0, "eos_token_id": 1}
QWEN2_VL = {"model_type": "qwen2_vl", "image_token_id": 151655, "video_token_id": 151656, "vision_start_token_id": 151652,
            "text_config": {"hidden_size": 8192, "intermediate_size": 29568, "num_hidden_layers": 80, "num_attention_heads": 64,
                            "num_key_value_heads": 8, "vocab_size": 152064, "eos_token_id": [151645, 151643]},
            "vision_config": {"depth": 32, "embed_dim": 1280, "hidden_size": 3584, "num_heads": 16, "mlp_ratio": 4,
                              "patch_size": 14}}


def test_shrinks_llama_to_the_bounds_keeping_heads_consistent() -> None:
    shrunk = shrink_config(LLAMA).config
    assert shrunk["hidden_size"] == TEXT_HIDDEN <= 256
    assert 6 <= shrunk["num_hidden_layers"] <= 12
    assert shrunk["hidden_size"] % shrunk["num_attention_heads"] == 0
    assert shrunk["head_dim"] * shrunk["num_attention_heads"] == shrunk["hidden_size"]
    assert shrunk["num_key_value_heads"] == shrunk["num_attention_heads"]  # MHA stays MHA
    assert shrunk["vocab_size"] <= VOCAB and shrunk["bos_token_id"] == 1
    assert shrunk["id2label"] == {0: "LABEL_0"}
    assert LLAMA["hidden_size"] == 4096  # the input is not changed


def test_moe_keeps_top_k_within_experts_and_per_layer_lists_follow_the_layers() -> None:
    shrunk = shrink_config(QWEN3_MOE)
    config = shrunk.config
    assert config["num_experts"] <= 8 and config["num_experts_per_tok"] <= config["num_experts"]
    assert config["num_attention_heads"] % config["num_key_value_heads"] == 0
    assert config["num_attention_heads"] // config["num_key_value_heads"] in (1, 2, 4, 8)
    assert len(config["layer_types"]) == config["num_hidden_layers"]
    assert any(c.startswith("num_experts:") for c in shrunk.changes)


def test_mla_sizes_and_groups() -> None:
    config = shrink_config(DEEPSEEK_V3).config
    assert config["qk_nope_head_dim"] + config["qk_rope_head_dim"] == HEAD_DIM * 2
    assert config["n_group"] == 1 and config["topk_group"] == 1
    assert config["first_k_dense_replace"] < config["num_hidden_layers"]
    assert config["n_routed_experts"] <= 8 and config["num_experts_per_tok"] <= config["n_routed_experts"]


def test_multimodal_ids_stay_inside_the_vocabulary_and_the_tower_shrinks() -> None:
    shrunk = shrink_config(QWEN2_VL)
    config = shrunk.config
    vocab = config["text_config"]["vocab_size"]
    assert vocab <= VOCAB and shrunk.vocab == vocab
    ids = [config["image_token_id"], config["video_token_id"], config["vision_start_token_id"], *config["text_config"]["eos_token_id"]]
    assert all(0 <= i < vocab for i in ids)
    assert len(set(ids)) == len(ids)  # distinct ids stay distinct
    tower = config["vision_config"]
    assert tower["depth"] == 2 and tower["embed_dim"] <= 64 and tower["embed_dim"] % tower["num_heads"] == 0
    assert config["text_config"]["num_hidden_layers"] == 8


def test_class_defaults_that_checkpoints_always_set() -> None:
    """Facts of real defaults: DeepseekV2Config leaves n_group/topk_group None (grouped routing
    then has no groups), Glm4MoeConfig has no head_dim, GPTJConfig's rotary_dim 64 exceeds a
    32-wide head, Gemma 4 keys per-layer settings by layer index."""
    config = shrink_config({"hidden_size": 5120, "num_attention_heads": 128, "num_hidden_layers": 60, "n_group": None, "topk_group": None,
                            "rotary_dim": 64, "per_layer_config": {"3": {"a": 1}, "11": {"a": 2}}}).config
    assert config["n_group"] == 1 and config["topk_group"] == 1
    assert config["head_dim"] == HEAD_DIM and config["rotary_dim"] <= HEAD_DIM
    assert config["per_layer_config"] == {"3": {"a": 1}}
    # DeepseekV2Config's num_experts_per_tok is None (routing to no experts); Zamba2's attention
    # width is twice the hidden size, and stays so.
    moe = shrink_config({"hidden_size": 2560, "num_attention_heads": 32, "num_hidden_layers": 54, "n_routed_experts": 64,
                         "num_experts_per_tok": None, "attention_hidden_size": 5120, "intermediate_size": 10240}).config
    assert moe["num_experts_per_tok"] == 2 and moe["attention_hidden_size"] == 2 * TEXT_HIDDEN
    assert moe["intermediate_size"] == 256  # an intermediate size is not a width multiple


def test_drafter_matches_the_target() -> None:
    drafter = drafter_config(128, 2048)
    assert drafter["architectures"] == ["LlamaForCausalLMEagle3"] and drafter["num_hidden_layers"] == 1
    assert drafter["hidden_size"] == 128 and drafter["vocab_size"] == drafter["draft_vocab_size"] == 2048
    assert drafter["num_attention_heads"] * drafter["head_dim"] == 128


# ---- the matcher --------------------------------------------------------------------------------

def _same(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a == b


def _streams(n: int) -> list[tuple[float, ...] | None]:
    return [(float(k), float(k) * 2) for k in range(n + 1)]


def test_states_equal_to_the_ids_streams_are_right() -> None:
    streams = _streams(8)
    recording = Recording(streams=streams, partials={})
    matches = match_states([streams[2], streams[4], streams[5]], recording, _same)
    assert [m.streams for m in matches] == [[2], [4], [5]]
    assert judge_capture([2, 4, 5], matches).right


def test_a_partial_sum_is_named_and_wrong() -> None:
    streams = _streams(8)
    partial = (99.0, 1.0)
    recording = Recording(streams=streams, partials={"layer 3's output without its residual": partial})
    matches = match_states([streams[2], partial, streams[5]], recording, _same)
    assert matches[1].streams == [] and matches[1].partials == ["layer 3's output without its residual"]
    judged = judge_capture([2, 4, 5], matches)
    assert not judged.right and "layer 3's output without its residual" in judged.problems[0]


def test_off_by_one_layer_is_wrong() -> None:
    streams = _streams(8)
    matches = match_states([streams[3], streams[5], streams[6]], Recording(streams, {}), _same)
    judged = judge_capture([2, 4, 5], matches)
    assert not judged.right and len(judged.problems) == 3


def test_colliding_default_ids_give_fewer_states() -> None:
    # Six layers: ids (2, 3, 3) are two distinct states for a drafter that expects three.
    streams = _streams(6)
    matches = match_states([streams[2], streams[3]], Recording(streams, {}), _same)
    assert judge_capture([2, 3, 3], matches).right  # what the engine captures: each layer once
    assert not judge_capture([2, 3, 4], matches).right


def test_indistinct_streams_are_reported() -> None:
    flat: list[tuple[float, ...] | None] = [(0.0,)] * 4
    assert indistinct_streams(Recording(flat, {}), _same) == [1, 2, 3]
    assert indistinct_streams(Recording(_streams(3), {}), _same) == []


# ---- the outcome --------------------------------------------------------------------------------

REFUSALS = (re.compile(r"does not support EAGLE3 interface"),)


def _failed(message: str, phase: str = "init", kind: str = "AttributeError") -> dict[str, object]:
    return {"ok": False, "failed_in": phase, "error": {"type": kind, "message": message, "frames": ["vllm/x.py:3 in f"]}}


def _worked(right: bool | None, indistinct: list[int] | None = None, seen: bool = True) -> dict[str, object]:
    matches = [{"index": i, "streams": [k] if seen else [], "partials": []} for i, k in enumerate((2, 4, 5))]
    return {"ok": True, "ids": [2, 4, 5], "passes": [{"aux_count": 3, "widths": [128] * 3, "streams_seen": 9, "right": right,
                                                       "problems": [] if right else ["state 1 (id 4) is the stream after 3 layers"],
                                                       "indistinct": indistinct or [], "matches": matches}]}


def test_outcomes_from_records() -> None:
    assert classify(_failed("Model does not support EAGLE3 interface but ..."), None, REFUSALS).outcome == "refused"
    crash = classify(_failed("Target model does not have 'model' attribute"), {"ok": True}, REFUSALS)
    assert crash.outcome == "crash" and "vllm/x.py:3" in crash.cause
    setup = classify(_failed("bad config"), _failed("bad config"), REFUSALS)
    assert setup.outcome == SETUP_FAILED and "without the drafter too" in setup.cause
    assert classify(_failed("no config class", phase="setup"), None, REFUSALS).outcome == SETUP_FAILED
    # The base launch loads and fails only when it generates: the drafter load's crash is EAGLE-3's.
    later = classify(_failed("Target model does not have 'model' attribute"), _failed("head_dim=16", phase="generate"), REFUSALS)
    assert later.outcome == "crash" and "'model' attribute" in later.cause
    assert classify({"ok": False, "timed_out": True, "phase": "init"}, {"ok": True}, REFUSALS).outcome == TIMEOUT
    assert classify(_worked(True), None, REFUSALS).outcome == "works"
    silent = classify(_worked(False), None, REFUSALS)
    assert silent.outcome == "silent" and silent.matched
    indistinct = classify(_worked(False, indistinct=[1, 2]), None, REFUSALS)
    assert indistinct.outcome == "works" and not indistinct.matched
    # A last layer adding nothing (stream 8 = stream 7) does not blur ids 2, 4 and 5.
    far = classify(_worked(False, indistinct=[8]), None, REFUSALS)
    assert far.outcome == "silent" and far.matched
    # Stream 6 equals stream 5: a state from layer 6 would pass as id 5's, no verdict on the match.
    neighbour = classify(_worked(False, indistinct=[6]), None, REFUSALS)
    assert neighbour.outcome == "works" and not neighbour.matched
    # No state equals anything recorded: the hooks missed the stream, no verdict.
    assert classify(_worked(None, seen=False), None, REFUSALS).outcome == UNMATCHED


# ---- the command ----------------------------------------------------------------------------------

def test_missing_engine_is_a_usage_error(tmp_path: Path) -> None:
    done = run_cli("engine-run", "LlamaForCausalLM", "--engine-python", str(tmp_path / "nowhere" / "python"))
    assert done.returncode == 2, done.stderr
    assert "no such interpreter" in done.stderr and "Traceback" not in done.stderr


def test_interpreter_without_the_engine_is_a_usage_error() -> None:
    done = run_cli("engine-run", "LlamaForCausalLM", "--engine-python", sys.executable)
    assert done.returncode == 2, done.stderr
    assert "has no vllm installed" in done.stderr and "install" in done.stderr and "Traceback" not in done.stderr


def test_nothing_named_is_a_usage_error() -> None:
    done = run_cli("engine-run")
    assert done.returncode == 2 and "--all" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("body", ["{", '{"architectures": 3}', '{"architectures": []}'])
def test_model_path_without_an_architecture(tmp_path: Path, body: str) -> None:
    (tmp_path / "config.json").write_text(body, encoding="utf-8")
    done = run_cli("engine-run", "--model-path", str(tmp_path), "--engine-python", sys.executable)
    assert done.returncode == 2 and "config.json" in done.stderr and "Traceback" not in done.stderr


# ---- config attributes a class default lacks ------------------------------------------------------

def _record(message: str | None, phase: str = "init") -> dict[str, object]:
    if message is None:
        return {"ok": True, "ids": None, "passes": []}
    return {"ok": False, "failed_in": phase, "error": {"type": "AttributeError", "message": message, "frames": []}}


def test_attributes_only_the_base_launch_needs_are_added(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The launch without the drafter lacks `score_func`: it reruns with it (and passes), then the
    drafter's launch with it too; that one lacks `image_token_index` (what the drafter load
    copies), which the launch without the drafter never reads: that crash is EAGLE-3's, and
    nothing is added for it."""
    from eagle3lint.enginerun import sweep
    from eagle3lint.enginerun.spec import EngineRunSpec

    calls: list[tuple[str, dict[str, object]]] = []

    def fake_probe(_env: object, _launch: object, mode: str, *_args: object, added: dict[str, object] | None = None, **_kw: object) -> dict[str, object]:
        calls.append((mode, dict(added or {})))
        if "score_func" not in (added or {}):
            return _record("'AfmoeConfig' object has no attribute 'score_func'")
        return _record("'AfmoeConfig' object has no attribute 'image_token_index'") if mode == "eagle" else _record(None)

    monkeypatch.setattr(sweep, "probe_once", lambda env, launch, mode, workdir, timeout_s, slot, jobs, added=None: fake_probe(env, launch, mode, added=added))
    spec = EngineRunSpec("vllm", tmp_path / "probe.py", REFUSALS, list, "", "", {})
    env = sweep.EngineEnv(spec, tmp_path / "python", "0", tmp_path)
    run = sweep.run_class(env, sweep.Launch("AfmoeForCausalLM"), None, tmp_path, 10.0)
    assert run.outcome.outcome == "crash" and "image_token_index" in run.outcome.cause
    assert [mode for mode, _ in calls] == ["eagle", "base", "base", "eagle"]
    assert calls[-1][1] == {"score_func": "softmax"} and "score_func='softmax'" in run.notes[0]


def test_guessed_values_by_name() -> None:
    from eagle3lint.enginerun.shrink import guess_missing

    assert guess_missing("media_placeholder_token_id") < VOCAB
    assert guess_missing("rope_theta") == 10000.0 and guess_missing("use_qk_norm") is False
    # Exaone's activation_function, BailingMoe's embedding_dropout, MiniCPM's dim_model_base.
    assert guess_missing("activation_function") == "silu" and guess_missing("embedding_dropout") == 0.0
    assert isinstance(guess_missing("dim_model_base"), int)
    # A MoE class whose config the stand-in lacks: experts that cover top-k.
    assert guess_missing("num_experts") >= guess_missing("num_experts_per_tok") >= 1
    from eagle3lint.enginerun.shrink import stand_in_defaults

    moe = stand_in_defaults("BailingMoeV2ForCausalLM")
    assert moe["num_experts"] >= moe["num_experts_per_tok"] and "moe_intermediate_size" in moe
    assert stand_in_defaults("InternLM2ForCausalLM") == {}
    assert guess_missing("head_dim") == HEAD_DIM and guess_missing("num_nextn_predict_layers") == 1


def test_mla_sizes_a_class_default_lacks_are_guessed_as_sizes() -> None:
    """MiniCPM3's and GLM-5's class defaults lack kv_lora_rank: a None would be added up with the
    rotary size (minicpm3.py, deepseek_v2.py: kv_lora_rank + qk_rope_head_dim)."""
    from eagle3lint.enginerun.shrink import MLA_SIZES, guess_missing

    for name in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
        assert guess_missing(name) == MLA_SIZES[name]
    assert isinstance(guess_missing("q_lora_rank"), int)
    # Qwen3-Next's layer schedule: an interval that keeps both kinds among the shrunken layers.
    from eagle3lint.enginerun.shrink import TEXT_LAYERS

    assert 1 < guess_missing("full_attention_interval") < TEXT_LAYERS
    assert guess_missing("moe_layer_freq") == 1  # DeepSeek-V1's: every layer past the dense ones


def test_a_hybrid_layer_schedule_keeps_every_kind_when_cut() -> None:
    """A schedule whose first layers are all of one kind (a linear-attention layer every 10th)
    keeps a layer of each kind: the engine checks a hybrid model has one of each."""
    kinds = ["full_attention"] * 9 + ["sliding_attention"] + ["full_attention"] * 10
    config = shrink_config({**LLAMA, "num_hidden_layers": 20, "layer_types": kinds}).config
    assert len(config["layer_types"]) == config["num_hidden_layers"]
    assert set(config["layer_types"]) == {"full_attention", "sliding_attention"}
    assert config["layer_types"][0] == "full_attention"
    # One kind throughout stays as it was, cut.
    assert set(shrink_config(QWEN3_MOE).config["layer_types"]) == {"full_attention"}


@pytest.mark.parametrize(
    ("message", "name"),
    [
        ("'MistralConfig' object has no attribute 'n_shared_experts'", "n_shared_experts"),
        ("AfmoeConfig must define `num_experts`.", "num_experts"),
        ("'NoneType' object has no attribute 'hidden_size'", None),
    ],
)
def test_the_attribute_a_failed_launch_names(message: str, name: str | None) -> None:
    from eagle3lint.enginerun.sweep import missing_attribute

    assert missing_attribute(message) == name


def test_an_attribute_without_a_guess_is_not_retried(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """DeciLM's block_configs has no value to guess: a relaunch with None would fail alike."""
    from eagle3lint.enginerun import sweep
    from eagle3lint.enginerun.spec import EngineRunSpec

    modes: list[str] = []

    def fake_probe(env: object, launch: object, mode: str, workdir: object, timeout_s: object, slot: object, jobs: object, added: object = None) -> dict[str, object]:
        modes.append(mode)
        return _record("'DeciLMConfig' object has no attribute 'block_configs'")

    monkeypatch.setattr(sweep, "probe_once", fake_probe)
    spec = EngineRunSpec("sglang", tmp_path / "probe.py", REFUSALS, list, "", "", {})
    run = sweep.run_class(sweep.EngineEnv(spec, tmp_path / "python", "0", tmp_path), sweep.Launch("DeciLMForCausalLM"), None, tmp_path, 10.0)
    assert modes == ["eagle", "base"] and run.outcome.outcome == SETUP_FAILED
    assert "block_configs" in run.notes[-1] and "not retried" in run.notes[-1]


def test_a_language_model_nested_two_levels_down_shrinks() -> None:
    """Qwen3-Omni's language model is thinker_config.text_config, its vision tower
    thinker_config.vision_config: left at full size, the launch ran out of memory."""
    omni = {"model_type": "qwen3_omni_moe", "thinker_config": {"image_token_id": 151655, "text_config": dict(QWEN3_MOE),
                                                              "vision_config": dict(QWEN2_VL["vision_config"])}}
    shrunk = shrink_config(omni)
    thinker = shrunk.config["thinker_config"]
    assert thinker["text_config"]["hidden_size"] == TEXT_HIDDEN and thinker["text_config"]["vocab_size"] <= VOCAB
    assert thinker["vision_config"]["depth"] <= 2
    assert thinker["image_token_id"] < VOCAB and shrunk.vocab == VOCAB


def test_a_none_expert_width_gets_a_size() -> None:
    """Kimi-Linear's class default leaves moe_intermediate_size None; SGLang's CPU start-up
    takes it modulo a padding size (configs/update_config.py)."""
    config = shrink_config({**QWEN3_MOE, "moe_intermediate_size": None}).config
    assert isinstance(config["moe_intermediate_size"], int) and config["moe_intermediate_size"] > 0


def test_a_mamba_width_stated_apart_from_its_heads_stays_their_product() -> None:
    """Falcon-H1's class default states mamba_d_ssm (1024) beside 128 heads of a derived 8; its
    config checks d_head x n_heads == d_ssm, so shrinking the heads alone failed both launches."""
    falcon = {"model_type": "falcon_h1", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
              "mamba_d_ssm": 1024, "mamba_n_heads": 128, "mamba_d_head": 8, "mamba_expand": 2, "vocab_size": 128000}
    config = shrink_config(falcon).config
    assert config["mamba_n_heads"] < 128
    assert config["mamba_d_ssm"] == config["mamba_n_heads"] * config["mamba_d_head"]
