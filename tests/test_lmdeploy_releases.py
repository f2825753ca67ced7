"""LMDeploy on its real releases: 0.18.0 read against its source, and the releases since EAGLE-3
appeared (0.11.0) checked without a file error.

What 0.18.0's source says (each assertion below names the lines):

* ``LlamaForCausalLM``: ``configurations/llama.py`` opts Llama checkpoints in and names the layers
  ``(2, n // 2, n - 3)`` for eagle3; ``LlamaModel`` reads them from its config and captures; its
  ``get_outputs_cudagraph`` keeps the key: supported.
* ``Qwen3ForCausalLM``: no builder names the ``qwen3`` type (``qwen.py`` is for ``qwen``), so the
  default builder leaves ``model_paradigm`` at ``'ar'``: the engine builds its plain strategies
  and ``spec_agent.py:726`` (the draft's warm-up) passes ``target_hidden_size`` to their
  ``make_dummy``, which does not take it. Its decoder captures the build context's layers,
  which ``config.py`` fills only ``if method == 'dflash'``: even opted in it would capture
  nothing. Broken, a crash at start-up (the capture is DFlash's, not EAGLE-3's).
* ``InternLM2ForCausalLM``: no capture anywhere, the default builder: not-implemented, the same
  crash at the draft's warm-up.
* ``KimiK25ForConditionalGeneration``: ``kimi_k25.py`` hands ``text_config`` to the Kimi-K2
  builder, which opts in and names the layers on it; ``KimiK2Model`` reads them and captures,
  ``KimiK2ForCausalLM.forward`` re-keys them, the wrapper returns its output and delegates
  ``get_outputs_cudagraph``: supported, and refused under ``--enable-microbatch``
  (``kimi_k2_language.py:1000``).
* ``DeepseekV2ForCausalLM`` (Kimi-K2 text checkpoints are ``DeepseekV3ForCausalLM`` with
  ``model_type`` ``kimi_k2``): the Kimi-K2 builder names layers no decoder reads (E3L108), and
  DeepSeek-V2/V3 and GLM-4.7-Flash checkpoints fail ``assert spec_method == 'deepseek_mtp'``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from tests.helpers import release_json, run_cli

pytestmark = pytest.mark.release

SPEC = "lmdeploy==0.18.0"
# The first release with EAGLE-3, the one before Kimi-K2.5's, the first with it, the latest.
RELEASES = ("lmdeploy==0.11.0", "lmdeploy==0.16.0", "lmdeploy==0.17.0", "lmdeploy==0.18.0")


@cache
def _check() -> dict[str, Any]:
    code, data = release_json("check", "--release", SPEC, "--no-cache")
    assert code == 1
    return data


def _models() -> dict[str, dict[str, Any]]:
    return {m["class"]: m for m in _check()["models"] if not m.get("variant")}


def _codes(name: str) -> set[str]:
    return {f["code"] for f in _check()["findings"] if f["class"] == name}


def test_llama_is_supported() -> None:
    llama = _models()["LlamaForCausalLM"]
    assert (llama["status"], llama["outcome"]) == ("supported", "works")
    assert _codes("LlamaForCausalLM") == set()


def test_qwen3_captures_for_dflash_only_and_is_never_opted_in() -> None:
    qwen3 = _models()["Qwen3ForCausalLM"]
    assert (qwen3["status"], qwen3["outcome"]) == ("broken", "crash")
    assert qwen3["outcome_evidence"]["path"].endswith("pytorch/spec_decode/spec_agent.py")
    assert qwen3["outcome_evidence"]["line"] == 726
    assert _codes("Qwen3ForCausalLM") == {"E3L031", "E3L112"}
    (context,) = [f for f in _check()["findings"] if f["class"] == "Qwen3ForCausalLM" and f["code"] == "E3L112"]
    assert "`target_layer_ids` is set only when `method == 'dflash'`, never for eagle3; pytorch/config.py:735" in context["message"]


def test_internlm2_has_no_capture_and_crashes_at_the_drafts_warm_up() -> None:
    internlm2 = _models()["InternLM2ForCausalLM"]
    assert (internlm2["status"], internlm2["outcome"]) == ("not-implemented", "crash")
    assert internlm2["outcome_evidence"]["path"].endswith("pytorch/spec_decode/spec_agent.py")
    (info,) = [f for f in _check()["findings"] if f["class"] == "InternLM2ForCausalLM"]
    assert info["code"] == "E3L020" and info["severity"] == "info"
    assert "E3L031: DefaultModelConfigBuilder never opts it into speculative decoding" in info["message"]


def test_kimi_k25_as_lmdeploy_wires_it() -> None:
    kimi = _models()["KimiK25ForConditionalGeneration"]
    assert (kimi["status"], kimi["outcome"]) == ("supported", "works")
    assert set(kimi["architectures"]) == {"KimiK25ForConditionalGeneration", "Kimi_K25ForConditionalGeneration"}
    assert [(c["described"], c["outcome"]) for c in kimi["conditions"]] == [("--enable-microbatch", "refused")]
    (microbatch,) = [f for f in _check()["findings"] if f["class"] == "KimiK25ForConditionalGeneration"]
    assert microbatch["code"] == "E3L113" and microbatch["severity"] == "info"
    assert "kimi_k2_language.py:1000" in microbatch["message"]


def test_kimi_k2_text_checkpoints_get_layers_no_decoder_reads() -> None:
    deepseek = _models()["DeepseekV2ForCausalLM"]
    assert (deepseek["status"], deepseek["outcome"]) == ("not-implemented", "crash")
    never_read = [f for f in _check()["findings"] if f["class"] == "DeepseekV2ForCausalLM" and f["code"] == "E3L108"]
    assert len(never_read) == 1
    message = never_read[0]["message"]
    assert "KimiK2ModelConfigBuilder names EAGLE-3 capture layers for DeepseekV3ForCausalLM (model_type kimi_k2)" in message
    assert "pytorch/configurations/kimi_k2.py:82" in message
    refused = {f["method"] for f in _check()["findings"] if f["class"] == "DeepseekV2ForCausalLM" and f["code"] == "E3L030"}
    assert refused == {"DeepseekV2ModelConfigBuilder", "Glm4MoeLiteModelConfigBuilder"}


def test_qwen3_5_is_refused_by_its_builder_and_passes_the_states_through_a_tuple() -> None:
    qwen35 = _models()["Qwen3_5ForConditionalGeneration"]
    assert (qwen35["status"], qwen35["outcome"]) == ("broken", "crash")
    assert qwen35["outcome_evidence"]["path"].endswith("pytorch/configurations/qwen3_5.py")
    # Qwen3_5Model.forward returns (hidden, embeds, aux): no E3L109.
    assert _codes("Qwen3_5ForConditionalGeneration") == {"E3L030", "E3L112"}


def test_the_count_of_classes_per_status() -> None:
    summary = _check()["summary"]
    assert summary["models"] == 60
    assert summary["models_by_status"] == {"supported": 2, "broken": 6, "incomplete": 0, "not-implemented": 40, "unknown": 0, "not-a-target": 12}
    assert summary["models_by_outcome"] == {"works": 2, "crash": 45, "silent": 0, "refused": 1, "unknown": 0}
    assert _check()["errors"] == []


def test_the_draft_classes_are_drafts() -> None:
    models = _models()
    assert models["Eagle3LlamaForCausalLM"]["kind"] == "eagle3-draft"
    assert models["Eagle3DeepseekV2ForCausalLM"]["kind"] == "eagle3-draft"
    assert {f["class"] for f in _check()["findings"] if f["code"] == "E3L002"} == set()


def test_the_contract_is_read_from_the_release() -> None:
    done = run_cli("contract", "--release", SPEC)
    assert done.returncode == 0
    text = done.stdout
    assert "LlamaModelConfigBuilder (pytorch/configurations/llama.py:6) [architectures[0] LlamaForCausalLM]: opts in, sets aux_hidden_state_layers" in text
    assert "KimiK25ModelConfigBuilder (pytorch/configurations/kimi_k25.py:6) [model_type kimi_k25]: opts in, sets text_config.aux_hidden_state_layers" in text
    assert "Hy3ModelConfigBuilder (pytorch/configurations/hy3.py:6) [model_type hy_v3]: raises ValueError" in text
    assert "build context capture layers for eagle3: empty (pytorch/config.py:735)" in text
    assert "proposer fallback (no captured states: the drafter reads the last hidden state): pytorch/spec_decode/base.py:143" in text
    assert "engine config classes: kimi_k2 -> DeepseekV3ForCausalLM" in text


@pytest.mark.parametrize("spec", RELEASES)
def test_each_release_since_eagle3_checks_without_a_file_error(spec: str) -> None:
    code, data = release_json("check", "--release", spec, "--no-cache")
    assert code == 1
    assert data["errors"] == [] and data["summary"]["unresolved_entries"] == 0
    statuses = {m["class"]: m["status"] for m in data["models"] if not m.get("variant")}
    assert statuses["LlamaForCausalLM"] == "supported"
    assert statuses["InternLM2ForCausalLM"] == "not-implemented"
