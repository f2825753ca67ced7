"""Synthetic checkpoint folders for the pair pre-flight (config.json, header-only safetensors and
a small real ``d2t``), written by the tests, with the public facts of each model family: the
target's depth and widths, the drafter's geometry. Nothing here is an engine's code."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.model_folders import write_config, write_safetensors

# DeepSeek-V3 / Kimi-K2 (61 layers), GPT-OSS-120B (36 layers), Llama-3.1-8B (32 layers).
FAMILIES: dict[str, dict[str, Any]] = {
    "deepseek": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168, "vocab_size": 129280, "num_hidden_layers": 61},
    "gpt-oss": {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880, "vocab_size": 201088, "num_hidden_layers": 36},
    "llama": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "vocab_size": 128256, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8},
}


def write_pair(
    base: Path,
    family: str,
    drafter: dict[str, Any] | None = None,
    d2t: list[int] | None = None,
    draft_vocab: int = 8,
    aux_count: int = 3,
    fc: bool = True,
    target_keys: dict[str, Any] | None = None,
) -> tuple[Path, Path]:
    """A target folder of ``family`` and an EAGLE-3 drafter for it (a one-layer Llama-shaped
    head with a ``draft_vocab``-token vocabulary; ``d2t`` its mapping, identity offsets by default).
    ``drafter`` overrides keys of the drafter's config (a None value removes the key), ``target_keys``
    the target's."""
    target = {**FAMILIES[family], **(target_keys or {})}
    hidden, vocab = target["hidden_size"], target["vocab_size"]
    config: dict[str, Any] = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": 4 * hidden,
        "num_hidden_layers": 1,
        "num_attention_heads": 32 if family != "deepseek" else 56,
        "num_key_value_heads": 8,
        "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
        "vocab_size": vocab,
        "draft_vocab_size": draft_vocab,
        "tie_word_embeddings": False,
    }
    for key, value in (drafter or {}).items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    target_dir = write_config(base / "target", target)
    drafter_dir = write_config(base / "drafter", config)
    tensors: dict[str, tuple[str, list[int]]] = {"d2t": ("I64", [draft_vocab]), "norm.weight": ("BF16", [hidden])}
    if fc:
        tensors["fc.weight"] = ("BF16", [hidden, hidden * aux_count])
    write_safetensors(drafter_dir / "model.safetensors", tensors, values={"d2t": d2t if d2t is not None else [0] * draft_vocab})
    return target_dir, drafter_dir


def eagle_ids(ids: list[int]) -> dict[str, Any]:
    """The SpecForge layout: ids nested in ``eagle_config``."""
    return {"eagle_config": {"eagle_aux_hidden_state_layer_ids": ids, "use_aux_hidden_state": True}}


@pytest.fixture(scope="module")
def shared_checks() -> Iterator[None]:
    """One analysis of each release and option set per test module: the pre-flight's full check
    of a release is the same for every pair, so the module's runs share it."""
    import eagle3lint.run.runner as runner

    original = runner.run_check
    cache: dict[tuple[str, tuple[str, ...]], Any] = {}

    @functools.wraps(original)
    def cached(engine: Any, scope: list[Path], settings: Any = None, **kwargs: Any) -> Any:
        key = (str(engine.root), tuple(settings.engine_options) if settings is not None else ())
        if key not in cache:
            cache[key] = original(engine, scope, settings=settings, **kwargs)
        return cache[key]

    runner.run_check = cached
    try:
        yield
    finally:
        runner.run_check = original
