"""One verify run: pre-flight, then the EAGLE-3 server and the baseline, each measured and torn down."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import FrameType

from eagle3lint.common.errors import UsageError
from eagle3lint.engines import engines_phrase, knowledge_for
from eagle3lint.fetch.engine_finder import discover_engine
from eagle3lint.run import verify_report as rep
from eagle3lint.run.preflight import run_preflight
from eagle3lint.source.engine import Engine
from eagle3lint.verify.classify import ClassifyContext, classify_crash
from eagle3lint.verify.configs import PreflightResult
from eagle3lint.verify.gpus import GpuInfo, choose_gpus, gpu_inventory, memory_used
from eagle3lint.verify.knowledge import EngineKnowledge
from eagle3lint.verify.launch import (
    BASELINE,
    EAGLE3,
    LaunchedServer,
    build_command,
    free_port,
    launch,
    new_run_id,
    server_env,
)
from eagle3lint.verify.measure import measure, warm_up
from eagle3lint.verify.options import VerifyOptions
from eagle3lint.verify.prompts import Prompt, builtin_prompts, load_prompts
from eagle3lint.verify.teardown import TeardownResult, port_open, teardown
from eagle3lint.verify.wait import EXITED, FATAL, READY, TIMEOUT, Progress, wait_until_ready


class VerifyInterrupted(KeyboardInterrupt):
    """SIGTERM/SIGHUP to eagle3lint itself: handled like Ctrl-C, so teardown still runs."""


def run_verify(
    options: VerifyOptions,
    progress: Progress | None = None,
    inventory_fn: Callable[[], list[GpuInfo] | None] = gpu_inventory,
) -> rep.VerifyReport:
    """Run verify as `eagle3lint verify` does (``fix --apply --verify`` calls this too).

    Raises UsageError for bad options (exit 2); every other outcome is in the report's verdict.
    """
    progress = progress or Progress()
    _validate(options)
    check_model_paths(options)
    engine, name = _resolve_engine(options)
    knowledge = knowledge_for(name)
    if options.preflight_only:
        knowledge.driver.validate_preflight(options)
    else:
        knowledge.driver.validate_options(options)
        if options.draft_model_path is None:
            raise UsageError("--draft-model-path is required to launch EAGLE-3 (without it, `eagle3lint preflight` says what the release would do)")
    prompts = load_prompts(options.prompts_file) if options.prompts_file else builtin_prompts()
    preflight = preflight_for(options, knowledge, engine, name)
    report = rep.VerifyReport(engine.to_json() if engine else None, preflight)
    if options.release is not None and not options.preflight_only:
        report.notes.append(_release_note(options, name))
    if options.preflight_only:
        report.verdict = rep.decide(report, preflight_only=True)
        return report
    if preflight.predicts_crash and not options.ignore_preflight:
        report.verdict = rep.decide(report, preflight_only=False)
        return report
    inventory = inventory_fn()
    gpus = choose_gpus(options.tp, options.gpus, inventory, os.environ.get("CUDA_VISIBLE_DEVICES"))
    if inventory is None:
        report.notes.append("no nvidia-smi or NVML here: GPUs not chosen by free memory and their release not checked")
    _check_launcher(options, knowledge, engine.pack.package if engine else name)
    log_dir = options.log_dir or Path(tempfile.mkdtemp(prefix="eagle3lint-verify-"))
    session = _Session(options, knowledge, engine, report, prompts, gpus, log_dir, progress, inventory_fn, inventory is not None)
    with _signals_as_interrupt():
        try:
            if session.run_server(EAGLE3, speculative=True) and options.baseline:
                session.run_server(BASELINE, speculative=False)
        except KeyboardInterrupt:
            report.interrupted = True
            if report.launches:
                report.launches[-1].outcome = rep.INTERRUPTED
    report.verdict = rep.decide(report, preflight_only=False)
    return report


def run_preflight_command(options: VerifyOptions) -> rep.PreflightReport:
    """``eagle3lint preflight``: the pair pre-flight alone. Raises UsageError for bad options."""
    check_model_paths(options)
    engine, name = _resolve_engine(options)
    knowledge = knowledge_for(name)
    knowledge.driver.validate_preflight(options)
    result = preflight_for(options, knowledge, engine, name)
    return rep.PreflightReport(engine.to_json() if engine else None, options.release, result)


def preflight_for(options: VerifyOptions, knowledge: EngineKnowledge, engine: Engine | None, name: str) -> PreflightResult:
    """The pre-flight of ``options``' pair and launch (``preflight`` and ``verify`` share it):
    the launch options from the command line and from the environment the server inherits."""
    import dataclasses

    named = options if options.engine is not None else dataclasses.replace(options, engine=name)
    result = run_preflight(
        options.model_path, options.draft_model_path, knowledge, engine,
        engine_options=named.launch_options(os.environ), launch=options.launch(), drafter_ids=options.drafter_ids,
    )
    _environment_problems(result, name, os.environ)
    return result


def _environment_problems(result: PreflightResult, engine: str, environ: Mapping[str, str]) -> None:
    """An option variable the server inherits set to a value the engine cannot read: the server
    fails as it reads it (a ValueError), whatever the pair."""
    from eagle3lint.model.launch_options import unreadable_environment
    from eagle3lint.source.rulepack import load_pack
    from eagle3lint.verify.configs import CRASH, PROBLEM
    from eagle3lint.verify.pair.launch import CHECK

    for variable, value in unreadable_environment(load_pack(engine).options, environ):
        result.add(
            CHECK, PROBLEM,
            f"the environment sets {variable}={value!r}, which {engine} reads as an integer (bool(int(value))): "
            "the server stops with a ValueError before it starts (set it to 0 or 1, or unset it)",
            CRASH,
        )


# A Hugging Face hub id: ``org/name`` (the engine downloads it; the pre-flight says it cannot
# read it). Anything else that is not a folder here is a mistyped path.
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")


def check_model_paths(options: VerifyOptions) -> None:
    """A model path that is neither a local folder nor shaped as a hub id is a usage error
    (exit 2), said before any release is read or fetched."""
    for flag, value in (("--model-path", options.model_path), ("--draft-model-path", options.draft_model_path)):
        if value is None:
            continue
        if not value:  # Path("") is the working directory: never read in its place
            raise UsageError(f"{flag} is empty: give the model's folder (or its hub id, `org/name`)")
        try:
            if Path(value).exists():
                continue
        except OSError as exc:  # a name longer than the file system holds (ENAMETOOLONG)
            raise UsageError(f"{flag} {_cut(value)}: not a usable path ({exc.strerror or exc})") from None
        if _HUB_ID.fullmatch(value) and ".." not in value:
            continue
        raise UsageError(f"{flag} {value}: no such folder (nor a hub id, which has the shape `org/name`)")


def _cut(value: str, limit: int = 120) -> str:
    """A path as long as the file system refuses, shown in part (its length said)."""
    return value if len(value) <= limit else f"{value[:limit]}... ({len(value)} characters)"


def _validate(options: VerifyOptions) -> None:
    if options.timeout_s <= 0:
        raise UsageError(f"--timeout {options.timeout_s}: must be positive")
    if options.max_new_tokens < 1:
        raise UsageError(f"--max-new-tokens {options.max_new_tokens}: must be at least 1")
    if not options.concurrency or any(c < 1 for c in options.concurrency):
        raise UsageError("--concurrency: each level must be at least 1")


def _resolve_engine(options: VerifyOptions) -> tuple[Engine | None, str]:
    if options.release is not None:
        if options.engine_root is not None:
            raise UsageError("--release and --engine-root both name the engine tree to check: give one")
        from eagle3lint.fetch.engine_scope import resolve_engine

        # As `check --release` resolves it: fetched once into the cache, then read from there.
        found, _ = resolve_engine((), options.engine, None, options.release)
        return found, found.name
    try:
        engine: Engine | None = discover_engine([], engine=options.engine, engine_root=options.engine_root)
    except UsageError:
        if options.engine_root is not None:
            raise
        engine = None
    name = engine.name if engine else options.engine
    if name is None:
        raise UsageError(f"no installed {engines_phrase()} found: give --engine (and --engine-root for the static check)")
    return engine, name


def _release_note(options: VerifyOptions, name: str) -> str:
    """What ran against what: the pre-flight read the release's source, but the server is the
    installed engine (a release download is source for reading, not an environment to run)."""
    if options.launcher is not None:
        return f"the pre-flight read {options.release}; the servers were started by --launcher"
    import importlib.metadata

    try:
        installed = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return f"the pre-flight read {options.release}; the servers ran the {name} installed for this Python"
    wanted = options.release.partition("==")[2].strip() if options.release else ""
    differs = " (not the release checked: the pre-flight's static check may not hold for it)" if installed != wanted else ""
    return f"the pre-flight read {options.release}; the servers ran the installed {name} {installed}{differs}"


def _check_launcher(options: VerifyOptions, knowledge: EngineKnowledge, package: str) -> None:
    if options.launcher is not None or options.engine_root is not None:
        return
    if not knowledge.driver.launcher_available(knowledge.launch_script, package):
        raise UsageError(f"{knowledge.engine} is not installed for this Python; install it, or give --engine-root or --launcher")


@contextlib.contextmanager
def _signals_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise VerifyInterrupted(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def _shielded() -> Iterator[None]:
    """Teardown must finish: a second Ctrl-C (or SIGTERM) waits until it has."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _unclean(result: TeardownResult) -> str:
    problems = []
    if result.left_running:
        problems.append(f"processes {', '.join(map(str, result.left_running))} still run")
    if not result.port_closed:
        problems.append("its port is still open")
    if result.gpu_released is False:
        problems.append("GPU memory it held is not free yet")
    return f"teardown of the {result.label} server is incomplete: " + "; ".join(problems)


def exit_after_failed_requests(server: LaunchedServer, grace_s: float) -> int | None:
    """The server's exit code when its requests failed because it is ending; None while it serves.

    A server that dies closes its sockets before the kernel lets its parent see the exit, so
    the client's "connection reset/refused" can come before ``poll()`` knows: a poll alone calls
    a crash "ready" now and then. A server whose port no longer accepts connections is ending, so
    its exit is waited for (up to ``grace_s``); one still listening failed the requests itself.
    """
    exit_code = server.process.poll()
    if exit_code is not None or port_open(server.host, server.port):
        return exit_code
    try:
        return server.process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        return server.process.poll()


class _Session:
    def __init__(
        self,
        options: VerifyOptions,
        knowledge: EngineKnowledge,
        engine: Engine | None,
        report: rep.VerifyReport,
        prompts: list[Prompt],
        gpus: list[int] | None,
        log_dir: Path,
        progress: Progress,
        inventory_fn: Callable[[], list[GpuInfo] | None],
        gpus_observable: bool,
    ) -> None:
        self.options = options
        self.knowledge = knowledge
        self.engine = engine
        self.report = report
        self.prompts = prompts
        self.gpus = gpus
        self.log_dir = log_dir
        self.progress = progress
        self.inventory_fn = inventory_fn
        self.gpus_observable = gpus_observable

    def _memory(self) -> dict[int, int] | None:
        if self.gpus is None or not self.gpus_observable:
            return None
        return memory_used(self.gpus, self.inventory_fn)

    def run_server(self, label: str, speculative: bool) -> bool:
        """Launch, wait, warm up, measure, tear down. True when it measured."""
        options, knowledge = self.options, self.knowledge
        port = free_port(options.host)
        argv = build_command(options, knowledge, port, speculative)
        first = self.engine.source_root if (self.engine is not None and options.engine_root is not None) else None
        env = server_env(dict(os.environ), new_run_id(label), first, self.gpus)
        gpu_before = self._memory()
        log_path = self.log_dir / f"{label}.log"
        record = rep.LaunchRecord(label, argv, str(log_path), port, self.gpus, outcome="starting")
        self.report.launches.append(record)
        self.progress.start(label, log_path)
        server = launch(label, argv, env, port, options.host, log_path)
        gpu_during: dict[int, int] | None = None
        crashed = False
        measured = False
        try:
            version = self.engine.version if self.engine else None
            waited = wait_until_ready(server, knowledge, version, options.timeout_s, options.poll_interval_s, self.progress)
            record.elapsed_s = waited.elapsed_s
            if waited.status == READY:
                record.seconds_to_ready = waited.elapsed_s
                gpu_during = self._memory()
                measured, crashed = self._measure(server, label, speculative, record)
            elif waited.status in (EXITED, FATAL):
                crashed = True
                record.exit_code = waited.exit_code
            elif waited.status == TIMEOUT:
                record.outcome = rep.TIMED_OUT
                record.detail = f"still {waited.phase} after {waited.elapsed_s:.0f} s; last log line: {waited.detail}"
        finally:
            with _shielded():
                self.progress.note(f"tearing down the {label} server")
                result = teardown(server, options.teardown_grace_s, options.teardown_timeout_s, gpu_before, gpu_during, self.inventory_fn)
                self.report.teardowns.append(result)
                if not result.clean:
                    self.report.notes.append(_unclean(result))
        if crashed:
            record.outcome = "crash"
            record.crash = classify_crash(server.read_log(), record.exit_code, knowledge, self._context(str(log_path)))
            self.progress.finish(f"the {label} server crashed: {record.crash.cause}")
        return measured

    def _measure(self, server: LaunchedServer, label: str, speculative: bool, record: rep.LaunchRecord) -> tuple[bool, bool]:
        """(measured, crashed) for a server that answered its health check."""
        options = self.options
        client = self.knowledge.driver.client(server.base_url, options.model_path, options.request_timeout_s)
        error = warm_up(client, self.prompts)
        if error is not None:
            exit_code = exit_after_failed_requests(server, options.teardown_grace_s)
            if exit_code is not None:
                record.exit_code = exit_code
                return False, True
            record.outcome = "warmup-failed"
            record.detail = f"the warm-up request failed: {error}"
            return False, False
        record.outcome = READY
        self.progress.finish(f"the {label} server is ready after {record.seconds_to_ready or 0:.1f} s; measuring")
        result = measure(label, client, self.prompts, options.concurrency, options.max_new_tokens, speculative, self.progress.note)
        self.report.metrics[label] = result
        if result.error:
            exit_code = exit_after_failed_requests(server, options.teardown_grace_s)
            if exit_code is not None:
                record.exit_code = exit_code
                return False, True
        return result.error is None, False

    def _context(self, log_path: str) -> ClassifyContext:
        options = self.options
        pre = self.report.preflight
        command = ["eagle3lint", "verify", "--preflight-only", "--engine", self.knowledge.engine]
        if options.engine_root is not None:
            command += ["--engine-root", str(options.engine_root)]
        elif options.release is not None:
            command += ["--release", options.release]
        command += ["--model-path", options.model_path]
        if options.draft_model_path is not None:
            command += ["--draft-model-path", options.draft_model_path]
        return ClassifyContext(
            engine_root=str(options.engine_root) if options.engine_root is not None else (str(self.engine.root) if self.engine else None),
            model_file=pre.target_class_path,
            target_architecture=pre.target.architecture if pre.target else None,
            target_findings=pre.target_findings,
            preflight_command=shlex.join(command),
            log_path=log_path,
        )
