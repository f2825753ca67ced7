"""Real vLLM releases (pip-downloaded once, only ``vllm/**/*.py`` unpacked into the cache)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from eagle3lint.engines import adapter_for
from eagle3lint.engines.vllm.collect import YES as COLLECTS
from eagle3lint.engines.vllm.holders import RESOLVED
from eagle3lint.engines.vllm.pipeline import prepare_vllm
from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.model.contract import extract_contract
from tests.helpers import release_root, run_json

pytestmark = pytest.mark.release

MODELS = "vllm/model_executor/models"
PROTOCOL_ERRORS = {"E3L001", "E3L003", "E3L004", "E3L010", "E3L011", "E3L012"}


def _check(spec: str, *paths: str) -> tuple[int, dict[str, Any]]:
    release_root(spec)
    return run_json("check", "--release", spec, *paths)


@pytest.fixture(scope="module")
def v033() -> dict[str, Any]:
    code, data = _check("vllm==0.33.0", MODELS)
    assert code == 1
    return data


def test_0_11_0_reports_qwen3_moe() -> None:
    # 0.11.0's Qwen3-MoE has no EAGLE-3 code (0.11.1 added it): one information finding naming
    # how the runner refuses it; alone, it exits 0.
    code, data = _check("vllm==0.11.0", f"{MODELS}/qwen3_moe.py")
    assert code == 0
    found = {(f["code"], f["method"]) for f in data["findings"] if f["class"] == "Qwen3MoeForCausalLM"}
    assert found == {("E3L020", "set_aux_hidden_state_layers")}
    assert all("refuses EAGLE-3 with its own error" in f["message"] for f in data["findings"])
    assert {f["outcome"] for f in data["findings"]} == {"refused"}
    statuses = {m["class"]: m["status"] for m in data["models"] if m.get("status")}
    assert statuses["Qwen3MoeForCausalLM"] == "not-implemented"
    _, fixed = _check("vllm==0.11.1", f"{MODELS}/qwen3_moe.py")
    assert {m["class"]: m["status"] for m in fixed["models"] if m.get("status")}["Qwen3MoeForCausalLM"] == "supported"


def test_0_11_0_findings_say_when_the_model_type_allow_list_refuses_first() -> None:
    """0.11.0 runs EAGLE-3 only for model types containing llama, qwen, minicpm or gpt_oss; it
    pins transformers>=4.55.2, whose tables say Mixtral's checkpoints are mixtral (refused) and
    Qwen3-MoE's qwen3_moe (admitted); Gemma 3's text sub-config is gemma3_text (refused), its
    shieldgemma2 checkpoints wrap any model. The Transformers backend serves any type: not judged."""
    _code, data = _check(
        "vllm==0.11.0", f"{MODELS}/mixtral.py", f"{MODELS}/qwen3_moe.py", f"{MODELS}/gemma3_mm.py", f"{MODELS}/transformers.py"
    )
    notes = {f["class"]: f["message"] for f in data["findings"] if "allow-list" in f["message"]}
    assert set(notes) == {"MixtralForCausalLM", "Gemma3ForConditionalGeneration"}
    assert "model type mixtral is not in the allow-list at vllm/config/speculative.py:541 (E3L017)" in notes["MixtralForCausalLM"]
    assert "`Gemma3ForConditionalGeneration` (gemma3 (text gemma3_text))" in notes["Gemma3ForConditionalGeneration"]
    # None of them has EAGLE-3 code: they stay not-implemented, with no E3L017 of their own.
    assert not [f for f in data["findings"] if f["code"] == "E3L017"]
    classes = {f["class"] for f in data["findings"]}
    assert {"Qwen3MoeForCausalLM", "TransformersForCausalLM"} <= classes


def test_0_11_1_qwen3_moe_is_clean() -> None:
    code, data = _check("vllm==0.11.1", f"{MODELS}/qwen3_moe.py")
    assert not [f for f in data["findings"] if f["class"] == "Qwen3MoeForCausalLM"], data["findings"]
    assert code == 0
    kinds = {m["class"]: m["kind"] for m in data["models"]}
    assert kinds["Qwen3MoeForCausalLM"] == "target"


def test_0_33_0_completes_without_errors(v033: dict[str, Any]) -> None:
    assert v033["errors"] == []
    assert v033["summary"]["unresolved_entries"] == 0


def test_0_33_0_every_registered_architecture_is_classified(v033: dict[str, Any]) -> None:
    root = release_root("vllm==0.33.0")
    index_source = (root / "model_executor/models/registry.py").read_text()
    registered = {a for m in v033["models"] for a in m["architectures"]}
    assert len(registered) > 400
    # Spot-check against the registry's own text: a few architectures from each section.
    for arch in ("LlamaForCausalLM", "Qwen2_5_VLForConditionalGeneration", "KimiK25ForConditionalGeneration",
                 "BertModel", "Eagle3LlamaForCausalLM", "DeepSeekMTPModel", "DeepseekV4ForCausalLM"):
        assert f'"{arch}"' in index_source
        assert arch in registered, arch
    kinds = {m["kind"] for m in v033["models"]}
    assert kinds == {"target", "draft", "eagle3-draft", "other"}


def test_0_33_0_findings_are_believable(v033: dict[str, Any]) -> None:
    by_code = Counter(f["code"] for f in v033["findings"])
    # Unprovable things are info, never errors.
    assert {f["severity"] for f in v033["findings"] if f["code"] == "E3L016"} == {"info"}
    # A model one line away is one finding standing for the protocol members it lacks, never
    # beside a finding per member.
    one_line = {(f["class"], f.get("variant")) for f in v033["findings"] if f["code"] == "E3L013"}
    assert len(one_line) >= 20
    members = {"set_aux_hidden_state_layers", "get_eagle3_default_aux_hidden_state_layers"}
    assert not [
        f for f in v033["findings"]
        if f["code"] in ("E3L001", "E3L004") and f["method"] in members and (f["class"], f.get("variant")) in one_line
    ]
    # supports_eagle3() is false for them: the runner refuses them clearly (warnings, refused).
    assert {(f["severity"], f["outcome"]) for f in v033["findings"] if f["code"] == "E3L013"} == {("warning", "refused")}
    # The deep protocol errors are few, and each was read in the source: a SupportsEagle3 model
    # whose holder lacks the mixin, or whose decoder never collects.
    # One cause, one finding: a holder without the mixin does not collect either (E3L010 says
    # both); MiMo's decoder has the mixin and never collects (E3L011).
    deep = sorted({(f["code"], f["class"]) for f in v033["findings"] if f["code"] in ("E3L010", "E3L011")})
    assert deep == [
        ("E3L010", "CohereCompassForConditionalGeneration"),
        ("E3L010", "Exaone4_5_ForConditionalGeneration"),
        ("E3L011", "MiMoForCausalLM"),
    ]
    targets = sum(1 for m in v033["models"] if m["kind"] == "target" and "outside the reporting scope" not in m["reason"])
    unsupported = {f["class"] for f in v033["findings"] if f["code"] in ("E3L001", "E3L004")}
    assert len(unsupported) < targets
    assert by_code["E3L016"] <= 15
    stale = {f["class"] for f in v033["findings"] if f["code"] == "E3L014"}
    assert {"KimiK25ForConditionalGeneration", "PixtralForConditionalGeneration"} <= stale


def test_0_33_0_protocol_check_passes_for_flagship_models(v033: dict[str, Any]) -> None:
    flagship = ("LlamaForCausalLM", "Qwen2_5_VLForConditionalGeneration", "KimiK25ForConditionalGeneration")
    for finding in v033["findings"]:
        if finding["class"] in flagship:
            assert finding["code"] == "E3L014", finding  # a stale getter name is a warning only
    root = release_root("vllm==0.33.0")
    engine = discover_engine([], "vllm", root)
    prepared = prepare_vllm(engine, extract_contract(engine, adapter_for("vllm").contract_extension), [root / "model_executor/models"])
    ctx = prepared.context
    for model in ctx.models:
        if model.ref.qualname not in flagship:
            continue
        assert model.kind == "target"
        assert ctx.declared(model.ref).value == "yes", model.ref
        holder = ctx.holder(model.ref)
        assert holder.status == RESOLVED and holder.classes, (model.ref, holder)
        for cls in holder.classes:
            assert ctx.collects(cls).value == COLLECTS, (model.ref, cls)
            if holder.asserted_mixin:
                assert ctx.inherits_mixin(cls) == "yes", (model.ref, cls)
    checked = {m.ref.qualname for m in ctx.models}
    assert set(flagship) <= checked


@pytest.mark.parametrize("spec", ["vllm==0.9.2", "vllm==0.18.0"])
def test_contract_shapes_at_both_ends_complete_without_errors(spec: str) -> None:
    code, data = _check(spec, MODELS)
    assert data["errors"] == []
    assert code == 1
    assert data["summary"]["models_by_kind"]["target"] > 100
    if spec == "vllm==0.9.2":
        # No protocol: only the call-site rules and the pipeline-parallel capture rule can fire, and
        # the live getter is never stale. Llama's decoder loop numbers a PP rank's layers from 0 in
        # this release (fixed upstream in 0.30): its only finding, information with PP off, an
        # error (silent: the wrong layers captured) when the run assumes PP. Its config admits
        # EAGLE-3 only for llama model types (E3L017): information on Llama, which also serves
        # Mistral checkpoints.
        allowed = {"E3L001", "E3L004", "E3L005", "E3L011", "E3L017", "E3L020", "E3L105"}
        assert {f["code"] for f in data["findings"]} <= allowed
        llama = sorted((f["code"], f["severity"]) for f in data["findings"] if f["class"] == "LlamaForCausalLM")
        assert llama == [("E3L017", "info"), ("E3L105", "info")]
        _, with_pp = _check(spec, f"{MODELS}/llama.py", "--engine-option", "pp")
        llama_pp = [(f["code"], f["severity"], f["outcome"]) for f in with_pp["findings"] if f["class"] == "LlamaForCausalLM" and f["code"] != "E3L017"]
        assert llama_pp == [("E3L105", "error", "silent")]
    else:
        assert not [f for f in data["findings"] if f["class"] == "LlamaForCausalLM" and f["code"] in PROTOCOL_ERRORS]


def test_contract_reads_each_release_shape() -> None:
    expected = {
        "vllm==0.9.2": (None, "get_eagle3_aux_hidden_state_layers"),
        "vllm==0.11.0": ("stub", "get_eagle3_aux_hidden_state_layers"),
        "vllm==0.18.0": ("default", "get_eagle3_default_aux_hidden_state_layers"),
    }
    for spec, (body, getter) in expected.items():
        release_root(spec)
        code, data = run_json("contract", "--release", spec)
        assert code == 0, spec
        used = {m["name"] for m in data["members"] if m["sites"]}
        assert used == {"set_aux_hidden_state_layers", getter}, spec
        allow = data["vllm"]["model_type_allow_list"]
        assert allow is not None and "llama" in allow["model_types"], spec
        proto = data["vllm"]["protocol"]
        if body is None:
            assert proto is None
            continue
        methods = {m["name"]: m["body"] for m in proto["members"] if m["kind"] == "method"}
        assert methods == {"set_aux_hidden_state_layers": body, getter: body}, spec
        assert any(s["guard"] == "error" for s in data["vllm"]["check_sites"]), spec


def test_allow_list_is_gone_in_0_33_0() -> None:
    release_root("vllm==0.33.0")
    code, data = run_json("contract", "--release", "vllm==0.33.0")
    assert code == 0
    assert data["vllm"]["model_type_allow_list"] is None
    assert {s["guard"] for s in data["vllm"]["check_sites"]} == {"error"}


def test_scope_outside_models_still_checks_platform_packages() -> None:
    root = release_root("vllm==0.33.0")
    package = Path("vllm/models/deepseek_v4")
    assert (root.parent / package).is_dir()
    code, data = _check("vllm==0.33.0", str(package))
    assert data["errors"] == []
    variants = {m["variant"] for m in data["models"] if m["class"] == "DeepseekV4ForCausalLM"}
    assert {"nvidia", "amd", "xpu", "cpu"} <= variants
    assert all(f.get("variant") for f in data["findings"] if f["class"] == "DeepseekV4ForCausalLM")
    # The vision model's xpu/cpu variant is a stand-in whose __init__ always raises: it never
    # loads, so it neither lacks EAGLE-3 support nor disagrees with the real variants.
    vision = {m["variant"]: (m["kind"], m["reason"]) for m in data["models"] if m["class"] == "DeepseekV4ForConditionalGeneration"}
    assert vision["xpu+cpu"][0] == "other" and "always raises" in vision["xpu+cpu"][1]
    assert vision["rocm+default"][0] == "target"
    assert not [f for f in data["findings"] if f["class"] == "DeepseekV4ForConditionalGeneration"]
    assert code == (1 if data["findings"] else 0)
