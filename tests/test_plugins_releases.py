"""Real plugin packages from the package index, each checked against the engine release it
targets (fetched and cached like the releases: `.py` files and `*.dist-info` metadata only).
Every expectation below was read by hand against the package's source (docs/plugins.md)."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from eagle3lint.fetch.releases import fetch_package
from tests.helpers import run_cli, run_json

pytestmark = pytest.mark.release


@cache
def _check(package: str, release: str) -> tuple[int, dict[str, Any]]:
    return run_json("check", fetch_package(package), "--release", release)


def _models(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["class"]: m for m in report["models"] if m.get("status")}


def test_vllm_ascend_registrations_are_found_and_checked_against_its_vllm() -> None:
    code, report = _check("vllm-ascend==0.11.0", "vllm==0.11.0")
    assert code == 1
    models = _models(report)
    # Both registration sites (the entry point's models/__init__.py, both env-flag branches, and
    # torchair/utils.py, used in graph mode only) are read.
    expected = {
        "AscendQwen2VLForConditionalGeneration", "AscendQwen3VLMoeForConditionalGeneration", "AscendQwen3VLForConditionalGeneration",
        "AscendQwen2_5_VLForConditionalGeneration", "AscendQwen2_5_VLForConditionalGeneration_Without_Padding",
        "AscendQwen2_5OmniThinkerForConditionalGeneration", "CustomDeepseekV3ForCausalLM", "PanguProMoEForCausalLM",
        "CustomQwen3NextForCausalLM", "TorchairDeepSeekMTP", "TorchairDeepseekV2ForCausalLM", "TorchairDeepseekV3ForCausalLM",
        "CustomQwen2ForCausalLM", "CustomQwen3MoeForCausalLM",
    }
    assert set(models) == expected
    qwen2 = models["CustomQwen2ForCausalLM"]
    assert "replaces vllm's `Qwen2ForCausalLM` (vllm.model_executor.models.qwen2)" in qwen2["origin"]
    assert "vllm_ascend/torchair/utils.py" in qwen2["origin"]
    # vLLM's Qwen2 supports EAGLE-3; the override drops the protocol, and the plugin's own runner
    # calls the setter without checking supports_eagle3(): it is broken.
    assert qwen2["status"] == "broken"
    (finding,) = [f for f in report["findings"] if f["class"] == "CustomQwen2ForCausalLM"]
    assert finding["code"] == "E3L001" and "unguarded: a bare AttributeError at start-up" in finding["message"]
    assert any(r["path"].endswith("vllm_ascend/worker/model_runner_v1.py") and r["line"] == 2701 for r in finding["related"])
    # A new architecture (not an upstream one) is not a replacement.
    assert "replaces" not in models["PanguProMoEForCausalLM"].get("origin", "")
    assert models["TorchairDeepSeekMTP"]["status"] == "not-a-target"


def test_vllm_ascend_runner_sites_join_the_contract() -> None:
    import json

    done = run_cli("contract", fetch_package("vllm-ascend==0.11.0"), "--release", "vllm==0.11.0", "--format", "json")
    assert done.returncode == 0, done.stderr
    members = {m["name"]: m for m in json.loads(done.stdout)["members"]}
    sites = {(s["path"], s["line"], s["guard"]) for s in members["set_aux_hidden_state_layers"]["sites"]}
    assert ("vllm_ascend/worker/model_runner_v1.py", 2701, "none") in sites
    assert any(path.startswith("vllm/v1/worker/") and guard == "error" for path, _, guard in sites)
    # EagleProposer.load_model shares the target's embedding, for EAGLE and EAGLE-3, unguarded
    # (upstream asks get_language_model() and hasattr first: it adds no site).
    chain = {(s["path"], s["line"], s["receiver"], s["guard"]) for s in members["model.embed_tokens"]["sites"]}
    assert chain == {("vllm_ascend/spec_decode/eagle_proposer.py", 94, "model", "none")}


def test_vllm_ascend_proposer_breaks_upstream_gpt_oss() -> None:
    """The engine's own models checked with the plugin's call sites: GPT-OSS keeps its embedding
    in `self.model.embedding`, so vllm-ascend 0.11.0's `model.model.embed_tokens` raises while
    the drafter loads; Llama has the chain (Qwen2's architecture is the plugin's class there)."""
    code, report = run_json(
        "check", fetch_package("vllm-ascend==0.11.0"), "vllm/model_executor/models/gpt_oss.py",
        "vllm/model_executor/models/llama.py", "vllm/model_executor/models/qwen2.py", "--release", "vllm==0.11.0",
    )
    assert code == 1
    models = _models(report)
    assert models["GptOssForCausalLM"]["status"] == "broken"
    (finding,) = [f for f in report["findings"] if f["class"] == "GptOssForCausalLM"]
    assert (finding["code"], finding["severity"]) == ("E3L022", "error")
    assert "holds `GptOssModel` in `self.model`, which has no `embed_tokens`" in finding["message"]
    assert [(r["path"].rsplit("vllm_ascend/", 1)[1], r["line"]) for r in finding["related"]] == [("spec_decode/eagle_proposer.py", 94)]
    assert models["LlamaForCausalLM"]["status"] == "supported"
    assert not [f for f in report["findings"] if f["code"] == "E3L022" and f["class"] == "LlamaForCausalLM"]


def test_a_model_plugin_registers_a_new_architecture() -> None:
    # vllm-spark2-5-plugin: `register_model(ARCHITECTURE, f"{__name__}.spark2_5:{ARCHITECTURE}")`
    # with module constants, from its vllm.general_plugins entry point; no EAGLE-3 code.
    code, report = _check("vllm-spark2-5-plugin==0.1.0", "vllm==0.33.0")
    assert code == 0  # information only
    (model,) = _models(report).values()
    assert (model["class"], model["architectures"], model["status"]) == ("Spark2_5ForCausalLM", ["Spark2_5ForCausalLM"], "not-implemented")
    assert "from entry point vllm.general_plugins:spark2_5" in model["origin"]
    assert [f["code"] for f in report["findings"]] == ["E3L020"]


def test_an_sglang_plugin_delegating_to_qwen35_is_broken_before_0_5_22_and_supported_after() -> None:
    # vtext-editor writes `ModelRegistry.models[ARCH] = ...` from its sglang.srt.plugins entry
    # point; its class forwards set_eagle3_layers_to_capture to SGLang's Qwen3_5MoeForCausalLM,
    # which has that method only from 0.5.22.
    code, old = _check("vtext-editor==1.0.4", "sglang==0.5.16")
    assert code == 1
    (finding,) = old["findings"]
    assert (finding["code"], finding["class"]) == ("E3L004", "SglVoicingConvoForCausalLM")
    assert "Qwen3_5MoeForCausalLM" in finding["message"]
    code, new = _check("vtext-editor==1.0.4", "sglang==0.5.23")
    assert code == 0 and new["findings"] == []
    assert _models(new)["SglVoicingConvoForCausalLM"]["status"] == "supported"
    assert "registered by vtext-editor 1.0.4 at voicing_runtime/model.py:275" in _models(new)["SglVoicingConvoForCausalLM"]["origin"]
