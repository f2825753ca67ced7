"""LMDeploy on a synthetic tree of ours (fixtures/lmdeploy_basic): its contract read from the
config builders, build context, warm-up and proposer; every way the captured states fail to
reach the drafter; statuses, outcomes and their evidence; launch options; the fixes; bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, run_cli, run_json

TREE = FIXTURES / "lmdeploy_basic"
EXPECTED = json.loads((TREE / "expected.json").read_text())
ROOT = TREE / "lmdeploy"


@pytest.fixture(scope="module")
def report() -> dict:
    code, data = run_json("check", TREE, "--no-cache")
    assert code == 1
    return data


def _models(report: dict) -> dict[str, dict]:
    return {m["class"]: m for m in report["models"]}


def _by(report: dict, code: str, cls: str) -> dict:
    (finding,) = [f for f in report["findings"] if f["code"] == code and f["class"] == cls]
    return finding


def test_the_engine_and_its_version_are_recognised(report: dict) -> None:
    assert report["engine"]["name"] == "lmdeploy" and report["engine"]["version"] == "0.99.0"


def test_exactly_the_expected_findings(report: dict) -> None:
    assert sorted([f["code"], f["class"], f["method"]] for f in report["findings"]) == EXPECTED["findings"]


def test_statuses_outcomes_and_fixes(report: dict) -> None:
    models = _models(report)
    assert {name: m["status"] for name, m in models.items()} == EXPECTED["statuses"]
    assert {name: m["outcome"] for name, m in models.items() if m["outcome"]} == EXPECTED["outcomes"]
    fixes = {f"{f['code']} {f['class']}": (f.get("fix") or {}).get("applicability", "none") for f in report["findings"]}
    assert fixes == EXPECTED["fixes"]


def test_the_map_gives_architectures_and_drops_removed_ones(report: dict) -> None:
    models = _models(report)
    # One class serves two architectures of the map; the removed one is not a model.
    assert models["InternPlainForCausalLM"]["architectures"] == ["InternPlainForCausalLM"]
    assert "OldForCausalLM" not in json.dumps(report["models"])
    assert models["Eagle3LlamaForCausalLM"]["kind"] == "eagle3-draft"


def test_the_outcome_evidence_is_the_engines_own_line(report: dict) -> None:
    models = _models(report)
    evidence = {name: (m["outcome_evidence"] or {}) for name, m in models.items()}
    # Never opted in: the draft's warm-up call the plain strategy cannot take.
    assert evidence["InternPlainForCausalLM"]["path"].endswith("pytorch/spec_decode/spec_agent.py")
    assert evidence["InternPlainForCausalLM"]["line"] == 13
    # No capture: the proposer's fallback.
    assert evidence["PlainForCausalLM"]["path"].endswith("pytorch/spec_decode/base.py") and evidence["PlainForCausalLM"]["line"] == 13
    # The builder's assertion and its refusal, before the weights load.
    assert evidence["MtpOnlyForCausalLM"]["path"].endswith("pytorch/configurations/mtp_only.py") and evidence["MtpOnlyForCausalLM"]["line"] == 16
    assert evidence["RefusingForCausalLM"]["path"].endswith("pytorch/configurations/refusing.py")
    # The mixin's default drops the states on graph replay.
    assert evidence["CudaGraphDropForCausalLM"]["path"].endswith("pytorch/models/utils/cudagraph.py")


def test_messages_name_the_builder_the_line_and_what_happens(report: dict) -> None:
    refused = _by(report, "E3L030", "MtpOnlyForCausalLM")
    assert "MtpOnlyModelConfigBuilder" in refused["message"] and "assert spec_method == 'deepseek_mtp'" in refused["message"]
    assert refused["severity"] == "error" and refused["outcome"] == "crash"
    clear = _by(report, "E3L030", "RefusingForCausalLM")
    assert "raises ValueError('Unsupported speculative method for Refusing: {spec_method}')" in clear["message"]
    assert clear["severity"] == "warning" and clear["outcome"] == "refused"
    context = _by(report, "E3L112", "ContextForCausalLM")["message"]
    assert "`target_layer_ids` is set only when `method == 'dflash'`, never for eagle3" in context
    never_read = _by(report, "E3L108", "SetterOnlyForCausalLM")["message"]
    assert "SetterOnlyModelConfigBuilder names EAGLE-3 capture layers" in never_read and "setter_only.py:20" in never_read
    graph = _by(report, "E3L110", "CudaGraphDropForCausalLM")["message"]
    assert "works with --eager-mode" in graph
    wrapper = _by(report, "E3L111", "DroppingVLForConditionalGeneration")["message"]
    assert "its language model `LlamaForCausalLM` captures" in wrapper
    not_impl = _by(report, "E3L020", "InternPlainForCausalLM")["message"]
    assert "a launch with EAGLE-3 crashes (E3L031: DefaultModelConfigBuilder never opts it into speculative decoding)" in not_impl


def test_a_builder_that_hands_the_text_config_on_is_followed(report: dict) -> None:
    # WrappedModelConfigBuilder passes hf_config.text_config (and spec_method, in **kwargs) to
    # SetterOnlyModelConfigBuilder, which names the layers the wrapped language model reads.
    assert _models(report)["WrappedForConditionalGeneration"]["status"] == "supported"
    done = run_cli("contract", TREE, "--format", "json")
    facts = json.loads(done.stdout)["lmdeploy"]
    builders = {b["name"]: b for b in facts["builders"]}
    assert builders["WrappedModelConfigBuilder"]["layers"] == "set"
    assert builders["WrappedModelConfigBuilder"]["layers_on"] == "text_config"
    assert builders["LayerlessModelConfigBuilder"]["speculative"] == "set" and builders["LayerlessModelConfigBuilder"]["layers"] == "never"
    assert builders["MtpOnlyModelConfigBuilder"]["refusal"]["kind"] == "assert"
    assert builders["DefaultModelConfigBuilder"]["speculative"] == "never"
    # A raise on a value the reading cannot know is an input check, not a refusal.
    assert builders["SetterOnlyModelConfigBuilder"]["refusal"] is None
    assert facts["build_context"]["state"] == "empty"
    assert facts["fallback"].endswith("spec_decode/base.py:13")


def test_contract_text_lists_each_builder() -> None:
    done = run_cli("contract", TREE)
    assert done.returncode == 0
    assert "LlamaModelConfigBuilder (pytorch/configurations/llama.py:5) [architectures[0]" in done.stdout
    assert "a target never opted in: the engine builds the plain (non-speculative) strategies" in done.stdout
    # The config-builder block is the tool's own: one builder a line, real newlines (no literal \n).
    lines = done.stdout.splitlines()
    assert not any("\\n" in line for line in lines)
    assert any(line.startswith("  LlamaModelConfigBuilder (") for line in lines)
    assert any(line.startswith("build context capture layers for eagle3: ") for line in lines)


@pytest.mark.parametrize(
    ("option", "model", "status", "code_severity"),
    [
        ("cuda-graphs=off", "CudaGraphDropForCausalLM", "supported", ("E3L110", "info")),
        ("microbatch", "BatchedForCausalLM", "incomplete", ("E3L113", "warning")),
    ],
)
def test_launch_options_change_the_verdict(option: str, model: str, status: str, code_severity: tuple[str, str]) -> None:
    code, data = run_json("check", TREE, "--no-cache", "--engine-option", option)
    assert code == 1
    assert _models(data)[model]["status"] == status
    assert _by(data, code_severity[0], model)["severity"] == code_severity[1]


def test_by_default_the_options_are_named_where_they_change_the_outcome(report: dict) -> None:
    batched = _models(report)["BatchedForCausalLM"]
    assert [(c["described"], c["outcome"]) for c in batched["conditions"]] == [("--enable-microbatch", "refused")]
    assert _by(report, "E3L113", "BatchedForCausalLM")["severity"] == "info"


def test_fix_makes_the_fixable_models_work_and_settles(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    done = run_cli("fix", tree, "--no-cache", "--unsafe-fixes", "--apply")
    assert done.returncode == 1, done.stderr
    assert "Fixed 6 of 15 findings in 3 files" in done.stderr
    code, data = run_json("models", tree, "--no-cache")
    assert code == 0  # models lists; it does not fail on findings
    statuses = {m["class"]: m["status"] for m in data["models"]}
    for name in ("CudaGraphDropForCausalLM", "ReturnDropForCausalLM", "GraphlessVLForConditionalGeneration", "DroppingVLForConditionalGeneration", "SetterOnlyForCausalLM"):
        assert statuses[name] == "supported", name
    # The builder line is shown, never written: the builders are engine configuration.
    assert (tree / "lmdeploy/pytorch/configurations/layerless.py").read_text() == (ROOT / "pytorch/configurations/layerless.py").read_text()
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    again = run_cli("fix", tree, "--no-cache", "--unsafe-fixes", "--apply")
    assert "Fixed" not in again.stderr
    assert {p: p.read_bytes() for p in tree.rglob("*.py")} == before


def test_safe_fixes_alone_keep_the_unsafe_ones_out(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    done = run_cli("fix", tree, "--no-cache", "--apply")
    assert "Fixed 2 of 15 findings in 2 files" in done.stderr
    graph = (tree / "lmdeploy/pytorch/models/flow_gaps.py").read_text()
    assert "def get_outputs_cudagraph" in graph and "'aux_hidden_states' in outputs" not in graph


def test_the_config_builder_line_is_shown(report: dict) -> None:
    fix = _by(report, "E3L112", "LayerlessForCausalLM")["fix"]
    assert fix["applicability"] == "display-only"
    assert "+            if spec_method == 'eagle3':" in fix["diff"]
    assert "hf_config.aux_hidden_state_layers = (2, cfg.num_layers // 2, cfg.num_layers - 3)" in fix["diff"]


def test_a_broken_builder_file_is_a_file_error_and_the_rest_is_checked(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    (tree / "lmdeploy/pytorch/configurations/refusing.py").write_text("class Broken(:\n")
    code, data = run_json("check", tree, "--no-cache")
    assert code == 2
    assert [e["path"].endswith("configurations/refusing.py") and "syntax error" in e["message"] for e in data["errors"]] == [True]
    statuses = {m["class"]: m["status"] for m in data["models"]}
    assert statuses["LlamaForCausalLM"] == "supported" and statuses["MtpOnlyForCausalLM"] == "broken"


def test_an_unreadable_module_map_is_a_file_error(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    (tree / "lmdeploy/pytorch/models/module_map.py").write_bytes(b"MODULE_MAP = {\n\xff\n")
    done = run_cli("check", tree, "--no-cache")
    assert done.returncode == 2
    assert "module_map.py" in done.stderr and "Traceback" not in done.stderr


def test_a_warm_cache_sees_an_edit_of_the_mixin_and_of_a_builder(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    _, first = run_json("models", tree, cwd=tmp_path)
    assert _models(first)["CudaGraphDropForCausalLM"]["status"] == "broken"
    mixin = tree / "lmdeploy/pytorch/models/utils/cudagraph.py"
    mixin.write_text(mixin.read_text().replace(
        "        return outputs\n",
        "        if 'aux_hidden_states' in output_buffers:\n"
        "            outputs['aux_hidden_states'] = output_buffers['aux_hidden_states'][:, :num_tokens]\n"
        "        return outputs\n",
    ))
    builder = tree / "lmdeploy/pytorch/configurations/layerless.py"
    builder.write_text(builder.read_text().replace(
        "            cfg.model_paradigm = 'ar_spec'\n",
        "            cfg.model_paradigm = 'ar_spec'\n"
        "            hf_config.aux_hidden_state_layers = (2, cfg.num_layers // 2, cfg.num_layers - 3)\n",
    ))
    _, second = run_json("models", tree, cwd=tmp_path)
    models = _models(second)
    assert models["CudaGraphDropForCausalLM"]["status"] == "supported"
    assert models["GraphlessVLForConditionalGeneration"]["status"] == "supported"
    assert models["LayerlessForCausalLM"]["status"] == "supported"


def test_code_nested_deeper_than_the_stack_costs_a_fact_not_the_run(tmp_path: Path) -> None:
    """A builder, a map entry and a forward that parse, yet nest deeper than a recursive reader
    (or ``ast.unparse``) can follow: each is an unknown or a file error, never a traceback."""
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    chain = " + ".join(["'a'"] * 1500)
    nots = "not " * 600 + "spec_method"
    builder = (
        "from .builder import AutoModelConfigBuilder\n\n\n"
        "class DeepModelConfigBuilder(AutoModelConfigBuilder):\n\n"
        "    @classmethod\n    def condition(cls, hf_config):\n        return hf_config.model_type == 'deep'\n\n"
        "    @classmethod\n    def build(cls, hf_config, model_path=None, spec_method=None, **kwargs):\n"
        f"        if {nots}:\n            raise ValueError({chain})\n"
        f"        assert spec_method == 'x', {chain}\n"
        "        return super().build(hf_config, model_path, **kwargs)\n"
    )
    (tree / "lmdeploy/pytorch/configurations/deep.py").write_text(builder)
    module_map = tree / "lmdeploy/pytorch/models/module_map.py"
    entry = " + ".join(["'lmdeploy.pytorch.models.'", *(["''"] * 1500), "'llama.LlamaForCausalLM'"])
    module_map.write_text(module_map.read_text() + f"\nMODULE_MAP.update({{'DeepForCausalLM': {entry}}})\n")
    for text in (builder, module_map.read_text()):
        compile(text, "<check>", "exec")  # the inputs are valid Python
    done = run_cli("check", tree, "--no-cache", "--format", "json")
    assert "Traceback" not in done.stderr and done.returncode in (1, 2), done.stderr
    data = json.loads(done.stdout)
    assert data["errors"] == []
    # The entry folds to Llama's class; the builder's deep test is unknown, so its assertion is
    # what the `deep` checkpoints meet: LlamaForCausalLM is broken for them.
    llama = next(m for m in data["models"] if m["class"] == "LlamaForCausalLM")
    assert "DeepForCausalLM" in llama["architectures"] and llama["status"] == "broken"
    (refused,) = [f for f in data["findings"] if f["class"] == "LlamaForCausalLM" and f["code"] == "E3L030"]
    assert refused["method"] == "DeepModelConfigBuilder"
