"""Real SGLang releases, downloaded once from the package index into the user cache."""

from __future__ import annotations

import pytest

from tests.helpers import release_root, run_cli, run_json

pytestmark = pytest.mark.release

KIMI = "sglang/srt/models/kimi_k25.py"


@pytest.fixture(scope="module")
def kimi_059() -> dict:
    release_root("sglang==0.5.9")
    code, data = run_json("check", "--release", "sglang==0.5.9", KIMI)
    assert code == 1
    return data


def _kimi(data: dict, member: str) -> list[dict]:
    return [f for f in data["findings"] if f["class"] == "KimiK25ForConditionalGeneration" and f["method"] == member]


def test_059_kimi_set_eagle3_layers_is_a_delegation_gap(kimi_059: dict) -> None:
    assert kimi_059["engine"]["version"] == "0.5.9"
    (finding,) = _kimi(kimi_059, "set_eagle3_layers_to_capture")
    assert finding["code"] == "E3L004"
    assert finding["severity"] == "error"
    assert "`self.language_model` (DeepseekV3ForCausalLM)" in finding["message"]
    related = {(r["path"].split("sglang/srt/")[-1], "unguarded" in r["message"]) for r in finding["related"]}
    assert ("model_executor/model_runner.py", True) in related
    assert ("model_executor/cuda_graph_runner.py", True) in related


def test_059_kimi_get_embed_and_head_called_by_eagle_workers(kimi_059: dict) -> None:
    # One finding for the cause (the wrapper delegates nothing): it names both members and
    # carries the call sites of both.
    (finding,) = _kimi(kimi_059, "set_eagle3_layers_to_capture")
    assert "`set_eagle3_layers_to_capture` and `get_embed_and_head`" in finding["message"]
    assert finding["code"] == "E3L004" and finding["severity"] == "error"
    workers = [r for r in finding["related"] if r["path"].endswith("eagle_worker.py")]
    assert workers and all("target_worker.model_runner.model.get_embed_and_head" in r["message"] for r in workers)


def test_059_set_embed_and_head_is_draft_only_so_not_an_error_for_the_target(kimi_059: dict) -> None:
    assert not [f for f in _kimi(kimi_059, "set_embed_and_head") if f["severity"] == "error"]
    _code, contract = run_json("contract", "--release", "sglang==0.5.9")
    member = {m["name"]: m for m in contract["members"]}["set_embed_and_head"]
    assert member["required_for"] == ["draft"]
    assert {s["role"] for s in member["sites"]} == {"draft"}


def test_0523_models_folder_checks_without_errors_and_classifies_everything() -> None:
    root = release_root("sglang==0.5.23")
    code, data = run_json("check", "--release", "sglang==0.5.23", "sglang/srt/models")
    assert data["errors"] == []
    assert code == 1  # the release has real gaps
    entry_files = [p for p in (root / "srt/models").rglob("*.py") if "\nEntryClass" in p.read_text(errors="replace")]
    classified_files = {m["path"] for m in data["models"]}
    assert len(classified_files) >= len(entry_files) - 2
    assert data["summary"]["unresolved_entries"] == 0
    kinds = data["summary"]["models_by_kind"]
    assert kinds["target"] > 150 and kinds["other"] > 10 and kinds["draft"] > 5
    assert all(m["reason"] for m in data["models"])


def test_0523_contract_shows_the_hasattr_guard() -> None:
    done = run_cli("contract", "--release", "sglang==0.5.23")
    assert done.returncode == 0
    assert "set_eagle3_layers_to_capture (method): target: guarded-with-error (required)" in done.stdout
    _code, data = run_json("contract", "--release", "sglang==0.5.23")
    member = {m["name"]: m for m in data["members"]}["set_eagle3_layers_to_capture"]
    assert member["guard"] == {"target": "error"}
    assert any(s["path"].endswith("attention_backend_setup.py") for s in member["sites"])
