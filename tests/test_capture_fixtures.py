"""The capture data flow on synthetic multi-file trees: each rule's shapes (wrapper + inner
decoder, per-layer markers, inherited and own setters, delegation chains, `super()` skips, PP
loops and guards), the shapes that must stay quiet, and the fixes each finding gets."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, run_cli, run_json

SGLANG = FIXTURES / "sglang_capture"
EXPECTED = json.loads((SGLANG / "expected.json").read_text())
VLLM_PP = FIXTURES / "vllm_pp"


@pytest.fixture(scope="module")
def sglang_report() -> dict:
    code, data = run_json("check", SGLANG)
    assert code == 1
    return data


def _by(report: dict, code: str, cls: str) -> dict:
    (finding,) = [f for f in report["findings"] if f["code"] == code and f["class"] == cls]
    return finding


def test_sglang_reports_exactly_the_expected_capture_findings(sglang_report: dict) -> None:
    got = sorted([f["code"], f["class"], f["method"]] for f in sglang_report["findings"])
    assert got == EXPECTED["findings"]


def test_sglang_verdicts_and_fix_applicability(sglang_report: dict) -> None:
    assert {m["class"]: m["status"] for m in sglang_report["models"]} == EXPECTED["statuses"]
    fixes = {f"{f['code']} {f['class']}": (f.get("fix") or {}).get("applicability", "none") for f in sglang_report["findings"]}
    assert fixes == EXPECTED["fixes"]


def test_quiet_shapes_stay_quiet(sglang_report: dict) -> None:
    # A dead write beside a working capture, a `super().__init__` that runs the base's, an
    # idle-batch logits call beside one that passes the aux states, the delegation chain.
    quiet = {"DeadWriteForCausalLM", "KeepForCausalLM", "IdleBranchForCausalLM", "InnerForCausalLM", "BaseVLForConditionalGeneration"}
    assert not quiet & {f["class"] for f in sglang_report["findings"]}


def test_messages_say_who_sets_what_is_read(sglang_report: dict) -> None:
    marker = _by(sglang_report, "E3L101", "MarkerVLForConditionalGeneration")["message"]
    assert "`_is_layer_to_capture`, which `InnerDecoder.set_eagle3_layers_to_capture` sets, but the target's setter never calls it" in marker
    dflash = _by(sglang_report, "E3L101", "DflashVLForConditionalGeneration")["message"]
    assert "which only `DflashDecoder.set_dflash_layers_to_capture` sets" in dflash
    nothing = _by(sglang_report, "E3L101", "NothingVLForConditionalGeneration")["message"]
    assert "`PlainDecoder.forward`" in nothing and "captures no hidden state" in nothing
    skip = _by(sglang_report, "E3L103", "SkipForCausalLM")["message"]
    assert "`ListForCausalLM.__init__` sets it, but it never runs for `SkipForCausalLM`" in skip
    offset = _by(sglang_report, "E3L104", "OffsetForCausalLM")
    assert offset["severity"] == "warning" and "shifts the requested ids by +1" in offset["message"] and "after each layer" in offset["message"]
    handoff = _by(sglang_report, "E3L102", "NoHandoffForCausalLM")
    assert handoff["path"].endswith("no_handoff.py") and "never passes it to `self.logits_processor`" in handoff["message"]


def test_display_only_fixes_say_why(sglang_report: dict) -> None:
    dflash = _by(sglang_report, "E3L101", "DflashVLForConditionalGeneration")["fix"]
    assert "`DflashDecoder` has no `set_eagle3_layers_to_capture` of its own" in dflash["description"] + dflash.get("note", "")
    assert not dflash.get("diff")


def _copy(tree: Path, tmp_path: Path) -> Path:
    root = tmp_path / tree.name
    shutil.copytree(tree, root, ignore=shutil.ignore_patterns("expected.json", "__pycache__"))
    return root


def test_safe_fixes_then_unsafe_leave_only_the_display_only_findings(tmp_path: Path) -> None:
    root = _copy(SGLANG, tmp_path)
    run_cli("fix", "--apply", root)
    _, after_safe = run_json("check", root)
    left = sorted((f["code"], f["class"]) for f in after_safe["findings"])
    assert left == [
        ("E3L101", "DflashVLForConditionalGeneration"),
        ("E3L101", "NothingVLForConditionalGeneration"),
        ("E3L102", "NoHandoffForCausalLM"),
        ("E3L104", "OffsetForCausalLM"),
    ]
    models = root / "sglang/srt/models"
    marker = (models / "vl_marker.py").read_text()
    assert "super().set_eagle3_layers_to_capture(layer_ids)\n        self.model.set_eagle3_layers_to_capture(layer_ids)" in marker
    own = (models / "vl_own_setter.py").read_text()
    assert "[val + 1 for val in layer_ids]\n        self.model.set_eagle3_layers_to_capture(layer_ids)\n" in own
    assert "self.logits_processor = LogitsProcessor()\n        self.capture_aux_hidden_states = False\n" in (models / "flag_skip.py").read_text()

    run_cli("fix", "--apply", "--unsafe-fixes", root)
    _, after_unsafe = run_json("check", root)
    assert sorted((f["code"], f["class"]) for f in after_unsafe["findings"]) == [left[0], left[1], left[3]]
    assert "forward_batch, aux_hidden_states=aux_hidden_states)" in (models / "no_handoff.py").read_text()
    again = run_cli("fix", "--unsafe-fixes", root)
    assert again.stdout == "", again.stdout
    for path in models.glob("*.py"):
        compile(path.read_text(), str(path), "exec")


def test_vllm_pp_findings_hold_only_with_pp_and_the_guard_follows_the_runner() -> None:
    """PP is off unless the run says otherwise: the PP findings are information naming the
    option. With `--engine-option pp` the release's default runner (V2 here: its envs.py
    leaves the variable unset and its config prefers V2) refuses EAGLE-3 for a decoder without
    the flag; with the V1 runner nothing refuses it and the local index is a silent failure."""
    code, report = run_json("check", VLLM_PP)
    assert code == 0  # information only: nothing is broken with PP off
    got = sorted((f["code"], f["class"], f["severity"], f["applies"]) for f in report["findings"])
    assert got == [
        ("E3L105", "OptedForCausalLM", "info", False),
        ("E3L105", "RefusedForCausalLM", "info", False),
        ("E3L106", "OverrideForCausalLM", "info", False),
    ]
    refused = _by(report, "E3L105", "RefusedForCausalLM")
    assert "refuses EAGLE-3 with pipeline parallelism" in refused["message"]
    assert "eagle3_utils.py" in refused["message"] and "only with --pipeline-parallel-size > 1" in refused["message"]
    assert refused["related"][0]["path"].endswith("eagle3_utils.py")
    # The opt-out subclass (MiMo's counter-pattern) and SharedModel's shared loop: no new findings.
    assert not {"OptOutForCausalLM", "SharedForCausalLM"} & {f["class"] for f in report["findings"]}
    models = {m["class"]: m for m in report["models"] if m["status"]}
    assert {name: m["status"] for name, m in models.items()} == dict.fromkeys(
        ["RefusedForCausalLM", "OptedForCausalLM", "SharedForCausalLM", "OverrideForCausalLM", "OptOutForCausalLM"], "supported"
    )
    conditions = {name: [(c["described"], c["outcome"]) for c in m["conditions"]] for name, m in models.items()}
    assert conditions["OptedForCausalLM"] == [("--pipeline-parallel-size > 1", "silent")]
    assert conditions["OverrideForCausalLM"] == [("--pipeline-parallel-size > 1", "crash")]
    assert conditions["RefusedForCausalLM"] == [
        ("--pipeline-parallel-size > 1", "refused"),
        ("--pipeline-parallel-size > 1 and VLLM_USE_V2_MODEL_RUNNER=0", "silent"),
    ]

    code, with_pp = run_json("check", VLLM_PP, "--engine-option", "pp")
    assert code == 1
    statuses = {m["class"]: (m["status"], m["outcome"]) for m in with_pp["models"] if m["status"]}
    assert statuses == {
        "RefusedForCausalLM": ("incomplete", "refused"),
        "OptedForCausalLM": ("broken", "silent"),
        "SharedForCausalLM": ("incomplete", "refused"),
        "OverrideForCausalLM": ("broken", "crash"),
        "OptOutForCausalLM": ("incomplete", "refused"),
    }
    assert sorted((f["class"], f["severity"]) for f in with_pp["findings"]) == [
        ("OptedForCausalLM", "error"), ("OverrideForCausalLM", "error"), ("RefusedForCausalLM", "info"),
    ]

    _, on_v1 = run_json("check", VLLM_PP, "--engine-option", "pp", "--engine-option", "runner=v1")
    assert {m["class"]: m["status"] for m in on_v1["models"] if m["status"]}["RefusedForCausalLM"] == "broken"


def test_fix_assumes_the_same_launch_options_as_check(tmp_path: Path) -> None:
    """`fix --engine-option pp`: what remains is judged under PP, as `check` judges it."""
    root = _copy(VLLM_PP, tmp_path)
    without = run_cli("fix", root)
    with_pp = run_cli("fix", root, "--engine-option", "pp")
    assert without.stdout == with_pp.stdout  # the same fixes
    # The PP capture finding that has no fix is information without PP, an error with it.
    assert without.returncode == 0 and with_pp.returncode == 1, (without.stderr, with_pp.stderr)
