"""The pair pre-flight's parts on files the tests write: the evaluator of the release's code,
the drafters' id conventions, the bounded d2t read, the defect data, the environment's launch
options, and the `preflight` command on a synthetic SGLang tree (release runs are in
test_pair_preflight_releases.py)."""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

import pytest

from eagle3lint.common.errors import UsageError
from eagle3lint.verify.configs import read_model_config
from eagle3lint.verify.pair.defects import in_range, parse_defects
from eagle3lint.verify.pair.drafter import read_drafter_ids
from eagle3lint.verify.pair.evaluate import Evaluator, Unresolved
from eagle3lint.verify.safetensors_header import HeaderError, read_checkpoint, read_int_tensor
from tests.fakes.model_folders import write_config, write_kimi_pair, write_safetensors
from tests.fakes.sglang_tree import write_sglang_tree
from tests.helpers import run_cli, run_json

# ---- the evaluator ----------------------------------------------------------------------------------

SETTER = '''
def setter(layer_ids=None):
    num_layers = n
    if layer_ids is None:
        return [2, num_layers // 2, num_layers - 3]
    if layer_ids and max(layer_ids) == num_layers:
        return list(layer_ids)
    return [val + 1 for val in layer_ids]
'''


def run_body(source: str, **env: Any) -> Any:
    fn = ast.parse(source).body[0]
    assert isinstance(fn, ast.FunctionDef)
    return Evaluator(env).run(fn.body)


def test_evaluator_follows_a_setters_arithmetic_and_branches() -> None:
    assert run_body(SETTER, layer_ids=None, n=36) == [2, 18, 33]
    assert run_body(SETTER, layer_ids=[24, 30, 36], n=36) == [24, 30, 36]  # a final boundary kept
    assert run_body(SETTER, layer_ids=[1, 17, 32], n=36) == [2, 18, 33]


def test_evaluator_says_what_it_cannot_know() -> None:
    with pytest.raises(Unresolved, match="engine_helper"):
        run_body("def f(x):\n    return engine_helper(x)\n", x=1)
    with pytest.raises(Unresolved, match="too long"):
        run_body("def f():\n    return list(range(1000000000))\n")
    with pytest.raises(Unresolved, match="too many steps"):
        run_body("def f():\n    for i in range(90000):\n        for j in range(9):\n            pass\n")


# ---- the drafter's ids and what they mean --------------------------------------------------------


def drafter_ids(tmp_path: Path, config: dict[str, Any], override: str | None = None, num_layers: int | None = None) -> Any:
    from eagle3lint.engines import knowledge_for

    write_config(tmp_path, {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 8, **config})
    return read_drafter_ids(read_model_config(str(tmp_path)), knowledge_for("sglang").frameworks, override, num_layers)


@pytest.mark.parametrize(
    ("config", "framework", "states"),
    [
        ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}}, "SpecForge", [2, 16, 29]),
        ({"aux_hidden_states_layer_ids": [1, 15, 28]}, "AngelSlim", [2, 16, 29]),
        ({"speculators_model_type": "eagle3", "eagle_aux_hidden_state_layer_ids": [2, 16, 29]}, "vLLM speculators", [2, 16, 29]),
        ({"eagle_aux_hidden_state_layer_ids": [2, 16, 29]}, "vLLM (top-level key)", [2, 16, 29]),
    ],
)
def test_each_frameworks_ids_name_the_states_it_trained_on(tmp_path: Path, config: dict[str, Any], framework: str, states: list[int]) -> None:
    found = drafter_ids(tmp_path, config)
    assert found.framework is not None and found.framework.name == framework
    assert found.states() == states
    assert found.framework.reference in found.meaning_from


def test_the_lists_shape_decides_what_a_shared_keys_ids_mean(tmp_path: Path) -> None:
    """sgl-project/sglang#25454: `eagle_config.eagle_aux_hidden_state_layer_ids` is written by
    trainers of both conventions; the list's shape for the target's depth decides, and says so."""
    key = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}}
    reference = drafter_ids(tmp_path / "ref", key, num_layers=61)
    assert reference.states() == [2, 30, 58] and "EAGLE reference code's default for a 61-layer target" in reference.meaning_from
    specforge = drafter_ids(tmp_path / "sf", {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 29, 57]}}, num_layers=61)
    assert specforge.states() == [2, 30, 58] and "SpecForge's default" in specforge.meaning_from
    last = drafter_ids(tmp_path / "last", {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [3, 20, 40]}}, num_layers=40)
    assert last.states() == [3, 20, 40] and "the last id 40" in last.meaning_from
    first = drafter_ids(tmp_path / "zero", {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 20, 37]}}, num_layers=40)
    assert first.states() == [1, 21, 38] and "embeddings" in first.meaning_from
    # Nothing in the shape: the key's framework's documented convention, as before.
    plain = drafter_ids(tmp_path / "plain", {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [5, 20, 33]}}, num_layers=40)
    assert plain.states() == [6, 21, 34] and plain.meaning_from.startswith("SpecForge's convention")
    # The drafter's own metadata outranks the shape; the command line outranks both.
    marked = drafter_ids(tmp_path / "marked", {"speculators_model_type": "eagle3", "eagle_aux_hidden_state_layer_ids": [1, 29, 57]}, num_layers=61)
    assert marked.states() == [1, 29, 57] and "the drafter's metadata (`speculators_model_type`" in marked.meaning_from
    said = drafter_ids(tmp_path / "said", key, "output", num_layers=61)
    assert said.states() == [3, 31, 59] and "--drafter-ids output" in said.meaning_from


def test_a_drafter_naming_no_ids_is_judged_by_every_trainers_default(tmp_path: Path) -> None:
    """Every known trainer defaults to states 2, n // 2 and n - 3: a release capturing those works
    for a drafter that names no ids; one whose default captures others is silent."""
    from tests.fakes.model_folders import kimi_drafter_config

    drafter = kimi_drafter_config()
    drafter["eagle_config"] = {"use_aux_hidden_state": True}
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "models", drafter=drafter)
    same = write_sglang_tree(tmp_path / "same", fixed=True)
    code, report = run_json("preflight", "--engine-root", same, "--model-path", target_dir, "--draft-model-path", drafter_dir)
    layers = next(i for i in report["items"] if i["check"] == "layer-ids")
    assert (code, report["outcome"], layers["status"]) == (0, "works", "ok"), layers["message"]
    assert "the default of every trainer known here" in layers["message"] and "SpecForge" in layers["message"]
    other = write_sglang_tree(tmp_path / "other", fixed=True)
    setter = other / "srt" / "models" / "deepseek_v2.py"
    setter.write_text(setter.read_text(encoding="utf-8").replace("[2, n // 2, n - 3]", "[1, n // 2, n - 3]"), encoding="utf-8")
    code, report = run_json("preflight", "--engine-root", other, "--model-path", target_dir, "--draft-model-path", drafter_dir)
    layers = next(i for i in report["items"] if i["check"] == "layer-ids")
    assert (code, report["outcome"], layers["status"]) == (1, "silent", "problem"), layers["message"]
    assert "every trainer known here" in layers["message"] and "defaults to" in layers["message"]


def test_a_drafter_without_ids_records_no_training_layers(tmp_path: Path) -> None:
    found = drafter_ids(tmp_path, {})
    assert (found.ids, found.states()) == (None, None)
    assert drafter_ids(tmp_path / "bad", {"eagle_config": {"eagle_aux_hidden_state_layer_ids": "1,2"}}).invalid
    # The user says what the ids mean (sgl-project/sglang#25454's second convention).
    said = drafter_ids(tmp_path / "said", {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}}, "hidden_states")
    assert said.states() == [2, 30, 58] and "--drafter-ids hidden-states" in said.meaning_from


# ---- d2t content --------------------------------------------------------------------------------------


def test_d2t_values_are_read_bounded_and_confined(tmp_path: Path) -> None:
    folder = tmp_path / "drafter"
    write_safetensors(folder / "model.safetensors", {"norm.weight": ("BF16", [4]), "d2t": ("I64", [4])}, values={"d2t": [0, 3, -1, 7]})
    checkpoint = read_checkpoint(folder)
    assert checkpoint is not None
    d2t = checkpoint.find("d2t")
    assert d2t is not None and read_int_tensor(folder, d2t, 16) == [0, 3, -1, 7]
    with pytest.raises(HeaderError, match="more than 2"):
        read_int_tensor(folder, d2t, 2)
    norm = checkpoint.find("norm.weight")
    assert norm is not None
    with pytest.raises(HeaderError, match="not an integer tensor"):
        read_int_tensor(folder, norm, 16)
    write_safetensors(folder / "model.safetensors", {"d2t": ("I64", [4])}, truncate_by=8)
    with pytest.raises(HeaderError, match="truncated"):
        read_checkpoint(folder)


def test_d2t_past_the_vocabulary_without_an_engine_is_unknown_or_a_crash(tmp_path: Path) -> None:
    from eagle3lint.engines import knowledge_for
    from eagle3lint.run.preflight import run_preflight

    drafter = {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 7168, "vocab_size": 163840, "draft_vocab_size": 4, "num_hidden_layers": 1}
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "a", drafter=drafter, tensors={"d2t": ("I64", [4])})
    write_safetensors(drafter_dir / "model.safetensors", {"d2t": ("I64", [4])}, values={"d2t": [0, 0, 0, 163837]})
    # As offsets id 3 maps past the vocabulary; as target ids every value fits: the reading decides.
    result = run_preflight(str(target_dir), str(drafter_dir), knowledge_for("sglang"), engine=None)
    content = next(i for i in result.items if i.check == "d2t-content")
    assert content.outcome == "unknown" and "offsets" in content.decides
    write_safetensors(drafter_dir / "model.safetensors", {"d2t": ("I64", [4])}, values={"d2t": [0, 0, 0, 999999]})
    result = run_preflight(str(target_dir), str(drafter_dir), knowledge_for("sglang"), engine=None)
    assert next(i for i in result.items if i.check == "d2t-content").outcome == "crash"


# ---- the defect data -----------------------------------------------------------------------------------


def test_defect_entries_are_checked(tmp_path: Path) -> None:
    good = {"id": "x", "summary": "s", "reference": "r#1", "releases": "<1", "file": "a.py", "present": "b", "outcome": "silent"}
    assert parse_defects(tmp_path, [good])[0].id == "x"
    for bad, message in (({**good, "outcome": "maybe"}, "outcome"), ({**good, "present": "("}, "regular expression"),
                         ({**good, "when": {"moon": "full"}}, "when"), ({**good, "file": ""}, "file")):
        with pytest.raises(UsageError, match=message):
            parse_defects(tmp_path, [bad])
    assert (in_range("0.5.9", ">=0.5.5, <0.5.16"), in_range("0.5.16", ">=0.5.5, <0.5.16"), in_range("dev", "<1")) == (True, False, None)


def test_the_runner_generation_follows_the_environment() -> None:
    from eagle3lint.verify.options import VerifyOptions

    options = VerifyOptions(model_path="t", draft_model_path="d", engine="vllm")
    assert options.launch_options({"VLLM_USE_V2_MODEL_RUNNER": "1"}) == ("runner=v2",)
    assert options.launch_options({"VLLM_USE_V2_MODEL_RUNNER": "0"}) == ("runner=v1",)
    chosen = VerifyOptions(model_path="t", draft_model_path="d", engine="vllm", engine_options=("runner=v1",))
    assert chosen.launch_options({"VLLM_USE_V2_MODEL_RUNNER": "1"}) == ("runner=v1",)  # the command line wins
    assert VerifyOptions(model_path="t", draft_model_path="d", engine="sglang").launch_options({"VLLM_USE_V2_MODEL_RUNNER": "1"}) == ()


# ---- the command on a synthetic tree ----------------------------------------------------------------


def test_preflight_command_json_on_the_synthetic_tree(tmp_path: Path) -> None:
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "models")
    code, report = run_json("preflight", "--engine-root", fixed, "--model-path", target_dir, "--draft-model-path", drafter_dir)
    assert (code, report["outcome"], report["version"]) == (0, "works", 2)
    assert set(report) >= {"version", "outcome", "reason", "items", "engine", "launch", "target", "drafter", "layers", "exit_code"}
    layers = next(i for i in report["items"] if i["check"] == "layer-ids")
    assert [r["reads"] for r in layers["layers"]] == ["layer 1's output", "layer 29's output", "layer 57's output"]
    assert any(e["kind"] == "release" and e["where"].endswith("deepseek_v2.py") for e in layers["evidence"])
    assert all({"check", "status", "outcome", "message", "evidence", "decides"} <= set(i) for i in report["items"])

    # The same pair, its ids said to name layer inputs: the synthetic setter's +1 shifts them.
    code, shifted = run_json("preflight", "--engine-root", fixed, "--model-path", target_dir, "--draft-model-path", drafter_dir, "--drafter-ids", "hidden-states")
    assert (code, shifted["outcome"]) == (1, "silent")
    # The seed's wrapper gap: the target class crashes whatever the drafter.
    broken = write_sglang_tree(tmp_path / "broken")
    code, crash = run_json("preflight", "--engine-root", broken, "--model-path", target_dir, "--draft-model-path", drafter_dir)
    assert (code, crash["outcome"]) == (1, "crash") and crash["reason"].startswith("target-class")
    # The alias gives the same answer in verify's report.
    code, alias = run_json("verify", "--preflight-only", "--engine-root", broken, "--model-path", target_dir, "--draft-model-path", drafter_dir)
    assert (code, alias["outcome"], alias["version"]) == (1, "crash", 2)


def test_preflight_command_human_and_usage(tmp_path: Path) -> None:
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "models")
    done = run_cli("preflight", "--engine-root", str(fixed), "--model-path", str(target_dir), "--draft-model-path", str(drafter_dir), "--engine-arg", "--disable-cuda-graph")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Outcome: works" in done.stdout and "Drafter inputs" in done.stdout
    assert "id 29      trained on layer 29's output" in done.stdout
    done = run_cli("preflight", "--engine-root", str(fixed), "--model-path", str(target_dir), "--draft-model-path", str(drafter_dir), "--num-steps", "0")
    assert done.returncode == 2 and "--num-steps 0" in done.stderr and "Traceback" not in done.stderr
    # A hub id decides nothing: unknown, with what would decide it.
    code, report = run_json("preflight", "--engine-root", fixed, "--model-path", "org/target", "--draft-model-path", "org/drafter")
    assert (code, report["outcome"]) == (1, "unknown")
    assert "local copy" in report["reason"]


def test_check_does_not_load_the_pair_preflight(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.helpers import REPO

    code = "import sys, eagle3lint.cli\nprint([m for m in sys.modules if m.startswith('eagle3lint.verify.pair')])\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_a_layer_mapping_the_reading_cannot_follow_names_the_file_and_line(tmp_path: Path) -> None:
    """Where the setter reads a name the evaluation cannot follow, the item names the file:line
    to open (never "not known here (line N)")."""
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    model = fixed / "srt" / "models" / "deepseek_v2.py"
    text = model.read_text()
    model.write_text(text.replace("[i + 1 for i in layer_ids]", "[i + CAPTURE_SHIFT for i in layer_ids]"))
    line = next(n for n, row in enumerate(model.read_text().splitlines(), 1) if "CAPTURE_SHIFT" in row)
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "models")
    code, report = run_json("preflight", "--engine-root", fixed, "--model-path", target_dir, "--draft-model-path", drafter_dir)
    (item,) = [i for i in report["items"] if i["check"] == "layer-ids"]
    assert (code, item["status"]) == (1, "unknown")
    assert f"what `CAPTURE_SHIFT` holds (sglang/srt/models/deepseek_v2.py:{line})" in item["message"], item["message"]
    assert "not known here" not in item["message"] and "(line " not in item["message"]


def test_a_drafter_folder_without_weights_is_a_question_not_a_crash(tmp_path: Path) -> None:
    """Config alone: what the config says is checked; the tensors are not, and the outcome is
    unknown with what is missing, not a predicted crash."""
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "models")
    (drafter_dir / "model.safetensors").unlink()
    code, report = run_json("preflight", "--engine-root", fixed, "--model-path", target_dir, "--draft-model-path", drafter_dir)
    assert (code, report["outcome"]) == (1, "unknown")
    items = {i["check"]: i for i in report["items"]}
    weights = items["drafter-weights"]
    assert weights["status"] == "skipped" and weights["outcome"] == "unknown"
    assert "holds no weights" in weights["message"] and "download them" in weights["decides"]
    assert report["reason"].startswith("drafter-weights")
    assert items["drafter-config"]["status"] == "ok" and items["hidden-size"]["status"] == "ok"


def test_a_model_path_that_is_neither_a_folder_nor_a_hub_id_is_a_usage_error(tmp_path: Path) -> None:
    fixed = write_sglang_tree(tmp_path / "fixed", fixed=True)
    target_dir, drafter_dir = write_kimi_pair(tmp_path / "models")
    for args in (("--model-path", "nope", "--draft-model-path", drafter_dir), ("--model-path", target_dir, "--draft-model-path", tmp_path / "no" / "such")):
        done = run_cli("preflight", "--engine-root", fixed, *args)
        assert done.returncode == 2 and done.stdout == "", done.stdout
        assert "no such folder" in done.stderr and "Traceback" not in done.stderr
    done = run_cli("verify", "--engine-root", fixed, "--model-path", "nope", "--draft-model-path", drafter_dir)
    assert done.returncode == 2 and "--model-path nope: no such folder" in done.stderr
