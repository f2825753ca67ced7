"""Fixes read the shape in front of them: what is really missing, and what to capture.

Model files of ours (``fixtures/fix_shapes/``) are dropped into a copy of a golden ``before``
tree; each test says what the fix adds and what it must not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.fix_helpers import MODELS, copy_before
from tests.helpers import FIXTURES, run_cli

SHAPES = FIXTURES / "fix_shapes"


def _dropped(base: str, shape: str, tmp_path: Path, models: Path = MODELS) -> Path:
    root = copy_before(base, tmp_path)
    shutil.copy(SHAPES / shape, root / models / shape)
    return root / models / shape


def _findings(path: Path) -> list[dict[str, Any]]:
    findings: list[dict[str, Any]] = json.loads(run_cli("check", "--format", "json", path).stdout)["findings"]
    return findings


def _added(diff: str) -> list[str]:
    return [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]


def test_a_model_that_captures_already_gets_the_setter_and_the_hand_off_only(tmp_path: Path) -> None:
    path = _dropped("fix_leaf_capture", "finish_leaf.py", tmp_path)
    findings = {f["class"]: f for f in _findings(path)}
    finding = findings["FinishForCausalLM"]
    assert (finding["code"], finding["method"]) == ("E3L001", "set_eagle3_layers_to_capture")
    fix = finding["fix"]
    assert fix["applicability"] == "unsafe"
    assert "by hand" not in fix["description"]
    assert "`FinishModel.forward` captures already" in fix["description"]
    added = _added(fix["diff"])
    assert "def set_eagle3_layers_to_capture(self, layer_ids=None):" in added
    assert any(line.endswith("aux_hidden_states=aux_hidden_states)") for line in added)
    # Nothing of the capture itself: the decoder has it.
    assert not any("layers_to_capture = []" in line or "aux_hidden_states.append" in line for line in added)
    # A decoder that captures after each layer: the ids as they are (no E3L104 afterwards).
    after = _added(findings["AfterForCausalLM"]["fix"]["diff"])
    assert "self.model.layers_to_capture = list(layer_ids)" in after
    assert not any("val + 1" in line for line in after)
    applied = run_cli("fix", "--apply", "--unsafe-fixes", path)
    assert applied.returncode == 0, applied.stderr
    assert _findings(path) == []


def test_a_post_norm_decoder_captures_hidden_states_alone(tmp_path: Path) -> None:
    path = _dropped("fix_leaf_capture", "postnorm_leaf.py", tmp_path)
    findings = {f["class"]: f for f in _findings(path)}
    post = findings["PostNormForCausalLM"]
    assert post["fix"]["applicability"] == "unsafe"
    assert "capture `hidden_states` in `PostNormModel.forward`" in post["fix"]["description"]
    added = _added(post["fix"]["diff"])
    assert "aux_hidden_states.append(hidden_states)" in added
    assert not any("hidden_states + residual" in line for line in added)
    # The layer class chosen by the caller: what it hands on is not proven, so no fix.
    chosen = findings["ChosenForCausalLM"]
    assert chosen["fix"]["applicability"] == "display-only" and chosen["fix"]["diff"] == ""
    assert "no automatic fix: what the layers of `ChosenModel` hand on is not proven" in chosen["message"]
    assert "`layer_class`, chosen at run time" in chosen["message"]


def test_a_pre_norm_decoder_still_captures_the_sum(tmp_path: Path) -> None:
    root = copy_before("fix_leaf_capture", tmp_path)
    (finding,) = _findings(root / MODELS / "capture_pp.py")
    assert "capture `hidden_states + residual` in `PPModel.forward`" in finding["fix"]["description"]
    assert "hidden_states + residual if residual is not None else hidden_states" in finding["fix"]["diff"]
