"""The synthetic vLLM trees: one per contract shape (legacy, stub protocol, modern protocol+mixin).

Each tree lists the findings eagle3lint must report in its ``expected.json``: every rule, the
protocol by inheritance, a stale former name, wrappers built by ``init_vllm_registered_model``,
and platform-dispatched packages (by branches and by a module ``__getattr__``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FIXTURES, run_cli, run_json

TREES = ("vllm_legacy", "vllm_stubs", "vllm_modern")


def _expected(tree: str) -> dict[str, Any]:
    return json.loads((FIXTURES / tree / "expected.json").read_text())


@pytest.fixture(scope="module")
def reports() -> dict[str, dict[str, Any]]:
    out = {}
    for tree in TREES:
        code, data = run_json("check", FIXTURES / tree)
        assert code == 1, tree
        out[tree] = data
    return out


@pytest.mark.parametrize("tree", TREES)
def test_reports_exactly_the_expected_findings(reports: dict[str, dict[str, Any]], tree: str) -> None:
    got = sorted([f["code"], f["class"], f["method"], f.get("variant")] for f in reports[tree]["findings"])
    assert got == sorted(_expected(tree)["findings"])


@pytest.mark.parametrize("tree", TREES)
def test_one_verdict_per_model_and_errors_only_on_broken_ones(reports: dict[str, dict[str, Any]], tree: str) -> None:
    report = reports[tree]
    statuses = {m["class"] + (f" [{m['variant']}]" if m.get("variant") else ""): m["status"] for m in report["models"] if m.get("status")}
    assert statuses == _expected(tree)["statuses"]
    by_model = {(m["class"], m.get("variant")): m["status"] for m in report["models"] if m.get("status")}
    for finding in report["findings"]:
        status = by_model.get((finding["class"], finding.get("variant")))
        if finding["severity"] == "error" and status != "not-a-target":
            assert status == "broken", finding["message"]


@pytest.mark.parametrize("tree", TREES)
def test_clean_models_have_no_findings_and_kinds_are_right(reports: dict[str, dict[str, Any]], tree: str) -> None:
    expected = _expected(tree)
    flagged = {f["class"] for f in reports[tree]["findings"]}
    for name in expected["clean"]:
        assert name not in flagged, name
    kinds = {m["class"]: m["kind"] for m in reports[tree]["models"]}
    for name, kind in expected["kinds"].items():
        assert kinds[name] == kind, name
    assert reports[tree]["errors"] == []


def test_engine_version_and_json_shape(reports: dict[str, dict[str, Any]]) -> None:
    report = reports["vllm_modern"]
    assert report["engine"]["name"] == "vllm"
    assert report["engine"]["version"] == "0.99.0+fixture"
    for finding in report["findings"]:
        assert {"code", "rule", "severity", "path", "line", "column", "class", "qualname", "method", "message", "related", "fix"} <= set(finding)


def test_platform_variants_are_all_checked(reports: dict[str, dict[str, Any]]) -> None:
    variants: dict[str, set[str]] = {}
    for model in reports["vllm_modern"]["models"]:
        if model["variant"]:
            variants.setdefault(model["class"], set()).add(model["variant"])
    assert variants == {name: set(labels) for name, labels in _expected("vllm_modern")["variants"].items()}


def test_variant_disagreement_names_the_supporting_variant(reports: dict[str, dict[str, Any]]) -> None:
    (finding,) = [f for f in reports["vllm_modern"]["findings"] if f["code"] == "E3L015"]
    assert finding["severity"] == "warning"
    assert finding["path"].endswith("models/dual/amd/model.py")
    assert "supports EAGLE-3 on nvidia but not on amd" in finding["message"]
    assert finding["related"][0]["path"].endswith("models/dual/nvidia/model.py")


def test_concise_output_tags_the_variant() -> None:
    done = run_cli("check", FIXTURES / "vllm_modern" / "vllm" / "models" / "dual")
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stdout.splitlines() if "E3L0" in line]
    assert lines and all(" [amd] " in line for line in lines)


def test_wrapper_holder_through_registry_factory(reports: dict[str, dict[str, Any]]) -> None:
    findings = {(f["code"], f["class"]): f for f in reports["vllm_modern"]["findings"]}
    mixin = findings[("E3L010", "BadWrapperForConditionalGeneration")]
    assert "`self.language_model.model` (`PlainModel`)" in mixin["message"]
    assert "EagleModelMixin" in mixin["message"]
    assert mixin["severity"] == "error"
    # The default walk in interfaces.py is a related location.
    assert any(r["path"].endswith("interfaces.py") for r in mixin["related"])
    positional = findings[("E3L010", "HfConfigWrapperForConditionalGeneration")]
    assert "`self.language_model.model` (`PlainModel`)" in positional["message"]
    runtime = findings[("E3L016", "RuntimeWrapperForConditionalGeneration")]
    assert runtime["severity"] == "info"
    assert "chosen from the HF config at run time" in runtime["message"]


def test_last_assignment_in_init_wins(reports: dict[str, dict[str, Any]]) -> None:
    messages = [f["message"] for f in reports["vllm_modern"]["findings"] if f["class"] == "RebuiltForCausalLM"]
    assert messages and all("PlainModel" in m for m in messages)


def test_never_collects_points_at_the_holders_forward(reports: dict[str, dict[str, Any]]) -> None:
    (finding,) = [f for f in reports["vllm_modern"]["findings"] if f["code"] == "E3L011" and f["class"] == "QuietForCausalLM"]
    assert finding["path"].endswith("never_collects.py")
    source = Path(finding["path"]).read_text().splitlines()
    assert source[finding["line"] - 1].strip().startswith("def forward")


def test_protocol_not_declared_names_the_missing_flag(reports: dict[str, dict[str, Any]]) -> None:
    (finding,) = [f for f in reports["vllm_modern"]["findings"] if f["code"] == "E3L012"]
    assert "`supports_eagle3`" in finding["message"]
    assert any(r["path"].endswith("gpu_model_runner.py") for r in finding["related"])


def test_one_line_away_stands_for_the_members_the_protocol_supplies(reports: dict[str, dict[str, Any]]) -> None:
    """Undeclared but ready: one finding, with the call sites of the members it stands for, not
    a finding per member beside an information note. The runner refuses the model clearly: a
    warning on an incomplete model, outcome refused, the check function its evidence."""
    findings = [f for f in reports["vllm_modern"]["findings"] if f["class"] == "UndeclaredForCausalLM"]
    assert [(f["code"], f["severity"], f["outcome"]) for f in findings] == [("E3L013", "warning", "refused")]
    assert findings[0]["evidence"]["path"].endswith("gpu_model_runner.py")
    message = findings[0]["message"]
    assert "does not declare SupportsEagle3" in message and "refuses EAGLE-3 with its own error" in message
    assert "`set_aux_hidden_state_layers`" in message and "`get_eagle3_default_aux_hidden_state_layers`" in message
    assert {Path(r["path"]).name for r in findings[0]["related"]} == {"gpu_model_runner.py"}
    wrapper = [f["code"] for f in reports["vllm_modern"]["findings"] if f["class"] == "UndeclaredWrapperForConditionalGeneration"]
    assert wrapper == ["E3L013"]


def test_one_line_away_is_information_when_the_engine_calls_nothing(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "vllm_modern", root)
    (root / "vllm" / "v1" / "worker" / "gpu_model_runner.py").write_text("# no EAGLE-3 here\n")
    code, data = run_json("check", root)
    assert code == 1  # the tree's other models still have errors
    findings = [f for f in data["findings"] if f["class"] == "UndeclaredForCausalLM"]
    assert [(f["code"], f["severity"]) for f in findings] == [("E3L013", "info")]
    assert findings[0]["message"].startswith("`UndeclaredForCausalLM` is one line away from EAGLE-3 support")


def test_ignoring_one_line_away_brings_back_the_member_findings() -> None:
    code, data = run_json("check", FIXTURES / "vllm_modern", "--ignore", "E3L013")
    assert code == 1
    codes = sorted((f["code"], f["method"]) for f in data["findings"] if f["class"] == "UndeclaredForCausalLM")
    # One finding for the members the protocol's defaults would have supplied (one cause).
    assert codes == [("E3L001", "set_aux_hidden_state_layers")]


def test_stale_former_name_only_where_the_engine_moved_on(reports: dict[str, dict[str, Any]]) -> None:
    stale = [f for f in reports["vllm_modern"]["findings"] if f["code"] == "E3L014"]
    assert [(f["class"], f["severity"]) for f in stale] == [("StaleForCausalLM", "warning")]
    assert "get_eagle3_default_aux_hidden_state_layers" in stale[0]["message"]
    # In the legacy tree the same name is the live getter: never stale there.
    assert not [f for f in reports["vllm_legacy"]["findings"] if f["code"] == "E3L014"]


def test_guard_kind_follows_the_tree(reports: dict[str, dict[str, Any]]) -> None:
    legacy = [f for f in reports["vllm_legacy"]["findings"] if f["code"] in ("E3L001", "E3L020")]
    stubs = [f for f in reports["vllm_stubs"]["findings"] if f["code"] in ("E3L001", "E3L020")]
    assert legacy and all("unguarded" in f["message"] for f in legacy)
    assert stubs and all("refuses EAGLE-3 with its own error" in f["message"] for f in stubs)
    assert {f["outcome"] for f in legacy} == {"crash"} and {f["outcome"] for f in stubs} == {"refused"}
    # The lead of a not-implemented finding says the same as its guard phrase: no "refuses" for a crash.
    assert all("a launch with EAGLE-3 crashes" in f["message"] for f in legacy if f["code"] == "E3L020")
    assert all("the engine refuses it" in f["message"] for f in stubs if f["code"] == "E3L020")


def test_import_time_class_is_unresolved_with_the_reason() -> None:
    done = run_cli("check", "-v", FIXTURES / "vllm_legacy")
    assert "LlamaForSequenceClassification" in done.stdout
    assert "built at import time by as_seq_cls_model(...)" in done.stdout


def test_single_file_scope_reports_only_its_classes() -> None:
    path = FIXTURES / "vllm_modern" / "vllm" / "model_executor" / "models" / "wrapper.py"
    code, data = run_json("check", path)
    assert code == 1
    assert {f["class"] for f in data["findings"]} == {
        "BadWrapperForConditionalGeneration",
        "RuntimeWrapperForConditionalGeneration",
        "UndeclaredWrapperForConditionalGeneration",
        "HfConfigWrapperForConditionalGeneration",
    }
    # Registrations elsewhere are classified from the registry alone, without parsing them.
    outside = [m for m in data["models"] if "outside the reporting scope" in m["reason"]]
    assert {m["class"] for m in outside} >= {"LlamaForCausalLM", "DualForCausalLM", "FooEmbeddingModel"}


def test_clean_file_exits_zero() -> None:
    done = run_cli("check", FIXTURES / "vllm_modern" / "vllm" / "model_executor" / "models" / "helper_collect.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no findings" in done.stdout


def test_select_one_vllm_rule() -> None:
    code, data = run_json("check", FIXTURES / "vllm_modern", "--select", "E3L015")
    assert code == 1
    assert [f["code"] for f in data["findings"]] == ["E3L015"]


def test_vllm_rules_never_run_on_sglang_shaped_input() -> None:
    from eagle3lint.engines.vllm.rules import VLLM_RULES
    from eagle3lint.run.runner import select_rules

    chosen = set(select_rules(None, None, engine="sglang"))
    assert not [r for r in VLLM_RULES if r.engines == ("vllm",) and r in chosen]


def _copy_tree(tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / "tree"
    shutil.copytree(FIXTURES / "vllm_modern", target)
    return target / "vllm"


def test_broken_interfaces_is_one_clear_error_and_the_rest_is_checked(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    with (root / "model_executor/models/interfaces.py").open("a") as handle:
        handle.write("def broken(:\n")
    done = run_cli("check", root, "--format", "json")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "interfaces.py" in errors[0] and "syntax error" in errors[0]
    data = json.loads(done.stdout)
    assert data["findings"], "the other files are still checked"


def test_unreadable_model_file_and_broken_dispatch_package(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    (root / "model_executor/models/plain.py").write_bytes(b"class PlainForCausalLM:\n    x = '\xff'\n")
    with (root / "models/dual/__init__.py").open("a") as handle:
        handle.write("class X(\n")
    done = run_cli("check", root, "-v")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "plain.py: error: not valid utf-8" in done.stderr
    assert "dual/__init__.py: error: syntax error" in done.stderr
    assert "unresolved    PlainForCausalLM" in done.stdout
    assert "E3L011" in done.stdout  # QuietForCausalLM is still checked


def test_legacy_allow_list_judges_nothing_it_cannot_prove(reports: dict[str, dict[str, Any]]) -> None:
    """The legacy tree's speculative config accepts only llama model types (vllm/config.py:3),
    but the tree pins no transformers: no architecture's types are known (Qwen3-MoE's name says
    nothing the tool may rely on), so nothing is refused on a guess and nothing is said to work
    either: the classes with EAGLE-3 code are unknown, an info naming the list (tests/
    test_vllm_allow_list.py has a tree whose types are known)."""
    legacy = reports["vllm_legacy"]["findings"]
    unknown = [f for f in legacy if f["code"] == "E3L017"]
    assert {f["class"] for f in unknown} == {"LlamaForCausalLM", "BrokenForCausalLM"}
    assert all(f["severity"] == "info" and "cannot be read" in f["message"] and "vllm/config.py:3" in f["message"] for f in unknown)
    assert not [f for f in reports["vllm_modern"]["findings"] if "allow-list" in f["message"]]


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        # Silencing the one-line-away finding brings back the member findings it stood for...
        ("# noqa: E3L013", [("E3L001", "set_aux_hidden_state_layers")]),
        # ...and silencing every member finding silences it too.
        ("# noqa: E3L001", []),
        ("# eagle3lint: ignore", []),
    ],
)
def test_suppressions_decide_before_one_finding_stands_for_others(tmp_path: Path, comment: str, expected: list[tuple[str, str]]) -> None:
    import shutil

    root = tmp_path / "tree"
    shutil.copytree(FIXTURES / "vllm_modern", root)
    model = root / "vllm" / "model_executor" / "models" / "undeclared.py"
    text = model.read_text()
    assert "class UndeclaredForCausalLM(nn.Module):\n" in text
    model.write_text(text.replace("class UndeclaredForCausalLM(nn.Module):\n", f"class UndeclaredForCausalLM(nn.Module):  {comment}\n"))
    code, data = run_json("check", model, "--no-cache")
    assert sorted((f["code"], f["method"]) for f in data["findings"] if f["class"] == "UndeclaredForCausalLM") == expected
    assert code == (1 if expected else 0)
