"""SGLang's own start-up on CPU confirms the interface verdicts, release 0.5.9 (0.5.23 is
``test_sglang_engine_runs_0523``: a module per release, so that two workers share them): each
class launched with EAGLE-3 (shrunken config, one-layer drafter, dummy weights) by
``.ci/install-sglang-cpu``'s environment, its outcome compared with what ``eagle3lint models
--release sglang==VERSION`` predicts for it. The seed's case: a tiny Kimi-K2.5 crashes on 0.5.9 at
the interface call (the AttributeError in ``model_executor/model_runner.py``). Nothing here is
hard-coded but the choice of classes: the expectation is the release's static prediction."""

from __future__ import annotations

import pytest

from tests.engine_helpers import SGLangEngines, assert_release_prediction

pytestmark = pytest.mark.engine

VERSION = "0.5.9"
CLASSES = [
    "KimiK25ForConditionalGeneration",  # the seed: no delegation, the interface call crashes
    "LlamaForCausalLM",  # the reference class with the interface
    "OlmoForCausalLM",  # no interface: the bare AttributeError at the capture call
]


@pytest.mark.parametrize("architecture", CLASSES)
def test_engine_outcome_is_the_release_prediction(sglang_engines: SGLangEngines, architecture: str) -> None:
    assert_release_prediction(sglang_engines.run(VERSION, architecture), VERSION, architecture)


def test_the_seed_crashes_at_the_interface_call_on_0_5_9(sglang_engines: SGLangEngines) -> None:
    """The seed's exact failure: the AttributeError raised from the runner's call on the wrapper."""
    result = sglang_engines.run(VERSION, "KimiK25ForConditionalGeneration")
    error = (result.eagle or {})["error"]
    assert error["type"] == "AttributeError"
    assert "'KimiK25ForConditionalGeneration' object has no attribute 'set_eagle3_layers_to_capture'" in error["message"]
    assert any(frame.startswith("sglang/srt/model_executor/model_runner.py:") and frame.endswith(" in initialize") for frame in error["frames"]), error["frames"]
    # The launch without the drafter sets up past that point: the crash is EAGLE-3's.
    assert result.base is not None and result.base.get("failed_in") != "init"
