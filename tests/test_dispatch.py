"""Dispatchers (a class whose ``__init__`` picks its implementation by config and forwards to it
through ``__getattr__``), ``get_language_model()`` returning ``self``, and the classes that are
no autoregressive target (diffusion LMs, MTP drafts a generative section registers)."""

from __future__ import annotations

import ast
import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from eagle3lint.source.summary import summarize
from eagle3lint.source.summary_types import Construction, ModuleSummary
from eagle3lint.source.summary_walk import final_constructions
from tests.helpers import FIXTURES, run_json

TREE = FIXTURES / "sglang_dispatch"
VLLM = FIXTURES / "vllm_modern"


def _summary(source: str) -> ModuleSummary:
    tree = ast.parse(textwrap.dedent(source))
    return summarize(tree, module="pkg.m", path="m.py", is_package=False, walk_names=frozenset({"get_language_model"}), line_count=1)


def _held(source: str, attr: str = "impl") -> list[Construction]:
    entry = _summary(source).classes["Model"].instance_attrs[attr]
    return final_constructions(entry.constructions)


# ---- what the summary records -------------------------------------------------------------------


def test_a_table_pick_through_locals_is_one_table_construction() -> None:
    (held,) = _held(
        """
        _T = {(1, 0): A, (2, 0): B}

        class Model:
            def __init__(self, config):
                version = tuple(config.version)
                cls = _T.get(version)
                if cls is None:
                    raise ValueError(version)
                try:
                    instance = cls(config)
                    self.impl = instance
                except Exception:
                    raise
        """
    )
    assert (held.callee, held.table, held.table_key, held.call) == ("_T", True, None, True)


def test_a_subscript_with_a_literal_key_keeps_the_key() -> None:
    (held,) = _held(
        """
        class Model:
            def __init__(self, config):
                self.impl = _T["c"](config)
        """
    )
    assert (held.callee, held.table, held.table_key) == ("_T", True, "'c'")


def test_an_if_elif_chain_binding_a_local_class_gives_one_choice_per_arm() -> None:
    held = _held(
        """
        class Model:
            def __init__(self, config):
                cls = Default
                if config.variant == "a":
                    cls = A
                elif config.variant == "b":
                    cls = B
                self.impl = cls(config)
        """
    )
    # Default stands where no arm rebinds it (no else).
    assert sorted(c.callee for c in held) == ["A", "B", "Default"]


def test_a_local_bound_in_another_arm_does_not_reach_the_use() -> None:
    held = _held(
        """
        class Model:
            def __init__(self, config):
                if config.a:
                    cls = A
                else:
                    cls = B
                    self.impl = cls(config)
        """
    )
    assert [c.callee for c in held] == ["B"]


def test_a_later_binding_replaces_an_earlier_one() -> None:
    held = _held(
        """
        class Model:
            def __init__(self, config):
                cls = A
                cls = B
                self.impl = cls(config)
        """
    )
    assert [c.callee for c in held] == ["B"]


def test_a_parameter_rebound_in_one_arm_keeps_its_own_value_on_the_other() -> None:
    held = _held(
        """
        class Model:
            def __init__(self, config, model_cls=Default):
                if config.other:
                    model_cls = Other
                self.impl = model_cls(config)
        """
    )
    # ``model_cls`` is resolved as before (the subclass's argument, else the default).
    assert sorted(c.callee for c in held) == ["Other", "model_cls"]


def test_a_local_with_more_arms_than_the_cap_is_left_as_written() -> None:
    arms = "\n".join(f"        elif config.k == {i}:\n            cls = X{i}" for i in range(1, 200))
    source = f"class Model:\n    def __init__(self, config):\n        if config.k == 0:\n            cls = X0\n{arms}\n        self.impl = cls(config)\n"
    held = final_constructions(summarize(ast.parse(source), "pkg.m", "m.py", False).classes["Model"].instance_attrs["impl"].constructions)
    # Too many to name: the call stays `cls(...)`, which no index resolves (unknown, never wrong).
    assert [c.callee for c in held] == ["cls"]


def test_an_alias_of_another_attribute_is_not_a_call() -> None:
    (held,) = _held(
        """
        class Model:
            def __init__(self, config):
                self.inner = Inner(config)
                self.impl = self.inner
        """
    )
    assert (held.callee, held.call) == ("self.inner", False)


def test_module_tables_of_names_are_recorded_with_their_keys() -> None:
    summary = _summary(
        """
        _BASE = {(2, 6): MiniV2_6}
        _ALL = {**_BASE, (4, 0): pkg.MiniV4_0}
        _MIXED = {"a": A, "b": make()}
        _STRINGS = {"a": "A"}
        """
    )
    assert summary.class_tables == {"_BASE": [("(2, 6)", "MiniV2_6")], "_ALL": [("(2, 6)", "MiniV2_6"), ("(4, 0)", "pkg.MiniV4_0")]}


def test_returns_self_only_when_every_return_is_self() -> None:
    summary = _summary(
        """
        class Model:
            def get_language_model(self):
                return self

        class Other:
            def get_language_model(self):
                if self.a:
                    return self
                return self.language_model
        """
    )
    assert summary.classes["Model"].methods["get_language_model"].returns_self
    assert not summary.classes["Other"].methods["get_language_model"].returns_self


# ---- SGLang: the synthetic dispatchers ----------------------------------------------------------


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    code, data = run_json("check", TREE)
    assert code == 1
    return data


def _rows(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["class"]: m for m in report["models"]}


def _finding(report: dict[str, Any], cls: str, code: str) -> dict[str, Any]:
    (finding,) = [f for f in report["findings"] if f["class"] == cls and f["code"] == code]
    return finding


def test_dispatchers_are_targets_with_their_choices_named(report: dict[str, Any]) -> None:
    rows = _rows(report)
    assert rows["FixVersioned"]["kind"] == "target"
    assert "self.impl: VariantA or VariantB, picked by config" in rows["FixVersioned"]["reason"]
    assert {name: rows[name]["status"] for name in ("FixVersioned", "FixMixed", "FixChain", "FixComplete", "FixPinned", "FixUncertain")} == {
        "FixVersioned": "broken",
        "FixMixed": "broken",
        "FixChain": "broken",
        "FixComplete": "supported",
        "FixPinned": "supported",
        "FixUncertain": "unknown",
    }


def test_every_choice_lacking_the_member_is_a_missing_member_with_the_choices_named(report: dict[str, Any]) -> None:
    finding = _finding(report, "FixVersioned", "E3L004")
    message = finding["message"]
    assert "through `__getattr__`" in message and "`self.impl`" in message
    assert "`VariantA` lacks them (its `self.llm`, `FixLlamaForCausalLM`, has them)" in message
    assert "`VariantB` lacks them (its `self.llm`, `FixLlamaForCausalLM`, has them)" in message
    # The fixture's runner calls the setter bare: an AttributeError, an error on a broken model.
    assert (finding["severity"], finding["outcome"]) == ("error", "crash")
    assert finding["fix"]["applicability"] == "display-only" and "`VariantA`, `VariantB`" in finding["fix"]["description"]


@pytest.mark.parametrize("cls", ["FixMixed", "FixChain"])
def test_some_choices_lacking_it_names_which_do(report: dict[str, Any], cls: str) -> None:
    finding = _finding(report, cls, "E3L004")
    assert "`VariantA` lacks them" in finding["message"] and "`VariantC` has them" in finding["message"]
    assert finding["outcome"] == "crash"
    assert finding["fix"]["description"].count("`VariantC`") == 0


def test_a_choice_that_cannot_be_read_is_unknown_never_an_error(report: dict[str, Any]) -> None:
    findings = [f for f in report["findings"] if f["class"] == "FixUncertain"]
    assert {f["code"] for f in findings} == {"E3L006"} and all(f["severity"] == "info" for f in findings)
    assert all("for `ExternalVariant` it cannot be told" in f["message"] for f in findings)


def test_diffusion_lms_and_mtp_heads_are_not_targets(report: dict[str, Any]) -> None:
    rows = _rows(report)
    for name in ("FixGemmaForBlockDiffusion", "SDARFixForCausalLM"):
        assert (rows[name]["kind"], rows[name]["status"]) == ("other", "not-a-target")
        assert rows[name]["reason"] == "diffusion language model (no autoregressive target)"
    assert (rows["FixForCausalLMMTP"]["kind"], rows["FixForCausalLMMTP"]["status"]) == ("draft", "not-a-target")


def test_behind_a_raising_guard_every_choice_lacking_it_is_refused(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    runner = tree / "sglang/srt/model_executor/model_runner.py"
    text = runner.read_text()
    guarded = text.replace(
        "        if self.eagle_use_aux_hidden_state:\n",
        "        if self.eagle_use_aux_hidden_state:\n"
        '            if not hasattr(self.model, "set_eagle3_layers_to_capture"):\n'
        '                raise ValueError("the model does not implement set_eagle3_layers_to_capture")\n',
    )
    assert guarded != text
    runner.write_text(guarded)
    code, data = run_json("models", "--no-cache", tree, "--format", "json")
    assert code == 0
    rows = _rows(data)
    # hasattr() on the dispatcher runs its __getattr__, which raises AttributeError: refused.
    assert (rows["FixVersioned"]["status"], rows["FixVersioned"]["outcome"]) == ("incomplete", "refused")
    assert rows["FixVersioned"]["evidence"]["path"].endswith("model_runner.py")
    assert rows["FixComplete"]["status"] == "supported"


# ---- vLLM: get_language_model() returning self, a table of language models, not targets -----------


@pytest.fixture(scope="module")
def vllm_report() -> dict[str, Any]:
    code, data = run_json("check", VLLM)
    assert code == 1
    return data


def test_get_language_model_returning_self_walks_on_to_self_model(vllm_report: dict[str, Any]) -> None:
    rows = _rows(vllm_report)
    assert rows["SelfLanguageModelForConditionalGeneration"]["status"] == "supported"
    assert not [f for f in vllm_report["findings"] if f["class"] == "SelfLanguageModelForConditionalGeneration"]


def test_a_language_model_picked_from_a_table_is_walked_per_choice(vllm_report: dict[str, Any]) -> None:
    finding = _finding(vllm_report, "TableWrapperForConditionalGeneration", "E3L010")
    assert "`self.language_model.model` (`PlainModel`; `__init__` picks it by config among `LlamaModel`, `PlainModel`)" in finding["message"]
    assert finding["outcome"] == "crash"


def test_vllm_diffusion_and_mtp_in_a_generative_section_are_not_targets(vllm_report: dict[str, Any]) -> None:
    rows = _rows(vllm_report)
    diffusion = rows["DiffusionFixForConditionalGeneration"]
    assert (diffusion["kind"], diffusion["reason"]) == ("other", "diffusion language model (no autoregressive target)")
    mtp = rows["TransformersFixForMTP"]
    assert mtp["kind"] == "draft" and "MTP$" in mtp["reason"]
    # Registered among the causal LMs, still: a generative section alone does not make it a target.
    registry = (VLLM / "vllm/model_executor/models/registry.py").read_text()
    assert '"TransformersFixForMTP": ("not_targets", "TransformersFixForMTP")' in registry.split("_TEXT_GENERATION_MODELS", 1)[1].split("}", 1)[0]
    assert json.loads((VLLM / "expected.json").read_text())["statuses"]["TransformersFixForMTP"] == "not-a-target"
