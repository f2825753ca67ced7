"""`fix` on real vLLM releases (cached downloads; nothing is written into the cache): every diff
of the dry run applies with `patch -p0` and `git apply` on a copy and re-parses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fix_helpers import apply_dry_run
from tests.helpers import release_root

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
    assert "self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, residual)" in text


def test_vllm_0_18_0_unsafe_dry_run_adds_the_mixin_to_a_collecting_decoder(tmp_path: Path) -> None:
    changed = apply_dry_run("vllm==0.18.0", MODELS, tmp_path, "--unsafe-fixes")
    assert f"{MODELS}/qwen3_5.py" in changed
    text = (tmp_path / "git" / MODELS / "qwen3_5.py").read_text()
    original = (release_root("vllm==0.18.0") / "model_executor" / "models" / "qwen3_5.py").read_text()
    assert "class Qwen3_5Model(Qwen3NextModel, EagleModelMixin):" in text
    assert text.count("_maybe_add_hidden_state") == original.count("_maybe_add_hidden_state")
