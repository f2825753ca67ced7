"""E3L023 on real SGLang releases: OPT's and DotsOCR's getters read `self.model.embed_tokens`,
which their inner models keep elsewhere. 0.5.23 reaches the getter first (its draft worker,
before the attention backends' check of the setter): the crash the engine's CPU start-up
showed for OPT. 0.5.9 stops at the bare setter first: the read is said, not counted."""

from __future__ import annotations

import pytest

from tests.helpers import release_root, run_json

pytestmark = pytest.mark.release

FILES = ("sglang/srt/models/opt.py", "sglang/srt/models/dots_ocr.py")


def _check(release: str) -> dict:
    release_root(release)
    code, data = run_json("check", "--release", release, *FILES)
    assert code == 1
    return data


def _row(data: dict, cls: str) -> tuple[dict, list[dict]]:
    (model,) = [m for m in data["models"] if m["class"] == cls]
    return model, [f for f in data["findings"] if f["class"] == cls and f["code"] == "E3L023"]


@pytest.mark.parametrize(("cls", "holder", "line"), [("OPTForCausalLM", "OPTModel", 599), ("DotsOCRForCausalLM", "Qwen2ForCausalLM", 168)])
def test_0523_the_getter_read_is_the_crash(cls: str, holder: str, line: int) -> None:
    model, (finding,) = _row(_check("sglang==0.5.23"), cls)
    assert (finding["severity"], finding["method"], finding["line"]) == ("error", "get_embed_and_head", line)
    assert f"`self.model` holds `{holder}`, which has no `embed_tokens`" in finding["message"]
    assert "sglang/srt/speculative/pp_draft_embedding.py:95" in finding["message"]
    assert (model["status"], model["outcome"]) == ("broken", "crash")
    assert model["status_reason"].startswith("crash: E3L023:")
    assert model["outcome_evidence"]["path"].endswith("speculative/pp_draft_embedding.py")


@pytest.mark.parametrize(("cls", "first"), [("OPTForCausalLM", "E3L001"), ("DotsOCRForCausalLM", "E3L004")])
def test_059_the_setter_crashes_first_and_the_read_is_a_warning(cls: str, first: str) -> None:
    model, (finding,) = _row(_check("sglang==0.5.9"), cls)
    assert finding["severity"] == "warning"
    assert "stops first at `set_eagle3_layers_to_capture`" in finding["message"]
    assert model["outcome"] == "crash" and model["status_reason"].startswith(f"crash: {first}:")
