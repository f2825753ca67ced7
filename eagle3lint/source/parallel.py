"""Parsing many cold files on every core.

Workers are forked (start-up is free: the parent has already imported everything) and return
summaries, never syntax trees, so little crosses the process boundary. Small batches and
single-core machines stay in-process, where a pool would only cost.

Workers belong to the run that forked them: they ignore Ctrl-C and SIGTERM (a terminal or a
service manager sends them to the whole process group; the parent stops them and reports the
interrupt once), they die with the parent (a parent killed outright would otherwise leave them
parsing, holding its stdout), and a pool left by an exception is killed rather than waited for,
its manager thread included (left running into the interpreter's exit, it races Python 3.11's
exit hook for its wake-up pipe, "Exception ignored ... Bad file descriptor", or, waiting for the
rest of a result a killed worker half sent, holds the exit for ever).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

from eagle3lint.common.findings import FileError
from eagle3lint.source.sources import ParseRequest, parse_module
from eagle3lint.source.summary_types import ModuleSummary

T = TypeVar("T")

MIN_PARALLEL_FILES = 48
# Source text below which editing or rendering fixes stays in-process: starting a pool (and
# loading libcst in it) costs more than a few small files take to edit.
MIN_PARALLEL_FIX_BYTES = 400_000


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL_S = 1.0


# What the parent handles for its workers (``fix --apply`` turns SIGTERM into an interrupt).
_PARENT_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def _worker_start(parent: int) -> None:
    """Pool initializer, in each forked worker."""
    for signum in _PARENT_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    # Forked with them blocked (see WorkerPool._pool): unblocked once they are ignored.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _PARENT_SIGNALS)
    if not _exit_with_parent():
        # No prctl: a thread polls for the parent, which a worker outliving it no longer has.
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # the parent died before the kernel could be told
        os._exit(1)


def _exit_with_parent() -> bool:
    """Ask Linux to kill this process when its parent dies; whether it could."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


@contextlib.contextmanager
def _parent_signals_blocked() -> Iterator[None]:
    """SIGINT and SIGTERM held back from this thread, so that a worker forked meanwhile cannot
    take one before its initializer ignores it (a pending signal is the parent's, not the
    child's)."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _PARENT_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


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
            self._executor = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("fork"),
                initializer=_worker_start,
                initargs=(os.getpid(),),
            )
            # With fork, the first submit starts every worker.
            with _parent_signals_blocked():
                self._executor.submit(int).result()
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
            try:
                self._executor.shutdown(wait=True, cancel_futures=True)
            except BaseException:  # interrupted while waiting for the workers: stop them now
                self.terminate()
                raise
            self._executor = None

    def terminate(self) -> None:
        """Kill the workers now: after Ctrl-C or an error there is nothing to wait for. Returns
        once the pool's manager thread has ended too."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        # ``_processes`` and ``_executor_manager_thread`` are private, but Python before 3.14
        # offers no way to stop a worker, nor to wait for the thread after shutdown(wait=False).
        processes = list((getattr(executor, "_processes", None) or {}).values())
        manager = getattr(executor, "_executor_manager_thread", None)
        results = getattr(executor, "_result_queue", None)
        executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                process.kill()
        for process in processes:
            with contextlib.suppress(OSError, ValueError, AssertionError, AttributeError):
                process.join(timeout=5)
        # A worker killed while sending its result leaves half a message in the result pipe: the
        # manager thread would wait for the rest for ever, and the interpreter's exit for it.
        # This process holds the pipe's last write end once every worker is gone: closing it
        # ends that wait (end of file: the pool is broken, and the thread cleans up).
        writer = getattr(results, "_writer", None)
        if writer is not None:
            with contextlib.suppress(OSError):
                writer.close()
        if isinstance(manager, threading.Thread) and manager is not threading.current_thread():
            # With its workers gone it closes its pipes and ends; the exit hook then finds them
            # closed and leaves them alone.
            with contextlib.suppress(RuntimeError):
                manager.join(timeout=5)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.terminate()


def worth_forking_for(paths: Iterable[str]) -> bool:
    """Whether fix work on these files is large enough to pay for a pool."""
    return sum(_size(p) for p in set(paths)) >= MIN_PARALLEL_FIX_BYTES


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
