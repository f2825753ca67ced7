"""The round-4 key-fuzz and Kimi corpora (``robustness/round4/gen_keyfuzz.py``, ``gen_kimi.py``),
rebuilt here: one drafter or target config key set to one hostile value per pair, judged by the
pre-flight against real releases in process (one analysis of each release, shared). Every pair
ends without an exception, and a drafter value its draft class cannot be built with is never
``works``."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest

from eagle3lint.engines import knowledge_for
from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.run.preflight import run_preflight
from eagle3lint.verify.pair.context import Launch
from tests.fakes.model_folders import write_config, write_safetensors
from tests.helpers import release_root
from tests.pair_helpers import shared_checks

pytestmark = [pytest.mark.release, pytest.mark.usefixtures("shared_checks")]
__all__ = ["shared_checks"]

LLAMA_T = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "vocab_size": 128256,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336}
LLAMA_D = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 4096, "vocab_size": 128256,
           "draft_vocab_size": 32000, "num_hidden_layers": 1, "num_attention_heads": 32, "num_key_value_heads": 8,
           "intermediate_size": 14336, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 15, 28], "use_aux_hidden_state": True}}
TENSORS = {"d2t": ("I64", [32000]), "t2d": ("BOOL", [128256]), "norm.weight": ("BF16", [4096]),
           "fc.weight": ("BF16", [4096, 4096 * 3]), "lm_head.weight": ("BF16", [32000, 4096])}
VALUES: dict[str, Any] = {"huge": 10**30, "p400": 10**400, "neg": -1, "zero": 0, "half": 1.5, "inf": float("inf"),
                          "nan": float("nan"), "str": "x", "null": None, "list": [1], "dict": {"a": 1}, "true": True}
D_KEYS = ["num_hidden_layers", "intermediate_size", "num_attention_heads", "num_key_value_heads", "head_dim",
          "max_position_embeddings", "rms_norm_eps", "hidden_act", "tie_word_embeddings", "rope_theta", "rope_scaling",
          "target_hidden_size", "norm_before_fc", "draft_vocab_size", "attention_bias", "pretraining_tp", "torch_dtype"]
T_KEYS = ["num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size",
          "rope_scaling", "tie_word_embeddings", "first_k_dense_replace", "num_nextn_predict_layers", "quantization_config"]
RELEASES = ["sglang==0.5.23", "vllm==0.33.0"]


def _whole(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value < 2**63


def cannot_build(key: str, value: Any) -> bool:
    """Whether the drafter's draft class cannot be built with ``key`` set to ``value`` (what the
    pre-flight must never call works)."""
    if key in ("num_attention_heads", "num_key_value_heads"):
        return not _whole(value, 1)
    if key in ("intermediate_size", "max_position_embeddings", "hidden_size", "vocab_size", "draft_vocab_size"):
        return not _whole(value, 0)
    if key == "head_dim":
        return value is not None and not _whole(value, 0)
    if key in ("rms_norm_eps", "rope_theta"):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return True
        try:
            return not (math.isfinite(float(value)) and value > 0)
        except OverflowError:
            return True
    if key == "rope_scaling":
        return value is not None and not isinstance(value, dict)
    return False


def _pair(base: Path, target: dict[str, Any], drafter: dict[str, Any]) -> tuple[Path, Path]:
    t, d = write_config(base / "t", target), write_config(base / "d", drafter)
    write_safetensors(d / "model.safetensors", TENSORS)
    return t, d


def _judge(release: str, target: Path, drafter: Path) -> str:
    engine = discover_engine([], engine_root=release_root(release))
    result = run_preflight(str(target), str(drafter), knowledge_for(engine.name), engine, launch=Launch())
    return result.outcome


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("key", D_KEYS)
def test_drafter_key_fuzz(tmp_path: Path, release: str, key: str) -> None:
    wrong = []
    for name, value in VALUES.items():
        drafter = copy.deepcopy(LLAMA_D)
        drafter[key] = value
        outcome = _judge(release, *_pair(tmp_path / name, LLAMA_T, drafter))
        if outcome == "works" and cannot_build(key, value):
            wrong.append(name)
    assert not wrong, f"{release}: drafter {key} = {wrong}: works"


@pytest.mark.parametrize("release", ["sglang==0.5.23"])
@pytest.mark.parametrize("key", T_KEYS)
def test_target_key_fuzz_ends_without_an_exception(tmp_path: Path, release: str, key: str) -> None:
    for name, value in VALUES.items():
        target = copy.deepcopy(LLAMA_T)
        target[key] = value
        _judge(release, *_pair(tmp_path / name, target, LLAMA_D))


KIMI_T = {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
          "text_config": {"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, "vocab_size": 163840, "num_hidden_layers": 61},
          "vision_config": {"hidden_size": 1152}}
KIMI_D = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 7168, "intermediate_size": 18432,
          "num_hidden_layers": 1, "vocab_size": 163840, "draft_vocab_size": 32000, "num_attention_heads": 56, "num_key_value_heads": 8,
          "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58], "use_aux_hidden_state": True}}
KIMI_CASES: dict[str, Any] = {
    "layers_huge": {"num_hidden_layers": 10**30}, "layers_str": {"num_hidden_layers": "61"}, "layers_neg": {"num_hidden_layers": -1},
    "layers_1e6": {"num_hidden_layers": 10**6}, "layers_null": {"num_hidden_layers": None}, "hidden_huge": {"hidden_size": 10**30},
    "first_k_dense_huge": {"first_k_dense_replace": 10**30}, "arch_escape": {"architectures": ["\x1b[2JEvil\nOutcome: works"]},
    "text_arch_str": {"architectures": "DeepseekV3ForCausalLM"},
}


@pytest.mark.parametrize("release", ["sglang==0.5.23"])
def test_kimi_text_config_fuzz_ends_without_an_exception(tmp_path: Path, release: str) -> None:
    for name, change in KIMI_CASES.items():
        target = copy.deepcopy(KIMI_T)
        target["text_config"].update(change)
        _judge(release, *_pair(tmp_path / name, target, KIMI_D))
    for name, text_config in {"tc_list": [1, 2], "tc_str": "x", "tc_null": None, "tc_deep": {"text_config": {"num_hidden_layers": 10**30}}}.items():
        target = {**copy.deepcopy(KIMI_T), "text_config": text_config}
        _judge(release, *_pair(tmp_path / name, target, KIMI_D))
