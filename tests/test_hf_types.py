"""Reading transformers' tables of architectures and model types, and picking the release an
engine pins: on small synthetic files each test writes."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from eagle3lint.fetch.libraries import lowest_admitted, requirement_on
from eagle3lint.model.hf_types import (
    TypeTables,
    read_config_classes,
    read_config_names,
    read_model_mappings,
    read_tables,
    text_type,
)

MODELING_AUTO = '''
from collections import OrderedDict

MODEL_MAPPING_NAMES = OrderedDict(
    [
        ("llama", "LlamaModel"),
        ("funnel", ("FunnelModel", "FunnelBaseModel")),
    ]
)
MODEL_FOR_CAUSAL_LM_MAPPING_NAMES = OrderedDict[str, str](
    [
        ("llama", "LlamaForCausalLM"),
        ("code_llama", "LlamaForCausalLM"),
        ("mistral", "MistralForCausalLM"),
        ("mllama", "MllamaForCausalLM"),
        ("llava", "LlavaForConditionalGeneration"),
    ]
)
MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES = {"llava": "LlavaForConditionalGeneration", "mllama": "MllamaForConditionalGeneration"}
NOT_A_TABLE = OrderedDict([("x", "XForCausalLM")])
MODEL_FOR_SOMETHING_MAPPING_NAMES = OrderedDict(computed())
'''

CONFIGURATION_AUTO = '''
CONFIG_MAPPING_NAMES = OrderedDict[str, str](
    [
        ("llama", "LlamaConfig"),
        ("code_llama", "LlamaConfig"),
        ("mistral", "MistralConfig"),
        ("mllama", "MllamaConfig"),
        ("llava", "LlavaConfig"),
        ("bagel", "BagelConfig"),
        ("odd", "OddConfig"),
        ("derived", "DerivedConfig"),
        ("orphan", "OrphanConfig"),
    ]
)
'''

CONFIGS = '''
class LlamaConfig(PretrainedConfig):
    model_type = "llama"


class MistralConfig(PretrainedConfig):
    model_type = "mistral"


class MllamaTextConfig(PretrainedConfig):
    model_type = "mllama_text_model"


class MllamaConfig(PretrainedConfig):
    model_type = "mllama"
    sub_configs = {"text_config": MllamaTextConfig, "vision_config": MllamaVisionConfig}


class LlavaConfig(PretrainedConfig):
    model_type = "llava"
    sub_configs = {"text_config": AutoConfig, "vision_config": AutoConfig}


class BagelConfig(PretrainedConfig):
    model_type = "bagel"

    def __init__(self, llm_config=None, **kwargs):
        if isinstance(llm_config, dict):
            self.llm_config = Qwen2Config(**llm_config)
        else:
            self.llm_config = llm_config or Qwen2Config()


class Qwen2Config(PretrainedConfig):
    model_type = "qwen2"


class OddConfig(PretrainedConfig):
    model_type = "odd"

    def __init__(self, text_config=None, **kwargs):
        text_config = CONFIG_MAPPING[text_config["model_type"]](**text_config)
        self.text_config = text_config


class DerivedConfig(MllamaConfig):
    model_type = "derived"


class OrphanConfig(SomewhereElseConfig):
    model_type = "orphan"
'''


def _tables() -> TypeTables:
    configs = {c.name: c for c in read_config_classes(ast.parse(CONFIGS))}
    return TypeTables("test", read_model_mappings(ast.parse(MODELING_AUTO)), read_config_names(ast.parse(CONFIGURATION_AUTO)), configs)


def test_a_class_maps_to_every_model_type_that_lists_it() -> None:
    classes = read_model_mappings(ast.parse(MODELING_AUTO))
    assert classes["LlamaForCausalLM"] == ("llama", "code_llama")
    assert classes["LlavaForConditionalGeneration"] == ("llava",)  # listed twice, kept once
    assert classes["FunnelBaseModel"] == ("funnel",)  # a tuple of classes for one type
    assert classes["MllamaForConditionalGeneration"] == ("mllama",)  # a dict literal
    assert "XForCausalLM" not in classes  # not a *_MAPPING_NAMES table


def test_text_types_follow_the_config_class() -> None:
    tables = _tables()

    def text(model_type: str, renames: dict[str, str] | None = None) -> str | None:
        return text_type(model_type, tables.config_of.get(model_type), tables.configs, renames).model_type

    assert text("mistral") == "mistral"  # a plain causal LM: its own type
    assert text("code_llama") == "code_llama"  # the checkpoint's type, not the class's
    assert text("mllama") == "mllama_text_model"  # a named text sub-config
    assert text("derived") == "mllama_text_model"  # inherited from its base config
    assert text("llava") is None  # AutoConfig: whatever the checkpoint wraps
    assert "AutoConfig" in text_type("llava", "LlavaConfig", tables.configs).via
    assert text("odd") is None  # built from the checkpoint's own model_type
    assert text("orphan") is None  # a base config that was not read
    # vLLM renames llm_config to text_config on load: Bagel's text type is then Qwen2's.
    assert text("bagel") == "bagel"
    assert text("bagel", {"llm_config": "text_config"}) == "qwen2"
    assert text_type("nowhere", None, tables.configs).model_type is None


def test_tables_round_trip_through_json_and_refuse_other_formats() -> None:
    tables = _tables()
    data = json.loads(json.dumps(tables.to_json()))
    again = TypeTables.from_json(data)
    assert again is not None and again.classes == tables.classes and again.configs == tables.configs
    assert TypeTables.from_json({**data, "format": 0}) is None
    assert TypeTables.from_json({"format": data["format"], "origin": "x"}) is None
    assert TypeTables.from_json(["not", "a", "dict"]) is None


def test_read_tables_from_a_package_folder(tmp_path: Path) -> None:
    root = tmp_path / "transformers"
    (root / "models" / "auto").mkdir(parents=True)
    (root / "models" / "auto" / "modeling_auto.py").write_text(MODELING_AUTO)
    (root / "models" / "auto" / "configuration_auto.py").write_text(CONFIGURATION_AUTO)
    (root / "models" / "mllama").mkdir()
    (root / "models" / "mllama" / "configuration_mllama.py").write_text(CONFIGS)
    (root / "models" / "broken").mkdir()
    (root / "models" / "broken" / "configuration_broken.py").write_text("class (:\n")
    tables = read_tables(root, "synthetic")
    assert tables is not None
    assert text_type("mllama", tables.config_of["mllama"], tables.configs).model_type == "mllama_text_model"
    (root / "models" / "auto" / "modeling_auto.py").write_bytes(b"\xff\xfe not python")
    assert read_tables(root, "synthetic") is None
    assert read_tables(tmp_path / "nowhere", "synthetic") is None


@pytest.mark.parametrize(
    ("spec", "lowest"),
    [
        ("<5,>=4.56.0", "4.56.0"),
        (">=4.56.0", "4.56.0"),
        ("==4.51.3", "4.51.3"),
        ("~=4.56.0", "4.56.0"),
        (">=4.56,>=4.57.1", "4.57.1"),
        (">=4.45.2,!=4.46.*", "4.45.2"),
        (">4.5", None),  # the lowest release above 4.5 depends on which exist
        ("<5", None),
        ("", None),
        (">=4.55.2,!=4.55.2", None),
        (">=4.56.0rc1", None),
        (">=5,<5", None),
    ],
)
def test_the_lowest_release_a_specifier_admits(spec: str, lowest: str | None) -> None:
    assert lowest_admitted(spec) == lowest


def test_requirement_lines() -> None:
    lines = ["regex", "transformers<5,>=4.56.0", "transformers>=9"]
    assert requirement_on(lines, "transformers") == "<5,>=4.56.0"  # the first that names it
    assert requirement_on(["transformers >= 4.56.0 ; python_version > '3.8'"], "transformers") == ">=4.56.0"
    assert requirement_on(['transformers[torch]>=4.5; extra == "audio"'], "transformers") is None
    assert requirement_on(["Transformers"], "transformers") == ""
    assert requirement_on(["torch==2.1"], "transformers") is None


def test_a_checkout_pins_through_its_requirement_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pin is read from requirements/common.txt (through ``-r``) and that release fetched;
    the fetch here is refused, so the installed one on sys.path is used, and said why."""
    from eagle3lint.common.errors import ReleaseFetchError
    from eagle3lint.fetch import libraries
    from eagle3lint.fetch.engine_finder import discover_engine
    from eagle3lint.model.adapter import LibraryWanted

    site = Path(__file__).resolve().parent.parent / "fixtures" / "vllm_allow_list" / "site"
    checkout = tmp_path / "checkout"
    (checkout / "requirements").mkdir(parents=True)
    (checkout / "requirements" / "cuda.txt").write_text("-r common.txt\ntorch==2.9\n")
    (checkout / "requirements" / "common.txt").write_text("# core\ntransformers >= 4.56.0, < 5  # pinned\n")
    import shutil

    shutil.copytree(Path(__file__).resolve().parent.parent / "fixtures" / "vllm_modern" / "vllm", checkout / "vllm")
    engine = discover_engine([], engine="vllm", engine_root=checkout / "vllm")
    asked: list[str] = []

    def refuse(name: str, version: str, wanted: object, announce: object = None) -> Path:
        asked.append(f"{name}=={version}")
        raise ReleaseFetchError("offline")

    monkeypatch.setattr("eagle3lint.fetch.releases.fetch_library", refuse)
    monkeypatch.setattr(sys, "path", [str(site)])
    wanted = LibraryWanted("transformers", ("requirements/cuda.txt",), "models/auto/modeling_auto.py")
    found = libraries.find_library(engine, wanted)
    assert asked == ["transformers==4.56.0"]
    assert found.root == (site / "transformers").resolve() and found.version == "4.99.0"
    assert "could not be fetched: offline" in found.origin and "requirements/cuda.txt" in found.origin
    monkeypatch.setattr(sys, "path", [])
    none = libraries.find_library(engine, wanted)
    assert none.root is None and "offline" in none.origin


def test_an_installed_engine_reads_the_library_installed_beside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine in an environment runs with the transformers of that environment, whatever its
    pin admits first: that one is read (nothing fetched); a tree without one beside it (an
    unpacked release, a checkout) keeps the pin's lowest release."""
    import shutil

    from eagle3lint.common.errors import ReleaseFetchError
    from eagle3lint.fetch import libraries
    from eagle3lint.fetch.engine_finder import discover_engine
    from eagle3lint.model.adapter import LibraryWanted

    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    site = tmp_path / "lib" / "site-packages"
    shutil.copytree(fixtures / "vllm_modern" / "vllm", site / "vllm")
    shutil.copytree(fixtures / "vllm_allow_list" / "site" / "transformers", site / "transformers")
    (site / "vllm-0.32.0.dist-info").mkdir()
    (site / "vllm-0.32.0.dist-info" / "METADATA").write_text("Name: vllm\nVersion: 0.32.0\nRequires-Dist: transformers>=4.56.0\n")
    asked: list[str] = []

    def refuse(name: str, version: str, wanted: object, announce: object = None) -> Path:
        asked.append(f"{name}=={version}")
        raise ReleaseFetchError("offline")

    monkeypatch.setattr("eagle3lint.fetch.releases.fetch_library", refuse)
    monkeypatch.setattr(sys, "path", [])
    wanted = LibraryWanted("transformers", (), "models/auto/modeling_auto.py")
    engine = discover_engine([], engine="vllm", engine_root=site / "vllm")
    # Without its dist-info the folder is not an installed distribution: the pin decides.
    pinned = libraries.find_library(engine, wanted)
    assert asked == ["transformers==4.56.0"] and pinned.root is None
    (site / "transformers-4.99.0.dist-info").mkdir()
    found = libraries.find_library(engine, wanted)
    assert asked == ["transformers==4.56.0"]
    assert found.root == site / "transformers" and found.version == "4.99.0"
    assert "installed beside vllm" in found.origin
