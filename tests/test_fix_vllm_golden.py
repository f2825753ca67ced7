"""Golden before/after vLLM trees, one per pattern: `fix --apply --unsafe-fixes` must turn
`before` into `after` byte for byte; the fixed findings are gone from a re-check (only the
display-only ones stay); a second run changes nothing; the dry run's diff is the same change."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from tests.fix_helpers import copy_before, differing, golden_after, run_in, to_crlf, tree_bytes
from tests.helpers import FIXTURES, run_cli, run_json

MODELS = Path("vllm/model_executor/models")
# What a re-check of each `after` tree still reports: the findings whose fix is display-only.
REMAINING = {
    "fix_vllm_rename": [("E3L014", "BothForCausalLM")],
    "fix_vllm_declare": [],
    "fix_vllm_collect": [("E3L011", "OddForCausalLM")],
    "fix_vllm_pp": [("E3L105", "SlicedForCausalLM")],
}
# Whether those fail the run (fail-on warning): the PP finding holds only with pipeline
# parallelism, which a run assumes off unless `--engine-option pp` says so: information.
FAILS_AFTER = {name: bool(left) and name != "fix_vllm_pp" for name, left in REMAINING.items()}
GOLDEN = sorted(REMAINING)


def _remaining(root: Path) -> list[tuple[str, str]]:
    _, report = run_json("check", root / MODELS)
    return sorted((f["code"], f["class"]) for f in report["findings"])


@pytest.mark.parametrize("name", GOLDEN)
def test_apply_turns_before_into_after(name: str, tmp_path: Path) -> None:
    root = copy_before(name, tmp_path)
    done = run_cli("fix", "--apply", "--unsafe-fixes", root / MODELS)
    assert done.returncode == (1 if FAILS_AFTER[name] else 0), done.stderr
    assert "not fixed" not in done.stderr
    assert differing(tree_bytes(root), tree_bytes(golden_after(name))) == []
    assert done.stdout == ""


@pytest.mark.parametrize("name", GOLDEN)
def test_before_reports_more_and_after_only_the_display_only_findings(name: str, tmp_path: Path) -> None:
    before = _remaining(FIXTURES / name / "before")
    after = _remaining(FIXTURES / name / "after")
    assert after == REMAINING[name]
    assert set(after) < set(before)


@pytest.mark.parametrize("name", GOLDEN)
def test_second_run_is_empty_and_every_file_compiles(name: str, tmp_path: Path) -> None:
    root = copy_before(name, tmp_path)
    run_cli("fix", "--apply", "--unsafe-fixes", root / MODELS)
    again = run_cli("fix", "--unsafe-fixes", root / MODELS)
    assert again.stdout == ""
    assert again.returncode == (1 if FAILS_AFTER[name] else 0), again.stderr
    for path in (root / MODELS).glob("*.py"):
        compile(path.read_text(), str(path), "exec")


@pytest.mark.parametrize("name", GOLDEN)
def test_dry_run_diff_is_the_golden_change_and_writes_nothing(name: str, tmp_path: Path) -> None:
    root = copy_before(name, tmp_path)
    before = tree_bytes(root)
    done = run_in(root, "fix", "--unsafe-fixes", MODELS)
    assert done.returncode == (1 if FAILS_AFTER[name] or name != "fix_vllm_pp" else 0)
    assert tree_bytes(root) == before
    assert done.stdout.startswith("--- a/vllm/model_executor/models/")
    patched = subprocess.run(["patch", "-p1", "--quiet"], input=done.stdout, text=True, cwd=root, capture_output=True)
    assert patched.returncode == 0, patched.stdout + patched.stderr
    assert differing(tree_bytes(root), tree_bytes(golden_after(name))) == []


def test_safe_fixes_alone_leave_the_unsafe_protocol_declaration(tmp_path: Path) -> None:
    root = copy_before("fix_vllm_declare", tmp_path)
    done = run_cli("fix", "--apply", root / MODELS)
    assert done.returncode == 1
    assert "Fixed 4 of 6 findings in 4 files." in done.stderr  # the wrapper's declare-and-forward is safe
    assert "2 findings remain: 1 needs --unsafe-fixes, 1 has no automatic fix." in done.stderr
    now, after = tree_bytes(root), tree_bytes(golden_after("fix_vllm_declare"))
    assert differing(now, after) == ["vllm/model_executor/models/methods_only.py"]
    untouched = FIXTURES / "fix_vllm_declare" / "before" / MODELS / "methods_only.py"
    assert now["vllm/model_executor/models/methods_only.py"] == untouched.read_bytes()


def test_holder_fixes_need_unsafe_fixes(tmp_path: Path) -> None:
    root = copy_before("fix_vllm_collect", tmp_path)
    before = tree_bytes(root)
    done = run_cli("fix", "--apply", root / MODELS)
    assert done.returncode == 1
    assert "5 need --unsafe-fixes" in done.stderr  # with the post-norm decoder's
    assert tree_bytes(root) == before


def test_fix_levels_and_reasons_in_the_json_report() -> None:
    fixes = {}
    for name in GOLDEN:
        _, report = run_json("check", FIXTURES / name / "before" / MODELS)
        fixes.update({(f["code"], f["class"]): f["fix"] for f in report["findings"] if f.get("fix")})
    assert fixes[("E3L014", "StaleForCausalLM")]["applicability"] == "safe"
    assert "already defines `get_eagle3_default_aux_hidden_state_layers`" in fixes[("E3L014", "BothForCausalLM")]["description"]
    assert fixes[("E3L014", "BothForCausalLM")]["applicability"] == "display-only"
    assert {fixes[("E3L013", c)]["applicability"] for c in ("ExtendForCausalLM", "NewImportForCausalLM", "GenericForCausalLM")} == {"safe"}
    assert fixes[("E3L012", "MethodsOnlyForCausalLM")]["applicability"] == "unsafe"
    assert fixes[("E3L010", "HandRolledForCausalLM")]["applicability"] == "unsafe"
    odd = fixes[("E3L011", "OddForCausalLM")]
    assert odd["applicability"] == "display-only" and "no single loop over `self.layers`" in odd["description"]
    assert "+class NewImportForCausalLM(" not in fixes[("E3L013", "NewImportForCausalLM")]["diff"]
    assert "+    SupportsEagle3,\n" in fixes[("E3L013", "NewImportForCausalLM")]["diff"]
    # What is collected follows the layers' residual handling: `hidden_states` alone after
    # post-norm layers (the residual is in it), the sum after pre-norm ones.
    post = fixes[("E3L010", "PostNormForCausalLM")]
    assert post["applicability"] == "unsafe" and "it captures `hidden_states`)" in post["description"]
    assert "_maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, None)" in post["diff"]
    assert "it captures `hidden_states + residual`" in fixes[("E3L010", "IsliceForCausalLM")]["description"]
    # A wrapper whose inner model has the members is refused for the protocol, not the methods:
    # declared, and the setter forwarded to the inner model's own (the default stops at a
    # decoder without the mixin); proven, so safe.
    wrapper = fixes[("E3L004", "DeepVLForConditionalGeneration")]
    assert wrapper["applicability"] == "safe"
    assert "+class DeepVLForConditionalGeneration(nn.Module, SupportsPP, SupportsEagle3):" in wrapper["diff"]
    assert "+        self.language_model.set_aux_hidden_state_layers(layers)" in wrapper["diff"]
    assert "get_eagle3_default_aux_hidden_state_layers(self" not in wrapper["diff"]  # the default serves


def test_a_vllm_wrapper_delegation_gap_starts_from_the_protocol() -> None:
    _, report = run_json("check", FIXTURES / "fix_vllm_declare" / "before" / MODELS / "vl_wrapper.py")
    (finding,) = report["findings"]
    message = finding["message"]
    assert finding["code"] == "E3L004"
    assert message.startswith("`DeepVLForConditionalGeneration` does not declare SupportsEagle3, so `supports_eagle3()` is false")
    assert "forwarding them alone never makes `supports_eagle3()` true" in message
    assert "would reach `self.language_model.model` (`DeepModel`), which does not inherit EagleModelMixin" in message
    assert message.endswith("declare SupportsEagle3 and forward `set_aux_hidden_state_layers` to `self.language_model`")


def test_golden_after_files_are_valid_python() -> None:
    for name in GOLDEN:
        for path in (golden_after(name) / MODELS).glob("*.py"):
            ast.parse(path.read_text(), str(path))


@pytest.mark.parametrize("name", ["fix_vllm_declare", "fix_vllm_collect"])
def test_crlf_files_get_the_golden_change_in_crlf(name: str, tmp_path: Path) -> None:
    root = copy_before(name, tmp_path)
    for path in (root / MODELS).glob("*.py"):
        path.write_bytes(to_crlf(path.read_text()).encode())
    run_cli("fix", "--apply", "--unsafe-fixes", root / MODELS)
    for path in (golden_after(name) / MODELS).glob("*.py"):
        assert (root / MODELS / path.name).read_bytes() == to_crlf(path.read_text()).encode(), path.name
