"""The real engine confirms the verdicts: vLLM's CPU build launched with EAGLE-3 on classes chosen
across the predicted outcomes (works, crash, refused; a MoE and a multimodal class), each outcome
compared with what `models` predicts for the same installed tree. Nothing here is hard-coded but
the choice of classes: the expectation is the static prediction itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3lint.enginerun.sweep import EngineEnv, Prediction
from tests.engine_helpers import engine_env, engine_predictions, run

pytestmark = pytest.mark.engine

CLASSES = [
    "LlamaForCausalLM",  # works: the reference decoder
    "Qwen3ForCausalLM",  # works
    "Qwen3MoeForCausalLM",  # works, a MoE
    "GPT2LMHeadModel",  # the drafter load finds no inner `model`
    "OPTForCausalLM",  # no `embed_tokens` or `embedding` on the inner model
    "AXK1ForCausalLM",  # not implemented: the runner's own refusal
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
        # The matcher saw each state equal to the stream after its id's layers.
        assert result.outcome.matched, result.outcome.cause
