"""The SGLang probe's fitting of a shrunken config to what a launch needs (``_cpu_fit``), tested
on plain dicts: the probe runs inside the engine's interpreter, these rules are pure Python. Each
case is a class default that made both launches fail alike on SGLang's CPU start-up (the
harness's gap, not EAGLE-3's): the rotary parameters and scaling a checkpoint carries."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import eagle3lint
from eagle3lint.engines.sglang import engine_run

PROBE = Path(engine_run.SPEC.probe)
PROBE_PATH = Path(eagle3lint.__file__).parent / "enginerun" / "probe_path"


@pytest.fixture(scope="module")
def probe() -> Any:
    """The probe module, loaded by path as the launch does (its shared half first on the path),
    with the one transformers table it reads stood in: no engine is installed here."""
    saved = dict(sys.modules)
    sys.path.insert(0, str(PROBE_PATH))
    auto = types.ModuleType("transformers.models.auto.modeling_auto")
    auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES = {"qwen2": "Qwen2ForCausalLM"}  # type: ignore[attr-defined]
    for name in ("transformers", "transformers.models", "transformers.models.auto"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules["transformers.models.auto.modeling_auto"] = auto
    try:
        spec = importlib.util.spec_from_file_location("eagle3lint_sglang_cpu_probe", PROBE)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(PROBE_PATH))
        for name in set(sys.modules) - set(saved):
            del sys.modules[name]


def test_an_empty_rope_parameters_becomes_the_default_rotarys(probe: Any) -> None:
    # Qwen3.5's class default ({}): its layers hand rope_parameters["rope_theta"] to get_rope.
    config = {"model_type": "qwen3_5_text", "hidden_size": 64, "num_attention_heads": 4, "rope_parameters": {}, "rope_theta": 5e6}
    notes = probe._cpu_fit(config, {})
    assert config["rope_parameters"] == {"rope_type": "default", "rope_theta": 5e6}
    assert any(n.startswith("rope_parameters:") for n in notes)


def test_an_empty_rope_parameters_without_a_theta_gets_the_usual_one(probe: Any) -> None:
    config = {"model_type": "x", "hidden_size": 64, "rope_parameters": {}}
    probe._cpu_fit(config, {})
    assert config["rope_parameters"] == {"rope_type": "default", "rope_theta": 10000.0}


def test_rope_parameters_a_config_carries_are_kept(probe: Any) -> None:
    given = {"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0}
    config = {"model_type": "x", "hidden_size": 64, "rope_parameters": dict(given)}
    assert not [n for n in probe._cpu_fit(config, {}) if n.startswith("rope_parameters")]
    assert config["rope_parameters"] == given


def test_an_empty_rope_scaling_is_no_scaling(probe: Any) -> None:
    config = {"model_type": "x", "hidden_size": 64, "rope_scaling": {}}
    probe._cpu_fit(config, {})
    assert config["rope_scaling"] is None


def test_rope_parameters_read_without_a_default_are_given_where_the_class_lacks_them(probe: Any) -> None:
    # 0.5.9's Ministral-3 reads transformers 5's rope_parameters; the closest config class has none.
    config = {"model_type": "mistral", "architectures": ["Ministral3ForCausalLM"], "hidden_size": 64, "rope_parameters": None}
    probe._cpu_fit(config, {})
    assert config["rope_parameters"] == {"rope_type": "default", "rope_theta": 1000000.0}


def _vl(text: dict[str, Any]) -> dict[str, Any]:
    return {"model_type": "qwen2_5_vl", "vision_config": {"depth": 1}, "text_config": text}


def test_an_mrope_family_without_rope_scaling_gets_sections_adding_up_to_half_a_head(probe: Any) -> None:
    config = _vl({"model_type": "qwen2", "hidden_size": 128, "num_attention_heads": 2, "rope_scaling": None})
    probe._cpu_fit(config, {}, ("vision_config",))
    scaling = config["text_config"]["rope_scaling"]
    assert scaling["rope_type"] == "default"
    assert sum(scaling["mrope_section"]) == 128 // 2 // 2
    # The nested language model names its causal class, as a checkpoint's does.
    assert config["text_config"]["architectures"] == ["Qwen2ForCausalLM"]


def test_an_mrope_family_with_rope_parameters_keeps_them(probe: Any) -> None:
    # transformers 5 keeps the sections in rope_parameters: no rope_scaling is invented beside them.
    config = _vl({"model_type": "qwen2", "hidden_size": 128, "num_attention_heads": 2, "rope_scaling": None, "rope_parameters": {"rope_type": "default", "mrope_section": [8, 12, 12]}})
    probe._cpu_fit(config, {}, ("vision_config",))
    assert config["text_config"]["rope_scaling"] is None


def test_an_mla_language_model_keeps_its_own_rotary(probe: Any) -> None:
    # Kimi-K2.5's DeepSeek text config: the CPU MLA rotary reads YaRN's factors (KeyError
    # 'factor' with M-RoPE sections).
    config: dict[str, Any] = {"model_type": "kimi_vl", "vision_config": {"depth": 1}, "text_config": {"model_type": "deepseek_v3", "hidden_size": 64, "kv_lora_rank": 16, "rope_scaling": None}}
    probe._cpu_fit(config, {}, ("vision_config",))
    scaling = config["text_config"]["rope_scaling"]
    assert "mrope_section" not in scaling and "factor" in scaling


class _Engine:
    """An engine class that refuses as 0.5.23's start-up does on CPU for hybrid Mamba models
    (arg_groups/mamba_hook.py) unless the radix cache is off; or refuses anything else."""

    def __init__(self, refusal: str) -> None:
        self.refusal = refusal
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **args: Any) -> dict[str, Any]:
        self.calls.append(dict(args))
        if not args.get("disable_radix_cache"):
            raise AssertionError(self.refusal)
        return args


def test_a_model_cpu_cannot_snapshot_starts_again_without_the_radix_cache(probe: Any, tmp_path: Path) -> None:
    record = probe.Record(str(tmp_path / "record.json"))
    engine = _Engine("extra_buffer requires platform support for Mamba cache state snapshots.")
    started = probe.start_engine(engine, {"model_path": "x"}, record)
    assert started["disable_radix_cache"] is True and len(engine.calls) == 2
    assert any(c.startswith("disable_radix_cache") for c in record.data["setup"]["changes"])


def test_any_other_assertion_is_the_launchs_failure(probe: Any, tmp_path: Path) -> None:
    record = probe.Record(str(tmp_path / "record.json"))
    engine = _Engine("One of the attention backends in ['fa3'] is required")
    with pytest.raises(AssertionError, match="attention backends"):
        probe.start_engine(engine, {"model_path": "x"}, record)
    assert len(engine.calls) == 1 and "setup" not in record.data
