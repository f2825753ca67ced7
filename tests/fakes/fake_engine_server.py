#!/usr/bin/env python3
"""TEST DOUBLE — not an inference engine.

A scripted stand-in for `python -m sglang.launch_server ...` / `vllm serve ...` / `lmdeploy serve
api_server ...` that the verify tests start through `eagle3lint verify --launcher "python
fake_engine_server.py --fake-engine sglang ..."`. It accepts the engine's own arguments (verify
appends them), prints the log lines the real servers print while loading, serves their endpoints
(SGLang: /health, /generate with meta_info; vLLM and LMDeploy: /v1/models, /v1/chat/completions,
/v1/completions, /metrics with the spec-decode counters; LMDeploy: /health too), and can instead
crash with the real error texts, hang, ignore SIGTERM, spawn children, or hold GPU memory.

Standard library only (torch only for --fake-gpu-mib). Everything it does is recorded as JSON lines
in --fake-state-file so the tests can check what verify launched and that it was torn down.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SGLANG_FRAMES = (
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 3150, in run_scheduler_process\n'
    "    scheduler = Scheduler(\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 361, in __init__\n'
    "    self.tp_worker = TpModelWorker(\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 621, in initialize\n'
)
VLLM_FRAMES = (
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 699, in run_engine_core\n'
    "    engine_core = EngineCoreProc(*args, **kwargs)\n"
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 5174, in _setup_eagle3_aux_hidden_state_outputs\n'
)

LMDEPLOY_FRAMES = (
    '  File "/opt/py3/lib/python3.11/site-packages/lmdeploy/pytorch/engine/model_agent/agent.py", line 1634, in build_model\n'
    "    self.warmup()\n"
)

# mode -> (engine style, phase line printed before the failure, innermost frame lines, exception line)
CRASHES: dict[str, tuple[str, str, str, str]] = {
    # SGLang 0.5.9: the unguarded call in model_runner.py (the seed's Kimi-K2.5 crash).
    "crash-missing-setter": (
        "sglang",
        "Load weight end.",
        "    self.model.set_eagle3_layers_to_capture(\n"
        '  File "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py", line 1940, in __getattr__\n'
        "    raise AttributeError(\n",
        "AttributeError: 'KimiK25ForConditionalGeneration' object has no attribute 'set_eagle3_layers_to_capture'",
    ),
    # SGLang 0.5.23: the guarded call raises a clear error.
    "crash-not-implemented": (
        "sglang",
        "Load weight end.",
        '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner_components/attention_backend_setup.py", line 56, in setup\n'
        "    raise ValueError(\n",
        "ValueError: Model KimiK25ForConditionalGeneration does not implement set_eagle3_layers_to_capture, "
        "which EAGLE3 aux hidden-state capture requires.",
    ),
    # SGLang 0.5.10's Kimi-K2.5 wrapper guards its own delegation.
    "crash-inner-lacks": (
        "sglang",
        "Load weight end.",
        '  File "/sgl-workspace/sglang/python/sglang/srt/models/kimi_k25.py", line 846, in set_eagle3_layers_to_capture\n'
        "    raise AttributeError(\n",
        "AttributeError: language_model does not support EAGLE3 speculative decoding.",
    ),
    "crash-embed-head": (
        "sglang",
        "Load weight end.",
        '  File "/sgl-workspace/sglang/python/sglang/srt/speculative/eagle_worker.py", line 160, in __init__\n'
        "    embed, head = self.target_worker.model_runner.model.get_embed_and_head()\n",
        "AttributeError: 'KimiK25ForConditionalGeneration' object has no attribute 'get_embed_and_head'",
    ),
    "crash-signature": (
        "sglang",
        "Load weight end.",
        "    self.model.set_eagle3_layers_to_capture(\n",
        "TypeError: KimiK25ForConditionalGeneration.set_eagle3_layers_to_capture() takes 1 positional argument but 2 were given",
    ),
    "crash-bare-assert": (
        "sglang",
        "Capture cuda graph begin.",
        '  File "/sgl-workspace/sglang/python/sglang/srt/speculative/eagle_worker.py", line 512, in forward_target_extend\n'
        "    assert logits_output.hidden_states is not None\n",
        "AssertionError",
    ),
    "crash-shapes": (
        "sglang",
        "Capture cuda graph begin. This can take up to several minutes.",
        '  File "/sgl-workspace/sglang/python/sglang/srt/models/llama_eagle3.py", line 163, in forward\n'
        "    hidden_states = self.fc(hidden_states)\n",
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x14336 and 21504x7168)",
    ),
    "crash-oom": (
        "sglang",
        "Load weight begin.",
        '  File "/usr/local/lib/python3.12/dist-packages/torch/nn/modules/module.py", line 1355, in convert\n'
        "    return t.to(\n",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.72 GiB",
    ),
    # vLLM >= 0.10.1: the runner's protocol check.
    "crash-protocol": (
        "vllm",
        "Model loading took",
        '    raise RuntimeError(\n',
        "RuntimeError: Model does not support EAGLE3 interface but aux_hidden_state_outputs was requested",
    ),
    # vLLM >= 0.18.0: the default setter's assertion.
    "crash-mixin": (
        "vllm",
        "Model loading took",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/interfaces.py", line 1746, in set_aux_hidden_state_layers\n'
        "    assert isinstance(holder, EagleModelMixin), (\n",
        "AssertionError: Model instance must inherit from EagleModelMixin to set auxiliary layers",
    ),
    # LMDeploy 0.18.0: no config builder opted the target in (spec_agent.py:726).
    "crash-plain-strategy": (
        "lmdeploy",
        "Starting engine warmup. This may take a while...",
        '  File "/opt/py3/lib/python3.11/site-packages/lmdeploy/pytorch/spec_decode/spec_agent.py", line 726, in _make_dummy\n'
        "    return self.inputs_strategy.make_dummy(batch_size,\n",
        "TypeError: ARModelInputsStrategy.make_dummy() got an unexpected keyword argument 'target_hidden_size'",
    ),
    # LMDeploy 0.18.0: DeepseekV2ModelConfigBuilder's assertion (deepseek_v2.py:32).
    "crash-builder-assert": (
        "lmdeploy",
        "build model config with DeepseekV2ModelConfigBuilder",
        '  File "/opt/py3/lib/python3.11/site-packages/lmdeploy/pytorch/configurations/deepseek_v2.py", line 32, in build\n'
        "    assert spec_method == 'deepseek_mtp'\n",
        "AssertionError",
    ),
    "crash-unpack": (
        "vllm",
        "Capturing CUDA graphs",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 3021, in _model_forward\n'
        "    hidden_states, aux_hidden_states = model_output\n",
        "ValueError: too many values to unpack (expected 2)",
    ),
}


def stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


def vstamp() -> str:
    return time.strftime("%m-%d %H:%M:%S")


class Fake:
    def __init__(self, args: argparse.Namespace, extra: list[str]) -> None:
        self.args = args
        self.extra = extra
        self.engine = args.fake_engine
        self.port = args.port
        self.host = args.host or "127.0.0.1"
        self.model = args.model_path or args.model or "unknown-model"
        self.speculative = bool(args.speculative_algorithm or args.speculative_config)
        self.ready = False
        self.lock = threading.Lock()
        self.accepted = 0.0
        self.drafts = 0.0
        self.gpu_buffer: Any = None
        self.server: ThreadingHTTPServer | None = None
        self.requests = 0

    # ---- recording -------------------------------------------------------------------------
    def record(self, event: str, **data: Any) -> None:
        if not self.args.fake_state_file:
            return
        with open(self.args.fake_state_file, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"event": event, "pid": os.getpid(), **data}) + "\n")

    def log(self, line: str) -> None:
        if self.engine == "sglang":
            sys.stdout.write(f"[{stamp()} TP0] {line}\n")
        elif self.engine == "lmdeploy":
            sys.stdout.write(f"{stamp()},000 - lmdeploy - INFO - fake.py:1 - {line}\n")
        else:
            sys.stdout.write(f"INFO {vstamp()} [fake.py:1] {line}\n")
        sys.stdout.flush()

    # ---- start-up --------------------------------------------------------------------------
    def start(self) -> None:
        args = self.args
        self.record(
            "started",
            argv=sys.argv[1:],
            marker=os.environ.get("EAGLE3LINT_VERIFY_RUN"),
            cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
            pythonpath=os.environ.get("PYTHONPATH"),
            speculative=self.speculative,
        )
        if args.fake_ignore_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # children inherit it ignored
        else:
            signal.signal(signal.SIGTERM, self.on_sigterm)
        if args.fake_child != "none":
            self.spawn_child(args.fake_child)
        if args.fake_ignore_sigterm:
            # Still ignored (the fake goes on), but noted: a test waits for this, not for a
            # grace period to pass on a loaded machine.
            signal.signal(signal.SIGTERM, self.on_ignored_sigterm)
        if self.engine == "sglang":
            sys.stdout.write(f"[{stamp()}] server_args=ServerArgs(model_path='{self.model}', tp_size={args.tp_size}, port={self.port}, speculative_algorithm={args.speculative_algorithm!r})\n")
            self.log("Init torch distributed begin.")
            self.log("Load weight begin. avail mem=139.00 GB")
        elif self.engine == "lmdeploy":
            self.log(f"Build <async> engine with model {self.model}")
            self.log("build model config with DefaultModelConfigBuilder")
        else:
            sys.stdout.write(f"INFO {vstamp()} [utils.py:253] non-default args: {{'model': '{self.model}', 'port': {self.port}}}\n")
            self.log(f"Starting to load model {self.model}...")
        sys.stdout.flush()
        if args.fake_gpu_mib:
            self.hold_gpu_memory(args.fake_gpu_mib)
        if args.fake_mode in CRASHES:
            self.crash(args.fake_mode)
        if args.fake_mode == "killed":
            time.sleep(args.fake_load_seconds)
            os.kill(os.getpid(), signal.SIGKILL)
        if args.fake_mode == "port-in-use":
            time.sleep(args.fake_load_seconds)
            sys.stdout.write(f"ERROR:    [Errno 98] error while attempting to bind on address ('{self.host}', {self.port}): address already in use\n")
            sys.stdout.flush()
            sys.exit(1)
        if args.fake_mode == "hang":
            self.log("Capture cuda graph begin. This can take up to several minutes." if self.engine == "sglang" else "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)")
            self.record("hanging")  # after the log line: whoever sees this can find the line
            while True:  # stuck in CUDA graph capture: the HTTP server never comes up
                time.sleep(3600)
        time.sleep(args.fake_load_seconds)
        if self.engine == "sglang":
            self.log("Load weight end. type=FakeForCausalLM, dtype=torch.bfloat16, avail mem=120.00 GB")
            self.log("Capture cuda graph begin. This can take up to several minutes.")
        elif self.engine == "lmdeploy":
            self.log("Starting engine warmup. This may take a while...")
            self.log("Engine warmup completed in 0.10 seconds.")
        else:
            self.log("Model loading took 1.23 GiB memory and 0.100000 seconds")
            self.log("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)")
        self.serve_forever(ready_after=args.fake_load_seconds)

    def hold_gpu_memory(self, mib: int) -> None:
        if self.args.fake_gpu_ledger:
            # Without a GPU: note the "allocation" where the fake nvidia-smi reads it (it counts
            # only live processes, as the driver frees a dead process's memory).
            with open(self.args.fake_gpu_ledger, "a", encoding="utf-8") as handle:
                handle.write(f"{os.getpid()} {os.environ.get('CUDA_VISIBLE_DEVICES', '0')} {mib}\n")
            self.record("gpu", mib=mib, device=0)
            return
        import torch  # only the GPU tests ask for this

        self.gpu_buffer = torch.ones(mib * 2**20, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        self.record("gpu", mib=mib, device=torch.cuda.current_device())
        self.log(f"Load weight end. mem usage={mib / 1024:.2f} GB")

    def spawn_child(self, kind: str) -> None:
        child = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--fake-as-child", "--fake-engine", self.engine]
            + (["--fake-state-file", self.args.fake_state_file] if self.args.fake_state_file else []),
            start_new_session=(kind == "session"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
        )
        # A real engine's workers are up before it reports ready: wait for the child to have
        # recorded itself (on a loaded machine its start-up can outlast a whole fake run).
        assert child.stdout is not None
        child.stdout.readline()
        child.stdout.close()
        self.record("child", child=child.pid, kind=kind)

    def crash(self, mode: str) -> None:
        style, phase, frames, exception = CRASHES[mode]
        time.sleep(self.args.fake_load_seconds)
        self.log(phase)
        if style == "lmdeploy":
            sys.stdout.write(f"Traceback (most recent call last):\n{LMDEPLOY_FRAMES}{frames}{exception}\n")
            sys.stdout.flush()
            sys.exit(1)
        if style == "sglang":
            sys.stdout.write(f"[{stamp()} TP0] Scheduler hit an exception: Traceback (most recent call last):\n{SGLANG_FRAMES}{frames}{exception}\n\n")
            sys.stdout.write(f"[{stamp()}] Received sigquit from a child process. It usually means the child failed.\n")
            sys.stdout.flush()
            # SGLang's parent kills its own process tree: exit -9 even for a Python exception.
            os.kill(os.getpid(), signal.SIGKILL)
        prefix = f"(EngineCore_DP0 pid={os.getpid()}) "
        body = f"ERROR {vstamp()} [core.py:708] EngineCore failed to start.\nTraceback (most recent call last):\n{VLLM_FRAMES}{frames}{exception}\n"
        sys.stdout.write("".join(prefix + line + "\n" for line in body.splitlines()))
        sys.stdout.write("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n")
        sys.stdout.flush()
        sys.exit(1)

    def on_ignored_sigterm(self, signum: int, frame: Any) -> None:
        self.record("sigterm-ignored")

    def on_sigterm(self, signum: int, frame: Any) -> None:
        self.record("sigterm")
        sys.stdout.write("Received SIGTERM, shutting down\n")
        sys.stdout.flush()
        os._exit(0)

    # ---- serving ---------------------------------------------------------------------------
    def serve_forever(self, ready_after: float | None) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def reply(self, status: int, payload: Any = None, text: str | None = None) -> None:
                body = text.encode() if text is not None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if text is not None else "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                fake.handle_get(self)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    payload = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self.reply(400, {"error": "bad json"})
                    return
                fake.handle_post(self, payload)

        self.server = ThreadingHTTPServer((self.host, self.port), Handler)
        self.server.daemon_threads = True
        self.record("listening", port=self.port)
        if self.engine in ("sglang", "lmdeploy"):
            sys.stdout.write(f"[{stamp()}] INFO:     Uvicorn running on http://{self.host}:{self.port} (Press CTRL+C to quit)\n")
            sys.stdout.flush()
        if ready_after is not None:
            threading.Thread(target=self.become_ready, daemon=True).start()
        self.server.serve_forever(poll_interval=0.05)

    def become_ready(self) -> None:
        if self.args.fake_old_sglang:
            # Before 0.4.10.post2 /health answered 200 while the server still warmed up: only the
            # log line says it is ready.
            self.ready = True
            time.sleep(self.args.fake_ready_line_delay)
            self.log("The server is fired up and ready to roll!")
            self.record("ready")
            return
        time.sleep(0.05)
        self.ready = True
        if self.engine == "sglang":
            self.log("The server is fired up and ready to roll!")
        else:
            self.log("Application startup complete.")
        self.record("ready")

    def handle_get(self, h: Any) -> None:
        path = h.path.split("?")[0]
        if path in ("/health", "/health_generate"):
            h.reply(200 if self.ready else 503, {})
        elif path == "/v1/models":
            if self.ready:
                h.reply(200, {"object": "list", "data": [{"id": self.model, "object": "model"}]})
            else:
                h.reply(503, {})
        elif path == "/metrics" and self.engine in ("vllm", "lmdeploy"):
            h.reply(200, text=self.metrics_text())
        else:
            h.reply(404, {"detail": "Not Found"})

    def generate(self, max_tokens: int) -> tuple[int, int]:
        """Sleep like a server producing max_tokens; (tokens, verify steps)."""
        with self.lock:
            self.requests += 1
            number = self.requests
        if self.args.fake_mode == "crash-on-request" and number > self.args.fake_crash_after:
            sys.stdout.write("Traceback (most recent call last):\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
            sys.stdout.flush()
            os._exit(1)
        rate = self.args.fake_tokens_per_s * (self.args.fake_speedup if self.speculative else 1.0)
        time.sleep(max_tokens / rate)
        steps = math.ceil(max_tokens / self.args.fake_accept) if self.speculative else 0
        if self.speculative:
            with self.lock:
                self.drafts += steps
                self.accepted += max_tokens - steps
        return max_tokens, steps

    def handle_post(self, h: Any, payload: dict[str, Any]) -> None:
        path = h.path.split("?")[0]
        if not self.ready:
            h.reply(503, {"error": "starting"})
            return
        if path == "/generate" and self.engine == "sglang":
            params = payload.get("sampling_params") or {}
            tokens, steps = self.generate(int(params.get("max_new_tokens", 16)))
            meta: dict[str, Any] = {"id": "fake", "prompt_tokens": len(str(payload.get("text", ""))) // 4, "completion_tokens": tokens, "finish_reason": {"type": "length", "length": tokens}}
            if self.speculative:
                meta["spec_verify_ct"] = steps
            self.record("request", path=path, text=payload.get("text"))
            h.reply(200, {"text": "x" * tokens, "meta_info": meta})
        elif path in ("/v1/chat/completions", "/v1/completions") and self.engine in ("vllm", "lmdeploy"):
            if payload.get("model") != self.model:
                h.reply(404, {"error": f"model {payload.get('model')!r} does not exist"})
                return
            if path == "/v1/chat/completions" and self.args.fake_no_chat_template:
                h.reply(400, {"error": "no chat template"})
                return
            tokens, _ = self.generate(int(payload.get("max_tokens", 16)))
            self.record("request", path=path)
            h.reply(200, {"id": "cmpl-fake", "choices": [{"index": 0, "text": "x"}], "usage": {"prompt_tokens": 8, "completion_tokens": tokens, "total_tokens": tokens + 8}})
        else:
            h.reply(404, {"detail": "Not Found"})

    def metrics_text(self) -> str:
        prefix = "lmdeploy" if self.engine == "lmdeploy" else "vllm"
        labels = f'{{engine="0",model_name="{self.model}"}}'
        lines = [
            f"# HELP {prefix}:num_requests_running Number of requests in model execution batches.",
            f"# TYPE {prefix}:num_requests_running gauge",
            f"{prefix}:num_requests_running{labels} 0.0",
        ]
        if self.speculative:
            with self.lock:
                drafts, accepted = self.drafts, self.accepted
            lines += [
                f"# HELP {prefix}:spec_decode_num_drafts_total Number of spec decoding drafts.",
                f"# TYPE {prefix}:spec_decode_num_drafts_total counter",
                f"{prefix}:spec_decode_num_drafts_total{labels} {drafts}",
                f"{prefix}:spec_decode_num_drafts_created{labels} 1.7e9",
                f"# TYPE {prefix}:spec_decode_num_accepted_tokens_total counter",
                f"{prefix}:spec_decode_num_accepted_tokens_total{labels} {accepted}",
            ]
        return "\n".join(lines) + "\n"


def run_child() -> None:
    """A worker process that sleeps until it is killed (it keeps an ignored SIGTERM ignored)."""
    state = None
    if "--fake-state-file" in sys.argv:
        state = sys.argv[sys.argv.index("--fake-state-file") + 1]
    if state:
        with open(state, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"event": "child-running", "pid": os.getpid(), "pgid": os.getpgrp()}) + "\n")
    sys.stdout.write("running\n")
    sys.stdout.flush()
    sys.stdout.close()
    while True:
        time.sleep(3600)


def main() -> None:
    if "--fake-as-child" in sys.argv:
        run_child()
        return
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--fake-engine", choices=["sglang", "vllm", "lmdeploy"], required=True)
    parser.add_argument("--fake-mode", default="ok", choices=["ok", "hang", "killed", "port-in-use", "crash-on-request", *CRASHES])
    parser.add_argument("--fake-load-seconds", type=float, default=0.1)
    parser.add_argument("--fake-ignore-sigterm", action="store_true")
    parser.add_argument("--fake-child", choices=["none", "group", "session"], default="none")
    parser.add_argument("--fake-gpu-mib", type=int, default=0)
    parser.add_argument("--fake-gpu-ledger", help="record --fake-gpu-mib here for fake_nvidia_smi.py instead of allocating with torch")
    parser.add_argument("--fake-accept", type=float, default=3.0)
    parser.add_argument("--fake-tokens-per-s", type=float, default=1000.0)
    parser.add_argument("--fake-speedup", type=float, default=2.0)
    parser.add_argument("--fake-state-file")
    parser.add_argument("--fake-old-sglang", action="store_true")
    parser.add_argument("--fake-ready-line-delay", type=float, default=0.5)
    parser.add_argument("--fake-no-chat-template", action="store_true")
    parser.add_argument("--fake-crash-after", type=int, default=0)
    # The engines' own arguments, as verify passes them.
    parser.add_argument("model", nargs="?")
    parser.add_argument("--model-path")
    parser.add_argument("--tp-size", type=int, default=1)
    parser.add_argument("--tensor-parallel-size", type=int, default=1)
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--server-name")
    parser.add_argument("--server-port", type=int)
    parser.add_argument("--backend")
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--speculative-draft-model")
    parser.add_argument("--speculative-algorithm")
    parser.add_argument("--speculative-draft-model-path")
    parser.add_argument("--speculative-num-steps", type=int)
    parser.add_argument("--speculative-eagle-topk", type=int)
    parser.add_argument("--speculative-num-draft-tokens", type=int)
    parser.add_argument("--speculative-config")
    args, extra = parser.parse_known_args()
    # LMDeploy names them --server-port and --server-name.
    args.port = args.port if args.port is not None else args.server_port
    args.host = args.host or args.server_name
    if args.port is None:
        parser.error("--port (or --server-port) is required")
    Fake(args, extra).start()


if __name__ == "__main__":
    main()
