"""E3L019 (drafter-load-reads-config) on a synthetic vLLM tree (``fixtures/vllm_drafter_load``):
the proposer's load_model copies an image-token id off a multimodal target's config, by class
name (``config.image_token_id`` for the class it names, ``config.image_token_index`` for every
other one), before the runner's EAGLE-3 check; a config class that defines neither crashes."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from eagle3lint.model.hf_types import (
    ConfigFacts,
    defines,
    read_config_class,
    read_config_names,
    read_tables,
)
from tests.helpers import FIXTURES, run_json

TREE = FIXTURES / "vllm_drafter_load"


@pytest.fixture(scope="module")
def findings() -> dict[str, dict[str, Any]]:
    _code, data = run_json("check", TREE, "--select", "E3L019")
    return {f["class"]: f for f in data["findings"]}


def test_the_default_branch_crashes_where_the_config_lacks_the_attribute(findings: dict[str, dict[str, Any]]) -> None:
    finding = findings["LacksVLForConditionalGeneration"]
    assert finding["severity"] == "error"
    assert "`config.image_token_index`" in finding["message"] and "`LacksVLConfig`" in finding["message"]
    assert "AttributeError: 'LacksVLConfig' object has no attribute 'image_token_index'" in finding["message"]
    assert "llm_base_proposer.py:19" in finding["message"]
    related = [(r["path"].rsplit("/", 1)[-1], r["line"]) for r in finding["related"]]
    assert related == [("llm_base_proposer.py", 19), ("gpu_model_runner.py", 11)]


@pytest.mark.parametrize(
    "cls",
    [
        "NamedVLForConditionalGeneration",  # named: reads image_token_id, which its config has
        "DefinesVLForConditionalGeneration",  # a class-level field
        "InitVLForConditionalGeneration",  # self.image_token_index in a base's __init__
        "MapsVLForConditionalGeneration",  # attribute_map
        "UnknownVLForConditionalGeneration",  # no config class known
        "ThinkerVLForConditionalGeneration",  # its config is a sub-config
        "WrappedForConditionalGeneration",  # no config class known either
        "GoodForCausalLM",  # not multimodal
    ],
)
def test_no_finding_where_the_attribute_is_there_or_cannot_be_told(findings: dict[str, dict[str, Any]], cls: str) -> None:
    assert cls not in findings


def test_the_row_is_a_crash_at_the_drafter_load() -> None:
    _code, data = run_json("models", TREE)
    rows = {m["class"]: m for m in data["models"]}
    row = rows["LacksVLForConditionalGeneration"]
    assert row["outcome"] == "crash"
    assert "E3L019: the drafter load raises `AttributeError: 'LacksVLConfig' object has no attribute 'image_token_index'`" in row["reason"]
    assert rows["MapsVLForConditionalGeneration"]["outcome"] != "crash"


def test_the_contract_shows_the_branches() -> None:
    _code, data = run_json("contract", TREE)
    load = data["vllm"]["drafter_load"]
    assert load["config_reads"] == [
        {"classes": ["NamedVLForConditionalGeneration"], "path": ["image_token_id"], "line": 17},
        {"classes": None, "path": ["image_token_index"], "line": 19},
    ]


# ---- reading config classes -----------------------------------------------------------------


def _class(text: str) -> ConfigFacts:
    tree = ast.parse(text)
    cls = tree.body[0]
    assert isinstance(cls, ast.ClassDef)
    return read_config_class(cls)


def test_a_config_class_s_attributes() -> None:
    facts = _class(
        "class FooConfig(PreTrainedConfig):\n"
        "    model_type = 'foo'\n"
        "    attribute_map = {'image_token_index': 'image_token_id'}\n"
        "    image_token_id: int = 5\n"
        "    vocab: int\n"
        "    def __init__(self, a=1, **kwargs):\n"
        "        self.a = a\n"
        "        super().__init__(**kwargs)\n"
        "    @property\n"
        "    def b(self):\n"
        "        return 1\n"
    )
    assert {"image_token_index", "image_token_id", "vocab", "a", "b", "model_type"} <= set(facts.attributes)
    assert facts.open_attributes == ""
    dynamic = _class("class BarConfig(PreTrainedConfig):\n    def __init__(self, **kw):\n        for k, v in kw.items():\n            setattr(self, k, v)\n")
    assert "setattr" in dynamic.open_attributes
    assert ConfigFacts.from_json(facts.to_json()) == facts


def test_defines_follows_bases_and_stops_at_the_base_config() -> None:
    base = ConfigFacts("PreTrainedConfig", None, ("PushToHubMixin",), attributes=("architectures",), open_attributes="setattr")
    configs = {
        "PreTrainedConfig": base,
        "A": ConfigFacts("A", "a", ("PreTrainedConfig",), attributes=("image_token_id",)),
        "B": ConfigFacts("B", "b", ("A",), attributes=("image_token_index",)),
        "C": ConfigFacts("C", "c", ("Elsewhere",)),
        "D": ConfigFacts("D", "d", ("PreTrainedConfig",), open_attributes="`D` defines `__getattr__`"),
    }
    assert defines("A", "image_token_index", configs) == (False, "")
    assert defines("B", "image_token_index", configs) == (True, "")
    assert defines("C", "image_token_index", configs)[0] is None
    assert defines("D", "image_token_index", configs)[0] is None
    assert defines("Missing", "image_token_index", configs)[0] is None


def test_transformers_5_config_names(tmp_path: Path) -> None:
    """transformers 5 keeps CONFIG_MAPPING_NAMES in auto_mappings.py, and configuration_auto.py
    adds to it."""
    auto = tmp_path / "transformers" / "models" / "auto"
    auto.mkdir(parents=True)
    (auto / "modeling_auto.py").write_text('MODEL_MAPPING_NAMES = OrderedDict([("foo", "FooModel")])\n')
    (auto / "auto_mappings.py").write_text('CONFIG_MAPPING_NAMES = OrderedDict([("foo", "FooConfig")])\n')
    (auto / "configuration_auto.py").write_text(
        "from .auto_mappings import CONFIG_MAPPING_NAMES\n"
        'CONFIG_MAPPING_NAMES.update({"bar": "BarConfig"})\n'
        'CONFIG_MAPPING_NAMES = OrderedDict(**{"gpt-sw3": "GPT2Config"}, **CONFIG_MAPPING_NAMES)\n'
    )
    (tmp_path / "transformers" / "configuration_utils.py").write_text("class PreTrainedConfig:\n    architectures = None\n")
    tables = read_tables(tmp_path / "transformers", "test")
    assert tables is not None
    assert tables.config_of == {"gpt-sw3": "GPT2Config", "foo": "FooConfig", "bar": "BarConfig"}
    assert "PreTrainedConfig" in tables.configs and "PretrainedConfig" in tables.configs
    # transformers 4: one literal in configuration_auto.py
    old = ast.parse('CONFIG_MAPPING_NAMES = OrderedDict([("foo", "FooConfig")])\n')
    assert read_config_names(old) == {"foo": "FooConfig"}
