"""E3L019 on vLLM 0.32.0 with the V1 runner: ``SpecDecodeBaseProposer.load_model`` copies
``target_model.config.image_token_index`` for every multimodal class it does not name. Measured
on 0.32.0's CPU build (transformers 5.19 class-default configs): Qwen2Audio, Idefics3 and others
crash with ``'<X>Config' object has no attribute 'image_token_index'``; Llava-derived configs
define it (``image_token_index`` is a field), and Qwen2.5-VL is named (``image_token_id``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import release_root, run_json

pytestmark = pytest.mark.release


@pytest.fixture(scope="module")
def v1_rows() -> dict[str, dict[str, Any]]:
    release_root("vllm==0.32.0")
    _code, data = run_json("models", "--release", "vllm==0.32.0", "--engine-option", "runner=v1")
    return {m["class"].rsplit(".", 1)[-1]: m for m in data["models"] if not m.get("variant")}


@pytest.mark.parametrize(
    ("cls", "config"),
    [("Qwen2AudioForConditionalGeneration", "Qwen2AudioConfig"), ("Idefics3ForConditionalGeneration", "Idefics3Config")],
)
def test_the_default_branch_crashes(v1_rows: dict[str, dict[str, Any]], cls: str, config: str) -> None:
    row = v1_rows[cls]
    assert row["outcome"] == "crash"
    assert f"E3L019: the drafter load raises `AttributeError: '{config}' object has no attribute 'image_token_index'`" in row["reason"]
    assert row["evidence"]["path"].endswith("vllm/v1/spec_decode/llm_base_proposer.py")


@pytest.mark.parametrize(
    "cls",
    [
        "LlavaForConditionalGeneration",  # LlavaConfig defines image_token_index
        "Qwen2_5_VLForConditionalGeneration",  # named: reads image_token_id
        "Qwen3OmniMoeThinkerForConditionalGeneration",  # its config is the thinker sub-config
    ],
)
def test_no_finding(v1_rows: dict[str, dict[str, Any]], cls: str) -> None:
    assert "E3L019" not in v1_rows[cls]["codes"]


def test_the_contract_reads_the_branches() -> None:
    release_root("vllm==0.32.0")
    _code, data = run_json("contract", "--release", "vllm==0.32.0")
    reads = data["vllm"]["drafter_load"]["config_reads"]
    assert reads[-1]["classes"] is None and reads[-1]["path"] == ["image_token_index"]
    assert "Qwen2_5_VLForConditionalGeneration" in reads[0]["classes"] and reads[0]["path"] == ["image_token_id"]
    assert any(r["path"] == ["vision_config", "image_token_id"] for r in reads)
