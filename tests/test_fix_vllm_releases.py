"""`fix` on real vLLM releases (cached downloads; nothing is written into the cache): every diff
of the dry run applies with `patch -p1` and `git apply` on a copy and re-parses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fix_helpers import apply_dry_run
from tests.helpers import release_json, release_root

pytestmark = pytest.mark.release

MODELS = "vllm/model_executor/models"


def test_vllm_0_33_0_safe_dry_run_diffs_apply_and_parse(tmp_path: Path) -> None:
    changed = apply_dry_run("vllm==0.33.0", MODELS, tmp_path, all_proven=True)
    assert f"{MODELS}/kimi_k25.py" in changed  # stale getter renamed, with the call it forwards
    assert f"{MODELS}/glm4.py" in changed  # one line away: SupportsEagle3 declared
    assert len(changed) >= 25
    assert f"{MODELS}/exaone4.py" not in changed  # the holder fix is unsafe


def test_vllm_0_33_0_unsafe_dry_run_fixes_the_holders(tmp_path: Path) -> None:
    changed = apply_dry_run("vllm==0.33.0", MODELS, tmp_path, "--unsafe-fixes", all_proven=True)
    for name in ("exaone4.py", "cohere_compass.py", "mimo.py"):
        assert f"{MODELS}/{name}" in changed  # mixin and collect in real decoder loops
    text = (tmp_path / "patch" / MODELS / "exaone4.py").read_text()
    assert "class Exaone4Model(nn.Module, EagleModelMixin):" in text
    # EXAONE 4's layers are post-norm (they ignore the residual handed in and return the sum):
    # the state between layers is `hidden_states` alone; `+ residual` would double it.
    assert "self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, None)" in text
    assert "_maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, residual)" not in text
    # Command-R's parallel layers (Cohere Compass) too; MiMo's Qwen2 layers are pre-norm, as Llama's.
    assert "hidden_states, None)" in (tmp_path / "patch" / MODELS / "cohere_compass.py").read_text()
    mimo = (tmp_path / "patch" / MODELS / "mimo.py").read_text()
    assert "self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, residual)" in mimo


def test_vllm_0_33_0_exaone4_5_fix_captures_the_post_norm_output() -> None:
    _, report = release_json("check", "--release", "vllm==0.33.0")
    (finding,) = [f for f in report["findings"] if f["class"] == "Exaone4_5_ForConditionalGeneration" and f["code"] == "E3L010"]
    fix = finding["fix"]
    assert fix["applicability"] == "unsafe"
    assert "it captures `hidden_states`)" in fix["description"]
    added = [line for line in fix["diff"].splitlines() if line.startswith("+") and "_maybe_add_hidden_state" in line]
    assert added and all(line.rstrip().endswith("hidden_states, None)") for line in added)


def test_vllm_0_18_0_unsafe_dry_run_adds_the_mixin_to_a_collecting_decoder(tmp_path: Path) -> None:
    changed = apply_dry_run("vllm==0.18.0", MODELS, tmp_path, "--unsafe-fixes")
    assert f"{MODELS}/qwen3_5.py" in changed
    text = (tmp_path / "git" / MODELS / "qwen3_5.py").read_text()
    original = (release_root("vllm==0.18.0") / "model_executor" / "models" / "qwen3_5.py").read_text()
    assert "class Qwen3_5Model(Qwen3NextModel, EagleModelMixin):" in text
    assert text.count("_maybe_add_hidden_state") == original.count("_maybe_add_hidden_state")


def test_vllm_0_33_0_wrappers_are_told_about_the_protocol_and_get_it_declared() -> None:
    _, report = release_json("check", "--release", "vllm==0.33.0")
    found = {f["class"]: f for f in report["findings"] if f["code"] == "E3L004"}
    for name, delegate in (("KimiVLForConditionalGeneration", "DeepseekV2ForCausalLM"), ("Dots3NoteForCausalLM", "Dots3NoteLanguageModelForCausalLM")):
        finding = found[name]
        assert finding["message"].startswith(f"`{name}` does not declare SupportsEagle3, so `supports_eagle3()` is false")
        assert "which does not inherit EagleModelMixin" in finding["message"]  # why declaring alone fails
        assert f"`self.language_model` (`{delegate}`) has its own `set_aux_hidden_state_layers`" in finding["message"]
        fix = finding["fix"]
        assert fix["applicability"] == "safe", fix
        assert "SupportsEagle3):" in fix["diff"] or "SupportsEagle3\n" in fix["diff"]
        assert "+        self.language_model.set_aux_hidden_state_layers(layers)" in fix["diff"]
    # Granite 4 Vision: the default reaches a decoder that has the mixin but does not collect:
    # declared, and the collect added to that decoder (unsafe: its forward changes).
    granite = found["Granite4VisionForConditionalGeneration"]["fix"]
    assert granite["applicability"] == "unsafe"
    assert "collect aux hidden states with `_maybe_add_hidden_state` in `Granite4VisionLLMModel.forward`" in granite["description"]
