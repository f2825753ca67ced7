"""``python -m sglang.launch_server`` for ``verify``: its command line and its ``/generate`` API.

SGLang reports acceptance per request: ``meta_info.completion_tokens / meta_info.spec_verify_ct``.
"""

from __future__ import annotations

from pathlib import Path

from eagle3lint.common.errors import UsageError
from eagle3lint.verify.driver import ServerDriver, path_argument
from eagle3lint.verify.httpclient import request
from eagle3lint.verify.measure import Client, RequestResult
from eagle3lint.verify.options import VerifyOptions
from eagle3lint.verify.prompts import Prompt, chat_template, render_chat, special_tokens


class SglangServer(ServerDriver):
    knowledge_file = Path(__file__).resolve().parent / "verify.toml"

    def validate_options(self, options: VerifyOptions) -> None:
        given = [options.num_steps, options.eagle_topk, options.num_draft_tokens]
        if any(v is not None for v in given) and not all(v is not None for v in given):
            raise UsageError(
                "--num-steps, --eagle-topk and --num-draft-tokens go together for SGLang (give all three, "
                "or none to let SGLang choose)"
            )
        super().validate_options(options)

    def arguments(self, options: VerifyOptions, port: int, speculative: bool) -> list[str]:
        args = ["--model-path", path_argument(options.model_path), "--tp-size", str(options.tp), "--host", options.host, "--port", str(port)]
        if options.pp > 1:
            args += ["--pp-size", str(options.pp)]
        if speculative:
            if options.draft_model_path is None:
                raise UsageError("--draft-model-path is required to launch EAGLE-3")
            args += ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", path_argument(options.draft_model_path)]
            if options.num_steps is not None:
                args += [
                    "--speculative-num-steps", str(options.num_steps),
                    "--speculative-eagle-topk", str(options.eagle_topk),
                    "--speculative-num-draft-tokens", str(options.num_draft_tokens),
                ]
        return args

    def client(self, base_url: str, model_path: str, timeout_s: float) -> Client:
        return SGLangClient(base_url, model_path, timeout_s)


class SGLangClient:
    def __init__(self, base_url: str, model_path: str, timeout_s: float) -> None:
        self.base_url = base_url
        self.timeout_s = timeout_s
        self._template = chat_template(model_path)
        self._special = special_tokens(model_path)
        self.prompt_format = "chat-template" if self._template else "plain"

    def _text(self, prompt: Prompt) -> str:
        rendered = render_chat(self._template, prompt, self._special)
        if rendered is None:
            self.prompt_format = "plain"
            return prompt.plain
        return rendered

    def send(self, prompt: Prompt, max_tokens: int) -> RequestResult:
        payload = {"text": self._text(prompt), "sampling_params": {"temperature": 0, "max_new_tokens": max_tokens}}
        answer = request(self.base_url + "/generate", payload, timeout=self.timeout_s)
        body = answer.json()
        if answer.status != 200 or not isinstance(body, dict):
            return RequestResult(error=f"/generate: {answer.error or answer.status} {answer.text[:200]}".strip())
        meta = body.get("meta_info") or {}
        return RequestResult(int(meta.get("completion_tokens") or 0), int(meta.get("spec_verify_ct") or 0))

    def counters(self) -> tuple[float, float] | None:
        return None
