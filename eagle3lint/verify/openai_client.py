"""An OpenAI-compatible server's API, as ``measure`` uses it: the model it serves, chat or plain
completions, and the speculative-decoding counters of its Prometheus ``/metrics``.

vLLM and LMDeploy serve the same API and count drafts the same way (``1 + Δ accepted tokens /
Δ drafts`` is the mean acceptance length over a batch); only the counters' names differ, which
each engine's driver passes in.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from eagle3lint.verify.httpclient import request
from eagle3lint.verify.measure import RequestResult
from eagle3lint.verify.prompts import Prompt


@dataclass(frozen=True)
class SpecCounters:
    """The names of the Prometheus counters of accepted draft tokens and of drafts."""

    accepted: str
    drafts: str


class OpenAIClient:
    def __init__(self, base_url: str, timeout_s: float, counters: SpecCounters) -> None:
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.counter_names = counters
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
        return parse_spec_counters(answer.text, self.counter_names)


def parse_spec_counters(text: str, names: SpecCounters) -> tuple[float, float] | None:
    """(accepted tokens, drafts) summed over every label set; None when the server has neither."""
    totals = {names.accepted: 0.0, names.drafts: 0.0}
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
    return totals[names.accepted], totals[names.drafts]
