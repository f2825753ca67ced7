"""SGLang's own start-up on CPU confirms the interface verdicts: each class launched with EAGLE-3
(shrunken config, one-layer drafter, dummy weights) by ``.ci/install-sglang-cpu``'s environment,
its outcome compared with what ``eagle3lint models --release sglang==VERSION`` predicts for it.
The seed's case: a tiny Kimi-K2.5 crashes on 0.5.9 at the interface call (the AttributeError in
``model_executor/model_runner.py``) and gets past it on 0.5.23. Nothing here is hard-coded but
the choice of classes: the expectation is the release's static prediction."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3lint.enginerun.sweep import (
    ClassRun,
    EngineEnv,
    Launch,
    Prediction,
    find_engine,
    run_class,
)
from eagle3lint.engines import engine_run_for

pytestmark = pytest.mark.engine

ROOT = Path(__file__).resolve().parent.parent
# A launch on 2 loaded cores takes 20 to 90 s; the limit only stops a hang.
LAUNCH_LIMIT_S = 600.0

CASES = [
    ("0.5.9", "KimiK25ForConditionalGeneration"),  # the seed: no delegation, the interface call crashes
    ("0.5.23", "KimiK25ForConditionalGeneration"),  # the seed on the release that fixed it: a wrapper that delegates
    ("0.5.9", "LlamaForCausalLM"),  # the reference class with the interface
    ("0.5.9", "OlmoForCausalLM"),  # no interface: the bare AttributeError at the capture call
    ("0.5.23", "Glm4ForCausalLM"),  # get_embed_and_head but no set_eagle3_layers_to_capture: the runner's own refusal
    # No interface on 0.5.23: the scheduler builds the draft worker (which calls the target's
    # get_embed_and_head bare, speculative/pp_draft_embedding.py) before the attention backends
    # (whose hasattr check refuses), so the class crashes before the refusal; the analysis reads
    # that order from the release's scheduler (eagle3lint/engines/sglang/startup.py).
    ("0.5.23", "OlmoForCausalLM"),
    # The getter is there but its own body reads self.model.embed_tokens, which OPTModel keeps in
    # self.decoder (E3L023): the draft worker's call raises before the setter's refusal.
    ("0.5.23", "OPTForCausalLM"),
]

def _install(version: str) -> EngineEnv:
    """The release's CPU environment, installed by the project's script where it is missing
    (idempotent, and instant once installed): never a skip."""
    done = subprocess.run(["bash", str(ROOT / ".ci" / "install-sglang-cpu"), version], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f".ci/install-sglang-cpu {version} failed: {done.stderr[-2000:]}", pytrace=False)
    python = Path(done.stdout.strip().splitlines()[-1])
    return find_engine(engine_run_for("sglang"), python, version)


def _release_predictions(version: str) -> dict[str, Prediction]:
    """``models --release sglang==VERSION --format json``, by class and architecture."""
    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", "models", "--release", f"sglang=={version}", "--format", "json"],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )
    data = json.loads(done.stdout)
    found: dict[str, Prediction] = {}
    for model in data["models"]:
        if model.get("kind") == "target":
            prediction = Prediction(model["class"], model.get("status"), model.get("outcome"), model.get("reason"), tuple(model.get("codes") or ()))
            for name in [model["class"], *(model.get("architectures") or [])]:
                found.setdefault(name, prediction)
    return found


class Engines:
    """Each release's environment and predictions, and each class's run, made once per module."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.envs: dict[str, tuple[EngineEnv, dict[str, Prediction]]] = {}
        self.runs: dict[tuple[str, str], ClassRun] = {}

    def run(self, version: str, architecture: str) -> ClassRun:
        if version not in self.envs:
            self.envs[version] = (_install(version), _release_predictions(version))
        env, found = self.envs[version]
        assert env.version == version
        if (version, architecture) not in self.runs:
            folder = self.workdir / f"{version}-{architecture}"
            self.runs[version, architecture] = run_class(env, Launch(architecture), found.get(architecture), folder, LAUNCH_LIMIT_S)
        return self.runs[version, architecture]


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Engines:
    return Engines(tmp_path_factory.mktemp("sglang-engine-runs"))


@pytest.mark.parametrize(("version", "architecture"), [pytest.param(v, a, id=f"{v}-{a}") for v, a in CASES])
def test_engine_outcome_is_the_release_prediction(engines: Engines, version: str, architecture: str) -> None:
    result = engines.run(version, architecture)
    assert result.prediction is not None, f"{architecture} is not a target of sglang {version}"
    assert result.outcome.outcome == result.prediction.outcome, (
        f"sglang {version} {architecture}: the engine says {result.outcome.outcome} ({result.outcome.cause}); "
        f"models --release predicted {result.prediction.outcome} ({result.prediction.reason})"
    )
    eagle = result.eagle or {}
    calls = {(c["role"], c["member"]): c for c in eagle.get("interface_calls") or []}
    if result.outcome.outcome == "works":
        # Past every interface call on the target, stopped at the wall common to every class.
        assert "speculative/draft_utils.py" in eagle["wall"]
        assert calls[("target", "set_eagle3_layers_to_capture")].get("ok")
        assert calls[("target", "get_embed_and_head")].get("ok")
        assert eagle.get("captures"), "the target took no layers to capture"
    elif (body := re.search(r"E3L023: `(\w+)` reads `self\.[\w.]*?(\w+)`, which `(\w+)` lacks", result.prediction.reason or "")):
        # The member is there and the engine called it; its own body raised on the link the
        # prediction names, of the class it names.
        member, link, holder = body.groups()
        assert calls[("target", member)].get("error", "").startswith("AttributeError"), calls
        assert f"'{holder}' object has no attribute '{link}'" in eagle["error"]["message"]
    else:
        # The class lacks a member: its absence is what the engine stopped on (the call, or the
        # check), the one the prediction's cause names (the member the release reaches first).
        message = eagle["error"]["message"]
        lacking = [m for m in ("set_eagle3_layers_to_capture", "get_embed_and_head") if m in message]
        assert lacking, message
        assert f"`{lacking[0]}`" in (result.prediction.reason or ""), (message, result.prediction.reason)
        assert ("target", lacking[0]) not in calls, "a class without the member was called"


def test_the_seed_crashes_at_the_interface_call_on_0_5_9(engines: Engines) -> None:
    """The seed's exact failure: the AttributeError raised from the runner's call on the wrapper."""
    result = engines.run("0.5.9", "KimiK25ForConditionalGeneration")
    error = (result.eagle or {})["error"]
    assert error["type"] == "AttributeError"
    assert "'KimiK25ForConditionalGeneration' object has no attribute 'set_eagle3_layers_to_capture'" in error["message"]
    assert any(frame.startswith("sglang/srt/model_executor/model_runner.py:") and frame.endswith(" in initialize") for frame in error["frames"]), error["frames"]
    # The launch without the drafter sets up past that point: the crash is EAGLE-3's.
    assert result.base is not None and result.base.get("failed_in") != "init"


def test_a_wrapper_that_delegates_passes_the_interface_through_its_language_model(engines: Engines) -> None:
    """0.5.23's Kimi-K2.5 wrapper forwards both members to its DeepSeek language model: the engine
    calls them on the wrapper (the class it built), and the capture lands in the inner model."""
    result = engines.run("0.5.23", "KimiK25ForConditionalGeneration")
    eagle = result.eagle or {}
    assert result.outcome.outcome == "works", result.outcome.cause
    assert eagle["classes"]["target"] == "KimiK25ForConditionalGeneration"
    assert {"set_eagle3_layers_to_capture", "get_embed_and_head"} <= set(eagle["target_members"])
    calls = {(c["role"], c["member"]): c for c in eagle.get("interface_calls") or []}
    assert calls[("target", "set_eagle3_layers_to_capture")].get("ok") and calls[("target", "get_embed_and_head")].get("ok")
    # The wrapper holds no capture state of its own: what the target took is its language model's.
    assert eagle.get("captures") and eagle["captures"] == calls[("target", "set_eagle3_layers_to_capture")].get("captures")
