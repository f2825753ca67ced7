"""`fix --apply --verify`: fix the tree, then launch the patched tree with EAGLE-3 (against the
scripted engine test double) and report."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.fakes.harness import alive, fake_pids
from tests.fakes.model_folders import kimi_drafter_config, kimi_target_config, write_kimi_pair
from tests.helpers import FIXTURES, run_cli
from tests.test_verify_cli import verify_args


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_basic", tree)
    return tree


def test_fix_apply_verify_fixes_then_runs_the_patched_tree(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    wrapper = tree / "sglang/srt/models/wrapper_attr.py"
    before = wrapper.read_text()
    args = verify_args(tmp_path)[3:]  # drop "verify --engine sglang"
    # The model folders name classes of this tree: the wrapper the fix patches, and its drafter.
    target, drafter = kimi_target_config(), kimi_drafter_config()
    target["architectures"] = ["WrapperAttrForConditionalGeneration"]
    drafter["architectures"] = ["CompleteForCausalLMEagle3"]
    write_kimi_pair(tmp_path / "models", target, drafter)
    done = run_cli("fix", "--apply", "--verify", wrapper, *args)
    # The wrapper got its delegation methods before the server was launched...
    after = wrapper.read_text()
    assert after != before and "self.language_model.set_eagle3_layers_to_capture(" in after
    assert "Fixed " in done.stderr and "Verifying the patched sglang tree" in done.stderr
    # ...and verify ran on the patched tree, with its usual report and exit code.
    assert "Launch: EAGLE-3" in done.stdout and "Verdict: good" in done.stdout
    assert done.returncode == 0, done.stdout + done.stderr
    assert alive(fake_pids(tmp_path)) == []


def test_verify_needs_apply_and_model_paths(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    done = run_cli("fix", "--verify", tree)
    assert done.returncode == 2 and "--verify runs the patched engine: it needs --apply" in done.stderr
    done = run_cli("fix", "--apply", "--verify", tree)
    assert done.returncode == 2 and "--verify needs --model-path and --draft-model-path" in done.stderr
