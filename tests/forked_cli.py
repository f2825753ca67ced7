"""``python -m eagle3lint ARGS`` without starting an interpreter: a fork of the test process.

Most tests run the CLI hundreds of times on small trees, and a fresh interpreter spends more
time starting and importing the package than the run spends checking. A fork keeps what makes a
subprocess the honest way to test a command: its own memory (no cache, signal handler or frozen
heap of one run reaches the next or the test), its own working directory and environment, its
exit code, and standard streams that are plain files of its own. What a fork cannot reproduce
(an environment that changes how the interpreter starts: ``PYTHON*``, the locale) goes to a
real subprocess; ``run_cli`` decides.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import os
import pkgutil
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

# Read by the interpreter as it starts, or deciding its standard streams' encoding.
STARTUP_PREFIXES = ("PYTHON", "LC_", "LANG")


def forkable(env: dict[str, str]) -> bool:
    """Whether a fork of this process, given ``env``, starts as ``python -m eagle3lint`` would."""
    if not hasattr(os, "fork") or not hasattr(os, "pidfd_open"):
        return False
    keys = set(env) | set(os.environ)
    same_start = all(
        env.get(key) == os.environ.get(key) for key in keys if key.startswith(STARTUP_PREFIXES) and key != "PYTHONPATH"
    )
    # A PYTHONPATH naming only folders this process already has on sys.path imports the same.
    on_path = {os.path.abspath(p) for p in sys.path}
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return same_start and all(os.path.abspath(p) in on_path for p in extra)


@functools.cache
def _preloaded() -> Callable[[list[str]], None]:
    """The CLI's entry point, with every module a run may import lazily already imported: once,
    in the parent, which is the point of forking."""
    import eagle3lint
    from eagle3lint import cli

    for module in pkgutil.walk_packages(eagle3lint.__path__, "eagle3lint."):
        with contextlib.suppress(ImportError):
            importlib.import_module(module.name)
    return cli.main


def run_forked(
    args: list[str], cwd: Path | None, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    main = _preloaded()

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child; its exit code is the result
            _child(main, args, cwd, env, out.fileno(), err.fileno())
        status = _wait(pid, timeout, args)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    code = os.waitstatus_to_exitcode(status)
    return subprocess.CompletedProcess(["eagle3lint", *args], code, _decode(stdout), _decode(stderr))


def _decode(data: bytes) -> str:
    # As subprocess.run(text=True) reads a pipe: the locale's encoding, strict, universal newlines.
    return io.TextIOWrapper(io.BytesIO(data)).read()


def _wait(pid: int, timeout: float, args: list[str]) -> int:
    fd = os.pidfd_open(pid)
    try:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(["eagle3lint", *args], timeout)
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                _, status = os.waitpid(pid, 0)
                return status
    finally:
        os.close(fd)


def _child(main: Callable[[list[str]], None], args: list[str], cwd: Path | None, env: dict[str, str], out: int, err: int) -> None:
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.close(null)
        # The streams a fresh interpreter would make on these descriptors.
        template = sys.__stdout__
        encoding = getattr(template, "encoding", None) or "utf-8"
        errors = getattr(template, "errors", None) or "strict"
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding=encoding, errors=errors)
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=encoding, errors=errors)
        sys.stderr = io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False), encoding=encoding, errors="backslashreplace", line_buffering=True
        )
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL if sig != signal.SIGPIPE else signal.SIG_IGN)
        os.environ.clear()
        os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = [str(Path(sys.executable).parent / "eagle3lint"), *args]
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except BaseException:
            traceback.print_exc()
            code = 1
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    finally:
        os._exit(code)


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1
