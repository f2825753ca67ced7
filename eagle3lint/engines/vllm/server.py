"""``vllm serve`` for ``verify``: its command line, its OpenAI API and ``/metrics`` counters, and the
pre-flight item only vLLM has (the old speculative config's model-type allow-list).

vLLM reports acceptance as counters: ``1 + Δ num_accepted_tokens / Δ num_drafts`` over a batch.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from eagle3lint.common.errors import UsageError
from eagle3lint.model.contract_types import Contract
from eagle3lint.source.engine import Engine
from eagle3lint.verify.configs import NOTE, OK, PROBLEM, REFUSED, ModelConfig, PreflightResult
from eagle3lint.verify.driver import ServerDriver, path_argument
from eagle3lint.verify.measure import Client
from eagle3lint.verify.model_files import describe
from eagle3lint.verify.openai_client import OpenAIClient, SpecCounters
from eagle3lint.verify.openai_client import parse_spec_counters as _parse_spec_counters
from eagle3lint.verify.options import VerifyOptions

DEFAULT_SPEC_TOKENS = 3
COUNTERS = SpecCounters(accepted="vllm:spec_decode_num_accepted_tokens_total", drafts="vllm:spec_decode_num_drafts_total")


class VllmServer(ServerDriver):
    knowledge_file = Path(__file__).resolve().parent / "verify.toml"

    def validate_options(self, options: VerifyOptions) -> None:
        if options.eagle_topk is not None or options.num_draft_tokens is not None:
            raise UsageError("--eagle-topk and --num-draft-tokens are SGLang options; for vLLM give --num-steps")
        super().validate_options(options)

    def validate_preflight(self, options: VerifyOptions) -> None:
        self.validate_options(options)  # vLLM has no top-k or draft-token flags at all

    def default_launcher(self, module: str, script: str) -> list[str]:
        found = shutil.which(script) if script else None
        return [found, "serve"] if found else [sys.executable, "-m", module, "serve"]

    def arguments(self, options: VerifyOptions, port: int, speculative: bool) -> list[str]:
        args = [path_argument(options.model_path), "--tensor-parallel-size", str(options.tp), "--host", options.host, "--port", str(port)]
        if options.pp > 1:
            args += ["--pipeline-parallel-size", str(options.pp)]
        if speculative:
            if options.draft_model_path is None:
                raise UsageError("--draft-model-path is required to launch EAGLE-3")
            config = {
                "method": "eagle3",
                "model": path_argument(options.draft_model_path),
                "num_speculative_tokens": options.num_steps or DEFAULT_SPEC_TOKENS,
            }
            args += ["--speculative-config", json.dumps(config)]
        return args

    def client(self, base_url: str, model_path: str, timeout_s: float) -> Client:
        return OpenAIClient(base_url, timeout_s, COUNTERS)

    def preflight(self, result: PreflightResult, engine: Engine, contract: Contract, target: ModelConfig) -> None:
        _check_model_type(result, engine, contract.extra.get("vllm"), target)


def parse_spec_counters(text: str) -> tuple[float, float] | None:
    """(accepted tokens, drafts) from vLLM's ``/metrics``; None when it has neither counter."""
    return _parse_spec_counters(text, COUNTERS)


# Where transformers' ``get_text_config()`` looks for a nested text config.
_HF_TEXT_CONFIG_KEYS = ("text_config", "decoder", "generator")


def _check_model_type(result: PreflightResult, engine: Engine, vllm_contract: Any, target: ModelConfig) -> None:
    """Older vLLM speculative configs refuse EAGLE-3 unless the target's text ``model_type``
    contains a word of an allow-list (gone in 0.22.0): the one fact that needs the checkpoint."""
    allow = getattr(vllm_contract, "allow_list", None)
    if allow is None:
        return
    words = ", ".join(allow.model_types)
    rule = f"{engine.name} {engine.version} runs EAGLE-3 only for model types containing {words}"
    where = {"path": str(engine.source_root / allow.path), "line": allow.line}
    # vLLM reads ``hf_text_config``: transformers' get_text_config(), the nested text config
    # where there is one (sizes or not), else the config itself.
    nested_key = next((k for k in _HF_TEXT_CONFIG_KEYS if isinstance(target.raw.get(k), dict)), None)
    if nested_key is not None:
        model_type, source = target.raw[nested_key].get("model_type"), f"{nested_key}.model_type"
    else:
        model_type, source = target.raw.get("model_type"), "model_type"
    if not isinstance(model_type, str):
        result.add(
            "model-type",
            NOTE,
            f"{rule}; the target's config.json has no {source} (its config class decides it): not judged",
            **where,
        )
    elif any(word in model_type for word in allow.model_types):
        result.add("model-type", OK, f"{rule}: the target's {source} {describe(model_type)} qualifies", **where)
    else:
        result.add(
            "model-type",
            PROBLEM,
            f"{rule}: the target's {source} is {describe(model_type)}, so the speculative config refuses it at start-up "
            f"whatever the model class implements (newer vLLM releases dropped the list)",
            # Its own ValueError naming the list: a clear refusal, not a crash.
            REFUSED,
            **where,
        )
