"""Templates are data: every shipped one loads and renders; bad ones are clear errors."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from eagle3lint.common.errors import UsageError
from eagle3lint.engines import adapters, fix_patterns_for
from eagle3lint.fix.planner import patterns_for
from eagle3lint.fix.templates import load_templates, parse_template_file

NAMES = {
    "member": "m", "delegate": "language_model", "inner_class": "X", "decoder": "model", "embedding": "e",
    "head": "h", "loop_var": "i", "hidden": "h", "residual": "r", "lm_hidden": "h", "decoder_class": "D",
    "setter": "set_eagle3_layers_to_capture", "path": "model.inner", "ids": "layer_ids", "attribute": "flag",
    "value": "False", "holder": "H", "call": "self.logits_processor", "keyword": "aux_hidden_states", "aux": "aux",
    "start": "self.start_layer", "params": "self, layer_ids=None", "args": "layer_ids", "captured": "h + r",
}


@pytest.mark.parametrize(
    ("engine", "patterns"),
    [
        ("sglang", {"wrapper-delegation", "leaf-embed-head", "leaf-capture", "capture-delegate", "capture-init", "capture-handoff"}),
    ],
)
def test_shipped_templates_render_valid_python(engine: str, patterns: set[str]) -> None:
    templates = load_templates(engine)
    assert set(templates) == patterns
    for template in templates.values():
        template.describe(NAMES)
        for snippet in template.snippets:
            ast.parse(template.render(snippet.name, NAMES, snippet.when) or "")


def test_every_pattern_is_listed_once_by_its_engine_and_has_its_template() -> None:
    for adapter in adapters():
        engine = adapter.name
        names = [pattern.name for pattern in adapter.fix_patterns()]
        assert len(names) == len(set(names)), f"{engine} lists a pattern twice"
        for pattern in adapter.fix_patterns():
            name = pattern.name
            assert name in load_templates(engine), f"{engine}/{name} has no template file"
            assert set(pattern.codes) == set(load_templates(engine)[name].codes)
    sglang = fix_patterns_for("sglang")
    assert [p.name for p in patterns_for(sglang, "E3L001")] == ["leaf-embed-head", "leaf-capture"]
    assert patterns_for(sglang, "E3L002") == []


def test_snippet_selection_by_flags_and_fallback() -> None:
    embed = load_templates("sglang")["leaf-embed-head"]
    names = {"decoder": "model", "embedding": "embed_tokens", "head": "lm_head"}
    with_torch = embed.render("set_embed_and_head", names, frozenset({"torch"}))
    without = embed.render("set_embed_and_head", names, frozenset())
    assert with_torch is not None and "torch.cuda.synchronize()" in with_torch
    assert without is not None and "torch" not in without
    wrapper = load_templates("sglang")["wrapper-delegation"]
    through = {"member": "get_hot_token_id", "delegate": "lm", "params": "self, *args, **kwargs", "args": "*args, **kwargs"}
    generic = wrapper.render("get_hot_token_id", through, fallback=True)
    assert generic == "def get_hot_token_id(self, *args, **kwargs):\n    return self.lm.get_hot_token_id(*args, **kwargs)\n"
    assert wrapper.render("get_hot_token_id", {**through, "member": "x"}) is None
    # The parameters and the call come from the planner (the release's call sites, the inner
    # member's own signature): SGLang 0.4.x calls the setter with no argument.
    bare = wrapper.render("set_eagle3_layers_to_capture", {"delegate": "lm", "params": "self", "args": ""})
    assert bare == "def set_eagle3_layers_to_capture(self):\n    self.lm.set_eagle3_layers_to_capture()\n"


def test_bad_templates_are_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    with pytest.raises(UsageError, match=r"broken\.toml: snippet 'x' is not valid Python"):
        parse_template_file(path, {"pattern": "p", "snippet": [{"name": "x", "code": "def x(:\n"}]}, "sglang")
    with pytest.raises(UsageError, match="declares engine 'vllm'"):
        parse_template_file(path, {"pattern": "p", "engine": "vllm"}, "sglang")
    with pytest.raises(UsageError, match="applicability must be one of"):
        parse_template_file(path, {"pattern": "p", "applicability": "maybe"}, "sglang")
    template = parse_template_file(path, {"pattern": "p", "snippet": [{"name": "x", "code": "y = ${missing}\n"}]}, "sglang")
    with pytest.raises(UsageError, match=r"uses \$\{missing\}"):
        template.render("x", {})


def test_an_engine_without_templates_has_none() -> None:
    assert load_templates("no-such-engine") == {}


def test_shipped_vllm_templates_render_valid_python() -> None:
    templates = load_templates("vllm")
    assert set(templates) == {
        "stale-rename", "declare-protocol", "declare-delegate", "holder-collect", "pp-loop-start", "capture-delegate", "capture-init",
    }
    names = {**NAMES, "former": "a", "successor": "b", "class_name": "C", "protocol": "P", "changes": "x", "path": "model",
             "aux": "aux", "collect": "_collect", "index": "idx", "first_index": "0", "hidden": "h", "residual": "r"}
    for template in templates.values():
        template.describe(names)
        for snippet in template.snippets:
            ast.parse(template.render(snippet.name, names, snippet.when) or "")
    assert [p.name for p in patterns_for(fix_patterns_for("vllm"), "E3L013")] == ["declare-protocol"]
    assert [p.name for p in patterns_for(fix_patterns_for("vllm"), "E3L004")] == ["declare-delegate"]
    assert [p.name for p in patterns_for(fix_patterns_for("vllm"), "E3L011")] == ["holder-collect"]
    assert [p.name for p in patterns_for(fix_patterns_for("vllm"), "E3L105")] == ["pp-loop-start"]
    assert patterns_for(fix_patterns_for("vllm"), "E3L102") == []
    assert patterns_for(fix_patterns_for("vllm"), "E3L015") == []


def test_shipped_lmdeploy_templates_render_valid_python() -> None:
    templates = load_templates("lmdeploy")
    assert set(templates) == {"cuda-graph-key", "cuda-graph-delegate", "dict-return", "config-builder", "decoder-capture"}
    names = {**NAMES, "aux_key": "aux_hidden_states", "class_name": "C", "default": "CudaGraphMixin", "delegate": "language_model",
             "inner_class": "I", "result": "outputs", "builder": "B", "paradigm": "model_paradigm", "spec_method": "spec_method",
             "hf_config": "hf_config", "cfg": "cfg", "decoder_class": "D", "config": "config", "index": "idx", "hidden": "h", "residual": "r"}
    for template in templates.values():
        template.describe(names)
        for snippet in template.snippets:
            ast.parse(template.render(snippet.name, names, snippet.when) or "")
    patterns = fix_patterns_for("lmdeploy")
    assert [p.name for p in patterns_for(patterns, "E3L110")] == ["cuda-graph-key"]
    assert [p.name for p in patterns_for(patterns, "E3L111")] == ["cuda-graph-delegate", "dict-return"]
    assert [p.name for p in patterns_for(patterns, "E3L001")] == ["decoder-capture"]
    assert patterns_for(patterns, "E3L030") == []
