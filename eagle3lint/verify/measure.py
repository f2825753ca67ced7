"""Output tokens/s and acceptance length, at each concurrency, from the running server.

Acceptance comes per request (a request result's ``verify_steps``: completion tokens over
verify steps) or from server counters (``1 + Δ accepted / Δ drafts`` over a batch), whichever the
engine's client reports.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from eagle3lint.verify.prompts import Prompt

WARMUP_TOKENS = 8


@dataclass
class RequestResult:
    completion_tokens: int = 0
    verify_steps: int = 0  # verify steps the server reports per request (0: not reported)
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


class Client(Protocol):
    """One engine's HTTP API, as ``measure`` uses it (each engine's server driver makes one)."""

    prompt_format: str  # how prompts are sent: "chat-template", "server-chat" or "plain"

    def send(self, prompt: Prompt, max_tokens: int) -> RequestResult: ...

    def counters(self) -> tuple[float, float] | None:
        """(accepted tokens, drafts) so far, for engines that count on the server; else None."""
        ...


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
