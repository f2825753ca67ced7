"""The model-type allow-list of vLLM releases up to 0.21, on a synthetic tree: fixtures/vllm_modern
with fixtures/vllm_allow_list over it, and the synthetic transformers of fixtures/vllm_allow_list/site
as the installed one (its README says what each model's checkpoints carry)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FIXTURES, REPO, _parsed, run_cli

SITE = FIXTURES / "vllm_allow_list" / "site"


def _tree(tmp: Path) -> Path:
    root = tmp / "tree"
    shutil.copytree(FIXTURES / "vllm_modern", root)
    shutil.copytree(FIXTURES / "vllm_allow_list" / "vllm", root / "vllm", dirs_exist_ok=True)
    return root


def _run(*args: str | Path, site: bool = True) -> tuple[int, dict[str, Any]]:
    paths = [str(REPO), *([str(SITE)] if site else []), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, paths))}
    done = run_cli(*args, "--format", "json", "--no-cache", env=env)
    return done.returncode, _parsed(done)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tree(tmp_path_factory.mktemp("allow"))


@pytest.fixture(scope="module")
def report(tree: Path) -> dict[str, Any]:
    code, data = _run("check", tree)
    assert code == 1
    return data


def _statuses(data: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {m["class"]: (m["status"], m.get("outcome", "")) for m in data["models"] if m.get("status") and not m.get("variant")}


def _findings(data: dict[str, Any], cls: str, code: str) -> list[dict[str, Any]]:
    return [f for f in data["findings"] if f["class"] == cls and f["code"] == code]


def test_every_checkpoint_refused_makes_a_supported_model_incomplete(report: dict[str, Any], tree: Path) -> None:
    statuses = _statuses(report)
    for cls in ("ChildForCausalLM", "StackForCausalLM"):
        assert statuses[cls] == ("incomplete", "refused"), cls
        (finding,) = _findings(report, cls, "E3L017")
        assert finding["severity"] == "warning"
        assert "allow-list at vllm/config/speculative.py:4 (llama, helper)" in finding["message"]
        assert finding["outcome"] == "refused"
    child = _findings(report, "ChildForCausalLM", "E3L017")[0]
    assert "model type child (types from transformers 4.99.0's tables)" in child["message"]
    # A type only the engine's own config registry knows.
    assert "model type stack (types from vLLM's config registry)" in _findings(report, "StackForCausalLM", "E3L017")[0]["message"]
    _code, matrix = _run("models", tree)
    model = next(m for m in matrix["models"] if m["class"] == "ChildForCausalLM")
    assert model["evidence"]["path"] == "vllm/config/speculative.py" and model["evidence"]["line"] == 4
    assert "E3L017: model type child is not in the allow-list" in model["reason"]


def test_admitted_types_and_types_that_cannot_be_told_change_nothing(report: dict[str, Any]) -> None:
    statuses = _statuses(report)
    # stale_vl's text sub-config is helper_text (admitted); the wrapper's is any AutoConfig.
    for cls in ("HelperForCausalLM", "StaleForCausalLM", "WrapperForConditionalGeneration", "LlamaForCausalLM"):
        assert statuses[cls] == ("supported", "works"), cls
    assert not _findings(report, "WrapperForConditionalGeneration", "E3L017")
    assert not _findings(report, "StaleForCausalLM", "E3L017")
    # Some checkpoints admitted, some not: information naming the refused ones.
    (mixed,) = _findings(report, "LlamaForCausalLM", "E3L017")
    assert mixed["severity"] == "info" and "checkpoints of `LlamaModel` (mistral)" in mixed["message"]
    assert "`LlamaForCausalLM` (llama)" in mixed["message"] and "admitted" in mixed["message"]


def test_one_line_away_only_where_true(report: dict[str, Any]) -> None:
    (undeclared,) = _findings(report, "UndeclaredForCausalLM", "E3L013")
    assert "one line away" not in undeclared["message"]
    assert "declaring SupportsEagle3 is not enough" in undeclared["message"]
    assert "the type must be added to the list too (E3L017)" in undeclared["message"]
    assert undeclared["message"].count("allow-list") == 2  # said once, not again by the note
    assert _statuses(report)["UndeclaredForCausalLM"] == ("incomplete", "refused")
    # The wrapper's checkpoints cannot be told: declaring the protocol is still the one step.
    (wrapper,) = _findings(report, "UndeclaredWrapperForConditionalGeneration", "E3L013")
    assert "it is one line away from EAGLE-3 support" in wrapper["message"]


def test_a_model_without_eagle3_code_stays_not_implemented(report: dict[str, Any]) -> None:
    assert _statuses(report)["PlainForCausalLM"][0] == "not-implemented"
    assert not _findings(report, "PlainForCausalLM", "E3L017")
    (info,) = _findings(report, "PlainForCausalLM", "E3L020")
    assert "model type plain is not in the allow-list at vllm/config/speculative.py:4 (E3L017)" in info["message"]


def test_without_transformers_only_the_engines_registry_is_read(tmp_path: Path) -> None:
    """No pin beside the tree and the synthetic transformers not on the path: the architectures
    only it knows have unknown types, so the list's verdict on them is unknown, never works (a
    real transformers, where one is installed, knows none of them either); the engine's own
    registry still names Stack's type."""
    root = _tree(tmp_path)
    _code, data = _run("check", root, site=False)
    e3l017 = [f for f in data["findings"] if f["code"] == "E3L017"]
    stack = [f for f in e3l017 if f["class"] == "StackForCausalLM"]
    assert stack and "cannot be read" not in stack[0]["message"]
    unread = [f for f in e3l017 if f["class"] != "StackForCausalLM"]
    assert unread and all(f["severity"] == "info" and "cannot be read" in f["message"] for f in unread)
    assert _statuses(data)["ChildForCausalLM"] == ("unknown", "unknown")
    done = run_cli("contract", root, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "model types of each architecture from " in done.stdout
    assert "pins no transformers release and none is installed" in done.stdout or "the installed transformers" in done.stdout
