"""SGLang's own start-up on CPU confirms the interface verdicts, release 0.5.23 (see
``test_sglang_engine_runs`` for 0.5.9 and the method): the seed's class gets past the interface
calls on the release that fixed it, through its language model."""

from __future__ import annotations

import pytest

from tests.engine_helpers import SGLangEngines, assert_release_prediction

pytestmark = pytest.mark.engine

VERSION = "0.5.23"
CLASSES = [
    "KimiK25ForConditionalGeneration",  # the seed on the release that fixed it: a wrapper that delegates
    "Glm4ForCausalLM",  # get_embed_and_head but no set_eagle3_layers_to_capture: the runner's own refusal
    # No interface on 0.5.23: the scheduler builds the draft worker (which calls the target's
    # get_embed_and_head bare, speculative/pp_draft_embedding.py) before the attention backends
    # (whose hasattr check refuses), so the class crashes before the refusal; the analysis reads
    # that order from the release's scheduler (eagle3lint/engines/sglang/startup.py).
    "OlmoForCausalLM",
    # The getter is there but its own body reads self.model.embed_tokens, which OPTModel keeps in
    # self.decoder (E3L023): the draft worker's call raises before the setter's refusal.
    "OPTForCausalLM",
]


@pytest.mark.parametrize("architecture", CLASSES)
def test_engine_outcome_is_the_release_prediction(sglang_engines: SGLangEngines, architecture: str) -> None:
    assert_release_prediction(sglang_engines.run(VERSION, architecture), VERSION, architecture)


def test_a_wrapper_that_delegates_passes_the_interface_through_its_language_model(sglang_engines: SGLangEngines) -> None:
    """0.5.23's Kimi-K2.5 wrapper forwards both members to its DeepSeek language model: the engine
    calls them on the wrapper (the class it built), and the capture lands in the inner model."""
    result = sglang_engines.run(VERSION, "KimiK25ForConditionalGeneration")
    eagle = result.eagle or {}
    assert result.outcome.outcome == "works", result.outcome.cause
    assert eagle["classes"]["target"] == "KimiK25ForConditionalGeneration"
    assert {"set_eagle3_layers_to_capture", "get_embed_and_head"} <= set(eagle["target_members"])
    calls = {(c["role"], c["member"]): c for c in eagle.get("interface_calls") or []}
    assert calls[("target", "set_eagle3_layers_to_capture")].get("ok") and calls[("target", "get_embed_and_head")].get("ok")
    # The wrapper holds no capture state of its own: what the target took is its language model's.
    assert eagle.get("captures") and eagle["captures"] == calls[("target", "set_eagle3_layers_to_capture")].get("captures")
