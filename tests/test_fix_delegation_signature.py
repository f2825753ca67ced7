"""A delegation takes what the engine's call sites pass and hands the inner member what it takes.

Synthetic variants of ``fixtures/fix_wrapper``: the runner's calls and the inner setter's own
signature change; the wrapper's fix follows them (safe where they agree, display-only where a
call site passes what the inner member cannot take)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from tests.fix_helpers import MODELS, copy_before
from tests.helpers import run_json

WRAPPER = "FixVLForConditionalGeneration"
RUNNER = Path("sglang/srt/model_executor/model_runner.py")
LEAF = MODELS / "leaf.py"
LEAF_SETTER = "    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):\n"


def _tree(tmp_path: Path, runner_calls: list[str], leaf_setter: str, prelude: str = "") -> Path:
    root = copy_before("fix_wrapper", tmp_path)
    body = "".join(f"            self.model.set_eagle3_layers_to_capture({call})\n" for call in runner_calls)
    (root / RUNNER).write_text(
        "class ModelRunner:\n"
        "    def __init__(self, model, eagle_use_aux_hidden_state, layer_ids):\n"
        "        self.model = model\n"
        "        self.eagle_use_aux_hidden_state = eagle_use_aux_hidden_state\n"
        "        self.layer_ids = layer_ids\n\n"
        "    def initialize(self):\n"
        "        if self.eagle_use_aux_hidden_state:\n" + body
    )
    leaf = (root / LEAF).read_text()
    assert LEAF_SETTER in leaf
    leaf = leaf.replace(LEAF_SETTER, leaf_setter).replace("layer_ids or [1, 4, 7]", "[1, 4, 7]")
    (root / LEAF).write_text(prelude + leaf)
    return root


def _wrapper_fix(root: Path) -> dict[str, Any]:
    _, report = run_json("check", root / MODELS)
    found = [f for f in report["findings"] if f["class"] == WRAPPER and f["code"] == "E3L004"]
    assert len(found) == 1, report["findings"]
    fix: dict[str, Any] = found[0]["fix"]
    return fix


def _added_setter(diff: str) -> str:
    lines = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    source = "\n".join(lines)
    tree = ast.parse("class C:\n" + "\n".join("    " + line if line else line for line in source.splitlines()))
    cls = tree.body[0]
    assert isinstance(cls, ast.ClassDef)
    setter = next(f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "set_eagle3_layers_to_capture")
    return ast.unparse(setter)


def test_no_argument_calls_and_setter_get_the_no_argument_delegation(tmp_path: Path) -> None:
    root = _tree(tmp_path, [""], "    def set_eagle3_layers_to_capture(self):\n")
    fix = _wrapper_fix(root)
    assert fix["applicability"] == "safe", fix
    assert _added_setter(fix["diff"]) == (
        "def set_eagle3_layers_to_capture(self):\n    self.language_model.set_eagle3_layers_to_capture()"
    )


def test_calls_with_and_without_ids_get_the_optional_parameter(tmp_path: Path) -> None:
    root = _tree(tmp_path, ["self.layer_ids", ""], "    def set_eagle3_layers_to_capture(self, layer_ids=None):\n")
    fix = _wrapper_fix(root)
    assert fix["applicability"] == "safe", fix
    assert _added_setter(fix["diff"]) == (
        "def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
        "    self.language_model.set_eagle3_layers_to_capture(layer_ids)"
    )


def test_a_call_the_inner_setter_cannot_take_is_display_only_with_the_reason(tmp_path: Path) -> None:
    root = _tree(tmp_path, ["self.layer_ids"], "    def set_eagle3_layers_to_capture(self):\n")
    fix = _wrapper_fix(root)
    assert fix["applicability"] == "display-only", fix
    assert "1 positional argument(s)" in fix["description"]
    assert "LeafForCausalLM.set_eagle3_layers_to_capture(self)" in fix["description"]


def test_a_default_that_is_not_a_literal_is_passed_through(tmp_path: Path) -> None:
    root = _tree(
        tmp_path, ["self.layer_ids", ""], "    def set_eagle3_layers_to_capture(self, layer_ids=DEFAULT_LAYERS):\n",
        prelude="DEFAULT_LAYERS = (1, 4, 7)\n",
    )
    fix = _wrapper_fix(root)
    assert fix["applicability"] == "safe", fix
    assert _added_setter(fix["diff"]) == (
        "def set_eagle3_layers_to_capture(self, *args, **kwargs):\n"
        "    self.language_model.set_eagle3_layers_to_capture(*args, **kwargs)"
    )
