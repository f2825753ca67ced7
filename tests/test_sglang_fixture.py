"""The synthetic SGLang tree: every rule, inheritance, aliases and each wrapper shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, read_from, run_cli, run_json

TREE = FIXTURES / "sglang_basic"
EXPECTED = json.loads((TREE / "expected.json").read_text())


@pytest.fixture(scope="module")
def report() -> dict:
    code, data = run_json("check", TREE)
    assert code == 1
    return data


def test_reports_exactly_the_expected_findings(report: dict) -> None:
    got = sorted([f["code"], f["class"], f["method"]] for f in report["findings"])
    assert got == sorted(EXPECTED["findings"])


def test_classifies_each_model(report: dict) -> None:
    kinds = {m["class"]: m["kind"] for m in report["models"]}
    assert kinds == EXPECTED["kinds"]


def test_one_verdict_per_model(report: dict) -> None:
    statuses = {m["class"]: m["status"] for m in report["models"]}
    assert statuses == EXPECTED["statuses"]
    counts = report["summary"]["models_by_status"]
    assert sum(counts.values()) == len(statuses)
    assert counts["not-implemented"] == list(statuses.values()).count("not-implemented") >= 1


def test_errors_only_on_broken_models(report: dict) -> None:
    statuses = {m["class"]: m["status"] for m in report["models"]}
    for finding in report["findings"]:
        if finding["severity"] == "error" and statuses[finding["class"]] != "not-a-target":
            assert statuses[finding["class"]] == "broken", finding["message"]
    (plain,) = [f for f in report["findings"] if f["class"] == "PlainForCausalLM"]
    assert (plain["code"], plain["severity"]) == ("E3L020", "info")
    assert "does not implement EAGLE-3" in plain["message"] and "AttributeError at start-up" in plain["message"]


def test_a_class_missing_two_members_gets_one_finding_naming_both(report: dict) -> None:
    (missing,) = [f for f in report["findings"] if f["class"] == "MissingForCausalLM"]
    assert missing["code"] == "E3L001"
    assert "`set_eagle3_layers_to_capture` and `get_embed_and_head`" in missing["message"]


def test_json_shape_is_the_stable_schema(report: dict) -> None:
    assert report["version"] == 2
    assert set(report["engine"]) == {"name", "version", "root"}
    assert report["engine"]["name"] == "sglang"
    assert report["engine"]["version"] == "0.0.1+fixture"
    assert report["errors"] == []
    keys = {"code", "rule", "severity", "path", "line", "column", "class", "qualname", "method", "message", "related", "fix"}
    for finding in report["findings"]:
        assert keys <= set(finding)
        for related in finding["related"]:
            assert set(related) == {"path", "line", "message"}


def test_wrapper_finding_names_attribute_inner_class_and_call_sites(report: dict) -> None:
    (finding,) = [
        f
        for f in report["findings"]
        if f["class"] == "WrapperAttrForConditionalGeneration" and f["method"] == "set_eagle3_layers_to_capture"
    ]
    assert "self.language_model" in finding["message"]
    assert "FixLlamaForCausalLM" in finding["message"]
    assert finding["severity"] == "error"
    sites = {(r["path"].rsplit("/", 1)[-1], r["line"]) for r in finding["related"]}
    # One finding for the cause: the call sites of both members it does not delegate.
    assert sites == {("model_runner.py", 9), ("model_runner.py", 13), ("cuda_graph_runner.py", 5), ("eagle_worker.py", 9)}
    assert all("unguarded" in r["message"] for r in finding["related"])


def test_property_wrapper_names_the_property(report: dict) -> None:
    (finding,) = [f for f in report["findings"] if f["class"] == "PropertyWrapperForConditionalGeneration"]
    assert "self.model" in finding["message"]


def test_stub_points_at_the_base_method(report: dict) -> None:
    stubs = [f for f in report["findings"] if f["code"] == "E3L003"]
    assert {f["path"].rsplit("/", 1)[-1] for f in stubs} == {"stub_base.py"}
    assert all("StubLMBase" in f["message"] for f in stubs)


def test_unresolvable_base_is_not_an_error(report: dict) -> None:
    # Presence cannot be proven: an info note says where to look, never an error.
    found = [f for f in report["findings"] if f["class"] == "ExternalBaseForCausalLM"]
    assert {f["code"] for f in found} == {"E3L006"} and {f["severity"] for f in found} == {"info"}
    assert "unresolved base somewhere_external.ExternalBase" in found[0]["message"]


def test_reporting_scope_is_the_paths_given() -> None:
    code, data = run_json("check", TREE / "sglang/srt/models/missing.py")
    assert code == 1
    assert {f["class"] for f in data["findings"]} == {"MissingForCausalLM"}
    code, data = run_json("check", TREE / "sglang/srt/models/llama_like.py")
    assert code == 0 and data["findings"] == []


def test_concise_output_lines_and_summary() -> None:
    done = run_cli("check", TREE / "sglang/srt/models/missing.py")
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("fixtures/sglang_basic/sglang/srt/models/missing.py:4:1: E3L001 ") or ":4:1: E3L001 " in lines[0]
    assert lines[-1].startswith(f"{read_from('sglang 0.0.1+fixture', TREE / 'sglang')}: 1 error")


def test_select_and_ignore() -> None:
    _, data = run_json("check", TREE, "--select", "E3L004")
    assert {f["code"] for f in data["findings"]} == {"E3L004"}
    _code, data = run_json("check", TREE, "--ignore", "E3L004,E3L001")
    assert {f["code"] for f in data["findings"]} == {"E3L002", "E3L003", "E3L005", "E3L006", "E3L020"}
    done = run_cli("check", TREE, "--select", "E9XX")
    assert done.returncode == 2 and "unknown rule code" in done.stderr


def test_verbose_lists_every_model_with_a_reason() -> None:
    done = run_cli("check", TREE, "-v")
    assert "eagle3-draft  FixForCausalLMEagle3: EAGLE-3 draft head" in done.stdout
    assert "other         FixEmbeddingModel: embedding model" in done.stdout
    assert "wrapper around a language model (self.language_model: FixLlamaForCausalLM)" in done.stdout


def test_a_model_whose_constructor_always_raises_is_not_checked(tmp_path: Path) -> None:
    """A stand-in registered for hardware without the model never loads: nothing to report."""
    from tests.helpers import SGLANG_SKELETON, make_tree

    make_tree(
        tmp_path,
        {
            **SGLANG_SKELETON,
            "sglang/srt/model_executor/model_runner.py": (
                "def load(model):\n    model.set_eagle3_layers_to_capture([1, 2, 3])\n"
            ),
            "sglang/srt/models/stub.py": (
                "from torch import nn\n\n\n"
                "class StubForCausalLM(nn.Module):\n"
                "    def __init__(self, config):\n"
                "        super().__init__()\n"
                "        raise NotImplementedError('not on this platform')\n\n"
                "    def forward(self, x):\n        return self.lm_head(x)\n\n\n"
                "class RealForCausalLM(nn.Module):\n"
                "    def __init__(self, config):\n"
                "        super().__init__()\n        self.lm_head = nn.Linear(1, 1)\n\n\n"
                "EntryClass = [StubForCausalLM, RealForCausalLM]\n"
            ),
            # Two definitions, one per platform: the stand-in is not the only one that can run.
            "sglang/srt/models/per_platform.py": (
                "from torch import nn\n\n"
                "try:\n"
                "    import fast_kernels\n\n"
                "    class PlatformForCausalLM(nn.Module):\n"
                "        def __init__(self, config):\n"
                "            super().__init__()\n            self.lm_head = nn.Linear(1, 1)\n"
                "except ImportError:\n\n"
                "    class PlatformForCausalLM(nn.Module):\n"
                "        def __init__(self, config):\n"
                "            raise NotImplementedError('needs fast_kernels')\n\n\n"
                "class FactoryForCausalLM(nn.Module):\n"
                "    def __new__(cls, config):\n        return RealVariant(config)\n\n"
                "    def __init__(self, config):\n        raise RuntimeError('built through __new__')\n\n\n"
                "EntryClass = [PlatformForCausalLM, FactoryForCausalLM]\n"
            ),
        },
    )
    code, data = run_json("check", tmp_path / "sglang" / "srt" / "models")
    kinds = {m["class"]: (m["kind"], m["reason"]) for m in data["models"]}
    assert kinds["StubForCausalLM"] == ("other", "never built: `StubForCausalLM.__init__` always raises")
    assert kinds["RealForCausalLM"][0] == "target"
    assert "never built" not in kinds["PlatformForCausalLM"][1]
    assert "never built" not in kinds["FactoryForCausalLM"][1]
    assert "StubForCausalLM" not in {f["class"] for f in data["findings"]}
    assert {"RealForCausalLM"} <= {f["class"] for f in data["findings"]}
    # It has no EAGLE-3 code: one information finding, which alone exits 0.
    assert {f["code"] for f in data["findings"] if f["class"] == "RealForCausalLM"} == {"E3L020"}
    assert code == 0
