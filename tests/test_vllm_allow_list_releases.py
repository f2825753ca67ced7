"""The model-type allow-list on real vLLM releases: 0.18.0 has one (vllm/config/speculative.py,
``aux_hidden_states_supported``) and pins transformers<5,>=4.56.0, whose tables (4.56.0, downloaded
once: ~10 MB, only the auto tables and config classes kept) give each architecture's types;
0.33.0 has none."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import release_root, run_json

pytestmark = pytest.mark.release

MODELS = "vllm/model_executor/models"


@pytest.fixture(scope="module")
def v018() -> dict[str, Any]:
    release_root("vllm==0.18.0")
    _code, data = run_json("models", "--release", "vllm==0.18.0")
    return {m["class"]: m for m in data["models"] if not m.get("variant")}


def test_0_18_0_refuses_the_types_its_list_lacks(v018: dict[str, Any]) -> None:
    for cls in ("MistralForCausalLM", "Phi3ForCausalLM", "ApertusForCausalLM", "ArceeForCausalLM", "GlmForCausalLM"):
        row = v018[cls]
        assert (row["status"], row["outcome"]) == ("incomplete", "refused"), (cls, row["reason"])
        assert "E3L017" in row["codes"] and row["reason"].startswith("refused: E3L017: model type "), row["reason"]
        assert row["evidence"]["path"] == "vllm/config/speculative.py", row["evidence"]
    assert "model type mistral is not in the allow-list" in v018["MistralForCausalLM"]["reason"]
    # llama is listed; so are qwen and the types of Kimi-K2.5's text sub-config (deepseek_v3).
    for cls in ("LlamaForCausalLM", "Qwen3ForCausalLM", "KimiK25ForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration"):
        assert (v018[cls]["status"], v018[cls]["outcome"]) == ("supported", "works"), (cls, v018[cls]["reason"])


def test_0_18_0_findings_name_the_list_and_the_types() -> None:
    _code, data = run_json(
        "check", "--release", "vllm==0.18.0", f"{MODELS}/mistral.py", f"{MODELS}/glm4.py", f"{MODELS}/llama.py", f"{MODELS}/mistral3.py"
    )
    by = {(f["class"], f["code"]): f for f in data["findings"]}
    mistral = by[("MistralForCausalLM", "E3L017")]
    assert mistral["severity"] == "warning"
    assert "model type mistral (types from transformers 4.56.0's tables)" in mistral["message"]
    assert "allow-list at vllm/config/speculative.py:" in mistral["message"]
    # Glm4: the decoder collects, only the protocol is missing, but glm4 is not listed either.
    glm4 = by[("Glm4ForCausalLM", "E3L013")]
    assert "one line away" not in glm4["message"] and "declaring SupportsEagle3 is not enough" in glm4["message"]
    # LlamaForCausalLM also serves `MistralModel` checkpoints (mistral): information, no verdict change.
    llama = by[("LlamaForCausalLM", "E3L017")]
    assert llama["severity"] == "info" and "`MistralModel` (mistral)" in llama["message"]
    # Mistral3's text sub-config is whatever its checkpoint wraps: no finding, and it says so.
    assert ("Mistral3ForConditionalGeneration", "E3L017") not in by
    assert any("depends on the model they wrap" in f["message"] for f in data["findings"] if f["class"] == "Mistral3ForConditionalGeneration")


def test_0_33_0_has_no_allow_list_and_nothing_changes() -> None:
    release_root("vllm==0.33.0")
    _code, data = run_json("models", "--release", "vllm==0.33.0")
    rows = {m["class"]: m for m in data["models"] if not m.get("variant")}
    assert not [m for m in data["models"] if "E3L017" in m["codes"]]
    for cls in ("MistralForCausalLM", "Phi3ForCausalLM", "LlamaForCausalLM"):
        assert rows[cls]["status"] == "supported", (cls, rows[cls]["reason"])
    _code, checked = run_json("check", "--release", "vllm==0.33.0", f"{MODELS}/glm4.py", f"{MODELS}/mixtral.py")
    assert not [f for f in checked["findings"] if "allow-list" in f["message"]]


def test_a_tree_without_its_pin_is_unknown_never_works(tmp_path: Path) -> None:
    """0.18.0's package folder alone (a fork, --engine-root, no dist-info): no transformers pin,
    so the allow-list's verdict cannot be read: unknown with the reason, never supported/works.
    A checkout's requirements/common.txt gives the pin back."""
    root = tmp_path / "tree"
    shutil.copytree(release_root("vllm==0.18.0"), root / "vllm")
    _code, data = run_json("models", str(root / "vllm"))
    rows = {m["class"]: m for m in data["models"] if not m.get("variant")}
    if importlib.util.find_spec("transformers") is None:
        for cls in ("MistralForCausalLM", "LlamaForCausalLM"):
            assert (rows[cls]["status"], rows[cls]["outcome"]) == ("unknown", "unknown"), rows[cls]["reason"]
            assert "E3L017" in rows[cls]["reason"] and "pins no transformers" in rows[cls]["reason"]
    else:  # the installed transformers gives the types (what the engine would import)
        assert rows["MistralForCausalLM"]["outcome"] == "refused"
    (root / "requirements").mkdir()
    (root / "requirements" / "common.txt").write_text("transformers >= 4.56.0, < 5\n", encoding="utf-8")
    _code, data = run_json("models", str(root / "vllm"))
    rows = {m["class"]: m for m in data["models"] if not m.get("variant")}
    assert (rows["MistralForCausalLM"]["status"], rows["MistralForCausalLM"]["outcome"]) == ("incomplete", "refused")
    assert rows["LlamaForCausalLM"]["outcome"] == "works"
