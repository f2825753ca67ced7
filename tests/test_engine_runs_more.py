"""The real engine confirms the verdicts, second half (a module of its own so that the two halves
run on two workers): a multimodal class, a parallel-residual MoE block, and a model folder whose
own config decides the outcome (a shallow target whose default ids collide), judged by the pair
pre-flight on the very drafter the engine loads; and a class the Transformers modeling backend
serves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3lint.enginerun.drafter import target_sizes, write_drafter
from eagle3lint.enginerun.sweep import EngineEnv, Launch, Prediction, pair_prediction, run_class
from tests.engine_helpers import LAUNCH_LIMIT_S, engine_env, engine_predictions, run

pytestmark = pytest.mark.engine

CLASSES = [
    "Cohere2VisionForConditionalGeneration",  # multimodal, language model only: the runner's refusal
    "Cohere2MoeForCausalLM",  # MoE with a parallel-residual block: the states matched through its norms
    "ApertusForCausalLM",  # works
    "BloomForCausalLM",  # the drafter load finds no inner `model`, before the base launch's own failure
    "MiMoForCausalLM",  # its decoder never collects the aux states
    "Idefics3ForConditionalGeneration",  # multimodal: the drafter load reads config.image_token_index (E3L019)
    # Several children marked as its language model: the default get_language_model() falls back
    # to the first child that is a vLLM model, a decoder without `.model` (E3L018)
    "AriaForConditionalGeneration",
]


@pytest.fixture(scope="module")
def engine() -> tuple[EngineEnv, dict[str, Prediction]]:
    env = engine_env()
    return env, engine_predictions(env)


@pytest.mark.parametrize("architecture", CLASSES)
def test_engine_outcome_is_the_prediction(engine: tuple[EngineEnv, dict[str, Prediction]], architecture: str, tmp_path: Path) -> None:
    env, found = engine
    result = run(env, found, architecture, tmp_path)
    assert result.prediction is not None, f"{architecture} is not a target of the installed tree"
    assert result.outcome.outcome == result.prediction.outcome, (
        f"{architecture}: the engine says {result.outcome.outcome} ({result.outcome.cause}); "
        f"models predicted {result.prediction.outcome} ({result.prediction.reason})"
    )
    if result.outcome.outcome == "works":
        assert result.outcome.matched, result.outcome.cause


def test_a_class_the_transformers_backend_serves(engine: tuple[EngineEnv, dict[str, Prediction]], tmp_path: Path) -> None:
    """Arcee has no vLLM model of its own in the installed release: the registry sends it to the
    Transformers modeling backend, whose setter registers transformers' recorder per layer and
    whose forward returns what it recorded. The engine's outcome is the prediction for that
    backend class."""
    env, found = engine
    architecture = "ArceeForCausalLM"
    prediction = found.get(architecture)
    assert prediction is not None and prediction.qualname.startswith("Transformers"), (
        f"{architecture} is not served by the Transformers backend in this tree: {prediction}"
    )
    result = run(env, found, architecture, tmp_path)
    assert result.outcome.outcome == prediction.outcome, (
        f"{architecture}: the engine says {result.outcome.outcome} ({result.outcome.cause}); "
        f"models predicted {prediction.outcome} for {prediction.qualname} ({prediction.reason})"
    )
    if result.outcome.outcome == "works":
        # The recorded states are the streams entering the requested layers, as the native
        # models' are.
        assert result.outcome.matched, result.outcome.cause


@pytest.mark.parametrize(("layers", "distinct"), [(6, 2), (8, 3)])
def test_shallow_target_pair(engine: tuple[EngineEnv, dict[str, Prediction]], tmp_path: Path, layers: int, distinct: int) -> None:
    """Six layers: default ids (2, 3, 3), two distinct states for a drafter that fuses three."""
    env, _found = engine
    target = tmp_path / "target"
    target.mkdir()
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128, "intermediate_size": 256,
        "num_hidden_layers": layers, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 2048,
        "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "torch_dtype": "float32", "tie_word_embeddings": False,
    }
    (target / "config.json").write_text(json.dumps(config), encoding="utf-8")
    launch = Launch("LlamaForCausalLM", target, write_drafter(tmp_path / "drafter", *target_sizes(config)))
    assert env.package_root is not None
    predicted = pair_prediction(env.package_root, env.spec, launch)
    assert predicted is not None and predicted.outcome == ("crash" if distinct < 3 else "works"), predicted
    result = run_class(env, launch, predicted, tmp_path / "run", LAUNCH_LIMIT_S)
    assert len(set((result.eagle or {}).get("ids") or [])) == distinct
    if distinct < 3:
        assert result.outcome.outcome == "crash" and result.agree, result.outcome.cause
    else:
        # The pre-flight cannot know what an unnamed drafter was trained on; the engine runs it.
        assert result.outcome.outcome == "works" and result.outcome.matched, result.outcome.cause
