"""LMDeploy's readers on small sources of ours: the architecture map, the three-valued tests, the
config builders (delegation, `spec_method=None`, `**kwargs`, input checks), checkpoint matching."""

from __future__ import annotations

import ast
import textwrap

from eagle3lint.engines import adapter_for
from eagle3lint.engines.lmdeploy.builders import (
    MAYBE,
    NEVER,
    SET,
    BuilderFacts,
    BuilderReader,
    Condition,
    Place,
    read_builders,
)
from eagle3lint.engines.lmdeploy.checkpoints import families, type_of
from eagle3lint.engines.lmdeploy.evaluate import UNKNOWN, truth
from eagle3lint.engines.lmdeploy.facts import LmdeployContract
from eagle3lint.engines.lmdeploy.pack import lmdeploy_pack
from eagle3lint.engines.lmdeploy.registry import read_module_map

LPACK = lmdeploy_pack(adapter_for("lmdeploy").pack())
ARGS = {"spec_method": "eagle3", "is_draft_model": False}


def _map(source: str) -> list[tuple[str, str, str, str | None]]:
    found = read_module_map(ast.parse(textwrap.dedent(source)), LPACK)
    return [(e.architecture, e.module, e.class_name, e.variant) for e in found.entries]


def test_the_map_folds_constants_and_reads_every_form() -> None:
    entries = _map('''
        P = 'lmdeploy.pytorch.models'
        MODULE_MAP = dict()
        ASCEND_MODULE_MAP = dict()
        DEVICE_SPECIAL_MODULE_MAP = dict(ascend=ASCEND_MODULE_MAP)
        REMOVED_MODEL_MAP = {'GoneForCausalLM': 'Gone'}
        MODULE_MAP.update({'AForCausalLM': f'{P}.a.AForCausalLM', 'GoneForCausalLM': f'{P}.g.G'})
        MODULE_MAP['BForCausalLM'] = P + '.b.' + 'BForCausalLM'
        ASCEND_MODULE_MAP.update({'AForCausalLM': f'{P}.ascend.a.AForCausalLM'})
        OTHER = dict()
        OTHER.update({'CForCausalLM': 'x.c.C'})
    ''')
    assert entries == [
        ("AForCausalLM", "lmdeploy.pytorch.models.a", "AForCausalLM", None),
        ("BForCausalLM", "lmdeploy.pytorch.models.b", "BForCausalLM", None),
        ("AForCausalLM", "lmdeploy.pytorch.models.ascend.a", "AForCausalLM", "ascend"),
    ]
    found = read_module_map(ast.parse("MODULE_MAP = dict()\nMODULE_MAP.update({'A': make()})\n"), LPACK)
    assert found.entries == [] and [a for a, _, _ in found.unreadable] == ["A"]


def test_three_valued_tests() -> None:
    env = {"spec_method": "eagle3", "is_draft_model": False, "ok": frozenset({"eagle3"})}

    def t(text: str) -> object:
        return truth(ast.parse(text, mode="eval").body, env)

    assert t("spec_method is not None and spec_method not in ok") is False
    assert t("spec_method == 'eagle3'") is True
    assert t("is_draft_model or spec_method is not None") is True
    assert t("spec_method in ['qwen3_5_mtp', 'dflash']") is False
    assert t("cfg.num_layers < 5") is UNKNOWN
    assert t("is_draft_model and cfg.num_layers < 5") is False
    assert t("not (spec_method != 'eagle3')") is True


def _reader(**files: str) -> BuilderReader:
    parsed = {name: (f"pytorch/configurations/{name}.py", ast.parse(textwrap.dedent(text))) for name, text in files.items()}
    return BuilderReader(parsed, "AutoModelConfigBuilder", "DefaultModelConfigBuilder", "build", ("model_paradigm", "ar_spec"), "aux_hidden_state_layers")


BASE = '''
class AutoModelConfigBuilder:
    @classmethod
    def build(cls, hf_config, model_path=None, **kwargs):
        pass
'''
DEFAULT = '''
from .builder import AutoModelConfigBuilder
class DefaultModelConfigBuilder(AutoModelConfigBuilder):
    @classmethod
    def condition(cls, hf_config):
        return True
    @classmethod
    def build(cls, hf_config, model_path=None, **kwargs):
        return ModelConfig()
'''


def test_builders_follow_delegation_arguments_and_input_checks() -> None:
    reader = _reader(
        builder=BASE,
        default=DEFAULT,
        mtp='''
from .builder import AutoModelConfigBuilder
class MtpBuilder(AutoModelConfigBuilder):
    @classmethod
    def condition(cls, hf_config):
        return hf_config.model_type in ['mtp', 'mtp2']
    @classmethod
    def build(cls, hf_config, model_path=None, is_draft_model=False, spec_method=None, **kwargs):
        if spec_method is not None:
            assert spec_method == 'deepseek_mtp'
        cfg = DefaultModelConfigBuilder.build(hf_config, model_path, **kwargs)
        if is_draft_model or spec_method is not None:
            cfg.model_paradigm = 'ar_spec'
        return cfg
''',
        text='''
from .builder import AutoModelConfigBuilder
from .mtp import MtpBuilder
class TextBuilder(MtpBuilder):
    @classmethod
    def condition(cls, hf_config):
        return getattr(hf_config, 'model_type', None) == 'text'
    @classmethod
    def build(cls, hf_config, model_path=None, is_draft_model=False, spec_method=None, **kwargs):
        cfg = super().build(hf_config, model_path, is_draft_model=False, spec_method=None, **kwargs)
        cfg.model_paradigm = 'ar_spec'
        if cfg.num_layers < 5:
            raise ValueError('too small')
        hf_config.aux_hidden_state_layers = (2, 3, 4)
        return cfg
''',
        wrap='''
from .builder import AutoModelConfigBuilder
from .text import TextBuilder
class WrapBuilder(AutoModelConfigBuilder):
    @classmethod
    def condition(cls, hf_config):
        return hf_config.architectures[0] == 'WrapForConditionalGeneration'
    @classmethod
    def build(cls, hf_config, model_path=None, **kwargs):
        text_config = hf_config.text_config
        if kwargs.get('x'):
            return None
        return TextBuilder.build(text_config, model_path, **kwargs)
''',
    )
    assert reader.order() == ["DefaultModelConfigBuilder", "MtpBuilder", "TextBuilder", "WrapBuilder"]
    facts, unreadable = read_builders(reader, ARGS)
    by_name = {f.name: f for f in facts}
    assert unreadable == [] and [f.name for f in facts][-1] == "DefaultModelConfigBuilder"
    mtp = by_name["MtpBuilder"]
    assert mtp.refusal is not None and mtp.refusal.kind == "assert" and mtp.refusal.place.line == 10
    assert mtp.condition == Condition("types", ("mtp", "mtp2"), True, mtp.condition.text)
    # spec_method=None reaches the base: no assertion; the input check is not a refusal.
    text = by_name["TextBuilder"]
    assert text.refusal is None and (text.paradigm, text.layers, text.layers_path) == (SET, SET, ())
    assert any("too small" in note for note in text.notes)
    # An early return under an unknown test makes what follows "maybe"; the config path is followed.
    wrap = by_name["WrapBuilder"]
    assert (wrap.paradigm, wrap.layers, wrap.layers_path) == (MAYBE, MAYBE, ("text_config",))
    assert by_name["DefaultModelConfigBuilder"].paradigm == NEVER


def _builder(name: str, kind: str, names: tuple[str, ...], exact: bool = True) -> BuilderFacts:
    return BuilderFacts(name, Place(f"{name}.py", 1), Condition(kind, names, exact))


def test_checkpoints_find_their_builder_by_architecture_type_and_engine_config() -> None:
    contract = LmdeployContract(
        builders=[
            _builder("Meta", "unknown", ("MetaForConditionalGeneration", "qwen3_5_moe"), exact=False),
            _builder("Qwen35", "types", ("qwen3_5", "qwen3_5_moe")),
            _builder("Gemma", "types", ("gemma3_text",)),
            _builder("Kimi", "types", ("kimi_k2",)),
            _builder("Deepseek", "types", ("deepseek_v3",)),
            _builder("Default", "always", ()),
        ],
        config_types={"kimi_k2": ("DeepseekV3ForCausalLM",)},
    )
    suffixes = LPACK.architecture_suffixes
    assert type_of("Qwen3_5MoeForConditionalGeneration", suffixes) == "qwen35moe"
    assert type_of("InternS1_1_ForConditionalGeneration", suffixes) == "interns11"

    def picked(*architectures: str) -> dict[str, str]:
        return {f.builder.name: f.describe() for f in families(contract, list(architectures), suffixes)}

    assert picked("DeepseekV3ForCausalLM") == {"Deepseek": "DeepseekV3ForCausalLM", "Kimi": "DeepseekV3ForCausalLM (model_type kimi_k2)"}
    assert picked("Gemma3ForCausalLM") == {"Gemma": "Gemma3ForCausalLM"}
    assert picked("InternLM2ForCausalLM") == {"Default": "InternLM2ForCausalLM"}
    assert picked("MetaForConditionalGeneration") == {"Meta": "MetaForConditionalGeneration"}
    (qwen,) = families(contract, ["Qwen3_5MoeForConditionalGeneration"], suffixes)
    assert qwen.builder.name == "Qwen35" and qwen.note == ""  # the Meta builder would do the same
