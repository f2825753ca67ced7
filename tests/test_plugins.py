"""Plugins and forks on synthetic trees: registrations of both forms, entry points, a replaced
engine architecture, the plugin's own call sites, classes resolved across the two source roots,
the empty-scope refusal and a fork's metadata version."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.source.plugins import package_roots, read_plugin
from tests.helpers import FIXTURES, SGLANG_SKELETON, make_tree, run_cli, run_json

VLLM_PLUGIN = FIXTURES / "plugin_vllm"
VLLM_ENGINE = FIXTURES / "vllm_modern" / "vllm"
SGLANG_PLUGIN = FIXTURES / "plugin_sglang"
SGLANG_ENGINE = FIXTURES / "sglang_basic" / "sglang"


def _models(report: dict) -> dict[str, dict]:
    return {m["class"]: m for m in report["models"] if m.get("status")}


@pytest.fixture(scope="module")
def vllm_report() -> dict:
    code, report = run_json("check", VLLM_PLUGIN, "--engine-root", VLLM_ENGINE)
    assert code == 1
    return report


def test_project_metadata_and_entry_points_are_read() -> None:
    (root,) = package_roots(VLLM_PLUGIN)
    plugin = read_plugin(root)
    assert (plugin.name, plugin.label) == ("vllm_fixture_plugin", "vllm-fixture-plugin 0.3.1")
    assert [(e.group, e.name, e.value) for e in plugin.entry_points] == [("vllm.general_plugins", "fixture_models", "vllm_fixture_plugin:register")]
    (sgl_root,) = package_roots(SGLANG_PLUGIN / "sgl_fixture_models" / "plugin.py")
    sgl = read_plugin(sgl_root)
    assert sgl.label == "sgl-fixture-models 2.0.0"
    assert [(e.group, e.value) for e in sgl.entry_points] == [("sglang.srt.plugins", "sgl_fixture_models.plugin:register")]


def test_vllm_registrations_of_both_forms_are_found_and_checked(vllm_report: dict) -> None:
    models = _models(vllm_report)
    assert set(models) == {"ReplacedLlamaForCausalLM", "DerivedForCausalLM", "FixtureMTP"}
    # The class-object form replaces vLLM's Llama; the string form (an f-string of __name__)
    # adds an architecture, with a class derived from vLLM's own Llama (across the roots).
    assert models["DerivedForCausalLM"]["status"] == "supported"
    assert models["DerivedForCausalLM"]["architectures"] == ["FixtureDerivedForCausalLM"]
    assert "from entry point vllm.general_plugins:fixture_models" in models["DerivedForCausalLM"]["origin"]
    # Registered in a loop under two draft names: a draft head, both names kept.
    assert models["FixtureMTP"]["kind"] == "draft" and models["FixtureMTP"]["architectures"] == ["FixtureMTP", "FixtureMTPModel"]
    replaced = models["ReplacedLlamaForCausalLM"]
    assert replaced["status"] == "broken"
    assert "replaces vllm's `LlamaForCausalLM` (vllm.model_executor.models.llama) for LlamaForCausalLM" in replaced["origin"]


def test_a_replacement_that_drops_eagle3_is_one_error(vllm_report: dict) -> None:
    (finding,) = vllm_report["findings"]
    assert (finding["code"], finding["class"], finding["severity"]) == ("E3L021", "ReplacedLlamaForCausalLM", "error")
    assert "with the plugin installed, EAGLE-3 on LlamaForCausalLM stops working" in finding["message"]
    assert finding["path"].endswith("vllm_fixture_plugin/models/replaced.py")
    # Its sites include the plugin's own runner and proposer, unguarded.
    related = {(Path(r["path"]).name, r["line"]) for r in finding["related"]}
    assert {("runner.py", 7), ("proposer.py", 5)} <= related


def test_plugin_call_sites_join_the_contract() -> None:
    done = run_cli("contract", VLLM_PLUGIN, "--engine-root", VLLM_ENGINE, "--format", "json")
    assert done.returncode == 0, done.stderr
    import json

    members = {m["name"]: m for m in json.loads(done.stdout)["members"]}
    sites = {(s["path"], s["guard"]) for s in members["get_eagle3_default_aux_hidden_state_layers"]["sites"]}
    assert ("vllm_fixture_plugin/spec_decode/proposer.py", "none") in sites
    assert ("vllm/v1/worker/gpu_model_runner.py", "error") in sites
    # The plugin's model files are read by the index, not scanned as call sites.
    assert not any(s["path"].startswith("vllm_fixture_plugin/models/") for m in members.values() for s in m["sites"])


def test_verbose_names_the_plugin_and_its_entry_points() -> None:
    done = run_cli("check", "-v", VLLM_PLUGIN, "--engine-root", VLLM_ENGINE)
    assert "plugin        vllm-fixture-plugin 0.3.1" in done.stderr + done.stdout
    assert "vllm.general_plugins: fixture_models = vllm_fixture_plugin:register" in done.stdout


def test_sglang_external_package_entry_classes_and_registry_writes() -> None:
    code, report = run_json("check", SGLANG_PLUGIN, "--engine-root", SGLANG_ENGINE)
    assert code == 1
    models = _models(report)
    assert {k: v["status"] for k, v in models.items()} == {
        "FixLlamaForCausalLM": "broken",  # named like the built-in: it replaces it, without EAGLE-3
        "FixtureWrapperForCausalLM": "supported",  # forwards to the built-in model (two roots)
        "RegisteredForCausalLM": "broken",  # written into ModelRegistry.models by the plugin
    }
    assert "replaces sglang's `FixLlamaForCausalLM` (sglang.srt.models.llama_like)" in models["FixLlamaForCausalLM"]["origin"]
    assert models["RegisteredForCausalLM"]["architectures"] == ["FixtureRegisteredForCausalLM"]
    codes = sorted((f["code"], f["class"]) for f in report["findings"])
    assert codes == [("E3L001", "RegisteredForCausalLM"), ("E3L021", "FixLlamaForCausalLM")]
    (gap,) = [f for f in report["findings"] if f["code"] == "E3L001"]
    assert "unguarded" in gap["message"]


def test_models_matrix_shows_origins() -> None:
    code, data = run_json("models", SGLANG_PLUGIN, "--engine-root", SGLANG_ENGINE)
    assert code == 0
    assert data["engine"]["plugins"][0]["distribution"] == "sgl-fixture-models"
    origins = {m["class"]: m.get("origin", "") for m in data["models"]}
    assert origins["FixtureWrapperForCausalLM"].startswith("from sgl-fixture-models 2.0.0 (EntryClass in sgl_fixture_models/delegating.py)")


@pytest.mark.parametrize("fmt", ["concise", "json", "sarif", "github", "full"])
def test_a_folder_with_no_model_class_is_an_error_in_every_format(fmt: str) -> None:
    done = run_cli("check", "--format", fmt, VLLM_PLUGIN / "vllm_fixture_plugin" / "worker", "--engine-root", VLLM_ENGINE)
    assert done.returncode == 2, done.stderr
    assert "no model classes found under" in done.stderr and "worker" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_engine_folder_without_models_is_refused_but_a_file_list_is_not() -> None:
    layers = SGLANG_ENGINE / "srt" / "layers"
    done = run_cli("check", layers)
    assert done.returncode == 2 and "no model classes found under" in done.stderr
    # Files one by one (a pre-commit run) keep their behaviour: nothing to report, exit 0.
    assert run_cli("check", layers / "__init__.py").returncode == 0


def test_a_folder_outside_every_engine_and_package_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    done = run_cli("check", tmp_path / "notes", "--engine-root", VLLM_ENGINE)
    assert done.returncode == 2
    assert "not inside the vllm tree being checked" in done.stderr and "no Python package" in done.stderr


def _fork(tmp_path: Path, name: str, version: str, version_file: bool = True) -> Path:
    files = dict(SGLANG_SKELETON)
    if not version_file:
        del files["sglang/version.py"]
    files[f"{name.replace('-', '_')}-{version}.dist-info/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    files[f"{name.replace('-', '_')}-{version}.dist-info/top_level.txt"] = "sglang\n"
    return make_tree(tmp_path, files) / "sglang"


def test_a_fork_shows_its_own_name_and_version_and_the_upstream_one(tmp_path: Path) -> None:
    engine = discover_engine([_fork(tmp_path, "lsglang", "1.6.5")])
    assert engine.label == "lsglang 1.6.5 (sglang 9.9.9)"
    assert engine.to_json()["distribution"] == {"name": "lsglang", "version": "1.6.5", "metadata": str(tmp_path / "lsglang-1.6.5.dist-info/METADATA")}


def test_a_fork_without_version_files_still_has_a_version(tmp_path: Path) -> None:
    engine = discover_engine([_fork(tmp_path, "sglang-kt", "0.7.2", version_file=False)])
    assert engine.label == "sglang-kt 0.7.2 (sglang, upstream version unknown)"


def test_the_engine_own_metadata_gives_its_version(tmp_path: Path) -> None:
    engine = discover_engine([_fork(tmp_path, "sglang", "0.5.9")])
    assert (engine.version, engine.label, engine.fork) == ("0.5.9", "sglang 0.5.9", None)


def _plugin_copy(tmp_path: Path, models: dict[str, str] | None = None, registrations: dict[str, str] | None = None) -> Path:
    """A copy of the vLLM plugin fixture with more model files and ``register_model`` calls
    (architecture -> "module:Class") in its entry point's function."""
    plugin = tmp_path / "plugin"
    shutil.copytree(VLLM_PLUGIN, plugin)
    for name, text in (models or {}).items():
        (plugin / "vllm_fixture_plugin" / "models" / name).write_text(text)
    init = plugin / "vllm_fixture_plugin" / "__init__.py"
    lines = "".join(f'    ModelRegistry.register_model("{arch}", "{target}")\n' for arch, target in (registrations or {}).items())
    init.write_text(init.read_text() + lines)
    return plugin


def _plugin_with_chain_reads(tmp_path: Path) -> Path:
    """The vLLM plugin fixture plus a proposer that shares the target's embedding the way
    vllm-ascend 0.11.0 does, and a registered wrapper that keeps its decoder elsewhere."""
    plugin = _plugin_copy(
        tmp_path,
        models={
            "textwrap.py": "from vllm.model_executor.models.wrapper import WrapperForConditionalGeneration\n"
            "\n\n"
            "class TextWrapperForConditionalGeneration(WrapperForConditionalGeneration):\n"
            '    """Supported upstream; its decoder is at self.language_model: no self.model."""\n'
        },
        registrations={"TextWrap": "vllm_fixture_plugin.models.textwrap:TextWrapperForConditionalGeneration"},
    )
    proposer = plugin / "vllm_fixture_plugin" / "spec_decode" / "proposer.py"
    proposer.write_text(
        proposer.read_text()
        + "\n"
        + "    def share_embedding(self, target_model):\n"
        + "        self.model.model.embed_tokens = target_model.model.embed_tokens\n"  # line 8: unguarded
        + "\n"
        + "    def share_guarded(self, model):\n"
        + "        if hasattr(model, 'model'):\n"
        + "            self.embed = model.model.embed_tokens\n"  # guarded: a fallback
        + "        return self.model.model.embed_tokens.weight\n"  # self.model is the draft
    )
    return plugin


def test_an_attribute_chain_a_plugin_reads_off_the_target_is_a_requirement(tmp_path: Path) -> None:
    plugin = _plugin_with_chain_reads(tmp_path)
    done = run_cli("contract", plugin, "--engine-root", VLLM_ENGINE, "--format", "json")
    assert done.returncode == 0, done.stderr
    import json

    chain = {m["name"]: m for m in json.loads(done.stdout)["members"]}["model.embed_tokens"]
    sites = {(s["line"], s["receiver"], s["guard"]) for s in chain["sites"]}
    # The draft's own `self.model.model.embed_tokens` is no requirement of the target.
    assert sites == {(8, "target_model", "none"), (12, "model", "fallback")}

    code, report = run_json("check", plugin, "--engine-root", VLLM_ENGINE)
    assert code == 1
    models = _models(report)
    wrapper = models["TextWrapperForConditionalGeneration"]
    assert wrapper["status"] == "broken"
    chain_findings = {f["class"]: f for f in report["findings"] if f["code"] == "E3L022"}
    finding = chain_findings["TextWrapperForConditionalGeneration"]
    assert finding["severity"] == "error"
    assert "has no `self.model`, but `target_model.model.embed_tokens` is read off the target model" in finding["message"]
    assert [(Path(r["path"]).name, r["line"]) for r in finding["related"]] == [("proposer.py", 8)]
    # The fixture's LlamaModel keeps no embedding: the chain stops one link further down.
    derived = chain_findings["DerivedForCausalLM"]
    assert "holds `LlamaModel` in `self.model`, which has no `embed_tokens`" in derived["message"]
    assert models["DerivedForCausalLM"]["status"] == "broken"
    # The draft head is no target; the guarded read adds no error of its own.
    assert "FixtureMTP" not in chain_findings
    assert all(len(f["related"]) == 1 for f in chain_findings.values())


def test_an_attribute_chain_is_met_by_a_class_that_has_every_link(tmp_path: Path) -> None:
    plugin = _plugin_with_chain_reads(tmp_path)
    (plugin / "vllm_fixture_plugin" / "models" / "derived.py").write_text(
        "from torch import nn\n"
        "from vllm.model_executor.models.llama import LlamaForCausalLM, LlamaModel\n"
        "\n\n"
        "class EmbeddingModel(LlamaModel):\n"
        "    def __init__(self, *, vllm_config, prefix=''):\n"
        "        super().__init__(vllm_config=vllm_config, prefix=prefix)\n"
        "        self.embed_tokens = nn.Embedding(8, 8)\n"
        "\n\n"
        "class DerivedForCausalLM(LlamaForCausalLM):\n"
        "    def __init__(self, *, vllm_config, prefix=''):\n"
        "        super().__init__(vllm_config=vllm_config, prefix=prefix)\n"
        "        self.model = EmbeddingModel(vllm_config=vllm_config, prefix=prefix)\n"
    )
    code, report = run_json("check", plugin, "--engine-root", VLLM_ENGINE)
    assert code == 1
    assert _models(report)["DerivedForCausalLM"]["status"] == "supported"
    assert not [f for f in report["findings"] if f["class"] == "DerivedForCausalLM"]


def test_a_plugin_class_named_like_the_engine_class_it_derives_from(tmp_path: Path) -> None:
    """``class LlamaForCausalLM(LlamaForCausalLM)`` after importing vLLM's: the base is the import
    (the name as bound before the class statement), not the class itself."""
    plugin = tmp_path / "plugin"
    shutil.copytree(VLLM_PLUGIN, plugin)
    (plugin / "vllm_fixture_plugin" / "models" / "shadow.py").write_text(
        "from vllm.model_executor.models.llama import LlamaForCausalLM\n"
        "\n\n"
        "class LlamaForCausalLM(LlamaForCausalLM):\n"
        "    def __init__(self, *, vllm_config, prefix=''):\n"
        "        super().__init__(vllm_config=vllm_config, prefix=prefix)\n"
    )
    init = plugin / "vllm_fixture_plugin" / "__init__.py"
    text = init.read_text().replace(
        "from .models.replaced import ReplacedLlamaForCausalLM", "from .models.shadow import LlamaForCausalLM as ReplacedLlamaForCausalLM"
    )
    init.write_text(text)
    _, report = run_json("check", plugin, "--engine-root", VLLM_ENGINE)
    shadow = [m for m in report["models"] if m["path"].endswith("shadow.py")]
    assert [(m["class"], m["status"]) for m in shadow] == [("LlamaForCausalLM", "supported")], report["findings"]
    assert not [f for f in report["findings"] if f["path"].endswith("shadow.py")]


def test_keyword_registrations_are_read(tmp_path: Path) -> None:
    plugin = _plugin_copy(tmp_path)
    init = plugin / "vllm_fixture_plugin" / "__init__.py"
    keywords = 'model_arch="KwArch", model_cls="vllm_fixture_plugin.models.derived:DerivedForCausalLM"'
    init.write_text(init.read_text() + f"    ModelRegistry.register_model({keywords})\n")
    _, report = run_json("check", plugin, "--engine-root", VLLM_ENGINE)
    assert _models(report)["DerivedForCausalLM"]["architectures"] == ["FixtureDerivedForCausalLM", "KwArch"]


def test_a_registering_file_that_cannot_be_parsed_is_named_and_the_rest_checked(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    shutil.copytree(VLLM_PLUGIN, plugin)
    broken = plugin / "vllm_fixture_plugin" / "extra.py"
    broken.write_text("def register():\n    from vllm import ModelRegistry\n    ModelRegistry.register_model('X', 'a.b:C'\n")
    done = run_cli("check", plugin, "--engine-root", VLLM_ENGINE)
    assert done.returncode == 2, done.stderr
    assert f"{broken}: error: syntax error at line 3" in done.stderr and "registrations are not read" in done.stderr
    assert "E3L021" in done.stdout  # the other registrations are still checked
    assert "Traceback" not in done.stderr


def test_fix_apply_with_a_release_writes_the_plugin_and_never_the_cached_release(tmp_path: Path) -> None:
    """``fix --apply PLUGIN --release X``: the plugin is the user's to edit; a fix that would
    edit the cached release is refused (exit 2), with nothing written."""
    import os
    import subprocess

    from eagle3lint.common.cache_dir import _COMPLETE
    from tests import forked_cli

    cache = tmp_path / "cache"
    release = cache / "releases" / "vllm-0.99.0"
    shutil.copytree(VLLM_ENGINE, release / "vllm")
    (release / _COMPLETE).write_text("vllm==0.99.0\n")
    plugin = _plugin_copy(
        tmp_path,
        models={
            "undeclared.py": (
                "from torch import nn\n"
                "\n"
                "from vllm.model_executor.models.interfaces import SupportsMultiModal\n"
                "from vllm.model_executor.models.utils import init_vllm_registered_model\n"
                "\n\n"
                "class PluginWrapperForConditionalGeneration(nn.Module, SupportsMultiModal):\n"
                "    def __init__(self, *, vllm_config, prefix=''):\n"
                "        super().__init__()\n"
                "        with self._mark_language_model(vllm_config):\n"
                "            self.language_model = init_vllm_registered_model(\n"
                "                vllm_config=vllm_config, hf_config=vllm_config.hf_config.text_config,\n"
                "                prefix='language_model', architectures=['FixtureDerivedForCausalLM'],\n"
                "            )\n"
            )
        },
        registrations={"PW": "vllm_fixture_plugin.models.undeclared:PluginWrapperForConditionalGeneration"},
    )
    env = {**os.environ, "EAGLE3LINT_CACHE_DIR": str(cache)}

    def fix(*args: str | Path) -> subprocess.CompletedProcess[str]:
        # A release made here, not downloaded: run_cli keeps --release for tests of real ones.
        return forked_cli.run_forked(["fix", "--apply", *map(str, args), "--release", "vllm==0.99.0"], None, env, timeout=600)

    before = {p: p.read_bytes() for p in release.rglob("*.py")}
    done = fix(plugin)
    assert "cached copy" not in done.stderr, done.stderr
    assert "SupportsEagle3" in (plugin / "vllm_fixture_plugin" / "models" / "undeclared.py").read_text()
    assert {p: p.read_bytes() for p in release.rglob("*.py")} == before
    # A fix inside the release itself is refused before anything is written.
    refused = fix("vllm/model_executor/models/wrapper.py")
    assert refused.returncode == 2 and "--apply would edit the cached copy of the release" in refused.stderr
    assert {p: p.read_bytes() for p in release.rglob("*.py")} == before


def test_packaging_files_that_cannot_be_read_are_named_and_the_rest_still_counts(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    shutil.copytree(VLLM_PLUGIN, plugin)
    (plugin / "pyproject.toml").write_text("[project\nname = 'x'\n")
    done = run_cli("check", plugin, "--engine-root", VLLM_ENGINE)
    assert done.returncode == 2
    assert f"{plugin / 'pyproject.toml'}: error: not valid TOML" in done.stderr
    assert "E3L021" in done.stdout  # the registrations are read from the code all the same

    # entry_points.txt: a bad line is said with its number, the good one is kept.
    from eagle3lint.source.plugins import read_plugin

    info = plugin / "vllm_fixture_plugin-0.3.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Name: vllm-fixture-plugin\nVersion: 0.3.1\n")
    (info / "top_level.txt").write_text("vllm_fixture_plugin\n")
    (info / "entry_points.txt").write_text("\ufeff[vllm.general_plugins]\nfixture_models = vllm_fixture_plugin:register\nbroken\n")
    read = read_plugin(plugin / "vllm_fixture_plugin")
    assert [(e.group, e.name) for e in read.entry_points] == [("vllm.general_plugins", "fixture_models")]
    assert [(Path(e.path).name, e.message) for e in read.errors] == [
        ("entry_points.txt", "line 3: not 'name = module:function'; that entry point is not read")
    ]


def test_a_class_registered_through_a_module_bound_by_import_module(tmp_path: Path) -> None:
    # vllm-plugin-meralion2's shape: mod = import_module("pkg.m"); cls = getattr(mod, "C").
    plugin = _plugin_copy(tmp_path)
    init = plugin / "vllm_fixture_plugin" / "__init__.py"
    init.write_text(
        init.read_text()
        + "    from importlib import import_module\n"
        + '    module = import_module("vllm_fixture_plugin.models.derived")\n'
        + '    derived = getattr(module, "DerivedForCausalLM")\n'
        + '    ModelRegistry.register_model("ViaImportModule", derived)\n'
    )
    _, report = run_json("check", plugin, "--engine-root", VLLM_ENGINE)
    assert "ViaImportModule" in _models(report)["DerivedForCausalLM"]["architectures"]
