"""The capture data flow on real releases: each pinned case is reported on the release that
shipped it and gone from the one that fixed it, and known-good targets get no capture error.
Every case here was read by hand against the release's source (see docs/capture.md)."""

from __future__ import annotations

from functools import cache

import pytest

from tests.helpers import run_json

pytestmark = pytest.mark.release

CAPTURE = ("E3L101", "E3L102", "E3L103", "E3L104", "E3L105", "E3L106", "E3L107")


@cache
def _findings(spec: str, *options: str) -> tuple[tuple[str, str, str], ...]:
    """(code, class, severity) of the capture findings of a whole release, under the launch
    options given (``pp``: ``--engine-option pp``)."""
    flags = [arg for option in options for arg in ("--engine-option", option)]
    code, data = run_json("check", "--no-cache", "--release", spec, "--select", "E3L1", *flags)
    assert code in (0, 1), data
    return tuple(sorted((f["code"], f["class"], f["severity"]) for f in data["findings"] if f["code"] in CAPTURE))


def _classes(spec: str, code: str, severity: str | None = None, options: tuple[str, ...] = ()) -> set[str]:
    return {cls for c, cls, sev in _findings(spec, *options) if c == code and (severity is None or sev == severity)}


QWEN35_WRAPPERS = {"Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"}


def test_sglang_qwen35_wrappers_capture_nothing_until_0_5_22() -> None:
    # sglang#25408: the inherited Qwen3-VL setter writes `layers_to_capture`, the Qwen3.5
    # decoder reads `_is_layer_to_capture`, which only the DFLASH setter sets.
    broken = _classes("sglang==0.5.21", "E3L101", "error")
    assert QWEN35_WRAPPERS | {"InternS2PreviewForConditionalGeneration", "Qwen4ExpForConditionalGeneration"} <= broken
    assert not _classes("sglang==0.5.23", "E3L101")


def test_sglang_qwen25_vl_drops_aux_in_0_5_5_post3_only() -> None:
    # sglang#13904: aux states unpacked, not handed to the logits processor.
    assert _classes("sglang==0.5.5.post3", "E3L102", "error") == {"Qwen2_5_VLForConditionalGeneration"}
    assert not _classes("sglang==0.5.9", "E3L102")


def test_sglang_glm4v_moe_flag_set_only_by_the_setter_in_0_5_2() -> None:
    # Without EAGLE-3 its forward fails; with it, 0.5.2's model runner calls the setter before
    # any forward (model_runner.py:416): a warning, no EAGLE-3 outcome.
    assert _classes("sglang==0.5.2", "E3L103", "warning") == {"Glm4vMoeForConditionalGeneration"}
    assert not _classes("sglang==0.5.3", "E3L103")
    # GLM-4.1V's inherited Qwen2.5-VL setter over a decoder with no capture, in both.
    assert {"Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration"} <= _classes("sglang==0.5.3", "E3L101", "error")


def test_vllm_llama_pp_loop_is_local_before_0_30() -> None:
    # vllm#36151: `enumerate(islice(self.layers, start, end))` without `start=`; no per-model PP
    # guard in 0.18: information with PP off, a silent failure (an error) with it; 0.33's Llama
    # numbers its layers globally.
    assert "LlamaForCausalLM" in _classes("vllm==0.18.0", "E3L105", "info")
    assert "LlamaForCausalLM" in _classes("vllm==0.18.0", "E3L105", "error", ("pp",))
    assert "LlamaForCausalLM" not in _classes("vllm==0.33.0", "E3L105")
    # 0.33's default (V2) runner refuses PP with EAGLE-3 for decoders that do not opt in:
    # information even with PP; the V1 runner reads no such flag: errors there.
    assert _classes("vllm==0.33.0", "E3L105", options=("pp",)) == _classes("vllm==0.33.0", "E3L105", "info", ("pp",)) != set()
    assert _classes("vllm==0.33.0", "E3L105", "error", ("pp", "runner=v1")) == _classes("vllm==0.33.0", "E3L105")


def test_vllm_qwen3_vl_override_drops_pp_aux_in_0_33() -> None:
    # Qwen3LLMModel inherits Qwen2Model's opt-in but its own forward packs nothing: only with PP.
    assert _classes("vllm==0.33.0", "E3L106", "info") == {"Qwen3VLForConditionalGeneration"}
    assert _classes("vllm==0.33.0", "E3L106", "error", ("pp",)) == {"Qwen3VLForConditionalGeneration"}


def test_sglang_two_batch_overlap_skips_the_capture_in_0_5_23() -> None:
    # minimax_m2.py ~981: the TBO branch runs model_forward_stages with the capture loop in the
    # other branch; deepseek_v2.py ~3166: TBO batches cut the capture loop at the dense prefix.
    # Information by default, errors under `--engine-option two-batch-overlap`; MiMo-V2 turns
    # the branch off while capturing (`and not self.layers_to_capture`): never reported.
    default = _classes("sglang==0.5.23", "E3L107")
    assert {"MiniMaxM2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM"} <= default == _classes("sglang==0.5.23", "E3L107", "info")
    assert _classes("sglang==0.5.23", "E3L107", "error", ("two-batch-overlap",)) >= {"MiniMaxM2ForCausalLM", "DeepseekV3ForCausalLM"}
    assert not {"MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM"} & default


@pytest.mark.parametrize("spec", ["sglang==0.5.9", "sglang==0.5.23", "vllm==0.18.0", "vllm==0.33.0"])
def test_no_capture_error_on_known_good_targets(spec: str) -> None:
    errors = {cls for code, cls, sev in _findings(spec) if sev == "error"}
    good = {
        "LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "DeepseekV3ForCausalLM",
        "DeepseekV2ForCausalLM", "GptOssForCausalLM", "KimiK25ForConditionalGeneration", "Qwen3VLForConditionalGeneration",
        "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM",
    }
    assert not errors & good
    if spec in ("sglang==0.5.9", "sglang==0.5.23", "vllm==0.33.0"):
        # Read by hand: these releases ship no capture data-flow bug of error level.
        assert errors == set(), errors
