"""Output tokens/s and acceptance length, at each concurrency, from the running server.

SGLang reports per request: ``meta_info.completion_tokens / meta_info.spec_verify_ct`` is the
acceptance length. vLLM reports counters: ``1 + Δ num_accepted_tokens / Δ num_drafts`` over a batch.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from eagle3lint.verify.httpclient import request
from eagle3lint.verify.prompts import Prompt, chat_template, render_chat, special_tokens

WARMUP_TOKENS = 8
_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
_DRAFTS = "vllm:spec_decode_num_drafts_total"


@dataclass
class RequestResult:
    completion_tokens: int = 0
    verify_steps: int = 0  # SGLang's spec_verify_ct (0 without speculation)
    error: str | None = None


@dataclass
class ConcurrencyResult:
    concurrency: int
    requests: int
    failed: int
    completion_tokens: int
    seconds: float
    acceptance_length: float | None
    first_error: str | None = None

    @property
    def tokens_per_s(self) -> float | None:
        return self.completion_tokens / self.seconds if self.seconds > 0 and self.completion_tokens else None

    def to_json(self) -> dict[str, Any]:
        rate = self.tokens_per_s
        return {
            "concurrency": self.concurrency,
            "requests": self.requests,
            "failed": self.failed,
            "completion_tokens": self.completion_tokens,
            "seconds": round(self.seconds, 3),
            "tokens_per_s": round(rate, 2) if rate is not None else None,
            "acceptance_length": round(self.acceptance_length, 3) if self.acceptance_length is not None else None,
            "first_error": self.first_error,
        }


@dataclass
class MeasureResult:
    label: str
    prompt_format: str
    results: list[ConcurrencyResult] = field(default_factory=list)
    error: str | None = None

    def at(self, concurrency: int) -> ConcurrencyResult | None:
        return next((r for r in self.results if r.concurrency == concurrency), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "prompt_format": self.prompt_format,
            "error": self.error,
            "by_concurrency": [r.to_json() for r in self.results],
        }


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


class VLLMClient:
    def __init__(self, base_url: str, timeout_s: float) -> None:
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.prompt_format = "server-chat"
        self._model: str | None = None
        self._lock = threading.Lock()

    def model(self) -> str:
        with self._lock:
            if self._model is None:
                listed = request(self.base_url + "/v1/models", timeout=self.timeout_s).json()
                data = listed.get("data") if isinstance(listed, dict) else None
                self._model = str(data[0]["id"]) if isinstance(data, list) and data and "id" in data[0] else ""
            return self._model

    def send(self, prompt: Prompt, max_tokens: int) -> RequestResult:
        common = {"model": self.model(), "temperature": 0, "max_tokens": max_tokens}
        if self.prompt_format == "server-chat":
            answer = request(self.base_url + "/v1/chat/completions", {**common, "messages": list(prompt.messages)}, timeout=self.timeout_s)
            if answer.status == 400:  # a base model without a chat template
                self.prompt_format = "plain"
            else:
                return self._result(answer.status, answer.json(), answer.error or answer.text[:200])
        answer = request(self.base_url + "/v1/completions", {**common, "prompt": prompt.plain}, timeout=self.timeout_s)
        return self._result(answer.status, answer.json(), answer.error or answer.text[:200])

    @staticmethod
    def _result(status: int, body: Any, error: str) -> RequestResult:
        if status != 200 or not isinstance(body, dict):
            return RequestResult(error=f"HTTP {status}: {error}".strip())
        usage = body.get("usage") or {}
        return RequestResult(int(usage.get("completion_tokens") or 0))

    def counters(self) -> tuple[float, float] | None:
        answer = request(self.base_url + "/metrics", timeout=self.timeout_s)
        if answer.status != 200:
            return None
        return parse_spec_counters(answer.text)


def parse_spec_counters(text: str) -> tuple[float, float] | None:
    """(accepted tokens, drafts) summed over every label set; None when the server has neither."""
    totals = {_ACCEPTED: 0.0, _DRAFTS: 0.0}
    seen: set[str] = set()
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in totals:
            try:
                totals[name] += float(line.rsplit(" ", 1)[1])
            except (IndexError, ValueError):
                continue
            seen.add(name)
    if seen != set(totals):
        return None
    return totals[_ACCEPTED], totals[_DRAFTS]


Client = SGLangClient | VLLMClient


def make_client(engine: str, base_url: str, model_path: str, timeout_s: float) -> Client:
    return SGLangClient(base_url, model_path, timeout_s) if engine == "sglang" else VLLMClient(base_url, timeout_s)


def warm_up(client: Client, prompts: list[Prompt]) -> str | None:
    """One short request before measuring; its error, if any."""
    return client.send(prompts[0], WARMUP_TOKENS).error


def run_batch(client: Client, prompts: list[Prompt], concurrency: int, max_tokens: int, speculative: bool) -> ConcurrencyResult:
    batch = [prompts[i % len(prompts)] for i in range(max(len(prompts), concurrency))]
    before = client.counters() if speculative else None
    # A collection of this process's heap inside the timed window would be charged to the
    # server; the window allocates little, so the collector can wait until it ends.
    collecting = gc.isenabled()
    gc.disable()
    started = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=concurrency)
    try:
        results = list(pool.map(lambda p: client.send(p, max_tokens), batch))
    finally:
        # On Ctrl-C do not wait for requests in flight: teardown ends the server, and them with it.
        pool.shutdown(wait=False, cancel_futures=True)
        if collecting:
            gc.enable()
    seconds = time.monotonic() - started
    after = client.counters() if speculative else None
    good = [r for r in results if r.error is None]
    failed = [r for r in results if r.error is not None]
    tokens = sum(r.completion_tokens for r in good)
    acceptance: float | None = None
    if speculative:
        steps = sum(r.verify_steps for r in good)
        if steps > 0:
            acceptance = sum(r.completion_tokens for r in good if r.verify_steps > 0) / steps
        elif before is not None and after is not None and after[1] > before[1]:
            acceptance = 1 + (after[0] - before[0]) / (after[1] - before[1])
    return ConcurrencyResult(concurrency, len(results), len(failed), tokens, seconds, acceptance, failed[0].error if failed else None)


def measure(
    label: str,
    client: Client,
    prompts: list[Prompt],
    concurrency: tuple[int, ...],
    max_tokens: int,
    speculative: bool,
    on_step: Callable[[str], None] | None = None,
) -> MeasureResult:
    result = MeasureResult(label, client.prompt_format)
    for level in concurrency:
        if on_step:
            on_step(f"{label}: {max(len(prompts), level)} requests at concurrency {level}")
        batch = run_batch(client, prompts, level, max_tokens, speculative)
        result.results.append(batch)
        if batch.failed == batch.requests:
            result.error = f"every request failed at concurrency {level}: {batch.first_error}"
            break
    result.prompt_format = client.prompt_format
    return result
