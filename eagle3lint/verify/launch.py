"""Starting the engine's server: its command line, a free port, its own session, a marker, a log file."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from eagle3lint.errors import UsageError
from eagle3lint.verify.knowledge import EngineKnowledge
from eagle3lint.verify.options import VerifyOptions

# Every process of a run carries this in its environment, so teardown can find the ones that left
# the process group (a child that called setsid) and end them too.
MARKER_ENV = "EAGLE3LINT_VERIFY_RUN"
EAGLE3, BASELINE = "eagle3", "baseline"
DEFAULT_VLLM_SPEC_TOKENS = 3


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def validate_speculative_options(engine: str, options: VerifyOptions) -> None:
    given = [options.num_steps, options.eagle_topk, options.num_draft_tokens]
    if engine == "sglang":
        if any(v is not None for v in given) and not all(v is not None for v in given):
            raise UsageError(
                "--num-steps, --eagle-topk and --num-draft-tokens go together for SGLang (give all three, "
                "or none to let SGLang choose)"
            )
    elif options.eagle_topk is not None or options.num_draft_tokens is not None:
        raise UsageError("--eagle-topk and --num-draft-tokens are SGLang options; for vLLM give --num-steps")
    for name, value in (("--num-steps", options.num_steps), ("--eagle-topk", options.eagle_topk), ("--num-draft-tokens", options.num_draft_tokens)):
        if value is not None and value < 1:
            raise UsageError(f"{name} {value}: must be at least 1")


def default_launcher(knowledge: EngineKnowledge) -> list[str]:
    if knowledge.engine == "vllm":
        script = shutil.which(knowledge.launch_script) if knowledge.launch_script else None
        return [script, "serve"] if script else [sys.executable, "-m", knowledge.launch_module, "serve"]
    return [sys.executable, "-m", knowledge.launch_module]


def engine_arguments(engine: str, options: VerifyOptions, port: int, speculative: bool) -> list[str]:
    extra = [arg for chunk in options.engine_args for arg in shlex.split(chunk)]
    if engine == "sglang":
        args = ["--model-path", options.model_path, "--tp-size", str(options.tp), "--host", options.host, "--port", str(port)]
        if speculative:
            args += ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", options.draft_model_path]
            if options.num_steps is not None:
                args += [
                    "--speculative-num-steps", str(options.num_steps),
                    "--speculative-eagle-topk", str(options.eagle_topk),
                    "--speculative-num-draft-tokens", str(options.num_draft_tokens),
                ]
        return args + extra
    args = [options.model_path, "--tensor-parallel-size", str(options.tp), "--host", options.host, "--port", str(port)]
    if speculative:
        config = {
            "method": "eagle3",
            "model": options.draft_model_path,
            "num_speculative_tokens": options.num_steps or DEFAULT_VLLM_SPEC_TOKENS,
        }
        args += ["--speculative-config", json.dumps(config)]
    return args + extra


def build_command(options: VerifyOptions, knowledge: EngineKnowledge, port: int, speculative: bool) -> list[str]:
    launcher = shlex.split(options.launcher) if options.launcher else default_launcher(knowledge)
    if not launcher:
        raise UsageError("--launcher is empty")
    return launcher + engine_arguments(knowledge.engine, options, port, speculative)


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
