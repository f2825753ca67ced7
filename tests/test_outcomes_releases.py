"""What the engine does with each model, on real releases, under the launch configuration: the
cases the outcome work was measured on, each read against the release's source."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.model_folders import write_safetensors
from tests.helpers import release_root, run_cli, run_json

pytestmark = pytest.mark.release


@cache
def _matrix(spec: str, *options: str) -> dict[str, dict[str, Any]]:
    """``models --format json`` of a whole release, by class (variants aside)."""
    release_root(spec)
    flags = [arg for option in options for arg in ("--engine-option", option)]
    code, data = run_json("models", "--release", spec, "--format", "json", *flags)
    assert code == 0, data
    return {m["class"]: m for m in data["models"] if not m.get("variant")}


def _row(spec: str, name: str, *options: str) -> tuple[str, str]:
    row = _matrix(spec, *options)[name]
    return row["status"], row["outcome"]


def test_sglang_0_5_23_a_missing_getter_crashes_before_the_refusal() -> None:
    # managers/scheduler.py init_model_worker builds the draft worker, which calls the target's
    # get_embed_and_head bare (speculative/pp_draft_embedding.py ~95, in a try whose handler
    # re-raises the AttributeError), before the attention backends, whose check
    # (attention_backend_setup.py ~55: `if not hasattr(model, "set_eagle3_layers_to_capture"):
    # raise ValueError(...)`) refuses clearly. A class that lacks both crashes at the getter, as
    # SGLang's own start-up does with Olmo (tests/test_sglang_engine_runs_0523.py).
    phi4mm = _matrix("sglang==0.5.23")["Phi4MMForCausalLM"]
    assert (phi4mm["status"], phi4mm["outcome"], phi4mm["codes"]) == ("broken", "crash", ["E3L004"])
    assert phi4mm["evidence"]["path"].endswith("pp_draft_embedding.py")
    assert "`get_embed_and_head`" in phi4mm["reason"]
    olmo = _matrix("sglang==0.5.23")["OlmoForCausalLM"]
    assert (olmo["status"], olmo["outcome"]) == ("not-implemented", "crash")
    # Qwen2-MoE has the setter and lacks the getter: a crash on every release.
    qwen2moe = _matrix("sglang==0.5.23")["Qwen2MoeForCausalLM"]
    assert (qwen2moe["status"], qwen2moe["outcome"]) == ("broken", "crash")
    assert qwen2moe["evidence"]["path"].endswith("pp_draft_embedding.py")
    # Glm4 has the getter and lacks the setter: the release's own refusal.
    glm4 = _matrix("sglang==0.5.23")["Glm4ForCausalLM"]
    assert (glm4["status"], glm4["outcome"]) == ("incomplete", "refused")
    assert glm4["evidence"]["path"].endswith("attention_backend_setup.py")
    rows = [(m["status"], m["outcome"]) for m in _matrix("sglang==0.5.23").values()]
    assert rows.count(("incomplete", "refused")) >= 20 and rows.count(("broken", "crash")) >= 40
    # 0.5.9 calls the setter bare while the target's runner initialises, before the draft worker.
    olmo_059 = _matrix("sglang==0.5.9")["OlmoForCausalLM"]
    assert (olmo_059["outcome"], "`set_eagle3_layers_to_capture`" in olmo_059["reason"]) == ("crash", True)


def test_sglang_0_5_23_two_batch_overlap_is_a_condition_then_the_answer() -> None:
    for name in ("MiniMaxM2ForCausalLM", "DeepseekV3ForCausalLM"):
        row = _matrix("sglang==0.5.23")[name]
        assert (row["status"], row["outcome"]) == ("supported", "works")
        assert [(c["described"], c["outcome"]) for c in row["conditions"]] == [("--enable-two-batch-overlap", "crash")]
        assert _row("sglang==0.5.23", name, "two-batch-overlap") == ("broken", "crash")


def test_sglang_refuses_pp_with_eagle3_once_for_every_model() -> None:
    release_root("sglang==0.5.23")
    code, data = run_json("models", "--release", "sglang==0.5.23", "--format", "json")
    assert code == 0
    (refusal,) = data["launch_refusals"]
    assert refusal["option"] == "pp" and refusal["path"].endswith("validation_hook.py")
    # Said once, not on each row; with PP assumed every target is refused.
    assert not any(c["condition"][0]["option"] == "pp" for m in data["models"] for c in m["conditions"])
    with_pp = _matrix("sglang==0.5.23", "pp")
    assert {m["outcome"] for m in with_pp.values() if m["outcome"]} == {"refused"}


def test_sglang_0_5_9_kimi_k25_is_broken_crash_with_its_safe_fix() -> None:
    kimi = _matrix("sglang==0.5.9")["KimiK25ForConditionalGeneration"]
    assert (kimi["status"], kimi["outcome"], kimi["fix"]) == ("broken", "crash", {"applicability": "safe"})


def test_vllm_0_33_0_undeclared_wrappers_are_refused_and_the_deep_errors_crash() -> None:
    matrix = _matrix("vllm==0.33.0")
    # One line away; the V1 runner's drafter-load crashes (E3L018/E3L019) are conditions only.
    one_line = [m for m in matrix.values() if m["codes"][:1] == ["E3L013"] and set(m["codes"]) <= {"E3L013", "E3L018", "E3L019"}]
    assert len(one_line) >= 20
    assert all({"option": "runner", "value": "v1"} in c["condition"] for m in one_line for c in m["conditions"] if c["outcome"] == "crash")
    assert {(m["status"], m["outcome"]) for m in one_line} == {("incomplete", "refused")}
    # supports_eagle3() false: eagle3_utils.py ~28 raises "Model does not support EAGLE3 interface".
    assert all(m["evidence"]["path"].endswith(("eagle3_utils.py", "gpu_model_runner.py")) for m in one_line)
    broken = sorted(name for name, m in matrix.items() if m["status"] == "broken")
    assert {"CohereCompassForConditionalGeneration", "Exaone4_5_ForConditionalGeneration", "MiMoForCausalLM"} <= set(broken)
    assert {matrix[name]["outcome"] for name in broken} == {"crash"}


def _qwen3_vl_pair(tmp_path: Path) -> tuple[Path, Path]:
    target, drafter = tmp_path / "target", tmp_path / "drafter"
    target.mkdir()
    drafter.mkdir()
    text = {"hidden_size": 4096, "vocab_size": 151936, "num_hidden_layers": 36, "model_type": "qwen3_vl_text"}
    (target / "config.json").write_text(json.dumps({"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl", "text_config": text}))
    (drafter / "config.json").write_text(
        json.dumps({"architectures": ["Eagle3LlamaForCausalLM"], "hidden_size": 4096, "vocab_size": 151936, "num_hidden_layers": 1})
    )
    write_safetensors(drafter / "model.safetensors", {"fc.weight": ("BF16", [4096, 3 * 4096]), "lm_head.weight": ("BF16", [151936, 4096])})
    return target, drafter


def test_vllm_0_33_0_qwen3_vl_one_answer_from_check_models_and_the_preflight(tmp_path: Path) -> None:
    """Works by default; its PP finding (E3L106) is an error only with PP, in all three commands."""
    spec = "vllm==0.33.0"
    path = "vllm/model_executor/models/qwen3_vl.py"
    release_root(spec)
    assert _row(spec, "Qwen3VLForConditionalGeneration") == ("supported", "works")
    assert _row(spec, "Qwen3VLForConditionalGeneration", "pp") == ("broken", "crash")
    assert run_cli("check", "--release", spec, path).returncode == 0
    assert run_cli("check", "--release", spec, path, "--engine-option", "pp").returncode == 1
    target, drafter = _qwen3_vl_pair(tmp_path)
    answers = {}
    for pp in ("1", "2"):
        code, report = run_json("verify", "--preflight-only", "--release", spec, "--model-path", target, "--draft-model-path", drafter, "--pp", pp, "--format", "json")
        (item,) = [i for i in report["preflight"] if i["check"] == "target-class" and i["status"] in ("ok", "problem")]
        answers[pp] = (item["status"], item.get("impact"))
        # The pair's own outcome may stay unknown (how its setter maps the ids), never a crash
        # without PP; with PP the target's crash decides it.
        assert code == 1 or pp == "1"
        assert (report.get("outcome") == "crash") == (pp == "2"), report.get("outcome")
    assert answers == {"1": ("ok", None), "2": ("problem", "crash")}
