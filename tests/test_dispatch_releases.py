"""Dispatchers, ``get_language_model()`` returning ``self`` and the classes that are no target, on
the real releases they were measured on."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import run_json

pytestmark = pytest.mark.release


def _check(spec: str, *paths: str) -> dict[str, Any]:
    code, data = run_json("check", "--release", spec, *paths)
    assert code in (0, 1), data
    return data


def _row(report: dict[str, Any], cls: str, variant: str | None = None) -> dict[str, Any]:
    (row,) = [m for m in report["models"] if m["class"] == cls and m.get("variant") == variant]
    return row


def test_sglang_059_minicpmv_crashes_and_names_each_version() -> None:
    report = _check("sglang==0.5.9", "sglang/srt/models/minicpmv.py")
    row = _row(report, "MiniCPMV")
    # 0.5.9's runner calls the setter bare; __getattr__ forwards it to a version that lacks it.
    assert (row["kind"], row["status"], row["outcome"]) == ("target", "broken", "crash")
    assert "MiniCPMV2_6 or MiniCPMV4_0 or MiniCPMV4_5, picked by config" in row["reason"]
    (finding,) = [f for f in report["findings"] if f["class"] == "MiniCPMV"]
    assert finding["code"] == "E3L004" and finding["severity"] == "error"
    for version, llm in (("MiniCPMV2_6", "Qwen2ForCausalLM"), ("MiniCPMV4_0", "LlamaForCausalLM"), ("MiniCPMV4_5", "Qwen3ForCausalLM")):
        assert f"`{version}` lacks them (its `self.llm`, `{llm}`, has them)" in finding["message"]


def test_sglang_0523_minicpmv_crashes_at_the_getter_before_the_hasattr_guard() -> None:
    # 0.5.23 builds the draft worker (get_embed_and_head, bare) before the attention backends'
    # hasattr check of set_eagle3_layers_to_capture: the dispatcher forwards neither to a class
    # that has them, so `__getattr__`'s AttributeError comes from the getter first.
    report = _check("sglang==0.5.23", "sglang/srt/models/minicpmv.py")
    for cls in ("MiniCPMV", "MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration"):
        row = _row(report, cls)
        assert (row["kind"], row["status"], row["outcome"]) == ("target", "broken", "crash"), cls
        assert row["outcome_evidence"]["path"].endswith("pp_draft_embedding.py")
    messages = [f["message"] for f in report["findings"] if f["class"] == "MiniCPMV4_6ForConditionalGeneration"]
    assert any("`MiniCPMV4_6` lacks" in m and "`MiniCPMV4_7` lacks" in m for m in messages)
    findings = [f for f in report["findings"] if f["class"] == "MiniCPMV"]
    assert findings and all(f["severity"] == "error" and f["method"] == "get_embed_and_head" for f in findings)


@pytest.mark.parametrize("spec", ["sglang==0.5.9", "sglang==0.5.23"])
def test_sglang_diffusion_lms_are_not_targets(spec: str) -> None:
    report = _check(spec, "sglang/srt/models/sdar.py", "sglang/srt/models/sdar_moe.py", "sglang/srt/models/llada2.py")
    for cls in ("SDARForCausalLM", "SDARMoeForCausalLM", "LLaDA2MoeModelLM"):
        row = _row(report, cls)
        assert (row["status"], row["reason"]) == ("not-a-target", "diffusion language model (no autoregressive target)"), cls


def test_vllm_0330_muse_spark_is_its_own_language_model() -> None:
    report = _check("vllm==0.33.0", "vllm/models/muse_spark")
    for variant in ("amd", "nvidia"):
        row = _row(report, "MuseSparkForConditionalGeneration", variant)
        assert (row["status"], row["outcome"]) == ("supported", "works"), variant
        assert not [f for f in report["findings"] if f["class"] == "MuseSparkForConditionalGeneration" and f["code"] == "E3L016"]


def test_vllm_0330_diffusion_gemma_and_transformers_mtp_are_not_targets() -> None:
    report = _check("vllm==0.33.0", "vllm/model_executor/models/diffusion_gemma.py", "vllm/model_executor/models/transformers")
    diffusion = _row(report, "DiffusionGemmaForConditionalGeneration")
    assert (diffusion["kind"], diffusion["status"]) == ("other", "not-a-target")
    assert diffusion["reason"] == "diffusion language model (no autoregressive target)"
    for cls in ("TransformersForMTP", "TransformersMoEForMTP"):
        row = _row(report, cls)
        assert (row["kind"], row["status"]) == ("draft", "not-a-target"), cls
    assert _row(report, "TransformersForCausalLM")["kind"] == "target"
