"""Parsing many cold files on every core.

Workers are forked (start-up is free: the parent has already imported everything) and return
summaries, never syntax trees, so little crosses the process boundary. Small batches and
single-core machines stay in-process, where a pool would only cost.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

from eagle3lint.findings import FileError
from eagle3lint.sources import ParseRequest, parse_module
from eagle3lint.summary import ModuleSummary

T = TypeVar("T")

MIN_PARALLEL_FILES = 48


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def parse_serially(requests: list[ParseRequest]) -> list[ModuleSummary | FileError]:
    return [parse_module(r) for r in requests]


class WorkerPool:
    """A fork-based pool, or nothing at all where forking is unavailable or pointless."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers if workers is not None else usable_cpus()
        self._executor: ProcessPoolExecutor | None = None

    @property
    def enabled(self) -> bool:
        return self.workers > 1 and sys.platform.startswith("linux")

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"))
        return self._executor

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        return self._pool().submit(fn, *args)

    def parse(self, requests: list[ParseRequest]) -> list[ModuleSummary | FileError]:
        if not self.enabled or len(requests) < MIN_PARALLEL_FILES:
            return parse_serially(requests)
        # Large files first, spread round-robin, so workers finish together.
        order = sorted(range(len(requests)), key=lambda i: -_size(requests[i].path))
        batches: list[list[int]] = [[] for _ in range(self.workers * 4)]
        for n, i in enumerate(order):
            batches[n % len(batches)].append(i)
        futures = [self._pool().submit(parse_serially, [requests[i] for i in batch]) for batch in batches if batch]
        results: list[ModuleSummary | FileError | None] = [None] * len(requests)
        for batch, future in zip([b for b in batches if b], futures, strict=False):
            for i, result in zip(batch, future.result(), strict=False):
                results[i] = result
        return [r for r in results if r is not None]

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
