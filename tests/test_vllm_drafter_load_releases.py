"""E3L018 on real vLLM releases: 0.32.0's V1 runner loads the drafter before its EAGLE-3 check,
and ``SpecDecodeBaseProposer._maybe_share_embeddings`` (``v1/spec_decode/llm_base_proposer.py``)
raises on a target without ``.model`` or without ``.model.embed_tokens``/``.embedding``. Measured
on vLLM 0.32.0's CPU build (the V1 runner): GPT2LMHeadModel, FalconForCausalLM, OPTForCausalLM
and InternLM2ForCausalLM crash there with these messages. 0.32.0's default GPU runner is V2,
which checks EAGLE-3 support first: there the crash is a condition (``VLLM_USE_V2_MODEL_RUNNER=0``).
0.10.0's proposer reads the embedding unguarded and raises nothing of its own: no facts."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import release_root, run_json

pytestmark = pytest.mark.release

NO_MODEL = "Target model does not have 'model' attribute"
NO_EMBED = "Target model does not have 'embed_tokens' or 'embedding' attribute"
PROPOSER = "vllm/v1/spec_decode/llm_base_proposer.py"


def _rows(*options: str) -> dict[str, dict[str, Any]]:
    release_root("vllm==0.32.0")
    _code, data = run_json("models", "--release", "vllm==0.32.0", *options)
    return {m["class"]: m for m in data["models"] if not m.get("variant")}


@pytest.fixture(scope="module")
def v1_rows() -> dict[str, dict[str, Any]]:
    return _rows("--engine-option", "runner=v1")


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        ("GPT2LMHeadModel", NO_MODEL),
        ("FalconForCausalLM", NO_MODEL),
        ("OPTForCausalLM", NO_EMBED),
        ("InternLM2ForCausalLM", NO_EMBED),  # self.model = model_type(...), model_type=InternLM2Model
    ],
)
def test_0_32_0_v1_runner_crashes_in_the_drafter_load(v1_rows: dict[str, dict[str, Any]], cls: str, message: str) -> None:
    row = v1_rows[cls]
    assert (row["status"], row["outcome"]) == ("not-implemented", "crash"), row["reason"]
    assert f"E3L018: the drafter load raises `AttributeError: {message}`" in row["reason"]
    assert row["evidence"]["path"] == PROPOSER, row["evidence"]


def test_0_32_0_classes_with_the_attributes_keep_their_outcome(v1_rows: dict[str, dict[str, Any]]) -> None:
    for cls in ("LlamaForCausalLM", "Qwen3ForCausalLM", "Qwen2_5_VLForConditionalGeneration"):
        row = v1_rows[cls]
        assert (row["status"], row["outcome"]) == ("supported", "works"), (cls, row["reason"])
        assert "E3L018" not in row["codes"]


def test_0_32_0_default_runner_checks_support_first() -> None:
    rows = _rows()
    gpt2 = rows["GPT2LMHeadModel"]
    assert gpt2["outcome"] == "refused", gpt2["reason"]
    crash = [c for c in gpt2["conditions"] if c["outcome"] == "crash"]
    assert crash and crash[0]["described"] == "VLLM_USE_V2_MODEL_RUNNER=0", gpt2["conditions"]
    assert NO_MODEL in crash[0]["reason"]
    assert (rows["LlamaForCausalLM"]["status"], rows["LlamaForCausalLM"]["outcome"]) == ("supported", "works")


def test_0_32_0_contract_cites_the_reads() -> None:
    release_root("vllm==0.32.0")
    _code, data = run_json("contract", "--release", "vllm==0.32.0")
    load = data["vllm"]["drafter_load"]
    assert load["path"] == PROPOSER and load["proposer"] == "SpecDecodeBaseProposer"
    assert [r["message"] for r in load["reads"]] == [NO_MODEL, NO_EMBED]
    assert all(r["condition"] == [{"option": "pp", "value": "off"}] for r in load["reads"])
    assert any(c["runner"] == "v1" and c["before_check"] for c in load["runner_calls"])
    # The CPU build's runner (what engine-run launches) loads the drafter before its check too.
    assert [(c["path"], c["before_check"]) for c in load["platform_calls"]] == [("vllm/v1/worker/cpu_model_runner.py", True)]


def test_0_10_0_has_no_guarded_reads() -> None:
    release_root("vllm==0.10.0")
    _code, data = run_json("contract", "--release", "vllm==0.10.0")
    assert data["vllm"]["drafter_load"] is None
