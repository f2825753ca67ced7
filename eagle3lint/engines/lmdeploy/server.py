"""``lmdeploy serve api_server`` for ``verify``: its command line, its OpenAI API and ``/metrics``.

The target runs on LMDeploy's PyTorch engine (``--backend pytorch``: TurboMind has no EAGLE-3)
with ``--speculative-algorithm eagle3 --speculative-draft-model D --speculative-num-draft-tokens
K``. Acceptance comes from the Prometheus counters its metrics logger keeps from 0.14.0 on
(``lmdeploy:spec_decode_num_accepted_tokens_total`` and ``lmdeploy:spec_decode_num_drafts_total``,
served unless ``--disable-metrics``): ``1 + Δ accepted / Δ drafts`` over a batch, as vLLM's.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from eagle3lint.common.errors import UsageError
from eagle3lint.verify.driver import ServerDriver, path_argument
from eagle3lint.verify.measure import Client
from eagle3lint.verify.openai_client import OpenAIClient, SpecCounters
from eagle3lint.verify.options import VerifyOptions

DEFAULT_SPEC_TOKENS = 3
COUNTERS = SpecCounters(accepted="lmdeploy:spec_decode_num_accepted_tokens_total", drafts="lmdeploy:spec_decode_num_drafts_total")


class LmdeployServer(ServerDriver):
    knowledge_file = Path(__file__).resolve().parent / "verify.toml"

    def validate_options(self, options: VerifyOptions) -> None:
        if options.eagle_topk is not None:
            raise UsageError("--eagle-topk is an SGLang option; LMDeploy drafts a chain: give --num-draft-tokens (or --num-steps)")
        if options.pp > 1:
            raise UsageError("LMDeploy's PyTorch engine has no pipeline parallelism (--pp): give --tp")
        if options.num_steps is not None and options.num_draft_tokens is not None and options.num_steps != options.num_draft_tokens:
            raise UsageError("for LMDeploy --num-steps and --num-draft-tokens are the same number (--speculative-num-draft-tokens): give one")
        super().validate_options(options)

    def default_launcher(self, module: str, script: str) -> list[str]:
        found = shutil.which(script) if script else None
        return [found, "serve", "api_server"] if found else [sys.executable, "-m", module, "serve", "api_server"]

    def arguments(self, options: VerifyOptions, port: int, speculative: bool) -> list[str]:
        args = [path_argument(options.model_path), "--backend", "pytorch", "--tp", str(options.tp), "--server-name", options.host, "--server-port", str(port)]
        if speculative:
            if options.draft_model_path is None:
                raise UsageError("--draft-model-path is required to launch EAGLE-3")
            tokens = options.num_draft_tokens or options.num_steps or DEFAULT_SPEC_TOKENS
            args += [
                "--speculative-algorithm", "eagle3",
                "--speculative-draft-model", path_argument(options.draft_model_path),
                "--speculative-num-draft-tokens", str(tokens),
            ]
        return args

    def client(self, base_url: str, model_path: str, timeout_s: float) -> Client:
        return OpenAIClient(base_url, timeout_s, COUNTERS)
