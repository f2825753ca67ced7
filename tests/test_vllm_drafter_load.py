"""E3L018 (drafter-load-reads-target) on a synthetic vLLM tree: the V1 runner loads the drafter
against the target before its EAGLE-3 check, and the proposer raises where the target's
language model has no ``.model`` or that module no ``embed_tokens``/``embedding``
(``fixtures/vllm_drafter_load``)."""

from __future__ import annotations

from typing import Any

import pytest

from eagle3lint.engines.vllm.drafter_load import DrafterLoad, RunnerCall, TargetRead
from tests.helpers import FIXTURES, run_json

TREE = FIXTURES / "vllm_drafter_load"
NO_MODEL = "Target model does not have 'model' attribute"
NO_EMBED = "Target model does not have 'embed_tokens' or 'embedding' attribute"


def _rows(*options: str) -> dict[str, dict[str, Any]]:
    _code, data = run_json("models", TREE, *options)
    return {m["class"]: m for m in data["models"]}


@pytest.fixture(scope="module")
def rows() -> dict[str, dict[str, Any]]:
    return _rows()


@pytest.fixture(scope="module")
def findings() -> dict[str, dict[str, Any]]:
    _code, data = run_json("check", TREE, "--select", "E3L018")
    return {f["class"]: f for f in data["findings"]}


@pytest.mark.parametrize(
    ("cls", "status", "message"),
    [
        ("PlainLMHeadModel", "not-implemented", NO_MODEL),  # the decoder is `self.transformer`
        ("WteForCausalLM", "not-implemented", NO_EMBED),  # `self.model` has `word_embeddings`
        ("ParamForCausalLM", "not-implemented", NO_EMBED),  # `model_type=WteModel`, a parameter's default
        ("BrokenTransformerForCausalLM", "broken", NO_MODEL),  # complete EAGLE-3, never reached
        ("TextTowerForConditionalGeneration", "broken", NO_MODEL),  # get_language_model() is the decoder
        # Several children marked: the default's fallback, the first child that is a vLLM model.
        ("SplitHeadForConditionalGeneration", "broken", NO_MODEL),
    ],
)
def test_the_drafter_load_crashes_before_the_support_check(rows: dict[str, dict[str, Any]], cls: str, status: str, message: str) -> None:
    row = rows[cls]
    assert (row["status"], row["outcome"]) == (status, "crash"), row["reason"]
    assert f"E3L018: the drafter load raises `AttributeError: {message}`" in row["reason"]
    assert row["evidence"]["path"].endswith("vllm/v1/spec_decode/llm_base_proposer.py")
    assert row["evidence"]["line"] == (29 if message == NO_MODEL else 35)


@pytest.mark.parametrize(
    "cls",
    [
        "GoodForCausalLM",  # self.model.embed_tokens
        "AltForCausalLM",  # self.model.embedding
        "WrappedForConditionalGeneration",  # get_language_model() is a causal LM with .model.embed_tokens
        "DynamicForCausalLM",  # setattr(self, "model", ...): not provable
        "ForwardingForCausalLM",  # __getattr__: not provable
        "ExternalForCausalLM",  # a base outside the engine
        "OpaqueTowerForConditionalGeneration",  # the first child's class cannot be resolved
    ],
)
def test_no_finding_where_the_attributes_are_there_or_cannot_be_told(findings: dict[str, dict[str, Any]], cls: str) -> None:
    assert cls not in findings


def test_findings_name_the_class_that_lacks_the_attribute(findings: dict[str, dict[str, Any]]) -> None:
    plain = findings["PlainLMHeadModel"]
    assert "`PlainLMHeadModel` has no `model`" in plain["message"]
    wte = findings["WteForCausalLM"]
    assert "`WteModel` has no `embed_tokens` or `embedding`" in wte["message"] and "`self.model`" in wte["message"]
    tower = findings["TextTowerForConditionalGeneration"]
    assert "`self.language_model` (its `get_language_model()`)" in tower["message"]
    assert "`GoodModel` has no `model`" in tower["message"]
    split = findings["SplitHeadForConditionalGeneration"]
    assert "`self.language_model` (its `get_language_model()`)" in split["message"]
    # The evidence first, then the runner's call that loads the drafter before its check.
    related = [(r["path"].rsplit("/", 1)[-1], r["line"]) for r in plain["related"]]
    assert related == [("llm_base_proposer.py", 29), ("gpu_model_runner.py", 11)]
    assert findings["BrokenTransformerForCausalLM"]["severity"] == "error"
    assert plain["severity"] == "warning"  # no EAGLE-3 code: not broken


def test_supported_classes_keep_working(rows: dict[str, dict[str, Any]]) -> None:
    assert (rows["GoodForCausalLM"]["status"], rows["GoodForCausalLM"]["outcome"]) == ("supported", "works")


def test_pipeline_parallelism_skips_the_reads() -> None:
    rows = _rows("--engine-option", "pp")
    plain = rows["PlainLMHeadModel"]
    assert plain["outcome"] == "refused", plain["reason"]
    (condition,) = plain["conditions"]
    assert condition["condition"] == [{"option": "pp", "value": "off"}]
    assert condition["described"] == "--pipeline-parallel-size 1"
    assert condition["outcome"] == "crash" and NO_MODEL in condition["reason"]


def test_the_contract_shows_the_reads() -> None:
    _code, data = run_json("contract", TREE)
    load = data["vllm"]["drafter_load"]
    assert load["proposer"] == "SpecDecodeBaseProposer"
    assert load["path"] == "vllm/v1/spec_decode/llm_base_proposer.py"
    assert [r["message"] for r in load["reads"]] == [NO_MODEL, NO_EMBED]
    assert [r["steps"] for r in load["reads"]] == [[["model"]], [["model"], ["embed_tokens", "embedding"]]]
    assert load["reads"][0]["condition"] == [{"option": "pp", "value": "off"}]
    assert load["runner_calls"] == [
        {"runner": "v1", "path": "vllm/v1/worker/gpu_model_runner.py", "line": 11, "before_check": True}
    ]
    # The CPU platform's runner is read on its own (here it checks first), and is no condition.
    assert load["platform_calls"] == [
        {"runner": "cpu", "path": "vllm/v1/worker/cpu_model_runner.py", "line": 11, "before_check": False}
    ]


def test_a_tree_whose_proposer_raises_nothing_has_no_facts() -> None:
    _code, data = run_json("contract", FIXTURES / "vllm_modern")
    assert data["vllm"]["drafter_load"] is None


def _load(*calls: RunnerCall, single: bool = False) -> DrafterLoad:
    read = TargetRead((("model",),), NO_MODEL, 1)
    return DrafterLoad("P", "p.py", 1, "supports_multimodal", "get_language_model", [read], list(calls), single)


def test_the_runner_condition_follows_the_runner_that_loads_first() -> None:
    v1_first = RunnerCall("v1", "gpu_model_runner.py", 10, True)
    v2_after = RunnerCall("v2", "gpu/model_runner.py", 10, False)
    assert _load(v1_first, v2_after).runner_condition() == (("runner", "v1"),)
    # One generation in the tree (releases before the V2 runner): every launch.
    assert _load(v1_first, single=True).runner_condition() == ()
    # The check comes first, or no runner loads the drafter: the reads decide nothing.
    assert _load(RunnerCall("v1", "gpu_model_runner.py", 10, False)).runner_condition() is None
    assert _load().runner_condition() is None
