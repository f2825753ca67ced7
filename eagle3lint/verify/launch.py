"""Starting the engine's server: its command line, a free port, its own session, a marker, a log file."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from eagle3lint.common.errors import UsageError
from eagle3lint.verify.knowledge import EngineKnowledge
from eagle3lint.verify.options import VerifyOptions

# Every process of a run carries this in its environment, so teardown can find the ones that left
# the process group (a child that called setsid) and end them too.
MARKER_ENV = "EAGLE3LINT_VERIFY_RUN"
EAGLE3, BASELINE = "eagle3", "baseline"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def build_command(options: VerifyOptions, knowledge: EngineKnowledge, port: int, speculative: bool) -> list[str]:
    """The launcher (``--launcher``, else the engine's own), the engine's arguments, then
    ``--engine-args``."""
    driver = knowledge.driver
    launcher = shlex.split(options.launcher) if options.launcher else driver.default_launcher(knowledge.launch_module, knowledge.launch_script)
    if not launcher:
        raise UsageError("--launcher is empty")
    extra = [arg for chunk in options.engine_args for arg in shlex.split(chunk)]
    return launcher + driver.arguments(options, port, speculative) + extra


def server_env(base: dict[str, str], run_id: str, pythonpath_first: Path | None, gpus: list[int] | None) -> dict[str, str]:
    env = dict(base)
    env[MARKER_ENV] = run_id
    env["PYTHONUNBUFFERED"] = "1"  # the log is read while the server runs
    if pythonpath_first is not None:
        rest = env.get("PYTHONPATH", "")
        env["PYTHONPATH"] = str(pythonpath_first) + (os.pathsep + rest if rest else "")
    if gpus is not None:
        # nvidia-smi numbers GPUs by PCI bus; make CUDA number them the same way.
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in gpus)
    return env


@dataclass
class LaunchedServer:
    label: str
    argv: list[str]
    process: subprocess.Popen[bytes]
    port: int
    host: str
    log_path: Path
    run_id: str
    started: float  # time.monotonic() at launch
    _log: IO[bytes] | None = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def pgid(self) -> int:
        return self.process.pid  # leader of its own session and group

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def read_log(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def launch(label: str, argv: list[str], env: dict[str, str], port: int, host: str, log_path: Path) -> LaunchedServer:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("wb")
    log.write(("$ " + shlex.join(argv) + "\n").encode())
    log.flush()
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        log.close()
        raise UsageError(f"cannot start the server ({shlex.join(argv[:3])} ...): {exc.strerror or exc}") from exc
    return LaunchedServer(label, argv, process, port, host, log_path, env[MARKER_ENV], time.monotonic(), log)


def new_run_id(label: str) -> str:
    return f"{uuid.uuid4().hex[:12]}-{label}"
